"""``clinconsensus-eval rescore``: the answers of a log graded again by another judge, same protocol.

The judging protocol the log recorded (its judge mode, its prompt by name and sha256, the failure
threshold and verdict length its header names) is kept unless a flag changes it, so the new log is
the same measurement with another judge, as ``inspect score`` keeps a run's own settings. What came
from the log and what a flag changed is printed on standard error and under ``protocol`` in the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks import json_output
from clinconsensus_tasks.clinconsensus.logs import LoggedCase, read_case_records
from clinconsensus_tasks.commands.arguments import failure_share_type, judge_settings
from clinconsensus_tasks.run_records.protocol import Protocol, prompt_change, protocol_template, recorded_protocol
from clinconsensus_tasks.run_records.regrade import regrade
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import JUDGE_MODES
from clinconsensus_tasks.storage import location, make_folder, output_location, storage_errors, write_text


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
    p.add_argument("--judge-failure-threshold", type=failure_share_type, help="share of failed judgments that stops the command (0.01 or 1%%; 0 = never); "
                                                     "default: the log's, else $CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD, else 0.01")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks import settings_table
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


_UNSET: Any = object()


def rescore(log: str, output: str | Path, settings: Any, mode: str | None = None, prompt: str | None = None,
            records: Sequence[LoggedCase] | None = None, recorded: Protocol | None = None, template: Any = _UNSET) -> dict[str, float]:
    """Grade the answers stored in ``log`` again with another judge; write a new log of the same
    kind to ``output`` and return its headline metrics. The judging protocol is the one the log
    recorded (:func:`recorded_protocol`: mode, prompt checked by sha256, header settings, the last
    already in ``settings``) unless ``mode`` or ``prompt`` (``official``, ``project``, a file) say
    otherwise, so the new log is the same measurement with another judge.

    The failure policy applies as in the frameworks: when failed judgments exceed the threshold,
    ``JudgeFailureError`` is raised and no output is written (the verdicts obtained stay in the
    verdict cache: the same command run again asks only for the missing ones)."""
    from clinconsensus_tasks.judge.client import enforce_failure_policy
    from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize

    records = read_case_records(log) if records is None else records
    recorded = recorded or recorded_protocol(log, records)
    mode = mode or recorded.mode
    if template is _UNSET:
        template = protocol_template(recorded, mode, prompt)  # before any call
    fresh = asyncio.run(regrade(records, settings, mode, template))
    enforce_failure_policy(fresh, settings)
    output = output_location(output)  # a local file or a URL
    make_folder(output.parent)
    source = location(log)
    with storage_errors(source):
        if source.suffix == ".jsonl":
            write_lmeval(source, output, fresh)
        else:
            write_inspect(source, output, fresh, settings.model, mode, {"judge_failure_threshold": settings.failure_threshold})
    metrics = summarize([r.result() for r in fresh])
    metrics.pop("cases")
    return metrics


def write_lmeval(source: Path, output: Path, fresh: list[GradedCase]) -> None:
    from clinconsensus_tasks.clinconsensus.lmeval_task import process_results

    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for line, record in zip(lines, fresh):
        sample = json.loads(line)
        sample["filtered_resps"] = [json.dumps(record.to_dict(), ensure_ascii=False)]
        for key, value in process_results(sample["doc"], sample["filtered_resps"]).items():
            sample[key] = value
        out.append(json.dumps(sample, ensure_ascii=False) + "\n")
    write_text(output, "".join(out))


def write_inspect(source: Path, output: Path, fresh: list[GradedCase], judge: str, mode: str, used: dict[str, Any]) -> None:
    from inspect_ai.log import EvalMetric, write_eval_log

    from clinconsensus_tasks.log_files import read_inspect_log
    from inspect_ai.scorer import SampleScore, Score

    from inspect_ai.scorer import mean_score

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus_metrics
    from clinconsensus_tasks.scorers.clinconsensus.case_values import case_value
    from clinconsensus_tasks.scorers.clinconsensus.explanation import case_explanation
    from clinconsensus_tasks.scorers.clinconsensus.metric_table import reported_thresholds
    from clinconsensus_tasks.scorers.clinconsensus.records import INSPECT_SCORER

    log = read_inspect_log(source, whole=True)  # written back: its transcripts too
    thresholds = reported_thresholds(log.results.scores[0].metrics if log.results and log.results.scores else ()) or (10, 7)
    epochs: dict[object, list] = {}
    for sample, record in zip(log.samples or [], fresh):
        old = sample.scores[INSPECT_SCORER]
        rubrics = [(r["criterion_id"], r["criterion"]) for r in (sample.metadata or {}).get("rubrics") or ()]
        sample.scores[INSPECT_SCORER] = Score(
            value=case_value(record, thresholds),
            answer=old.answer,
            explanation=f"Re-graded by {judge} ({mode}). " + case_explanation(record, rubrics),
            metadata=record.to_dict(),
        )
        epochs.setdefault(sample.id, [sample.metadata, []])[1].append(sample.scores[INSPECT_SCORER])
    # Each case's epochs reduced as Inspect reduces them by default (the mean), then the task's metric.
    scores = [SampleScore(score=mean_score()(kept), sample_id=sid, sample_metadata=meta) for sid, (meta, kept) in epochs.items()]
    values = clinconsensus_metrics(thresholds)(scores)
    if log.results and log.results.scores:
        log.results.scores[0].metrics = {k: EvalMetric(name=k, value=float(v)) for k, v in values.items()}
    prompt = dict(fresh[0].judge_prompt) if fresh else {}
    log.eval.metadata = {**(log.eval.metadata or {}), "rescored": {"from": str(source), "judge": judge, "judge_mode": mode, **prompt}}
    # The judging settings the new verdicts were made under (a re-scoring of this log keeps these);
    # the model roles stay the run's, so the release gate still sees it was re-judged.
    log.eval.task_args = {**(log.eval.task_args or {}), "judge_mode": mode, "judge_prompt": prompt.get("judge_prompt_source")
                          if prompt.get("judge_prompt") not in ("official", "project", "project-batched") else
                          prompt.get("judge_prompt", "").replace("project-batched", "project"), **used}
    write_eval_log(log, str(output))
