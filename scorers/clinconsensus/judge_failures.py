"""What a failed judgment is, and when failures end a run: the failure policy of both frameworks.

A broken judge must never produce a result that looks like a score. Failed judgments count as
"not met" (the official scoring rule), so a run with many of them would report a plausible but
too low number. The policy, shared by the Inspect and lm-eval adapters:

* every failure has a kind (:func:`classify`): ``request`` (the judge refused this request, e.g.
  HTTP 400 "prompt too long": asking again cannot help), ``transport`` (no reply after the
  client's own retries: 5xx, 429, time-outs, dropped connections), ``unparseable`` (a reply with
  no usable verdict after re-asking) or ``judge_unavailable`` (the circuit breaker is open);
* :class:`CircuitBreaker`: a judge that fails :data:`BREAKER_LIMIT` transport calls in a row is taken as
  down: every later call of the run fails at once as ``judge_unavailable``, with no request sent,
  instead of retrying every remaining criterion for minutes. The judgment is recorded as failed
  (the case keeps its answer and its other verdicts), so nothing the model produced is lost and a
  re-grade asks only the judge;
* :class:`FailureTally`: the policy judges the WHOLE run, once, when every case is graded: when
  failed judgments exceed a share of the judgments planned (:data:`DEFAULT_FAILURE_THRESHOLD`, 1%;
  0 = never stop), the run ends with a :class:`JudgeFailureError` naming the count, the main
  reasons and how to finish the run without paying again for the verdicts already obtained.
  Judgments planned but never made (a case whose sample errored) count as failed
  (:meth:`FailureTally.with_unjudged`).

No framework is imported here: exceptions are classified by their ``status_code`` attribute (or
their ``response.status_code``), which the OpenAI SDK, httpx and most HTTP clients provide.
Reasons and messages pass through :func:`scorers.redact.redact`: a judge may repeat the key it was
sent in an error body, and reasons are stored with the verdicts.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping

from clinconsensus_tasks.scorers.redact import redact

ERROR_REQUEST = "request"
ERROR_TRANSPORT = "transport"
ERROR_UNPARSEABLE = "unparseable"
ERROR_JUDGE_UNAVAILABLE = "judge_unavailable"

UNJUDGED = "not judged (the case errored before its verdicts)"

DEFAULT_FAILURE_THRESHOLD = 0.01
BREAKER_LIMIT = 20
# Or at least BREAKER_WINDOW_MIN failures in a row with no reply for BREAKER_WINDOW seconds: a dead
# judge behind Inspect's back-offs (3 s, 6 s, 12 s, ...) is known within a minute.
BREAKER_WINDOW = 30.0
BREAKER_WINDOW_MIN = 5
ENV_FAILURE_THRESHOLD = "CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD"
# 408 (request time-out), 409 (conflict) and 429 (rate limit) are worth another try; other 4xx are not.
_RETRYABLE_4XX = frozenset({408, 409, 429})


class JudgeCallError(Exception):
    """A judge call that failed in a way an adapter recognised itself (e.g. Inspect turns an HTTP
    400 "context length exceeded" into an empty reply): carries its kind and reason."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind


class JudgeUnavailableError(RuntimeError):
    """The circuit breaker is open: the judge failed too many calls in a row. Raised by
    :meth:`CircuitBreaker.check` before a call would be sent; the grading loop records it as a
    ``judge_unavailable`` failed judgment, so it never leaves a case's grading."""


class JudgeFailureError(RuntimeError):
    """Failed judgments exceeded the run's threshold."""


def status_code_of(exc: BaseException) -> int | None:
    """The HTTP status of an exception, if it carries one (``status_code`` or ``response.status_code``)."""
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def unwrapped(exc: BaseException) -> BaseException:
    """The last attempt's error inside a retry library's give-up error (tenacity's ``RetryError``)."""
    attempt = getattr(exc, "last_attempt", None)
    inner = attempt.exception() if callable(getattr(attempt, "exception", None)) else None
    return inner if isinstance(inner, BaseException) else exc


def message_of(exc: BaseException) -> str:
    """What the server said: Inspect's ``ModelGenerateError`` keeps it in ``provider_message``
    (its ``str`` is the whole request), any other error in its text."""
    provider = getattr(exc, "provider_message", None)
    return provider if isinstance(provider, str) and provider.strip() else str(exc)


def classify(exc: BaseException) -> tuple[str, str]:
    """``(kind, reason)`` of a failed judge call; the reason starts with a short label that
    :func:`reason_label` groups by (the exception type and HTTP status); keys removed (:func:`redact`)."""
    exc = unwrapped(exc)
    if isinstance(exc, JudgeCallError):
        return exc.kind, redact(str(exc))
    status = status_code_of(exc)
    label = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    kind = ERROR_REQUEST if status and 400 <= status < 500 and status not in _RETRYABLE_4XX else ERROR_TRANSPORT
    detail = " ".join(redact(message_of(exc)).split())[:300]
    return kind, f"{label}: {detail}" if detail else label


def reason_label(kind: str | None, error: str | None) -> str:
    """A failure's reason without its details, for counting the main reasons of a run."""
    if kind == ERROR_UNPARSEABLE:
        return "unparseable verdict"
    if kind == ERROR_JUDGE_UNAVAILABLE:
        return "judge_unavailable (not sent: the judge was down)"
    return f"{kind or 'error'}: {(error or '').split(': ', 1)[0]}"


