"""``clinconsensus-eval include-path``: the folder of the lm-eval task YAMLs."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.lmeval_glue import task_configs_dir

    print(task_configs_dir())
    return 0
