"""``clinconsensus-eval agreement``: retired; judges are checked against physicians with ``review``.

It matched a JSONL of labels to verdicts by case and criterion only, so labels given on one model's
answers were applied to any other model's answers to the same case without a word, and it gave no
interval. ``review`` matches every label to the answer it was given on (by the answer's sha256),
resamples cases for its intervals, and feeds the release gate. The command stays to say so.
"""

from __future__ import annotations

import argparse

from clinconsensus_tasks.errors import ConfigurationError

RETIRED = ("`agreement --labels` is retired: it matched labels by case and criterion only, so labels given on one model's "
           "answers were applied to another model's answers, and it gave no interval. Use `clinconsensus-eval review export "
           "RUN... --output DIR`, have the sheets filled, then `clinconsensus-eval review score DIR` (each label matched to the "
           "answer it was given on, by its sha256; docs/review.md)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="*", help="ignored: the command is retired and names what to use instead")
    p.add_argument("--labels", metavar="FILE", help="ignored: the command is retired (use review export and review score) (default: none)")
    p.add_argument("--json", action="store_true", help="ignored: the command is retired")


def main(args: argparse.Namespace) -> int:
    raise ConfigurationError(RETIRED)
