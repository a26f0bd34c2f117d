"""``clinconsensus-eval agreement``: judges against reference (physician) verdicts."""

from __future__ import annotations

import argparse
import json

from clinconsensus_tasks.commands.tables import format_table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--labels", required=True, help="JSONL of {case_id, criterion_id, criteria_met}")
    p.add_argument("logs", nargs="+", help="Inspect logs or lm-eval samples files graded by the judges to check")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.commands.tools import label_agreement

    report = label_agreement(args.labels, args.logs)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    for name, entry in report.items():
        print(f"== {name}: judge {entry['judge']}, {entry['labelled_criteria']} labelled criteria, {entry['judge_failures']} judge failures")
        cols = ["accuracy", "kappa", "macro_f1", "precision_met", "recall_met"]
        rows = [[label, *(f"{stats[c]:.4f}" for c in cols)] for label, stats in [("overall", entry["overall"]), *entry["by_subject"].items()]]
        print("\n".join(format_table(["", *cols], rows)))
    return 0
