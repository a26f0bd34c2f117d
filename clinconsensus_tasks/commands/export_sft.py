"""``clinconsensus-eval export-sft``: one judge's verdicts as chat SFT data."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", help="Inspect logs or lm-eval samples files")
    p.add_argument("--output", required=True, help="folder for train.jsonl, dev.jsonl, manifest.json")
    p.add_argument("--judge", choices=["reference", "local"], default="reference", help="whose verdicts: the grader or the local_grader")
    p.add_argument("--dev-share", type=float, default=0.1, help="share of cases held out as dev")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/dev split")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.commands.tools import export_sft

    manifest = export_sft(args.logs, args.output, args.judge, args.dev_share, args.seed)
    print(json_output.dumps(manifest))
    return 0
