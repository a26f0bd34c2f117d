"""Grading one answer against its rubric: the judge protocol, independent of any framework.

The caller supplies ``complete(messages, fresh)``, an async function that sends chat messages to
the judge and returns its text. ``fresh=True`` asks it to bypass any response cache: it is set
when re-asking after an unparseable verdict, so a cached bad answer is never served again. The
Inspect adapter passes the bound ``grader`` model; the lm-eval adapter passes the OpenAI-compatible
client with its on-disk cache. Transport retries (429, 5xx, timeouts) are the client's business;
an exception that still escapes it ends that criterion's judgment as a failure, recorded with its
message, and never disturbs the verdicts already obtained for other criteria.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Awaitable, Callable, Sequence

from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, batched_messages, check_judge_mode, per_criterion_messages
from clinconsensus_tasks.scorers.clinconsensus.verdicts import parse_batched_verdicts, parse_verdict

Messages = list[dict[str, str]]
Complete = Callable[[Messages, bool], Awaitable[str]]

MAX_ATTEMPTS = 3
EMPTY_ANSWER = "empty answer: not sent to the judge"
_RAW_KEEP = 400  # characters of an unusable judge output kept for the log


@dataclass
class CriterionJudgment:
    """The outcome for one criterion. ``met is None`` means the judgment failed."""

    criterion_id: str
    met: bool | None
    explanation: str = ""
    attempts: int = 0
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.met is None

    def to_dict(self) -> dict:
        # Hand-written rather than dataclasses.asdict: called 30 times per case, asdict's deep
        # copy showed up in the per-call CPU budget.
        return {"criterion_id": self.criterion_id, "met": self.met, "explanation": self.explanation,
                "attempts": self.attempts, "error": self.error}

    @classmethod
    def from_dict(cls, data: dict) -> "CriterionJudgment":
        """Inverse of :meth:`to_dict`; ``KeyError`` when ``criterion_id`` or ``met`` is missing."""
        met = data["met"]
        if met is not None and not isinstance(met, bool):
            raise ValueError(f"criterion {data.get('criterion_id')!r}: 'met' must be true, false or null, got {met!r}")
        return cls(str(data["criterion_id"]), met, str(data.get("explanation") or ""), int(data.get("attempts") or 0), data.get("error"))


def count_met(judgments: Sequence[CriterionJudgment]) -> int:
    """Criteria judged met; failed judgments count as not met, as the official scoring does."""
    return sum(1 for j in judgments if j.met)


def count_failures(judgments: Sequence[CriterionJudgment]) -> int:
    return sum(1 for j in judgments if j.failed)


async def _judge_one(
    question: str, answer: str, criterion_id: str, criterion: str, complete: Complete, max_attempts: int
) -> CriterionJudgment:
    messages = per_criterion_messages(question, answer, criterion)
    problem = "no attempt made"
    for attempt in range(max_attempts):
        try:
            text = await complete(messages, attempt > 0)
        except Exception as exc:  # the client already retried transient errors
            return CriterionJudgment(criterion_id, None, attempts=attempt + 1, error=f"{type(exc).__name__}: {exc}")
        verdict = parse_verdict(text)
        if verdict is not None:
            return CriterionJudgment(criterion_id, verdict.met, verdict.explanation, attempt + 1)
        problem = f"unparseable verdict: {(text or '')[:_RAW_KEEP]!r}"
    return CriterionJudgment(criterion_id, None, attempts=max_attempts, error=problem)


async def _judge_batched(
    question: str,
    answer: str,
    rubrics: Sequence[tuple[str, str]],
    complete: Complete,
    max_attempts: int,
) -> list[CriterionJudgment]:
    # The judge sees short numeric ids ("1".."30"): fewer output tokens, fewer copying mistakes.
    short_ids = [str(i + 1) for i in range(len(rubrics))]
    results: dict[str, CriterionJudgment] = {}
    pending = list(range(len(rubrics)))
    problem = "no attempt made"
    attempts = 0
    while pending and attempts < max_attempts:
        attempts += 1
        asked = [(short_ids[i], rubrics[i][1]) for i in pending]
        try:
            text = await complete(batched_messages(question, answer, asked), attempts > 1)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
            break
        verdicts = parse_batched_verdicts(text, [sid for sid, _ in asked])
        still = []
        for i in pending:
            verdict = verdicts.get(short_ids[i])
            if verdict is None:
                still.append(i)
            else:
                results[rubrics[i][0]] = CriterionJudgment(rubrics[i][0], verdict.met, verdict.explanation, attempts)
        if still:
            problem = f"no usable verdict for these criteria in: {(text or '')[:_RAW_KEEP]!r}"
        pending = still
    for i in pending:
        results[rubrics[i][0]] = CriterionJudgment(rubrics[i][0], None, attempts=attempts, error=problem)
    return [results[cid] for cid, _ in rubrics]


async def grade_answer(
    question: str,
    answer: str,
    rubrics: Sequence[tuple[str, str]],
    complete: Complete,
    mode: str = PER_CRITERION,
    max_attempts: int = MAX_ATTEMPTS,
) -> list[CriterionJudgment]:
    """Judge ``answer`` against every ``(criterion_id, criterion)`` in ``rubrics``.

    An empty answer (blank, or the model returned nothing) meets no criterion; it is not sent to
    the judge, and every criterion is recorded as not met with that reason (adapters count such
    answers as ``empty_answers``).

    Returns one :class:`CriterionJudgment` per criterion, in rubric order. In ``per_criterion``
    mode the criteria are judged concurrently (the client bounds the real concurrency); each
    unparseable verdict is asked again, ``max_attempts`` attempts in all. In ``batched`` mode the
    re-ask covers only the criteria still missing a verdict.
    """
    check_judge_mode(mode)
    if not (answer or "").strip():
        return [CriterionJudgment(cid, False, EMPTY_ANSWER, attempts=0) for cid, _ in rubrics]
    if mode == PER_CRITERION:
        return list(
            await asyncio.gather(
                *(_judge_one(question, answer, cid, text, complete, max_attempts) for cid, text in rubrics)
            )
        )
    return await _judge_batched(question, answer, rubrics, complete, max_attempts)
