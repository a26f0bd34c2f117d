"""``clinconsensus-eval compare-models BASELINE CANDIDATE``: the regression gate (``gates.regression``)
on the command line: its flags, its table or JSON, its JUnit file and its exit code (1 when a run is
refused or the candidate is worse beyond a ``--fail-if-worse`` bar)."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output
from clinconsensus_tasks.commands.arguments import add_thresholds, gate_failure_share_type
from clinconsensus_tasks.gates.bar import RELEASE_FAILURE_SHARE, ReleaseBar
from clinconsensus_tasks.gates.regression import (
    check_runs, compare_runs, format_refusal, format_table, pairable_from_facts, parse_gates, write_junit, write_refusal_junit,
)
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("baseline", help="the reference run: Inspect log (.eval/.json) or folder, lm-eval output folder or samples file")
    parser.add_argument("candidate", help="the run under judgement, of the same benchmark")
    parser.add_argument("--fail-if-worse", action="append", default=[], metavar="METRIC[:DELTA]",
                        help="exit 1 if the candidate is lower on METRIC by more than DELTA (a fraction, default 0) and the "
                             "95%% interval excludes 0; repeatable (default: no gate)")
    add_thresholds(parser)
    parser.add_argument("--n-criteria", type=int, default=DEFAULT_N_CRITERIA, help="expected criteria per case, N (default 30)")
    parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples and permutations (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of both (default 0)")
    parser.add_argument("--judge-failure-threshold", metavar="SHARE", type=gate_failure_share_type,
                        help="accept runs with this share of failed judgments (default 0.01, the bar of summarize --strict; "
                             "another value is printed on the RESULT line)")
    parser.add_argument("--allow-different-data", action="store_true",
                        help="compare the shared cases of runs on different data (default: refuse; printed on the RESULT line)")
    parser.add_argument("--allow-different-judge", action="store_true",
                        help="compare runs graded by different judges or judge modes (default: refuse; printed on the RESULT line)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE (default: none)")


def loosened(args: argparse.Namespace, bar: ReleaseBar) -> list[str]:
    """The flags of the command that loosen a fact, as the RESULT line prints them."""
    return [*bar.exceptions(), *(["--allow-different-data"] if args.allow_different_data else []),
            *(["--allow-different-judge"] if args.allow_different_judge else [])]


def main(args: argparse.Namespace) -> int:
    thresholds = args.thresholds
    gates = parse_gates(args.fail_if_worse)
    bar = ReleaseBar(RELEASE_FAILURE_SHARE if args.judge_failure_threshold is None else args.judge_failure_threshold)
    exceptions = loosened(args, bar)
    refusal, (baseline, candidate) = check_runs(args.baseline, args.candidate, bar)
    if refusal.refused():
        refusal.exceptions = exceptions
        print(json_output.dumps(refusal.to_dict()) if args.json else format_refusal(refusal))
        if args.junit:
            write_refusal_junit(refusal, args.junit)
        return 1
    comparison = compare_runs(
        pairable_from_facts(baseline, thresholds, args.n_criteria), pairable_from_facts(candidate, thresholds, args.n_criteria), gates,
        args.resamples, args.seed, args.allow_different_data, args.allow_different_judge,
    )
    comparison.exceptions = exceptions
    print(json_output.dumps(comparison.to_dict()) if args.json else format_table(comparison))
    if args.junit:
        write_junit(comparison, args.junit)
    return 1 if comparison.failed else 0
