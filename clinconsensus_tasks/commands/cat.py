"""``clinconsensus-eval cat``: adaptive testing on CliMedBench (calibrate, run, synthesize)."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output


def add_arguments(p: argparse.ArgumentParser) -> None:
    cat = p.add_subparsers(dest="cat_command", required=True, metavar="STEP")

    def step(name: str, text: str) -> argparse.ArgumentParser:
        return cat.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".", formatter_class=p.formatter_class)

    q = step("calibrate", "fit an item bank from per-item results of several models")
    q.add_argument("logs", nargs="+", help="Inspect climedbench logs, lm-eval samples_climedbench_*.jsonl files, synthesize records")
    q.add_argument("--output", required=True, help="the bank (JSON)")
    q.add_argument("--irt-model", choices=["3PL", "2PL", "1PL"], default="3PL", help="item response model")
    q = step("run", "test one model adaptively (resumes from --output)")
    q.add_argument("--model", required=True, help="an Inspect model, e.g. openai/gpt-4.1 or vllm/Qwen/Qwen3-8B")
    q.add_argument("--bank", required=True, help="the item bank from cat calibrate")
    q.add_argument("--output", required=True, help="folder (or URL prefix, s3://...) for state.json (resume) and result.json")
    q.add_argument("--data-dir", help="CliMedBench data folder, or 'sample' for the bundled synthetic sample on purpose (default: $CLIMEDBENCH_DATA_DIR; neither: refused)")
    q.add_argument("--similarity-model", help="sentence-transformers model for WTD items; default $CLIMEDBENCH_SIMILARITY_MODEL")
    q.add_argument("--estimator", choices=["EAP", "MLE"], default="EAP", help="ability estimator")
    q.add_argument("--max-items", type=int, default=243, help="item budget (243 in the paper)")
    q.add_argument("--se-threshold", type=float, help="stop once the ability's standard error is at most this (default: no such stop)")
    q.add_argument("--randomesque", type=int, default=1, help="exposure control: pick at random among the k most informative items")
    q.add_argument("--seed", type=int, default=0, help="seed of the randomesque choice")
    q = step("synthesize", "synthetic examinees: generation, debate and reflection between two models")
    q.add_argument("--generator", required=True, help="Inspect model that answers and reflects")
    q.add_argument("--debater", required=True, help="Inspect model that challenges the answer")
    q.add_argument("--output", required=True, help="records (JSONL) for cat calibrate: a file or a URL")
    q.add_argument("--data-dir", help="CliMedBench data folder, or 'sample' for the bundled synthetic sample on purpose (default: $CLIMEDBENCH_DATA_DIR; neither: refused)")
    q.add_argument("--scenarios", help="comma-separated codes (default: all 14)")
    q.add_argument("--limit", type=int, help="items per scenario (default: all)")
    q.add_argument("--similarity-model", help="sentence-transformers model for WTD items; default $CLIMEDBENCH_SIMILARITY_MODEL")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.adaptive import commands as cat_commands

    if args.cat_command == "calibrate":
        bank = cat_commands.calibrate(args.logs, args.output, args.irt_model)
        print(json_output.dumps({"output": args.output, "items": len(bank), "model": bank.model,
                          "models": bank.provenance.get("models")}))
    elif args.cat_command == "run":
        result = cat_commands.run_adaptive(
            args.model, args.bank, args.output, data_dir=args.data_dir, similarity_model=args.similarity_model,
            estimator=args.estimator, max_items=args.max_items, se_threshold=args.se_threshold,
            randomesque=args.randomesque, seed=args.seed,
        )
        print(json_output.dumps({k: result[k] for k in ("model", "theta", "se", "items_used", "stop_reason", "predicted_overall", "predicted_scores")}))
    else:
        counts = cat_commands.synthesize(args.generator, args.debater, args.output, data_dir=args.data_dir,
                                         scenarios=args.scenarios.split(",") if args.scenarios else None, limit=args.limit,
                                         similarity_model=args.similarity_model)
        print(json_output.dumps({"output": args.output, **counts}))
    return 0
