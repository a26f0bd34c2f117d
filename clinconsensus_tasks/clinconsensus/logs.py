"""Reading graded ClinConsensus cases back from framework logs.

An Inspect log (``.eval`` or ``.json``) stores each case's :class:`GradedCase` record as its score
metadata; an lm-eval sample file (``samples_clinconsensus*.jsonl`` written by ``--log_samples``)
stores it as each document's filtered response. One reader per format turns either into
:class:`LoggedCase` rows: the record plus what the log also holds about the case (question,
answer, rubric texts, labels, where it was read). Metrics, breakdowns, judge agreement,
re-grading, exports and the report all start from these rows, so they work the same on either
framework's output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.log_files import read_inspect_log
from clinconsensus_tasks.storage import is_url, location, open_binary, storage_errors
from clinconsensus_tasks.scorers.clinconsensus.answers import visible_answer
from clinconsensus_tasks.scorers.clinconsensus.records import INSPECT_SCORER, GradedCase

# The answer as the judge saw it, in an lm-eval record beside the verdicts (Inspect: the score's answer).
JUDGED_ANSWER = "judged_answer"


@dataclass(frozen=True)
class LoggedCase:
    """A graded case as a log holds it: the record, and what the log also holds about the case
    (question, answer, rubric texts, labels, where it was read). The record's own fields are read
    from ``graded`` (``case.graded.met``, ``case.graded.result()``): nothing is copied."""

    graded: GradedCase
    question: str = ""
    answer: str = ""  # the answer the judge saw: a reasoning model's thinking removed unless the run sent it
    rubrics: list[tuple[str, str]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # the case's labels (subject, task, ...)
    where: str = ""  # file and line/sample, for messages
    provenance: tuple[dict[str, Any], ...] = ()  # each judge's provenance as the record holds it (model, host, server, prompt)


def _provenance(record: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    return tuple(p for p in (record.get("provenance"), record.get("local_provenance")) if isinstance(p, dict))


def _rubrics(meta: dict[str, Any]) -> list[tuple[str, str]]:
    return [(str(r["criterion_id"]), str(r["criterion"])) for r in meta.get("rubrics") or []]


def _lmeval_cases(path: Path) -> Iterator[LoggedCase]:
    name = str(path)  # once: a URL's str() is not free
    with open_binary(path) as handle:  # bytes, decoded per line: a file cut inside a character names its line
        for number, raw in enumerate(handle, start=1):
            where = f"{name}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataValidationError([f"{where}: not UTF-8 text (byte {exc.start + 1} of the line; a file cut short?)"]) from exc
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
                doc = sample["doc"]
                filtered = sample["filtered_resps"]
                stored = json.loads(filtered[0] if isinstance(filtered, list) else filtered)
                graded = GradedCase.from_dict(stored, where)
                if JUDGED_ANSWER in stored:
                    answer = stored[JUDGED_ANSWER]
                else:  # written before records carried it: the response as the judge saw it by default (no thinking)
                    resps = sample.get("resps") or [[""]]
                    answer = visible_answer(resps[0][0] if isinstance(resps[0], list) else resps[0], False).text
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise DataValidationError([f"{where}: not a clinconsensus lm-eval sample record ({type(exc).__name__}: {exc})"]) from exc
            yield LoggedCase(graded, str(doc.get("question", "")), str(answer), _rubrics(doc), doc, where, _provenance(stored))


def _inspect_cases(path: Path, skip_errored: bool = False) -> Iterator[LoggedCase]:
    yield from inspect_log_cases(read_inspect_log(path), path, skip_errored)


def inspect_log_cases(log: Any, path: Path | str, skip_errored: bool = False) -> Iterator[LoggedCase]:
    """The graded cases of an Inspect log already read (``log_files.read_inspect_log``): what a
    reader that needs the log's header too makes from one read (see :func:`read_case_records`)."""
    for sample in log.samples or []:
        score = (sample.scores or {}).get(INSPECT_SCORER)
        where = f"{path}: sample {sample.id!r} (epoch {sample.epoch})"
        if score is None and skip_errored and sample.error is not None:
            continue
        if score is None:
            raise DataValidationError([f"{where}: no '{INSPECT_SCORER}' score (did the sample error?)"])
        try:
            graded = GradedCase.from_dict(score.metadata or {}, where)
        except ValueError as exc:
            raise DataValidationError([str(exc)]) from exc
        meta = sample.metadata or {}
        question = sample.input if isinstance(sample.input, str) else "\n".join(m.text for m in sample.input)
        answer = score.answer or (sample.output.completion if sample.output else "")
        yield LoggedCase(graded, question, answer, _rubrics(meta), meta, where, _provenance(score.metadata or {}))


def read_case_records(path: str | Path, skip_errored: bool = False) -> list[LoggedCase]:
    """Graded cases from an Inspect log or an lm-eval ``--log_samples`` file; an Inspect sample
    without a score is an error unless it errored and ``skip_errored`` (the caller counts those)."""
    path = location(path)
    if not is_url(path) and not path.is_file():  # a URL: its one GET says whether it is there (StorageError naming it)
        raise FileNotFoundError(f"no such log file: {path}")
    with storage_errors(path):
        if path.suffix == ".jsonl":
            return list(_lmeval_cases(path))
        if path.suffix in (".eval", ".json"):
            return list(_inspect_cases(path, skip_errored))
    raise ValueError(f"{path}: expected an Inspect log (.eval/.json) or an lm-eval samples file (.jsonl)")
