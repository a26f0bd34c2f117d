"""Grading one answer against its rubric: the judge protocol, independent of any framework.

The caller supplies ``complete(messages, fresh)``, an async function that sends chat messages to
the judge and returns its text. ``fresh=True`` asks it to bypass any response cache: it is set
when re-asking after an unparseable verdict. A re-ask carries the refused reply and a note, so
it is a request of its own that can change the outcome, never the identical request again. The
Inspect adapter passes the bound ``grader`` model; the lm-eval adapter passes the OpenAI-compatible
client with its on-disk cache. Transport retries (429, 5xx, timeouts) are the client's business;
an exception that still escapes it ends that criterion's judgment as a failure, recorded with its
kind and reason (``judge_failures.classify``: a refused request is not asked again), and never
disturbs the verdicts already obtained for other criteria. An optional shared
:class:`~judge_failures.CircuitBreaker` stops sending once the judge fails call after call: the
remaining judgments fail at once as ``judge_unavailable`` (nothing leaves this module as an
exception, so no framework loses the case's answer; the run's failure policy decides at the end).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from dataclasses import dataclass
from typing import Awaitable, Callable, Sequence

from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import (
    BATCHED,
    PER_CRITERION,
    batched_messages,
    check_judge_mode,
    per_criterion_messages,
    prompt_echo,
    reask_messages,
)
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    ERROR_JUDGE_UNAVAILABLE,
    ERROR_REQUEST,
    ERROR_UNPARSEABLE,
    JudgeUnavailableError,
    classify,
)
from clinconsensus_tasks.scorers.clinconsensus.verdicts import OFFICIAL, STRICT, check_verdict_reading, read_batched, read_official, read_verdict

Messages = list[dict[str, str]]
Complete = Callable[[Messages, bool], Awaitable[str]]

# The verdict rule (docs/verdict-rule.md): a reply that is no verdict is asked again once, then the
# judgment fails, whatever the re-ask's reply is. With 3, a judge that answered the re-ask with
# other prose than its first reply (SmolLM2 does) was asked a third time: the re-ask after it is
# no request already sent, so nothing stopped it (issue 41: 62 judge requests for one case, 61 allowed).
MAX_ATTEMPTS = 2
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
    error_kind: str | None = None  # judge_failures.ERROR_*: request, transport, unparseable, ...

    @property
    def failed(self) -> bool:
        return self.met is None

    def to_dict(self) -> dict:
        # Hand-written rather than dataclasses.asdict: called 30 times per case, asdict's deep
        # copy showed up in the per-call CPU budget.
        return {"criterion_id": self.criterion_id, "met": self.met, "explanation": self.explanation,
                "attempts": self.attempts, "error": self.error, "error_kind": self.error_kind}

    @classmethod
    def from_dict(cls, data: dict) -> "CriterionJudgment":
        """Inverse of :meth:`to_dict`; ``KeyError`` when ``criterion_id`` or ``met`` is missing."""
        met = data["met"]
        if met is not None and not isinstance(met, bool):
            raise ValueError(f"criterion {data.get('criterion_id')!r}: 'met' must be true, false or null, got {met!r}")
        return cls(str(data["criterion_id"]), met, str(data.get("explanation") or ""), int(data.get("attempts") or 0), data.get("error"),
                   data.get("error_kind"))


def count_met(judgments: Sequence[CriterionJudgment]) -> int:
    """Criteria judged met; failed judgments count as not met, as the official scoring does."""
    return sum(1 for j in judgments if j.met)


def count_failures(judgments: Sequence[CriterionJudgment]) -> int:
    return sum(1 for j in judgments if j.failed)


def failures_of(judgments: Sequence[CriterionJudgment]) -> list[tuple[str | None, str | None]]:
    """``(error_kind, error)`` of each failed judgment, for ``judge_failures`` tallies."""
    return [(j.error_kind, j.error) for j in judgments if j.failed]


REPEATED = "; not asked again: the re-ask would repeat a request already answered"
# A re-ask carries the refused reply and a note, so it is longer than the request it follows and
# may not fit the judge's input: its refusal leaves the verdict unusable, with both reasons.
REASK_REFUSED = "; re-ask refused: "


def _reask(first: Messages, reply: str, mode: str, sent: set[str]) -> Messages | None:
    """The next request after the unusable ``reply`` to ``first`` (:func:`reask_messages`), or
    ``None`` when that very request was sent before (the judge repeated an unusable reply): at
    temperature 0 it would only be answered the same way again."""
    messages = reask_messages(first, reply, mode)
    key = json.dumps(messages, ensure_ascii=False)
    if key in sent:
        return None
    sent.add(key)
    return messages


class _CallFailed(Exception):
    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind, self.reason = kind, reason


async def _ask(complete: Complete, messages: Messages, fresh: bool) -> str:
    """One judge call; a failed call raises :class:`_CallFailed` with its kind (``judge_unavailable``
    when the run's circuit breaker is open: nothing was sent). The breaker is the transport's alone
    (the project's client, each of its HTTP attempts; Inspect's provider, each attempt through
    ``inspect_compat.wrap_generate``): it is told of each request really sent, after the cache, so a
    verdict already obtained is served even while the judge is down, and no attempt is counted twice."""
    try:
        return await complete(messages, fresh)
    except JudgeUnavailableError as exc:  # the breaker, in the transport just before sending
        raise _CallFailed(ERROR_JUDGE_UNAVAILABLE, str(exc)) from exc
    except Exception as exc:  # the client already retried transient errors
        kind, reason = classify(exc)
        raise _CallFailed(kind, reason) from exc


async def _judge_one(
    question: str, answer: str, criterion_id: str, criterion: str, complete: Complete, max_attempts: int,
    template: JudgeTemplate | None = None,
    verdict_reading: str = STRICT,
) -> CriterionJudgment:
    first = template.messages(question, answer, criterion) if template else per_criterion_messages(question, answer, criterion)
    echo = prompt_echo(PER_CRITERION, template)  # the verdict rule needs the prompt it must not accept back
    if verdict_reading == OFFICIAL:  # the official runner asks once and reads the first match
        max_attempts = 1
    problem, messages, sent = "no attempt made", first, set()
    for attempt in range(max_attempts):
        try:
            text = await _ask(complete, messages, attempt > 0)
        except _CallFailed as failed:  # not asked again: the client has retried what can be retried
            if attempt > 0 and failed.kind == ERROR_REQUEST:  # a re-ask refused (too long for the judge): the verdict stays unusable
                return CriterionJudgment(criterion_id, None, attempts=attempt + 1, error=f"{problem}{REASK_REFUSED}{failed.reason}",
                                         error_kind=ERROR_UNPARSEABLE)
            return CriterionJudgment(criterion_id, None, attempts=attempt + 1, error=failed.reason, error_kind=failed.kind)
        reading = read_official(text) if verdict_reading == OFFICIAL else read_verdict(text, echo, answer)
        verdict = reading.verdicts.get(None)
        if verdict is not None:
            return CriterionJudgment(criterion_id, verdict.met, verdict.explanation, attempt + 1)
        problem = f"unparseable verdict ({reading.problem}): {(text or '')[:_RAW_KEEP]!r}"
        messages = _reask(first, text, PER_CRITERION, sent) if attempt + 1 < max_attempts else first
        if messages is None:
            return CriterionJudgment(criterion_id, None, attempts=attempt + 1, error=problem + REPEATED, error_kind=ERROR_UNPARSEABLE)
    return CriterionJudgment(criterion_id, None, attempts=max_attempts, error=problem, error_kind=ERROR_UNPARSEABLE)


async def _judge_batched(
    question: str,
    answer: str,
    rubrics: Sequence[tuple[str, str]],
    complete: Complete,
    max_attempts: int,
) -> list[CriterionJudgment]:
    # The judge sees short numeric ids ("1".."30"): fewer output tokens, fewer copying mistakes.
    short_ids = [str(i + 1) for i in range(len(rubrics))]
    echo = prompt_echo(BATCHED)
    results: dict[str, CriterionJudgment] = {}
    pending = list(range(len(rubrics)))
    problem, kind = "no attempt made", ERROR_UNPARSEABLE
    attempts, sent = 0, set()
    messages = batched_messages(question, answer, list(zip(short_ids, (text for _, text in rubrics))))
    while pending and attempts < max_attempts:
        attempts += 1
        asked = [(short_ids[i], rubrics[i][1]) for i in pending]
        try:
            text = await _ask(complete, messages, attempts > 1)
        except _CallFailed as failed:
            if attempts > 1 and failed.kind == ERROR_REQUEST:  # a re-ask refused: the verdicts stay unusable
                problem += REASK_REFUSED + failed.reason
            else:
                problem, kind = failed.reason, failed.kind
            break
        reading = read_batched(text, [sid for sid, _ in asked], echo, answer)
        verdicts = reading.verdicts
        still = []
        for i in pending:
            verdict = verdicts.get(short_ids[i])
            if verdict is None:
                still.append(i)
            else:
                results[rubrics[i][0]] = CriterionJudgment(rubrics[i][0], verdict.met, verdict.explanation, attempts)
        if still:
            problem = f"no usable verdict for these criteria ({reading.problem or 'not in the list'}): {(text or '')[:_RAW_KEEP]!r}"
        if still and attempts < max_attempts:  # the re-ask lists only the criteria still without a verdict
            messages = _reask(batched_messages(question, answer, [(short_ids[i], rubrics[i][1]) for i in still]), text, BATCHED, sent)
            if messages is None:
                problem += REPEATED
                break
        pending = still
    for i in pending:
        results[rubrics[i][0]] = CriterionJudgment(rubrics[i][0], None, attempts=attempts, error=problem, error_kind=kind)
    return [results[cid] for cid, _ in rubrics]


LEADING_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("clinconsensus_leading_call", default=False)
"""True while a case's first per-criterion call is being made (its re-asks included): the judge
clients' connection slots (``judge.slots``) serve such calls before the rest of other cases, so a
case that has just started is not held back until every call already queued has been sent. Set
by :func:`_judge_prefix_first` only, read by the slots only."""


async def _judge_prefix_first(
    question: str, answer: str, rubrics: Sequence[tuple[str, str]], complete: Complete, max_attempts: int,
    template: JudgeTemplate | None, verdict_reading: str = STRICT,
) -> list[CriterionJudgment]:
    """Judge the first criterion alone, then the rest concurrently.

    Every prompt of a case shares its beginning (instructions, question, answer: about 70% of the
    tokens). A provider's prompt cache serves that prefix at a fraction of the price, but only to
    calls that arrive after a call carrying it has been processed; sent all at once, the case's
    calls all pay full price. The wait costs no throughput when other cases keep the judge busy,
    and the first call is served ahead of other cases' queued calls (:data:`LEADING_CALL`), so the
    wait is one call's, not the queue's.
    """
    def judge(rubric: tuple[str, str]) -> Awaitable[CriterionJudgment]:
        return _judge_one(question, answer, rubric[0], rubric[1], complete, max_attempts, template, verdict_reading)

    if not rubrics:
        return []
    leading = LEADING_CALL.set(True)
    try:
        first = await judge(rubrics[0])
    finally:
        LEADING_CALL.reset(leading)
    return [first, *await asyncio.gather(*map(judge, rubrics[1:]))]


async def grade_answer(
    question: str,
    answer: str,
    rubrics: Sequence[tuple[str, str]],
    complete: Complete,
    mode: str = PER_CRITERION,
    max_attempts: int = MAX_ATTEMPTS,
    template: JudgeTemplate | None = None,
    verdict_reading: str = STRICT,
) -> list[CriterionJudgment]:
    """Judge ``answer`` against every ``(criterion_id, criterion)`` in ``rubrics``.

    In ``per_criterion`` mode, ``template`` (the official template or a user's) builds each
    request; without one, the project's own prompt does. Batched mode has its own prompt.

    An empty answer (blank, or the model returned nothing) meets no criterion; it is not sent to
    the judge, and every criterion is recorded as not met with that reason (adapters count such
    answers as ``empty_answers``).

    Returns one :class:`CriterionJudgment` per criterion, in rubric order. In ``per_criterion``
    mode the first criterion is judged alone and the others concurrently once it returns, so the
    provider can serve their shared prefix from its prompt cache (the client bounds the real
    concurrency); each
    unparseable verdict is asked again, ``max_attempts`` attempts in all (default
    :data:`MAX_ATTEMPTS`: the request and one re-ask, the verdict rule). In ``batched`` mode the
    reply is all or nothing (the verdict rule), so a re-ask asks the whole list again.

    A re-ask is never the request already answered (at temperature 0 a judge answers it the same
    way, and the re-ask buys nothing): it is the request, the unusable reply and a note that it was
    no verdict (``rubric_prompt.reask_messages``). With more than two attempts, when the judge
    repeats an unusable reply, the next re-ask would repeat a request already sent: it is not sent,
    and the judgment fails. A call that raises is not asked
    again; once the transport's breaker (shared by the run) saw too many failed requests in a row,
    the remaining calls fail as ``judge_unavailable`` without being sent.

    ``verdict_reading`` is the project's rule (``strict``, the default: ``verdicts.read_verdict``)
    or the released judge's runner's (``official``: ``verdicts.read_official``, the first
    ``"criteria_met": true|false`` anywhere, one attempt, never asked again), which a user chooses
    to reproduce the released pipeline's numbers. The official runner judges per criterion only:
    ``official`` in batched mode is a ``ValueError``.
    """
    check_judge_mode(mode)
    check_verdict_reading(verdict_reading)
    if verdict_reading == OFFICIAL and mode != PER_CRITERION:
        raise ValueError(f"judge_verdict_reading={OFFICIAL} reads one verdict a reply, as the official runner does: judge_mode={mode} "
                         f"has no official reading; use judge_mode={PER_CRITERION}")
    if not (answer or "").strip():
        return [CriterionJudgment(cid, False, EMPTY_ANSWER, attempts=0) for cid, _ in rubrics]
    if mode == PER_CRITERION:
        return await _judge_prefix_first(question, answer, rubrics, complete, max_attempts, template, verdict_reading)
    return await _judge_batched(question, answer, rubrics, complete, max_attempts)
