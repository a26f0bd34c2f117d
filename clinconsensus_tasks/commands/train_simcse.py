"""``clinconsensus-eval train-simcse``: SimCSE fine-tuning for WTD similarity."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="base model: hub id or folder (sentence-transformers or plain transformer)")
    p.add_argument("--corpus", required=True, help="text file, one passage per line")
    p.add_argument("--output", required=True, help="folder to save the fine-tuned model in")
    p.add_argument("--epochs", type=int, default=1, help="passes over the corpus")
    p.add_argument("--batch-size", type=int, default=64, help="passages per batch (in-batch negatives)")
    p.add_argument("--learning-rate", type=float, default=3e-5, help="AdamW learning rate")
    p.add_argument("--max-seq-length", type=int, default=128, help="tokens per passage")
    p.add_argument("--temperature", type=float, default=0.05, help="contrastive loss temperature")
    p.add_argument("--seed", type=int, default=42, help="random seed")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.climedbench.simcse import train_simcse

    manifest = train_simcse(
        args.model, args.corpus, args.output, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.learning_rate, max_seq_length=args.max_seq_length, temperature=args.temperature, seed=args.seed,
    )
    print(json_output.dumps(manifest))
    print(f"saved to {args.output}; use it with -T similarity_model={args.output} or CLIMEDBENCH_SIMILARITY_MODEL={args.output}")
    return 0
