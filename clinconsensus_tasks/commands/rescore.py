"""``clinconsensus-eval rescore``: the answers of a log graded again by another judge, same protocol.

The judging protocol the log recorded (its judge mode, its prompt by name and sha256, the failure
threshold and verdict length its header names) is kept unless a flag changes it, so the new log is
the same measurement with another judge, as ``inspect score`` keeps a run's own settings. What came
from the log and what a flag changed is printed on standard error and under ``protocol`` in the JSON.
"""

from __future__ import annotations

import argparse
import sys

from clinconsensus_tasks import json_output
from clinconsensus_tasks.commands.arguments import judge_settings
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import JUDGE_MODES


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("log", help="Inspect log (.eval/.json) or lm-eval samples file (.jsonl), or a folder or URL holding one")
    p.add_argument("--output", required=True, help="the new log, of the same kind")
    p.add_argument("--judge-mode", choices=JUDGE_MODES, help="change the judge mode (default: the one the log recorded)")
    p.add_argument("--judge-prompt", metavar="official|project|FILE",
                   help="change the judge prompt (default: the one the log recorded, loaded again and checked by its sha256)")
    p.add_argument("--judge-base-url", help="OpenAI-compatible judge endpoint; default $CLINCONSENSUS_JUDGE_BASE_URL")
    p.add_argument("--judge-model", help="judge model name; default $CLINCONSENSUS_JUDGE_MODEL")
    p.add_argument("--judge-api-key", help="judge API key; default $CLINCONSENSUS_JUDGE_API_KEY, else EMPTY")
    p.add_argument("--judge-concurrency", type=int, help="judge requests in flight; default $CLINCONSENSUS_JUDGE_CONCURRENCY, else 32")
    p.add_argument("--judge-failure-threshold", help="share of failed judgments that stops the command (0.01 or 1%%; 0 = never); "
                                                     "default: the log's, else $CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD, else 0.01")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks import settings_table
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.commands.tools import recorded_protocol, rescore
    from clinconsensus_tasks.log_files import CLINCONSENSUS, one_log

    log = one_log(args.log, CLINCONSENSUS)
    records = read_case_records(log)
    recorded = recorded_protocol(log, records)
    # The log's settings stand in for the environment's; the command's flags stand over both.
    base = {settings_table.setting(name).env_name(): value for name, value in recorded.settings.items()}
    settings = judge_settings(args, base)
    from_log = {"judge_mode": recorded.mode, **recorded.prompt, **recorded.settings}
    changed = {"judge_model": settings.model}
    if args.judge_mode and args.judge_mode != recorded.mode:
        changed["judge_mode"] = args.judge_mode
    if args.judge_prompt:
        changed["judge_prompt"] = args.judge_prompt
    if args.judge_failure_threshold is not None:
        changed["judge_failure_threshold"] = args.judge_failure_threshold
    kept = {k: v for k, v in from_log.items() if k not in changed and not (k.startswith("judge_prompt_") and "judge_prompt" in changed)}
    print("rescore: kept from the log: " + ", ".join(f"{k} {v}" for k, v in kept.items()), file=sys.stderr)
    print("rescore: changed: " + ", ".join(f"{k} {v}" for k, v in changed.items()), file=sys.stderr)
    metrics = rescore(log, args.output, settings, args.judge_mode, args.judge_prompt, records, recorded)
    print(json_output.dumps({"output": args.output, **metrics, "protocol": {"from_log": kept, "changed": changed}}))
    return 0


