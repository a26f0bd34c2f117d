"""Judge tools behind ``clinconsensus-eval``: compare judges, check them against human labels,
re-grade stored answers, and export one judge's verdicts as SFT data for a local judge.

All of them read Inspect logs and lm-eval sample files through :mod:`clinconsensus.logs`, so
they work the same on the output of either framework. The agreement of two judges on records
already read is ``run_records.agreement.compare_records`` (shared with ``summarize`` and the report).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.clinconsensus.logs import LoggedCase, read_case_records
from clinconsensus_tasks.run_records.agreement import compare_records
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, per_criterion_messages
from clinconsensus_tasks.storage import file_sha256, location, make_folder, output_location, storage_errors, write_text

# -- comparing two sets of verdicts ----------------------------------------------------------------


def compare_logs(reference_log: str, other_log: str | None = None, thresholds: Sequence[int] = (7, 10),
                 n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
    """Agreement of two judges or judge modes on the same answers, read from their logs
    (:func:`compare_records`)."""
    reference = read_case_records(reference_log)
    return compare_records(reference, None if other_log is None else read_case_records(other_log), thresholds, n_criteria,
                           where=reference_log)


# -- agreement with human labels ------------------------------------------------------------------


# -- SFT export ---------------------------------------------------------------------------------------


def export_sft(logs: Sequence[str], output: str | Path, judge: str = "reference", dev_share: float = 0.1, seed: int = 0) -> dict[str, Any]:
    """Turn one judge's verdicts into chat-format SFT records for training a local judge.

    Each record is the exact per-criterion prompt the local judge is run with, plus the verdict
    JSON as the assistant turn. Failed judgments are skipped (and counted), identical records are
    kept once, and cases are split into train and dev by a hash of the case id, so no case is in
    both. Writes ``train.jsonl``, ``dev.jsonl`` and ``manifest.json``.
    """
    if judge not in ("reference", "local"):
        raise ValueError("judge must be 'reference' or 'local'")
    if not 0 <= dev_share < 1:
        raise ValueError("dev_share must lie in [0, 1)")
    from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_logs

    logs = benchmark_logs(logs, CLINCONSENSUS)  # a folder or URL prefix: the ClinConsensus logs in it
    output = output_location(output)  # a local folder or a URL prefix
    make_folder(output)
    seen: set[str] = set()
    splits: dict[str, list[str]] = {"train": [], "dev": []}
    cases: dict[str, set[str]] = {"train": set(), "dev": set()}
    skipped = duplicates = 0
    judges: set[str] = set()
    templates: dict[tuple[str, str], Any] = {}
    for log in logs:
        for record in read_case_records(log):
            graded = record.graded
            template = judged_with(record, templates)
            verdicts = graded.roles.get(SECOND_ROLE) if judge == "local" else graded.headline
            judgments = verdicts.judgments if verdicts else ()
            judges.add(verdicts.judge if verdicts else "")
            case_id = graded.case_id
            bucket = int(hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
            split = "dev" if bucket < dev_share else "train"
            criteria = dict(record.rubrics)
            for j in judgments:
                if j.met is None or j.attempts == 0:  # failed, or an empty answer nobody judged
                    skipped += 1
                    continue
                text = criteria[j.criterion_id]
                messages = template.messages(record.question, record.answer, text) if template else per_criterion_messages(record.question, record.answer, text)
                verdict = json.dumps({"explanation": j.explanation, "criteria_met": j.met}, ensure_ascii=False)
                line = json.dumps({"case_id": case_id, "criterion_id": j.criterion_id,
                                   "messages": messages + [{"role": "assistant", "content": verdict}]}, ensure_ascii=False)
                digest = hashlib.sha256(json.dumps(messages + [verdict], ensure_ascii=False).encode()).hexdigest()
                if digest in seen:
                    duplicates += 1
                    continue
                seen.add(digest)
                splits[split].append(line)
                cases[split].add(case_id)
    files = {}
    for split, lines in splits.items():
        path, text = output / f"{split}.jsonl", "".join(line + "\n" for line in lines)
        write_text(path, text)
        files[split] = {"path": str(path), "records": len(lines), "cases": len(cases[split]), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    manifest = {
        "format": "chat messages (the per-criterion judge prompt each case was judged with, then the verdict JSON)",
        "judge_prompts": sorted({f"{name} sha256 {sha}" for name, sha in templates}),
        "judge": judge,
        "judge_models": sorted(j for j in judges if j),
        "sources": [{"path": str(p), "sha256": file_sha256(p)} for p in logs],
        "dev_share": dev_share,
        "seed": seed,
        "files": files,
        "skipped_failed_judgments": skipped,
        "duplicates_dropped": duplicates,
    }
    write_text(output / "manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    return manifest



def judged_with(record: LoggedCase, templates: dict[tuple[str, str], Any]) -> Any:
    """The per-criterion template ``record`` was judged with (``None``: the project's prompt), as
    its record names it, rebuilt and checked against the recorded sha256 (``templates`` keeps the
    ones built). A batched record, or a prompt that cannot be rebuilt as it was, is an error."""
    from clinconsensus_tasks.judge.official_template import PROJECT, load_judge_prompt, prompt_record

    info = record.graded.judge_prompt
    name, sha = info.get("judge_prompt", ""), info.get("judge_prompt_sha256", "")
    if record.graded.judge_mode != PER_CRITERION:
        raise DataValidationError([f"{record.where}: judged in {record.graded.judge_mode} mode: export-sft exports per-criterion "
                                   "verdicts with the prompt they were given; re-grade per criterion first (rescore)"])
    if (name, sha) not in templates:
        template = None if name in ("", PROJECT) else load_judge_prompt(name, PER_CRITERION)
        rebuilt = prompt_record(template, PER_CRITERION)["judge_prompt_sha256"]
        if sha and rebuilt != sha:
            raise DataValidationError([f"{record.where}: judged with prompt {name!r} (sha256 {sha}), but that prompt now has sha256 "
                                       f"{rebuilt}: export-sft cannot rebuild the prompt the judge saw"])
        templates[(name, sha)] = template
    return templates[(name, sha)]


# -- re-grading stored answers ----------------------------------------------------------------------


async def regrade(records: Sequence[LoggedCase], settings: Any, mode: str, template: Any = None) -> list[GradedCase]:
    from clinconsensus_tasks.judge.client import judge_documents

    docs = [{**r.metadata, "case_id": r.graded.case_id, "question": r.question,
             "rubrics": [{"criterion_id": c, "criterion": t} for c, t in r.rubrics]} for r in records]
    out, _ = await judge_documents([r.answer for r in records], docs, settings, mode, template=template)
    # The answer is the one the log holds: what was noted about it when it was first graded stays.
    return [replace(fresh, epoch=r.graded.epoch, answer_truncated=r.graded.answer_truncated, thinking_removed=r.graded.thinking_removed)
            for fresh, r in zip(out, records)]


# -- the protocol a re-scoring keeps -----------------------------------------------------------------

# The settings of the judging protocol a run records in its header (Inspect's task arguments,
# lm-eval's ``--metadata`` in the results file) that a re-scoring keeps unless told otherwise.
# The prompt and the judge mode are recorded with every case.
HEADER_PROTOCOL = ("judge_failure_threshold", "judge_max_tokens")
PROMPT_FIELDS = ("judge_prompt", "judge_prompt_sha256", "judge_prompt_source")


@dataclass(frozen=True)
class Protocol:
    """How a run's answers were judged: the mode, the prompt (name, sha256, source), the header's
    :data:`HEADER_PROTOCOL` settings (a setting the header holds no value for is the run's default),
    whether a header was found at all, and the judge roles of its records."""

    mode: str
    prompt: dict[str, str]
    settings: dict[str, str] = field(default_factory=dict)
    header: str = ""  # where the settings were read ("" when no header was found: the environment's apply)
    roles: tuple[str, ...] = ()


def recorded_protocol(log: str | Path, records: Sequence[LoggedCase]) -> Protocol:
    """The protocol ``log`` recorded: its cases' judge mode and prompt (one of each, else an error
    naming them) and the header's settings (:data:`HEADER_PROTOCOL`)."""
    from clinconsensus_tasks import settings_table

    if not records:
        raise DataValidationError([f"{log}: no graded case to re-score"])
    modes = sorted({r.graded.judge_mode for r in records})
    prompts = sorted({tuple(r.graded.judge_prompt.get(k, "") for k in PROMPT_FIELDS) for r in records})
    if len(modes) != 1 or len(prompts) != 1:
        raise DataValidationError([f"{log}: its cases were judged under {len(modes)} judge mode(s) {modes} and {len(prompts)} "
                                   f"prompt(s) {[p[0] for p in prompts]}: re-score a log of one protocol"])
    where, header = _header_settings(location(log))
    settings = {k: str(header[k]) if header.get(k) not in (None, "") else settings_table.setting(k).default
                for k in HEADER_PROTOCOL} if where else {}
    roles = tuple(sorted({role for r in records for role in r.graded.roles}))
    return Protocol(modes[0], dict(zip(PROMPT_FIELDS, prompts[0])), settings, where, roles)


def _header_settings(path: Any) -> tuple[str, dict[str, Any]]:
    """Where a run's header is and the judge settings it recorded: an Inspect log's task arguments,
    an lm-eval samples file's results file's task metadata (``--metadata``); ``("", {})`` where
    there is none (a samples file without its results file)."""
    from clinconsensus_tasks.log_files import lmeval_run_key, lmeval_task, read_inspect_log

    if path.suffix != ".jsonl":
        return str(path), dict(read_inspect_log(path, header_only=True).eval.task_args or {})
    results = path.with_name(f"results_{lmeval_run_key(path)[1]}.json")
    with storage_errors(results):
        if not results.exists():
            return "", {}
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
            metadata = ((data.get("configs") or {}).get(lmeval_task(path)) or {}).get("metadata") or {}
        except (ValueError, AttributeError) as exc:
            raise DataValidationError([f"{results}: not an lm-eval results file ({type(exc).__name__}: {exc})"]) from None
    return str(results), dict(metadata) if isinstance(metadata, dict) else {}


def protocol_template(recorded: Protocol, mode: str, choice: str | None) -> Any:
    """The judge template to re-score with: ``choice`` (``--judge-prompt``) when given (whether it is
    the recorded one is told by its sha256: :func:`prompt_change`), else the one the log recorded,
    loaded again and checked against its recorded sha256 before any judge call (a prompt that cannot
    be had again is a named error). ``None``: the project's prompt."""
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.judge.official_template import OFFICIAL, PROJECT, load_judge_prompt, prompt_record

    if choice is not None:
        return load_judge_prompt(choice, mode)
    name, sha, source = (recorded.prompt[k] for k in PROMPT_FIELDS)
    if mode != recorded.mode:  # another mode asked for: the same prompt's family in it (batched has one prompt)
        return load_judge_prompt(PROJECT if name.startswith(PROJECT) else OFFICIAL if name == OFFICIAL else source, mode)
    if not name:
        raise ConfigurationError("the log does not record its judge prompt: name one with --judge-prompt (official, project or a file)")
    if name in (PROJECT, "project-batched"):
        template, again = None, prompt_record(None, mode)["judge_prompt_sha256"]
        fix = "re-score with the clinconsensus-tasks version that ran it, or change the prompt with --judge-prompt"
    elif name == OFFICIAL:
        template = load_judge_prompt(OFFICIAL, mode)
        again, fix = template.sha256, "give that script with --judge-prompt FILE, or change the prompt with --judge-prompt"
    else:
        if not Path(source).is_file():
            raise ConfigurationError(f"the log's judge prompt {name!r} (sha256 {sha[:12]}...) was read from {source}, which is not "
                                     "there now: give the same template with --judge-prompt FILE (its sha256 is compared with the "
                                     "log's; another one is reported as a changed prompt)")
        template = load_judge_prompt(source, mode)
        again, fix = template.sha256, "give the template the run used with --judge-prompt FILE"
    if again != sha:
        raise ConfigurationError(f"the log's judge prompt {name!r} has sha256 {sha[:12]}..., the one loaded now {again[:12]}...: "
                                 f"not the same prompt; {fix}")
    return template


def prompt_change(recorded: Protocol, template: Any, mode: str) -> str:
    """``""`` when ``template`` in ``mode`` is the prompt the log recorded (by sha256), else what changed."""
    from clinconsensus_tasks.judge.official_template import prompt_record

    now = prompt_record(template, mode)
    before = recorded.prompt.get("judge_prompt_sha256", "")
    if now["judge_prompt_sha256"] == before:
        return ""
    return (f"{recorded.prompt.get('judge_prompt') or '(not recorded)'} (sha256 {before[:12]}...) -> {now['judge_prompt']} "
            f"(sha256 {now['judge_prompt_sha256'][:12]}...)")


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
            _write_lmeval(source, output, fresh)
        else:
            _write_inspect(source, output, fresh, settings.model, mode, {"judge_failure_threshold": settings.failure_threshold})
    metrics = summarize([r.result() for r in fresh])
    metrics.pop("cases")
    return metrics


def _write_lmeval(source: Path, output: Path, fresh: list[GradedCase]) -> None:
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


def _write_inspect(source: Path, output: Path, fresh: list[GradedCase], judge: str, mode: str, used: dict[str, Any]) -> None:
    from inspect_ai.log import EvalMetric, write_eval_log

    from clinconsensus_tasks.log_files import read_inspect_log
    from inspect_ai.scorer import SampleScore, Score

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus_metrics
    from clinconsensus_tasks.scorers.clinconsensus.records import INSPECT_SCORER

    log = read_inspect_log(source, whole=True)  # written back: its transcripts too
    scores = []
    for sample, record in zip(log.samples or [], fresh):
        old = sample.scores[INSPECT_SCORER]
        sample.scores[INSPECT_SCORER] = Score(
            value={"met": record.met, "judged": record.judged, "failures": record.failures, "empty": int(record.answer_empty)},
            answer=old.answer,
            explanation=f"{record.met}/{record.judged} criteria met (re-graded by {judge}, {mode})",
            metadata=record.to_dict(),
        )
        scores.append(SampleScore(score=sample.scores[INSPECT_SCORER], sample_id=sample.id, sample_metadata=sample.metadata))
    values = clinconsensus_metrics()(scores)
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
