"""The one record of a graded ClinConsensus case, from the judge's verdicts to every metric.

Grading produces a :class:`GradedCase` (verdicts of the reference judge and, in a dual-judge run,
of the second judge); the Inspect scorer stores ``to_dict()`` as its score metadata, lm-eval's
judge filter as each document's filtered response; both frameworks' metrics, the log readers,
``rescore``, ``export-sft``, the regression and agreement tools and the report read it back with
``from_dict``. There is no other packing of a case's result: a new per-case field is added here,
once, and every reader has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.scorers.clinconsensus.cacs import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS, CaseResult, case_terms
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import PairedCase, pair_verdicts
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment, grade_answer

RECORD_VERSION = 1


def _count_met(judgments: Sequence[CriterionJudgment]) -> int:
    return sum(1 for j in judgments if j.met)


def _count_failures(judgments: Sequence[CriterionJudgment]) -> int:
    return sum(1 for j in judgments if j.met is None)


@dataclass(frozen=True)
class GradedCase:
    """One case (one epoch of it) graded against its rubric.

    ``judgments`` are the reference judge's verdicts in rubric order; ``local_judgments`` those of
    the second judge of a dual-judge run (empty otherwise). ``slices`` are the case's breakdown
    labels (difficulty, subject, task, audience), so a record needs nothing else to be scored.
    """

    case_id: str
    judge: str
    judge_mode: str
    judgments: tuple[CriterionJudgment, ...]
    answer_empty: bool = False
    slices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    epoch: int = 1
    local_judge: str = ""
    local_judgments: tuple[CriterionJudgment, ...] = ()

    # -- counts and metric inputs -------------------------------------------------------------

    @property
    def met(self) -> int:
        return _count_met(self.judgments)

    @property
    def judged(self) -> int:
        return len(self.judgments)

    @property
    def failures(self) -> int:
        return _count_failures(self.judgments)

    @property
    def dual(self) -> bool:
        return bool(self.local_judgments)

    def result(self) -> CaseResult:
        return CaseResult(self.met, self.judged, self.failures, self.slices, self.case_id)

    def local_result(self) -> CaseResult | None:
        if not self.dual:
            return None
        return CaseResult(_count_met(self.local_judgments), len(self.local_judgments), _count_failures(self.local_judgments), self.slices, self.case_id)

    def paired(self) -> PairedCase | None:
        """The two judges' results and the confusion of their verdicts (dual-judge runs only)."""
        other = self.local_result()
        if other is None:
            return None
        confusion = pair_verdicts([j.met for j in self.judgments], [j.met for j in self.local_judgments])
        return PairedCase(self.result(), other, confusion)

    def terms(self, thresholds: Sequence[int] = DEFAULT_THRESHOLDS, n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
        """This case's term of each headline metric (the metric is their mean over cases)."""
        return case_terms(self.met, self.judged, thresholds, n_criteria)

    def with_local(self, other: "GradedCase") -> "GradedCase":
        """This record with ``other``'s verdicts as the second judge's (same case, same answer)."""
        if other.case_id != self.case_id:
            raise ValueError(f"cannot pair case {self.case_id!r} with case {other.case_id!r}")
        return replace(self, local_judge=other.judge, local_judgments=other.judgments)

    # -- serialisation ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly and flat: counts first (for people reading a log), then the verdicts."""
        out: dict[str, Any] = {
            "record_version": RECORD_VERSION,
            "case_id": self.case_id,
            "epoch": self.epoch,
            "judge": self.judge,
            "judge_mode": self.judge_mode,
            "met": self.met,
            "judged": self.judged,
            "failures": self.failures,
            "empty_answer": self.answer_empty,
            "slices": {dim: list(labels) for dim, labels in self.slices.items()},
            "judgments": [j.to_dict() for j in self.judgments],
        }
        if self.dual:
            out.update(
                local_judge=self.local_judge,
                local_met=_count_met(self.local_judgments),
                local_failures=_count_failures(self.local_judgments),
                local_judgments=[j.to_dict() for j in self.local_judgments],
            )
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "") -> "GradedCase":
        """Inverse of :meth:`to_dict`. Counts are recomputed from the verdicts, never trusted
        from the dict. A record that is not one raises ``ValueError`` naming ``where`` and the field."""
        prefix = f"{where}: " if where else ""
        if not isinstance(data, Mapping):
            raise ValueError(f"{prefix}not a graded-case record (expected a JSON object, got {type(data).__name__})")
        for name in ("case_id", "judgments"):
            if name not in data:
                raise ValueError(f"{prefix}not a graded-case record: field {name!r} is missing")
        try:
            judgments = tuple(CriterionJudgment.from_dict(j) for j in data["judgments"])
            local = tuple(CriterionJudgment.from_dict(j) for j in data.get("local_judgments") or ())
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{prefix}case {data.get('case_id')!r}: field 'judgments': {type(exc).__name__}: {exc}") from None
        slices = {str(dim): tuple(str(x) for x in labels) for dim, labels in (data.get("slices") or {}).items()}
        return cls(
            case_id=str(data["case_id"]),
            judge=str(data.get("judge") or ""),
            judge_mode=str(data.get("judge_mode") or ""),
            judgments=judgments,
            answer_empty=bool(data.get("empty_answer", False)),
            slices=slices,
            epoch=int(data.get("epoch") or 1),
            local_judge=str(data.get("local_judge") or ""),
            local_judgments=local,
        )


async def grade_case(
    case_id: str,
    question: str,
    answer: str,
    rubrics: Sequence[tuple[str, str]],
    complete: Any,
    judge: str,
    mode: str,
    max_attempts: int,
    slices: Mapping[str, tuple[str, ...]] | None = None,
    epoch: int = 1,
) -> GradedCase:
    """Grade one answer with one judge (:func:`rubric_grading.grade_answer`) into its record."""
    judgments = await grade_answer(question, answer, rubrics, complete, mode, max_attempts)
    return GradedCase(case_id, judge, mode, tuple(judgments), not (answer or "").strip(), dict(slices or {}), epoch)
