"""``clinconsensus-eval``: what the frameworks' own commands do not do.

* ``demo``: everything end to end on the bundled samples against a built-in stand-in model and
  judge (no endpoint needed): both benchmarks, every installed framework, the report.
* ``summarize LOG...``: headline metrics and breakdowns (difficulty, subject, task label,
  audience) recomputed from an Inspect log or an lm-eval sample file, with any thresholds;
  ``--strict``: the release gate (see ``gates.release``), exit 1 unless every run is a release run.
* ``validate [DATA]``: validate a ClinConsensus data file (or ``sample``/``hub``) and print counts;
  ``validate --release FILE`` applies the public release's own checks.
* ``export-official LOG...``: verdicts as ``<model>_judge.json`` files for the official scorer.
* ``include-path``: the folder of the lm-eval YAMLs, for ``lm_eval --include_path``.
* ``train-simcse``: unsupervised SimCSE fine-tuning of a sentence-transformers model on a text
  corpus, to build CliMedBench's WTD similarity model.
* ``serve-stand-in``: the stand-in model and judge the demo and the tests use, as a server of its own.
* ``report``: one self-contained HTML report with charts, and a Markdown summary, from the logs of
  several models (see ``report``).
* ``estimate [DATA]``: judge calls and tokens of a run before it starts (see ``commands.estimate``).
* ``audit LOG``: an API judge grades a stratified sample of a local judge's run (see ``commands.audit``).
* ``compare-models BASELINE CANDIDATE``: the regression gate (see ``gates.regression``).
* ``publish RUN... --output DIR``: a release's numbers in the Hub's forms, from runs the release
  gate passes (see ``gates.publication``).
* ``robustness CLEAN_RUN VARIANT_RUN``: CliMedBench's score drop under a variant (perturbed, NOTA,
  CoT), per scenario and overall, items paired, with paired bootstrap intervals.
* ``reliability RUN... --output DIR``: the runs' judges asked again: flip rates, self-agreement,
  answer-irrelevant edits, the judge's share of each headline's noise (see ``commands.reliability``).
* ``compare``, ``agreement``, ``rescore``, ``export-sft``: judge agreement (two judges or two judge
  modes; judges against human labels), re-grading stored answers with another judge or mode, and
  SFT data for training a local judge (see ``commands.compare``, ``commands.rescore``, ``commands.export_sft``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import JudgeFailureError, JudgeUnavailableError

class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default. Options whose default is ``None`` say in their own
    words what happens when they are left out (an environment variable, "all", ...)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, argparse.SUPPRESS) or action.required:
            return text
        if not action.option_strings and action.nargs not in ("?", "*"):
            return text
        if action.default is False:
            return f"{text} (default: off)"
        if isinstance(action.default, (list, tuple)):
            return f"{text} (default: {','.join(map(str, action.default))})"
        return f"{text} (default: %(default)s)"


def plain(text: str) -> str:
    """Docstring text for a terminal: reST backticks removed."""
    return text.replace("``", "").replace("`", "")


def commands() -> list[tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]]:
    """Every command, one registration each: (name, help, its arguments, its work), each a module
    of ``commands/`` with ``add_arguments`` and ``main``."""
    from clinconsensus_tasks.commands import (
        agreement,
        audit,
        cat,
        compare,
        compare_models,
        demo,
        estimate,
        export_official,
        export_sft,
        include_path,
        publish,
        reliability,
        report,
        rescore,
        review,
        robustness,
        serve_stand_in,
        summarize,
        train_simcse,
        validate,
    )

    return [
        ("demo", "run both benchmarks in every installed framework against a built-in stand-in model and judge "
                 "(no endpoint needed), write the report and print the commands for a real model", demo.add_arguments, demo.main),
        ("summarize", "ClinConsensus metrics and breakdowns from Inspect logs or lm-eval sample files", summarize.add_arguments, summarize.main),
        ("validate", "validate a ClinConsensus data file and print its counts", validate.add_arguments, validate.main),
        ("export-official", "verdicts as <model>_judge.json files for the official eval_cacs.py", export_official.add_arguments,
         export_official.main),
        ("include-path", "print the folder of the lm-eval task YAMLs (for lm_eval --include_path)", include_path.add_arguments, include_path.main),
        ("compare", "agreement of two judges (a dual-judge log) or of two logs of the same answers", compare.add_arguments, compare.main),
        ("agreement", "retired: judges against physicians is the review command (says so and exits 2)", agreement.add_arguments, agreement.main),
        ("rescore", "grade the answers in a log again with another judge or judge mode; the judge failure "
                    "policy applies as in the frameworks (exit 1 and no output when too many judgments fail)", rescore.add_arguments, rescore.main),
        ("export-sft", "one judge's verdicts as chat SFT data (train/dev split by case)", export_sft.add_arguments, export_sft.main),
        ("cat", "adaptive testing on CliMedBench: calibrate a bank, run a model, synthesize examinees", cat.add_arguments, cat.main),
        ("robustness", "CliMedBench: paired score drop of a variant run (perturbed, nota, cot) against a clean run", robustness.add_arguments,
         robustness.main),
        ("report", "one self-contained HTML report with charts (and report.md) from the logs of several models",
         report.add_arguments, report.main),
        ("compare-models", "regression gate: two runs case by case, paired intervals and p-values, exit 1 if worse; a run "
                           "the release gate's run facts find unfit (unfinished, too many failed judgments, suspect or cut "
                           "answers, --limit, an old task version, edited numbers) is refused, exit 1",
         compare_models.add_arguments, compare_models.main),
        ("publish", "a model's release for the Hugging Face Hub (.eval_results/*.yaml, the model card's model-index, "
                    "provenance.json) from runs the release gate passes, with its bar and flags; a run it refuses refuses "
                    "the release (exit 1, the gate's reasons, nothing written)", publish.add_arguments, publish.main),
        ("serve-stand-in", "serve the project's stand-in model and judge (an OpenAI-compatible server on "
                           "127.0.0.1, the one the demo and the tests use) to try commands without an endpoint",
         serve_stand_in.add_arguments, serve_stand_in.main),
        ("estimate", "judge calls and tokens (and cost with --prices) of a ClinConsensus run, before running it", estimate.add_arguments,
         estimate.main),
        ("audit", "an API judge grades a stratified sample of a local judge's run: kappa, and the API judge's metrics estimated",
         audit.add_arguments, audit.main),
        ("review", "judges checked against physicians: export blind review sheets from runs, score the filled sheets",
         review.add_arguments, review.main),
        ("reliability", "the runs' judges asked again: how often a verdict flips, whether answer-irrelevant edits move it, "
                        "and the judge's share of each headline's noise", reliability.add_arguments, reliability.main),
        ("train-simcse", "unsupervised SimCSE fine-tuning of a sentence-transformers model (for WTD similarity)", train_simcse.add_arguments,
         train_simcse.main),
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clinconsensus-eval", description=plain(__doc__.split("\n\n")[0]), formatter_class=HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text, add_arguments, run in commands():
        p = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".", formatter_class=HelpFormatter)
        add_arguments(p)
        p.set_defaults(func=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ClinConsensusError, FileNotFoundError, ValueError) as exc:
        print(f"clinconsensus-eval: error: {exc}", file=sys.stderr)
        return 2
    except (JudgeFailureError, JudgeUnavailableError) as exc:  # the failure policy stopped a command that judges
        print(f"clinconsensus-eval: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
