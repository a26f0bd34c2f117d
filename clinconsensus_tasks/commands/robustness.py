"""``clinconsensus-eval robustness``: CliMedBench's paired score drop under a variant."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("clean_run", help="clean run: Inspect log, lm-eval samples_climedbench_*.jsonl, or a folder of them")
    p.add_argument("variant_run", help="variant run of the same items and model, in the same forms")
    p.add_argument("--iterations", type=int, default=2000, help="paired bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.climedbench.robustness import format_robustness, robustness

    report = robustness(args.clean_run, args.variant_run, args.iterations, args.seed)
    print(json_output.dumps(report) if args.json else format_robustness(report))
    return 0
