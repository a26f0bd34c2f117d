"""Agreement between two sets of binary verdicts: two judges, a judge and physicians, two modes.

ClinConsensus is graded by two judges (an API judge and a distilled local judge) and the question a
user asks is whether the cheaper one can stand in for the other. These statistics answer it on
criterion verdicts (percent agreement, Cohen's kappa, macro-F1, precision and recall on "met") and on
case results (correlation of per-case met counts, CACS difference). Degenerate cases follow
scikit-learn: kappa is NaN when chance agreement is 1 (both raters used one and the same class),
and F1, precision and recall are 0 where their denominator is 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence


@dataclass(frozen=True)
class Confusion:
    """2x2 counts of verdict pairs, reference first: ``tp`` both met, ``tn`` both not met,
    ``fn`` reference met / other not, ``fp`` reference not met / other met."""

    tp: int = 0
    tn: int = 0
    fp: int = 0
    fn: int = 0

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> "Confusion":
        tp = tn = fp = fn = 0
        for ref, other in pairs:
            if ref and other:
                tp += 1
            elif not ref and not other:
                tn += 1
            elif ref:
                fn += 1
            else:
                fp += 1
        return cls(tp, tn, fp, fn)

    def __add__(self, other: "Confusion") -> "Confusion":
        return Confusion(self.tp + other.tp, self.tn + other.tn, self.fp + other.fp, self.fn + other.fn)

    @property
    def n(self) -> int:
        return self.tp + self.tn + self.fp + self.fn


def percent_agreement(c: Confusion) -> float:
    """Share of pairs where both say the same (NaN for no pairs)."""
    return (c.tp + c.tn) / c.n if c.n else math.nan


def cohen_kappa(c: Confusion) -> float:
    """Cohen's kappa = (p_o - p_e) / (1 - p_e); NaN when p_e = 1 or there are no pairs."""
    if not c.n:
        return math.nan
    p_o = (c.tp + c.tn) / c.n
    ref_met, other_met = (c.tp + c.fn) / c.n, (c.tp + c.fp) / c.n
    p_e = ref_met * other_met + (1 - ref_met) * (1 - other_met)
    return (p_o - p_e) / (1 - p_e) if p_e != 1 else math.nan


def precision_recall_f1(c: Confusion, positive: bool = True) -> tuple[float, float, float]:
    """Precision, recall and F1 of the second rater against the reference for one class."""
    tp, fp, fn = (c.tp, c.fp, c.fn) if positive else (c.tn, c.fn, c.fp)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0
    return precision, recall, f1


def macro_f1(c: Confusion) -> float:
    """Unweighted mean of the F1 of "met" and of "not met"."""
    return (precision_recall_f1(c, True)[2] + precision_recall_f1(c, False)[2]) / 2


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; NaN when either side is constant or there are fewer than 2 points."""
    n = len(x)
    if n != len(y):
        raise ValueError("x and y differ in length")
    if n < 2:
        return math.nan
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else math.nan


def verdict_report(c: Confusion) -> dict[str, float]:
    """Everything about one confusion matrix, keyed for reports."""
    precision, recall, f1 = precision_recall_f1(c, True)
    return {
        "pairs": float(c.n),
        "percent_agreement": percent_agreement(c),
        "kappa": cohen_kappa(c),
        "macro_f1": macro_f1(c),
        "precision_met": precision,
        "recall_met": recall,
        "f1_met": f1,
    }


def fleiss_parts(met_votes: Sequence[int], raters: int) -> tuple[int, float, int]:
    """Fleiss' kappa's sums over items rated by ``raters`` raters each (binary verdicts), an item
    given by its number of "met" votes: (items, the sum of the items' agreement P_i, met votes)."""
    if raters < 2:
        raise ValueError(f"Fleiss' kappa needs at least 2 raters, got {raters}")
    agreement = math.fsum((m * m + (raters - m) ** 2 - raters) / (raters * (raters - 1)) for m in met_votes)
    return len(met_votes), agreement, sum(met_votes)


def fleiss_from_parts(items: float, agreement: float, met_votes: float, raters: int) -> float:
    """Fleiss' kappa from the sums of :func:`fleiss_parts` (they add over groups of items, so a
    resample of groups is a weighted sum); NaN with no items or when chance agreement is 1."""
    if items == 0:
        return math.nan
    p_met = met_votes / (items * raters)
    expected = p_met**2 + (1 - p_met) ** 2
    observed = agreement / items
    return math.nan if expected == 1 else (observed - expected) / (1 - expected)


def fleiss_kappa(met_votes: Sequence[int], raters: int) -> float:
    """Fleiss' kappa of binary verdicts: each item given by its "met" votes out of ``raters``."""
    return fleiss_from_parts(*fleiss_parts(met_votes, raters), raters)
