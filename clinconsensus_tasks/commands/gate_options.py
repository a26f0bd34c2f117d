"""The release gate's flags, for every command that runs the gate (``summarize --strict``, ``publish``):
one definition, so the bar ``publish`` holds runs to is the one ``summarize --strict`` printed.

Not a command: like ``arguments``, what commands share on the command line. The gate itself is
``gates.release_gate``; the bar is ``gates.bar.ReleaseBar``, which reads no environment variable."""

from __future__ import annotations

import argparse

from clinconsensus_tasks.commands.arguments import gate_failure_share_type

# The options of the release gate (``summarize``: they mean nothing without --strict), and the bars that read a folder.
GATE_ONLY = ("--judge-failure-threshold", "--allow-prompt", "--data-sha256", "--review", "--min-kappa", "--max-judge-bias",
             "--reliability", "--max-flip-rate")
GATE_NEEDS = {"--min-kappa": ("--review", "the physicians' review (the folder of review export)"),
              "--max-judge-bias": ("--review", "the physicians' review (the folder of review export)"),
              "--max-flip-rate": ("--reliability", "the judge asked again (the folder of clinconsensus-eval reliability RUN "
                                                   "--output DIR)")}


def add_gate_arguments(p: argparse.ArgumentParser, when: str = "") -> None:
    """The bar's flags; ``when`` starts each help text (``"with --strict"`` for ``summarize``)."""
    def say(condition: str, text: str) -> str:
        prefix = " ".join(c for c in (when, condition) if c)
        return f"{prefix}: {text}" if prefix else text[0].upper() + text[1:]

    p.add_argument("--judge-failure-threshold", metavar="SHARE", type=gate_failure_share_type,
                   help=say("", "accept this share of failed judgments (default 0.01; another value is printed as an exception)"))
    p.add_argument("--allow-prompt", action="append", default=[], metavar="NAME",
                   help=say("", "accept this judge prompt or judge mode besides the official prompt per criterion, or "
                                "'jury' for a jury's majority, or 'official-reading' for replies read the official runner's way (repeatable; "
                                "printed as an exception; default: the official one only)"))
    p.add_argument("--review", metavar="DIR",
                   help=say("", "a physicians' review folder (review export/score): each ClinConsensus run's judge "
                                "against the physicians' labels on that run's answers is printed with the run's verdict (default: none)"))
    p.add_argument("--min-kappa", type=float, metavar="X",
                   help=say("and --review" if when else "with --review",
                            "refuse a run unless the lower end of its judge's Cohen's kappa interval with the physicians is at "
                            "least X, on at least 10 reviewed cases, every sheet read (default: no bar)"))
    p.add_argument("--max-judge-bias", type=float, metavar="POINTS",
                   help=say("and --review" if when else "with --review",
                            "refuse a run unless the 95%% interval of its judge's bias on rubric accuracy (the judge's headline "
                            "minus the physicians' estimate over all cases) lies within +-POINTS percentage points (default: no bar)"))
    p.add_argument("--reliability", metavar="DIR",
                   help=say("", "a check of the judge asked again (clinconsensus-eval reliability RUN --output DIR): "
                                "each ClinConsensus run's judge's flip rate is printed with the run's verdict (default: none)"))
    p.add_argument("--max-flip-rate", type=float, metavar="X",
                   help=say("and --reliability" if when else "with --reliability",
                            "refuse a run unless the upper end of its judge's flip-rate interval (rows whose asks are not all "
                            "equal) is at most X, from a finished check of at least 10 cases (default: no bar)"))
    p.add_argument("--data-sha256", metavar="SHA",
                   help=say("", "the run read a copy of the public file with this sha256 instead of the hub pinned to "
                                "a commit (printed on the verdict line; default: the hub data at the 40-hex commit the run was given)"))


def given(args: argparse.Namespace, flag: str) -> bool:
    """Whether ``flag`` was given a value on the command line."""
    return getattr(args, flag[2:].replace("-", "_")) not in (None, [], "")


def gate_bar(args: argparse.Namespace):
    """The bar the gate's flags ask for (``gates.bar.ReleaseBar``); a bar without the folder it reads,
    or a value out of its range, is a :class:`ConfigurationError` naming the flag."""
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.gates.bar import RELEASE_FAILURE_SHARE, ReleaseBar

    share = RELEASE_FAILURE_SHARE if args.judge_failure_threshold is None else args.judge_failure_threshold
    for flag, (needed, what) in GATE_NEEDS.items():
        if given(args, flag) and not given(args, needed):
            raise ConfigurationError(f"{flag} needs {what}: {needed} DIR")
    try:
        return ReleaseBar(share, (args.data_sha256 or "").strip().lower(), tuple(args.allow_prompt), args.min_kappa,
                          args.max_judge_bias, args.max_flip_rate)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def shown_problems() -> int:
    """How many of a review's left-out rows the gate prints (``review score``'s own number)."""
    from clinconsensus_tasks.commands.review import SHOWN_PROBLEMS

    return SHOWN_PROBLEMS
