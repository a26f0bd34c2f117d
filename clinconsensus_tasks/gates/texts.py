"""How the gates write a figure with its interval, in one place: the release gate's verdict lines,
``summarize``, ``review score`` and the report print them alike."""

from __future__ import annotations

import math
from typing import Mapping


def undefined(value: float | None) -> bool:
    """An undefined figure (``None`` in strict JSON, NaN in memory): printed ``n/a``, never 0."""
    return value is None or math.isnan(value)


def figure(value: float | None) -> str:
    """``0.712``, or ``n/a`` for an undefined figure."""
    return "n/a" if undefined(value) else f"{value:.3f}"


def points(share: float) -> str:
    """A share as signed percentage points, one decimal (never ``-0.0``)."""
    return f"{round(100 * share, 1) + 0.0:+.1f}"


def interval_text(interval: Mapping[str, float]) -> str:
    """``0.712 [0.650, 0.771]``; ``n/a`` for an undefined figure; ``0.712 [no interval: 1 case]``
    where too few cases contributed (never an estimate alone, which would read as exact)."""
    if undefined(interval["estimate"]):
        return "n/a"
    if undefined(interval["low"]):
        cases = interval.get("cases")
        return f"{interval['estimate']:.3f} [no interval" + (f": {cases} case{'s' if cases != 1 else ''}]" if cases is not None else "]")
    return f"{interval['estimate']:.3f} [{interval['low']:.3f}, {interval['high']:.3f}]"
