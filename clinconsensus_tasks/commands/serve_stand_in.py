"""``clinconsensus-eval serve-stand-in``: the project's stand-in model and judge (``stand_in``), the
OpenAI-compatible server on 127.0.0.1 the demo and the tests use, as a server of its own."""

from __future__ import annotations

import argparse

from clinconsensus_tasks.stand_in.server import add_command_arguments, serve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_command_arguments(parser)


def main(args: argparse.Namespace) -> int:
    return serve(args)
