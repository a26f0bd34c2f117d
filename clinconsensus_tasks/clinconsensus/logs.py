"""Reading per-case ClinConsensus results back from framework logs.

Both an Inspect log (``.eval`` or ``.json``) and an lm-eval sample file (``samples_clinconsensus*.jsonl``
written by ``--log_samples``) hold, for every case, its labels, the question, the model's answer and
the judge verdicts (of both judges in a dual-judge run). This module turns either into
:class:`CaseRecord` rows, so metrics, breakdowns, judge agreement, re-grading and SFT export all
work the same from either framework, with the same scoring core.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from clinconsensus_tasks.clinconsensus.dataset import slices_of
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult

INSPECT_SCORER = "rubric_scorer"


@dataclass(frozen=True)
class CaseRecord:
    case_id: str
    result: CaseResult
    judgments: list[dict[str, Any]]
    question: str = ""
    answer: str = ""
    rubrics: list[tuple[str, str]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  # the case's labels (subject, task, ...)
    judge: str = ""
    local_judge: str = ""
    local_judgments: list[dict[str, Any]] = field(default_factory=list)
    where: str = ""  # file and line/sample, for messages
    epoch: int = 1
    suspect: list[str] = field(default_factory=list)  # why the answer looks like judge injection (answer_guard)

    @property
    def local_result(self) -> CaseResult | None:
        if not self.local_judgments:
            return None
        met = sum(1 for j in self.local_judgments if j.get("met"))
        failures = sum(1 for j in self.local_judgments if j.get("met") is None)
        return CaseResult(met, len(self.local_judgments), failures, self.result.slices)


def _rubrics(meta: dict[str, Any]) -> list[tuple[str, str]]:
    return [(str(r["criterion_id"]), str(r["criterion"])) for r in meta.get("rubrics") or []]


def _lmeval_records(path: Path) -> Iterator[CaseRecord]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                sample = json.loads(line)
                doc = sample["doc"]
                filtered = sample["filtered_resps"]
                record = json.loads(filtered[0] if isinstance(filtered, list) else filtered)
                resps = sample.get("resps") or [[""]]
                answer = resps[0][0] if isinstance(resps[0], list) else resps[0]
                local = record.get("local") or {}
                yield CaseRecord(
                    case_id=str(doc["case_id"]),
                    result=CaseResult(int(record["met"]), int(record["judged"]), int(record["failures"]), slices_of(doc)),
                    judgments=record.get("judgments", []),
                    question=str(doc.get("question", "")),
                    answer=str(answer),
                    rubrics=_rubrics(doc),
                    metadata=doc,
                    judge=str(record.get("judge_model", "")),
                    local_judge=str(local.get("judge_model", "")),
                    local_judgments=local.get("judgments", []),
                    where=where,
                    suspect=list(record.get("suspect_answer") or []),
                )
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise DataValidationError([f"{where}: not a clinconsensus lm-eval sample record ({type(exc).__name__}: {exc})"]) from exc


def _inspect_records(path: Path) -> Iterator[CaseRecord]:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path))
    for sample in log.samples or []:
        score = (sample.scores or {}).get(INSPECT_SCORER)
        where = f"{path}: sample {sample.id!r} (epoch {sample.epoch})"
        if score is None or not isinstance(score.value, dict):
            raise DataValidationError([f"{where}: no '{INSPECT_SCORER}' score (did the sample error?)"])
        value, meta, extra = score.value, sample.metadata or {}, score.metadata or {}
        question = sample.input if isinstance(sample.input, str) else "\n".join(m.text for m in sample.input)
        yield CaseRecord(
            case_id=str(sample.id),
            result=CaseResult(int(value["met"]), int(value["judged"]), int(value["failures"]), slices_of(meta)),
            judgments=extra.get("judgments", []),
            question=question,
            answer=score.answer or (sample.output.completion if sample.output else ""),
            rubrics=_rubrics(meta),
            metadata=meta,
            judge=str(extra.get("judge", "")),
            local_judge=str(extra.get("local_judge", "")),
            local_judgments=extra.get("local_judgments", []),
            where=where,
            epoch=sample.epoch,
            suspect=list(extra.get("suspect_answer") or []),
        )


def read_case_records(path: str | Path) -> list[CaseRecord]:
    """Per-case records from an Inspect log or an lm-eval ``--log_samples`` file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such log file: {path}")
    if path.suffix == ".jsonl":
        return list(_lmeval_records(path))
    if path.suffix in (".eval", ".json"):
        return list(_inspect_records(path))
    raise ValueError(f"{path}: expected an Inspect log (.eval/.json) or an lm-eval samples file (.jsonl)")
