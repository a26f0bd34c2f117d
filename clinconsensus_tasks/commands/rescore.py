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
    from clinconsensus_tasks.commands.tools import prompt_change, protocol_template, recorded_protocol, rescore
    from clinconsensus_tasks.log_files import CLINCONSENSUS, one_log
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import JudgeFailureError
    from clinconsensus_tasks.scorers.clinconsensus.jury import JUROR_PREFIX
    from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED

    log = one_log(args.log, CLINCONSENSUS)
    records = read_case_records(log)
    recorded = recorded_protocol(log, records)
    mode = args.judge_mode or recorded.mode
    settings_from_log = dict(recorded.settings)
    not_applied = {}
    if mode == BATCHED and "judge_max_tokens" in settings_from_log:  # the client's batched budget is its own (96 a criterion)
        not_applied["judge_max_tokens"] = f"{settings_from_log.pop('judge_max_tokens')} (batched mode: 96 tokens a criterion)"
    # The log's settings stand in for the environment's; the command's flags stand over both.
    base = {settings_table.setting(name).env_name(): value for name, value in settings_from_log.items()}
    settings = judge_settings(args, base)
    template = protocol_template(recorded, mode, args.judge_prompt)  # loaded and checked before any call
    kept = {"judge_mode": recorded.mode} if mode == recorded.mode else {}
    changed = {"judge_model": settings.model} if settings.model else {}
    if mode != recorded.mode:
        changed["judge_mode"] = f"{recorded.mode} -> {mode}"
    prompt = prompt_change(recorded, template, mode)
    if prompt:
        changed["judge_prompt"] = prompt
    else:
        kept.update(recorded.prompt)
    for name, value in settings_from_log.items():
        flagged = getattr(args, name, None)
        if flagged is not None and str(flagged) != value:
            changed[name] = f"{value} -> {flagged}"
        else:
            kept[name] = value
    judges = [r for r in recorded.roles if r.startswith(JUROR_PREFIX) or r == SECOND_ROLE]
    if judges:
        changed["judges"] = (f"a jury of {sum(r.startswith(JUROR_PREFIX) for r in judges)} -> one judge" if any(
            r.startswith(JUROR_PREFIX) for r in judges) else "the second judge left out: the headline judge only")
    header = recorded.header or "none found (a samples file without its results file): the environment's settings apply"
    print(f"rescore: the log's header: {header}", file=sys.stderr)
    print("rescore: kept from the log: " + (", ".join(f"{k} {v}" for k, v in kept.items()) or "nothing"), file=sys.stderr)
    print("rescore: changed: " + (", ".join(f"{k} {v}" for k, v in changed.items()) or "nothing"), file=sys.stderr)
    if not_applied:
        print("rescore: not applied: " + ", ".join(f"{k} {v}" for k, v in not_applied.items()), file=sys.stderr)
    try:
        metrics = rescore(log, args.output, settings, mode, args.judge_prompt, records, recorded, template)
    except JudgeFailureError as exc:
        if "judge_failure_threshold" in kept:
            raise JudgeFailureError(f"{exc} (the threshold {kept['judge_failure_threshold']} is the one the log's header "
                                    "recorded, which stands over the environment: change it with --judge-failure-threshold)") from exc
        raise
    print(json_output.dumps({"output": args.output, **metrics,
                             "protocol": {"header": recorded.header, "from_log": kept, "changed": changed, "not_applied": not_applied}}))
    return 0
