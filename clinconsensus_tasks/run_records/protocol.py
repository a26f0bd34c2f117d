"""The judging protocol a run recorded, had again: how its answers were judged (the mode, the
prompt by name and sha256, the header's judge settings) and the judge template rebuilt and checked
against its recorded sha256 before any judge call. ``rescore`` keeps it unless a flag changes it,
``export-sft`` rebuilds the prompt each verdict was given; a prompt that cannot be had again as it
was is a named error, never a silent change of the measurement."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION
from clinconsensus_tasks.storage import location, storage_errors

# The settings of the judging protocol a run records in its header (Inspect's task arguments,
# lm-eval's ``--metadata`` in the results file) that a re-scoring keeps unless told otherwise.
# The prompt and the judge mode are recorded with every case.
HEADER_PROTOCOL = ("judge_failure_threshold", "judge_max_tokens", "judge_structured_output")
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
    where, header = header_settings(location(log))
    settings = {k: str(header[k]) if header.get(k) not in (None, "") else settings_table.setting(k).default
                for k in HEADER_PROTOCOL} if where else {}
    roles = tuple(sorted({role for r in records for role in r.graded.roles}))
    return Protocol(modes[0], dict(zip(PROMPT_FIELDS, prompts[0])), settings, where, roles)


def header_settings(path: Any) -> tuple[str, dict[str, Any]]:
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


def run_model(path: Any) -> tuple[str, str]:
    """The model under test of a run's log, and where the name was read: an Inspect log's header;
    for an lm-eval samples file its results file's ``model_name``, else the folder lm-eval wrote it
    in (named after the model)."""
    from clinconsensus_tasks.log_files import lmeval_run_key, model_display_name, read_inspect_log

    path = location(path)
    if path.suffix != ".jsonl":
        return str(read_inspect_log(path, header_only=True).eval.model), "the Inspect log's header"
    results = path.with_name(f"results_{lmeval_run_key(path)[1]}.json")
    with storage_errors(results):
        if results.exists():
            try:
                name = json.loads(results.read_text(encoding="utf-8")).get("model_name")
            except (ValueError, AttributeError) as exc:
                raise DataValidationError([f"{results}: not an lm-eval results file ({type(exc).__name__}: {exc})"]) from None
            if name:
                return str(name), f"model_name of {results.name}"
    return model_display_name(path.parent.name or path.stem), "the samples file's folder (no results file beside it)"


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
