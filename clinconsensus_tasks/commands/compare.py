"""``clinconsensus-eval compare``: the agreement of two judges or two logs of the same answers."""

from __future__ import annotations

import argparse
from typing import Sequence

from clinconsensus_tasks import json_output
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.run_records.agreement import compare_records
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA
from clinconsensus_tasks.commands.arguments import add_thresholds
from clinconsensus_tasks.commands.tables import format_table, number


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("reference", help="Inspect log or lm-eval samples file (the reference judge), or a folder or URL holding one")
    p.add_argument("other", nargs="?", help="a second log of the same answers (another judge or judge mode); "
                                           "default: the second judge of a dual-judge reference log")
    add_thresholds(p)
    p.add_argument("--n-criteria", type=int, default=30, help="criteria per case (N in CACS@k)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.log_files import CLINCONSENSUS, one_log

    other = None if args.other is None else one_log(args.other, CLINCONSENSUS)
    report = compare_logs(one_log(args.reference, CLINCONSENSUS), other, args.thresholds, args.n_criteria)
    if args.json:
        print(json_output.dumps(report))
    else:
        print("\n".join(format_table(["metric", "value"], [[k, number(v)] for k, v in report.items()], indent="")))
    return 0


def compare_logs(reference_log: str, other_log: str | None = None, thresholds: Sequence[int] = (7, 10),
                 n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
    """Agreement of two judges or judge modes on the same answers, read from their logs
    (:func:`compare_records`)."""
    reference = read_case_records(reference_log)
    return compare_records(reference, None if other_log is None else read_case_records(other_log), thresholds, n_criteria,
                           where=reference_log)
