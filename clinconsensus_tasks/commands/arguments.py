"""Arguments several commands share: the thresholds, the judge's settings."""

from __future__ import annotations

import argparse


def thresholds_type(text: str) -> tuple[int, ...]:
    from clinconsensus_tasks.scorers.clinconsensus.cacs import parse_thresholds

    try:
        return parse_thresholds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def failure_share_type(text: str) -> str:
    """``--judge-failure-threshold``'s value, checked as it is read (an error names the flag, not the
    environment variable it stands over); kept as written for the command to parse."""
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import parse_failure_share

    try:
        parse_failure_share(text, "--judge-failure-threshold")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def gate_failure_share_type(text: str) -> float:
    """The gates' ``--judge-failure-threshold`` (``summarize --strict``, ``compare-models``): the share of
    judgments that may fail, checked as it is read by the gate's own rule (``gates.bar.ReleaseBar``:
    in [0, 1), 0 = none may; the gate has no "never", unlike a run's failure policy)."""
    from clinconsensus_tasks.gates.bar import ReleaseBar

    stripped = text.strip()
    try:
        value = float(stripped[:-1]) / 100 if stripped.endswith("%") else float(stripped)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--judge-failure-threshold={text!r}: expected a share such as 0.01 or 1%, "
                                         "in [0, 1) (0: no judgment may fail)") from None
    try:
        ReleaseBar(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def add_thresholds(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--thresholds", type=thresholds_type, default="7,10", help="k values for Pass@k and CACS@k, comma-separated")


def judge_settings(args: argparse.Namespace, base: dict[str, str] | None = None):
    """The judge's settings: the environment, ``base`` over it (e.g. what a log recorded), and the
    command's ``--judge-*`` flags over both."""
    import os

    from clinconsensus_tasks.judge.client import JudgeSettings

    env = {**os.environ, **(base or {})}
    for name in ("base_url", "model", "api_key", "concurrency", "failure_threshold"):
        value = getattr(args, f"judge_{name}", None)
        if value is not None:
            env[f"CLINCONSENSUS_JUDGE_{name.upper()}"] = str(value)
    return JudgeSettings.from_env(env=env)
