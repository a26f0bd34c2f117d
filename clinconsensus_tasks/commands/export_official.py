"""``clinconsensus-eval export-official``: verdicts as the official scorer reads them."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", help="Inspect .eval/.json logs or lm-eval samples_clinconsensus_*.jsonl files, one per model")
    p.add_argument("--output", required=True, help="folder for the <model>_judge.json files (eval_cacs.py --judgements-dir)")
    p.add_argument("--data", help="the data file given to eval_cacs.py --data: entries follow its case order and must cover "
                   "all its cases (default: the run's own case order)")
    p.add_argument("--epoch", type=int, default=1, help="which epoch of a multi-epoch run to export")
    p.add_argument("--n-criteria", type=int, default=30, help="expected criteria per case in --data")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.official_export import export_official

    written = export_official(args.logs, args.output, args.data, args.epoch, args.n_criteria)
    print(json_output.dumps(written))
    return 0
