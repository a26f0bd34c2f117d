"""What a gate accepts: the release bar (:class:`ReleaseBar`), and the shape of a check.

The bar is the release profile (``gates.release``) loosened only by the command's own flags, never
by a variable of the environment; each gate's check reads a run's facts (``gates.facts``) against
it and returns its problems, one line each (empty: the run clears it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from clinconsensus_tasks.clinconsensus.dataset import HF_DATA_REVISION
from clinconsensus_tasks.gates.facts import RunFacts

RELEASE_FAILURE_SHARE = 0.01  # the frameworks' default failure policy; the gate's bar unless a flag says otherwise


@dataclass(frozen=True)
class ReleaseBar:
    """What the gate accepts: the release profile, loosened only by the command's own flags."""

    failure_share: float = RELEASE_FAILURE_SHARE
    data_sha256: str = ""  # a copy of the public file named by its sha256, instead of the hub pinned to a commit
    allow_prompts: tuple[str, ...] = ()  # judge prompts or modes accepted besides the official one
    min_kappa: float | None = None  # --min-kappa: the judge's agreement with physicians (a review) at least this
    max_judge_bias: float | None = None  # --max-judge-bias: points; the judge's bias on rubric accuracy within +- this
    max_flip_rate: float | None = None  # --max-flip-rate: the judge asked again flips at most this share of its rows

    def __post_init__(self) -> None:
        if self.min_kappa is not None and not -1 <= self.min_kappa <= 1:
            raise ValueError(f"--min-kappa {self.min_kappa!r}: Cohen's kappa is in [-1, 1]")
        if self.max_judge_bias is not None and not 0 < self.max_judge_bias <= 100:
            raise ValueError(f"--max-judge-bias {self.max_judge_bias!r}: percentage points of rubric accuracy, in (0, 100]")
        if self.max_flip_rate is not None and not 0 <= self.max_flip_rate < 1:
            raise ValueError(f"--max-flip-rate {self.max_flip_rate!r}: the share of rows whose asks differ, in [0, 1)")
        if not 0 <= self.failure_share < 1:
            raise ValueError(f"--judge-failure-threshold {self.failure_share!r}: the share of judgments that may fail, "
                             "in [0, 1) (0.01 or 1%); the gate has no 'never'")

    def exceptions(self) -> list[str]:
        """The flags that loosen the release profile, as the verdict line prints them."""
        out = []
        if self.failure_share != RELEASE_FAILURE_SHARE:
            out.append(f"--judge-failure-threshold {self.failure_share:g}")
        out += [f"--allow-prompt {name}" for name in self.allow_prompts]
        return out

    def accepts(self) -> str:
        """What this bar accepts, for the verdict line."""
        data = (f"data sha256 {self.data_sha256[:12]}... (--data-sha256)" if self.data_sha256 else
                f"hub data at {HF_DATA_REVISION}" if HF_DATA_REVISION else "hub data at the commit the run was given")
        loosened = self.exceptions()
        physicians = "" if self.min_kappa is None else f", judge-physician kappa >= {self.min_kappa:g} at its interval's lower end (--min-kappa)"
        if self.max_judge_bias is not None:
            physicians += f", the judge's bias on rubric accuracy within +-{self.max_judge_bias:g} points at its interval (--max-judge-bias)"
        if self.max_flip_rate is not None:
            physicians += f", the judge asked again flips at most {self.max_flip_rate:g} of its rows at its interval's upper end (--max-flip-rate)"
        return f"release profile, {data}{physicians}" + (f"; EXCEPTIONS: {', '.join(loosened)}" if loosened else "")


Check = Callable[[RunFacts, ReleaseBar], list[str]]
"""A gate's check: why ``RunFacts`` do not clear the bar, one line each (empty: they do)."""


def needed_for(n: int, estimate: float, edge: float, bar: float) -> int:
    """How many units (cases, rows) would bring an interval's ``edge`` to ``bar`` at this estimate and
    spread: its half-width shrinks as one over the square root of the units. Every gate that says a
    review or a check is too small says it with this."""
    return math.ceil(n * ((estimate - edge) / (estimate - bar)) ** 2)