def reason_counts(failures: Iterable[tuple[str | None, str | None]]) -> Counter[str]:
    """How many failures of each reason (:func:`reason_label`) among ``(error_kind, error)`` pairs."""
    return Counter(reason_label(kind, error) for kind, error in failures)


def parse_failure_share(raw: str | float | None, source: str = ENV_FAILURE_THRESHOLD) -> float:
    """The judge failure share that stops a run, from a setting: a share in [0, 1] (``0.01`` or ``1%``); 0 = never stop."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return DEFAULT_FAILURE_THRESHOLD
    text = str(raw).strip()
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"{source}={raw!r}: expected a share such as 0.01 or 1% (0 = never stop)") from None
    if not 0 <= value <= 1:
        raise ValueError(f"{source}={raw!r}: must lie between 0 and 1 (0 = never stop)")
    return value


class CircuitBreaker:
    """Counts judge calls that failed in transport in a row (shared by all concurrent calls of a run).

    A reply, usable or not, resets the count (a refused request neither counts nor resets);
    :data:`BREAKER_LIMIT` failures in a row open the breaker, and from then on :meth:`check`
    raises :class:`JudgeUnavailableError` before any call is sent. Opening it raises nothing: the
    call that opened it is a transport failure like the ones before it.
    """

    def __init__(self, limit: int = BREAKER_LIMIT, resume_hint: str = "", window: float = BREAKER_WINDOW,
                 clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.resume_hint = resume_hint
        self.window = window
        self.clock = clock
        self.in_a_row = 0
        self.since: float | None = None  # when the first failure of the current run of failures came
        self.reasons: Counter[str] = Counter()
        self.opened = False

    def _down(self) -> bool:
        """``limit`` failures in a row, or :data:`BREAKER_WINDOW_MIN` of them and no reply for
        ``window`` seconds (a judge retried with long back-offs fails few calls a minute)."""
        if not self.limit or not self.in_a_row:
            return False
        if self.in_a_row >= self.limit:
            return True
        return self.in_a_row >= BREAKER_WINDOW_MIN and self.since is not None and self.clock() - self.since >= self.window

    def check(self) -> None:
        if not self.opened and self._down():
            self.opened = True
        if self.opened:
            raise JudgeUnavailableError(self.message())

    def success(self) -> None:
        self.in_a_row = 0
        self.since = None
        self.reasons.clear()

    def failure(self, kind: str, reason: str) -> None:
        """Count a failed call or attempt; open the breaker when the judge looks down (:meth:`_down`)."""
        if self.opened:
            return
        if not self.in_a_row:
            self.since = self.clock()
        self.in_a_row += 1
        self.reasons[reason_label(kind, reason)] += 1
        if self._down():
            self.opened = True

    def message(self) -> str:
        reasons = ", ".join(f"{label} x{n}" for label, n in self.reasons.most_common(3))
        return redact(f"The judge failed {self.in_a_row} calls in a row ({reasons}): it looks down, so no further "
                      f"request is sent and every remaining judgment fails. {self.resume_hint}").strip()


@dataclass
class FailureTally:
    """Judgments made and failed so far in a run, with the reasons of the failures."""

    judged: int = 0
    failed: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of_cases(cls, cases: Iterable[tuple[int, int, Mapping[str, int] | None]]) -> "FailureTally":
        """The tally of finished cases given as ``(judged, failed, failure reasons)``."""
        tally = cls()
        for judged, failed, reasons in cases:
            tally.judged += int(judged)
            tally.failed += int(failed)
            tally.reasons.update(reasons or {})
        return tally

    def with_unjudged(self, planned: int) -> "FailureTally":
        """This tally with the judgments planned but never made (``planned`` minus those judged,
        e.g. of cases whose sample errored) counted as failed: a run cannot pass by losing cases."""
        missing = max(0, planned - self.judged)
        if not missing:
            return self
        reasons = self.reasons.copy()
        reasons[UNJUDGED] += missing
        return FailureTally(self.judged + missing, self.failed + missing, reasons)

    def add_tally(self, other: "FailureTally") -> None:
        self.judged += other.judged
        self.failed += other.failed
        self.reasons.update(other.reasons)

    def check(self, threshold: float, resume_hint: str, setting: str, planned: int = 0) -> None:
        """Raise :class:`JudgeFailureError` (see :meth:`message`) when :meth:`exceeds` holds."""
        if self.exceeds(threshold, planned):
            raise JudgeFailureError(self.message(threshold, resume_hint, setting))

    def exceeds(self, threshold: float, planned: int = 0) -> bool:
        """Whether failures exceed ``threshold`` of all judgments (``planned`` ones, or those made so
        far if more); never with ``threshold`` 0."""
        return threshold > 0 and self.failed > threshold * max(planned, self.judged)

    def message(self, threshold: float, resume_hint: str, setting: str) -> str:
        reasons = "; ".join(f"{label} x{n}" for label, n in self.reasons.most_common(3))
        share = self.failed / self.judged if self.judged else 0.0
        return redact(
            f"{self.failed} of {self.judged} judge verdicts failed ({share:.1%}, above the {threshold:.1%} "
            f"allowed by {setting}); main reasons: {reasons}. A failed judgment would count as 'not met', "
            f"so the scores would be too low. {resume_hint} To accept the failures instead, raise "
            f"{setting} (0 = never stop); the release gate (summarize --strict) still refuses such a run."
        )
