"""How the gates write a figure with its interval, in one place: the release gate's verdict lines,
``summarize``, ``review score`` and the report print them alike."""

from __future__ import annotations

import math
from typing import Any, Mapping


def undefined(value: float | None) -> bool:
    """An undefined figure (``None`` in strict JSON, NaN in memory): printed ``n/a``, never 0."""
    return value is None or math.isnan(value)


def figure(value: float | None) -> str:
    """``0.712``, or ``n/a`` for an undefined figure."""
    return "n/a" if undefined(value) else f"{value:.3f}"


def points(share: float) -> str:
    """A share as signed percentage points, one decimal (never ``-0.0``)."""
    return f"{round(100 * share, 1) + 0.0:+.1f}"


def interval_text(interval: Mapping[str, Any]) -> str:
    """``0.712 [0.650, 0.771]``; ``n/a`` for an undefined figure; ``0.712 [no interval: 1 case]``
    where too few cases contributed (never an estimate alone, which would read as exact);
    ``1.000 [0.482, 1.000] (no disagreement in 10 cases: exact bound)`` where the sample held no
    discordant event and the interval's end is the exact zero-event bound (``zero_events``,
    ``scorers.agreement.zero_event_interval``)."""
    if undefined(interval["estimate"]):
        return "n/a"
    if undefined(interval["low"]):
        cases = interval.get("cases")
        return f"{interval['estimate']:.3f} [no interval" + (f": {cases} case{'s' if cases != 1 else ''}]" if cases is not None else "]")
    return f"{interval['estimate']:.3f} [{interval['low']:.3f}, {interval['high']:.3f}]" + zero_event_note(interval)


def zero_event_note(interval: Mapping[str, Any]) -> str:
    """`` (no flip in 12 cases: exact bound)`` for an interval whose end is the exact zero-event
    bound, else empty."""
    zero = interval.get("zero_events")
    return f" (no {zero['event']} in {zero['cases']} cases: exact bound)" if zero else ""
