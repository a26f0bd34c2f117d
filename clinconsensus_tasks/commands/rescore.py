"""``clinconsensus-eval rescore``: the answers of a log graded again by another judge or judge mode."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output
from clinconsensus_tasks.commands.arguments import judge_settings
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import JUDGE_MODES, PER_CRITERION


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", help="Inspect log (.eval/.json) or lm-eval samples file (.jsonl), or a folder or URL holding one")
    p.add_argument("--output", required=True, help="the new log, of the same kind")
    p.add_argument("--judge-mode", choices=JUDGE_MODES, default=PER_CRITERION, help="one judge call per criterion, or one per case")
    p.add_argument("--judge-base-url", help="OpenAI-compatible judge endpoint; default $CLINCONSENSUS_JUDGE_BASE_URL")
    p.add_argument("--judge-model", help="judge model name; default $CLINCONSENSUS_JUDGE_MODEL")
    p.add_argument("--judge-api-key", help="judge API key; default $CLINCONSENSUS_JUDGE_API_KEY, else EMPTY")
    p.add_argument("--judge-concurrency", type=int, help="judge requests in flight; default $CLINCONSENSUS_JUDGE_CONCURRENCY, else 32")
    p.add_argument("--judge-failure-threshold", help="share of failed judgments that stops the command (0.01 or 1%%; 0 = never); "
                                                     "default $CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD, else 0.01")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.commands.tools import rescore
    from clinconsensus_tasks.log_files import CLINCONSENSUS, one_log

    metrics = rescore(one_log(args.log, CLINCONSENSUS), args.output, judge_settings(args), args.judge_mode)
    print(json_output.dumps({"output": args.output, **metrics}))
    return 0
