"""The one record of a graded ClinConsensus case, from the judge's verdicts to every metric.

Grading produces a :class:`GradedCase` (the verdicts of each judge role: the headline grader and,
in a dual-judge run, the second judge); the Inspect scorer stores ``to_dict()`` as its score metadata, lm-eval's
judge filter as each document's filtered response; both frameworks' metrics, the log readers,
``rescore``, ``export-sft``, the regression and agreement tools and the report read it back with
``from_dict``. There is no other packing of a case's result: a new per-case field is added here,
once, and every reader has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS, case_terms
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import PairedCase, pair_verdicts
from clinconsensus_tasks.scorers.clinconsensus.answer_guard import suspect_reasons
from clinconsensus_tasks.scorers.redact import held_secrets, redact
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import FailureTally, reason_counts
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import prompt_fixed_text
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment, count_failures, count_met, failures_of, grade_answer
from clinconsensus_tasks.scorers.clinconsensus.verdicts import STRICT

RECORD_VERSION = 2  # 2: judge roles (the second judge under "roles", not "local_*")
PROMPT_FIELDS = ("judge_prompt", "judge_prompt_sha256", "judge_prompt_source")
VERDICT_READING_FIELD = "judge_verdict_reading"  # written when not the project's strict rule (absent: strict)


INSPECT_SCORER = "rubric_scorer"  # the Inspect scorer's registered name: logs key the records by it
HEADLINE_ROLE = "grader"  # the judge whose verdicts give the headline metrics
SECOND_ROLE = "local_grader"  # the second judge of a dual-judge run (Inspect's role name)


@dataclass(frozen=True)
class RoleVerdicts:
    """One judge role's grading of a case: the model, its verdicts in rubric order, and the tokens
    its API reported (``scorers.usage.TokenUsage`` fields; empty when not recorded)."""

    judge: str
    judgments: tuple[CriterionJudgment, ...]
    usage: Mapping[str, int] = field(default_factory=dict)
    # the answer was cut to fit this judge's input limit: answer_chars, judged_chars, limit_tokens, why
    input_cut: Mapping[str, Any] = field(default_factory=dict)

    def result(self, slices: Mapping[str, tuple[str, ...]], case_id: str) -> CaseResult:
        return CaseResult(count_met(self.judgments), len(self.judgments), count_failures(self.judgments), slices, case_id)

    def to_dict(self, secrets: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"judge": self.judge, "met": count_met(self.judgments), "failures": count_failures(self.judgments),
                               "judgments": [_redacted(j, secrets) for j in self.judgments]}
        if self.usage:
            out["usage"] = dict(self.usage)
        if self.input_cut:
            out["input_cut"] = dict(self.input_cut)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RoleVerdicts":
        return cls(str(data.get("judge") or ""), tuple(CriterionJudgment.from_dict(j) for j in data.get("judgments") or ()),
                   {str(k): int(v) for k, v in (data.get("usage") or {}).items()}, dict(data.get("input_cut") or {}))


@dataclass(frozen=True)
class GradedCase:
    """One case (one epoch of it) graded against its rubric.

    ``roles`` maps each judge role to its verdicts (:class:`RoleVerdicts`), the headline role
    (:data:`HEADLINE_ROLE`) first; a dual-judge run is the case of two roles. ``judge``,
    ``judgments`` and ``judge_usage`` are the headline role's. ``slices`` are the case's breakdown
    labels (difficulty, subject, task, audience), so a record needs nothing else to be scored.
    """

    case_id: str
    judge_mode: str
    roles: Mapping[str, RoleVerdicts]
    answer_empty: bool = False
    slices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    epoch: int = 1
    answer_truncated: bool = False  # the generation limit cut the answer
    thinking_removed: bool = False  # a reasoning model's thinking was taken out before judging
    judge_prompt: Mapping[str, str] = field(default_factory=dict)  # judge_prompt, _sha256, _source
    suspect: tuple[str, ...] = ()  # why the answer looks like it tries to steer the judge (answer_guard)
    verdict_reading: str = STRICT  # how the judges' replies were read: verdicts.STRICT, or OFFICIAL (the official runner's)

    def __post_init__(self) -> None:
        if HEADLINE_ROLE not in self.roles:
            raise ValueError(f"case {self.case_id!r}: no verdicts of the headline role {HEADLINE_ROLE!r}")

    @classmethod
    def of_judge(cls, case_id: str, judge: str, judge_mode: str, judgments: Sequence[CriterionJudgment],
                 usage: Mapping[str, int] | None = None, **fields: Any) -> "GradedCase":
        """A record graded by one judge (the headline role)."""
        return cls(case_id, judge_mode, {HEADLINE_ROLE: RoleVerdicts(judge, tuple(judgments), dict(usage or {}))}, **fields)

    # -- the headline role --------------------------------------------------------------------

    @property
    def headline(self) -> RoleVerdicts:
        return self.roles[HEADLINE_ROLE]

    @property
    def judge(self) -> str:
        return self.headline.judge

    @property
    def judgments(self) -> tuple[CriterionJudgment, ...]:
        return self.headline.judgments

    @property
    def judge_usage(self) -> Mapping[str, int]:
        return self.headline.usage

    # -- counts and metric inputs -------------------------------------------------------------

    @property
    def met(self) -> int:
        return count_met(self.judgments)

    @property
    def judged(self) -> int:
        return len(self.judgments)

    @property
    def failures(self) -> int:
        return count_failures(self.judgments)

    @property
    def all_judgments(self) -> list[CriterionJudgment]:
        """Every role's verdicts together (failures and the failure policy count them all)."""
        return [j for verdicts in self.roles.values() for j in verdicts.judgments]

    def failure_reasons(self) -> dict[str, int]:
        """How many failed judgments of each reason, every role together (``judge_failures``)."""
        return dict(reason_counts(failures_of(self.all_judgments)))

    @property
    def other_roles(self) -> dict[str, RoleVerdicts]:
        """The roles other than the headline one (a dual-judge run: its second judge)."""
        return {role: v for role, v in self.roles.items() if role != HEADLINE_ROLE}

    @property
    def dual(self) -> bool:
        """Whether a second judge graded the case beside the headline one (a jury's jurors are not one)."""
        return SECOND_ROLE in self.roles

    def result(self) -> CaseResult:
        return CaseResult(self.met, self.judged, self.failures, self.slices, self.case_id)

    def role_result(self, role: str) -> CaseResult | None:
        """``role``'s result on this case (``None``: the role did not grade it)."""
        verdicts = self.roles.get(role)
        return None if verdicts is None else verdicts.result(self.slices, self.case_id)

    def paired(self, role: str = SECOND_ROLE) -> PairedCase | None:
        """The headline judge's and ``role``'s results and the confusion of their verdicts."""
        other = self.role_result(role)
        if other is None or role == HEADLINE_ROLE:
            return None
        confusion = pair_verdicts([j.met for j in self.judgments], [j.met for j in self.roles[role].judgments])
        return PairedCase(self.result(), other, confusion)

    def terms(self, thresholds: Sequence[int] = DEFAULT_THRESHOLDS, n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
        """This case's term of each headline metric (the metric is their mean over cases)."""
        return case_terms(self.met, self.judged, thresholds, n_criteria)

    def with_role(self, role: str, other: "GradedCase") -> "GradedCase":
        """This record with ``other``'s headline verdicts as ``role``'s (same case, same answer)."""
        if other.case_id != self.case_id:
            raise ValueError(f"cannot pair case {self.case_id!r} with case {other.case_id!r}")
        return replace(self, roles={**self.roles, role: other.headline})

    def with_usage(self, usage: Mapping[str, int], role: str = HEADLINE_ROLE) -> "GradedCase":
        """This record with ``role``'s token usage set."""
        return replace(self, roles={**self.roles, role: replace(self.roles[role], usage=dict(usage))})

    # -- serialisation ------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly and flat: counts first (for people reading a log), then the headline
        role's verdicts, then each other role's under ``roles``. Every stored record passes here,
        so the judges' texts (explanations, failure reasons: a gateway may echo a key in a 200
        reply) are redacted here, once (``scorers.redact``)."""
        secrets = held_secrets()
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
            "truncated": self.answer_truncated,
            "thinking_removed": self.thinking_removed,
            **dict(self.judge_prompt),
            **({VERDICT_READING_FIELD: self.verdict_reading} if self.verdict_reading != STRICT else {}),
            "suspect_answer": list(self.suspect),
            "slices": {dim: list(labels) for dim, labels in self.slices.items()},
            "judgments": [_redacted(j, secrets) for j in self.judgments],
        }
        if self.judge_usage:
            out["judge_usage"] = dict(self.judge_usage)
        if self.headline.input_cut:
            out["judge_input_cut"] = dict(self.headline.input_cut)
        if self.other_roles:
            out["roles"] = {role: verdicts.to_dict(secrets) for role, verdicts in self.other_roles.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "") -> "GradedCase":
        """Inverse of :meth:`to_dict`, also reading records of version 1 before judge roles (a
        dual-judge run's second judge in ``local_*`` fields). Counts are recomputed from the
        verdicts, never trusted from the dict. A record that is not one raises ``ValueError``
        naming ``where`` and the field."""
        prefix = f"{where}: " if where else ""
        if not isinstance(data, Mapping):
            raise ValueError(f"{prefix}not a graded-case record (expected a JSON object, got {type(data).__name__})")
        for name in ("case_id", "judgments"):
            if name not in data:
                raise ValueError(f"{prefix}not a graded-case record: field {name!r} is missing")
        try:
            roles = {HEADLINE_ROLE: RoleVerdicts.from_dict({"judge": data.get("judge"), "judgments": data["judgments"],
                                                            "usage": data.get("judge_usage"), "input_cut": data.get("judge_input_cut")})}
            for role, verdicts in (data.get("roles") or {}).items():
                roles[str(role)] = RoleVerdicts.from_dict(verdicts)
            if data.get("local_judgments"):  # written before judge roles
                roles[SECOND_ROLE] = RoleVerdicts.from_dict({"judge": data.get("local_judge"), "judgments": data["local_judgments"],
                                                             "usage": data.get("local_judge_usage")})
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{prefix}case {data.get('case_id')!r}: field 'judgments': {type(exc).__name__}: {exc}") from None
        slices = {str(dim): tuple(str(x) for x in labels) for dim, labels in (data.get("slices") or {}).items()}
        return cls(
            case_id=str(data["case_id"]),
            judge_mode=str(data.get("judge_mode") or ""),
            roles=roles,
            answer_empty=bool(data.get("empty_answer", False)),
            slices=slices,
            epoch=int(data.get("epoch") or 1),
            answer_truncated=bool(data.get("truncated", False)),
            thinking_removed=bool(data.get("thinking_removed", False)),
            judge_prompt={k: str(data[k]) for k in PROMPT_FIELDS if k in data},
            suspect=tuple(str(x) for x in data.get("suspect_answer") or ()),
            verdict_reading=str(data.get(VERDICT_READING_FIELD) or STRICT),
        )


def _redacted(judgment: CriterionJudgment, secrets: set[str]) -> dict[str, Any]:
    out = judgment.to_dict()
    out["explanation"] = redact(out["explanation"], secrets)
    if out["error"]:
        out["error"] = redact(out["error"], secrets)
    return out


def failure_tally(records: Sequence[GradedCase]) -> FailureTally:
    """Judgments made and failed in ``records``, every judge role's (the failure policy's input)."""
    return FailureTally.of_cases((len(r.all_judgments), count_failures(r.all_judgments), r.failure_reasons()) for r in records)


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
    template: JudgeTemplate | None = None,
    judge_prompt: Mapping[str, str] | None = None,
    verdict_reading: str = STRICT,
) -> GradedCase:
    """Grade one answer with one judge (:func:`rubric_grading.grade_answer`) into its record,
    flagging an answer that holds verdict-like JSON or judge prompt markers. ``template`` is the
    per-criterion judge template (``None``: the project's prompt) and ``judge_prompt`` what the
    record says about it (name, sha256, source); ``verdict_reading`` how replies are read (the
    record keeps it, so the release gate sees a run read the official runner's way)."""
    judgments = await grade_answer(question, answer, rubrics, complete, mode, max_attempts, template, verdict_reading)
    return GradedCase.of_judge(case_id, judge, mode, judgments, answer_empty=not (answer or "").strip(), slices=dict(slices or {}), epoch=epoch,
                               judge_prompt=dict(judge_prompt or {}), suspect=tuple(suspect_reasons(answer, prompt_fixed_text(mode, template))),
                               verdict_reading=verdict_reading)
