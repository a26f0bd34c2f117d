"""``clinconsensus-eval compare``: the agreement of two judges or two logs of the same answers."""

from __future__ import annotations

import argparse
from typing import Sequence

from clinconsensus_tasks import json_output
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.run_records.agreement import agreement_intervals, compare_pooled, compare_records, pooled_pairs
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA
from clinconsensus_tasks.commands.arguments import add_thresholds
from clinconsensus_tasks.commands.tables import format_table, number


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("reference", help="Inspect log or lm-eval samples file (the reference judge), or a folder or URL holding one")
    p.add_argument("other", nargs="?", help="a second log of the same answers (another judge or judge mode); "
                                           "default: the second judge of a dual-judge reference log")
    add_thresholds(p)
    p.add_argument("--n-criteria", type=int, default=30, help="criteria per case (N in CACS@k)")
    p.add_argument("--pool", action="store_true",
                   help="the reference (and the other) may hold several runs: their agreement pooled, with one line per model "
                        "(dual-judge runs alone; with a second folder, its runs paired with the reference's by model)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.log_files import CLINCONSENSUS, one_log

    if args.pool:
        report = compare_runs(args.reference, args.other, args.thresholds, args.n_criteria)
    else:
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
    (:func:`compare_records`), with the verdict statistics' 95% case bootstrap intervals
    (``agreement/<statistic>_low``, ``_high``: ``run_records.agreement.agreement_intervals``)."""
    reference = read_case_records(reference_log)
    other = None if other_log is None else read_case_records(other_log)
    out = compare_records(reference, other, thresholds, n_criteria, where=reference_log)
    out.update(agreement_intervals([(case_id, pair) for _, case_id, pair in pooled_pairs([(str(reference_log), reference, other)])]))
    return out


def compare_runs(reference: str, other: str | None = None, thresholds: Sequence[int] = (7, 10),
                 n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
    """Agreement of two judges over several runs (``--pool``): the dual-judge runs ``reference``
    holds (its files, or the logs in its folders), or its runs paired by model with those ``other``
    holds (each model's run once on each side: ``rescore`` keeps the model's name), pooled
    (``run_records.agreement.compare_pooled``)."""
    from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_logs, model_display_name
    from clinconsensus_tasks.run_records.protocol import run_model

    def by_model(where: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for log in benchmark_logs([where], CLINCONSENSUS):
            model = model_display_name(run_model(log)[0])
            if model in found:
                raise DataValidationError([f"{where}: two runs of {model} ({found[model]}, {log}): pool one run per model"])
            found[model] = log
        return found

    references = by_model(reference)
    others = None if other is None else by_model(other)
    if others is not None and set(others) != set(references):
        alone = [(sorted(set(a) - set(b)), where) for a, b, where in ((references, others, reference), (others, references, other))]
        raise DataValidationError(["the runs' models differ: " + "; ".join(f"{', '.join(models)} only in {where}" for models, where in alone if models)
                                   + ": pair each model's run with its run judged by the other judge"])
    runs = [(model, read_case_records(log), None if others is None else read_case_records(others[model]))
            for model, log in sorted(references.items())]
    return compare_pooled(runs, thresholds, n_criteria)
