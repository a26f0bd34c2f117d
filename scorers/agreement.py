"""Agreement between raters of binary verdicts, and the one case bootstrap behind every interval.

ClinConsensus is graded by judges (an API judge, a distilled local judge, a jury) and checked
against physicians; the question each comparison answers is whether one rater can stand in for
another. One place defines each statistic and each interval, and every caller uses it: the dual
judge's agreement, the jury, the audit, the physician review and the report.

* **Statistics** of a 2x2 confusion: percent agreement, Cohen's kappa, macro F1 (HealthBench's
  meta-evaluation metric), precision and recall of "met"; Fleiss' kappa of several raters.
  **Undefined is NaN, never 0**: kappa when chance agreement is 1 (both raters used one and the same
  class), precision / recall / F1 of a class with no rows, macro F1 when either F1 is undefined.
  Printed as n/a, written as ``null`` in JSON (``clinconsensus_tasks.json_output``).
* **The case bootstrap** (:func:`case_draws`, :func:`bootstrap`): the 30 criteria of a case are
  judged on one answer and are not independent, so cases are resampled, never rows. A resample is a
  vector of case multiplicities; each case's additive parts (a confusion's four counts, Fleiss'
  sums, a metric's per-case term) are summed once into a per-case matrix, so a resample's pooled
  parts are one matrix product. The interval is the 2.5th and 97.5th percentiles of the resampled
  statistic, over the resamples where it is defined; it is undefined (NaN) when fewer than
  :data:`MIN_CASES` cases contribute to the statistic (every resample would be the one case again,
  and the interval would look exact).
* **A sample without spread** (:func:`shows_spread`): whether a sample's values differ at all, the
  one rule every place that derives a statistic or an interval from a sample's spread decides by
  (the difference estimator of the physicians' estimate and the audit, the judge's share of a
  headline's variance, a correlation). A standard error or a variance computed from equal values
  comes out as 1e-17 or 1e-34, not 0 (a mean of 0.1's is not exactly 0.1), so "is it 0?" asked of
  it is asked of rounding; the rule asks it of the values, with a tolerance far above rounding and
  far below any real difference. Where an interval is a formula of that spread, a sample without
  spread gives none (NaN): a zero-width interval from a sample would read as a figure known exactly.
* **A sample without a discordant event** (:func:`zero_event_bound`): the case bootstrap's
  percentile interval of a share collapses to a point when no case holds the event it counts (no
  disagreement between two raters on any row: kappa 1.000 [1.000, 1.000]; no flipped row: flip rate
  0.000 [0.000, 0.000]), yet a perfect rater must be able to show what the sample does show. Rows of
  a case are not independent, so the unit is the case: with none of n cases holding an event, the
  share of cases that hold one is at most ``1 - 0.05 ** (1 / n)`` at 95% (the exact one-sided
  Clopper-Pearson bound for 0 of n, about 3 / n), and the rate over rows at most that. Where a caller
  asks for it (``zero_event``: the event's name), an interval whose data hold no such event (decided
  from the counts, never from a computed width) has that bound for its end (:func:`zero_event_interval`:
  a rate's upper end, an agreement's lower end, kappa at ``p_o = 1 -`` the bound with the sample's own
  chance agreement) and says so (:class:`ZeroEvents`, ``zero_events`` in its dict). The physicians'
  review (the judge against the physicians, the physicians with each other) and the judge asked
  again (flips, its agreement with itself, answer-irrelevant edits) ask for it.
* **Samples of cases** (:func:`allocate`, :func:`stratified_draw`): the one stratified draw the
  audit and the physician review make, each with its own allocation rule.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Z_95 = 1.959963984540054
RESAMPLES, LEVEL = 1000, 0.95


def t_quantile(df: float, level: float = LEVEL) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom (scipy's): what
    multiplies a standard error estimated from few units (the normal's 1.96 is too short there)."""
    from scipy.stats import t

    return float(t.ppf(1 - (1 - level) / 2, df)) if df > 0 else math.nan
MIN_CASES = 2  # the fewest contributing cases that give an interval

#: Values of a sample closer than this share of their scale are one number. The values the project
#: compares are shares, per-case terms and their sums and differences: computed through another sum
#: or in another order they differ in their last bits (a few times 1e-16 of the largest magnitude
#: they were computed from), while two values that really differ (ratios of counts of at most some
#: thousands of rows) differ by at least 1e-7 of it.
SAME_NUMBER = 1e-9


def shows_spread(values: Iterable[float], scale: float = 0.0) -> bool:
    """Whether a sample's ``values`` differ: their range (largest minus smallest) is above
    :data:`SAME_NUMBER` times their scale, the largest magnitude among them or ``scale`` if larger
    (the magnitude of what they were computed from: the difference of two shares near 0.55 carries
    the shares' rounding, about 1e-16, whatever its own size). Fewer than two values show none, and
    rounding cannot make equal values show any. Where this is False, a standard error or variance
    computed from ``values`` is rounding, not a figure: no interval, no share of it."""
    v = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float).ravel()
    if v.size < 2:
        return False
    return bool(v.max() - v.min() > SAME_NUMBER * max(scale, float(np.abs(v).max())))


def zero_event_bound(units: int, level: float = LEVEL) -> float:
    """The exact one-sided ``level`` upper bound on the share of independent ``units`` that hold an
    event when none of them held one: ``1 - (1 - level) ** (1 / units)`` (the Clopper-Pearson bound
    for 0 of n; about 3 / n at 95%, the rule of three). NaN for no units. The one formula of every
    interval of a sample without a discordant event (the module docstring; the gates' cases needed,
    :func:`zero_event_units`, solve it)."""
    return 1 - (1 - level) ** (1 / units) if units > 0 else math.nan


def zero_event_units(share: float, level: float = LEVEL) -> int | None:
    """The fewest units, none holding an event, whose :func:`zero_event_bound` is at most ``share``
    (``n >= log(1 - level) / log(1 - share)``); ``None`` for a share of 0 or less (no number of units
    brings the bound to 0) or an undefined one."""
    if math.isnan(share) or share <= 0:
        return None
    if share >= 1:
        return 1
    n = max(1, math.ceil(math.log(1 - level) / math.log1p(-share)))
    while zero_event_bound(n, level) > share:  # the logarithms' rounding, either way
        n += 1
    while n > 1 and zero_event_bound(n - 1, level) <= share:
        n -= 1
    return n


def kappa_from(observed: float, chance: float) -> float:
    """Kappa of observed agreement ``observed`` and chance agreement ``chance``,
    ``(p_o - p_e) / (1 - p_e)`` clamped to [-1, 1]; NaN when ``p_e`` is 1 (or undefined)."""
    if not math.isfinite(chance) or chance >= 1:
        return math.nan
    return min(1.0, max(-1.0, (observed - chance) / (1 - chance)))


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
    """Precision, recall and F1 of the second rater against the reference for one class; each NaN
    where its denominator is 0 (the second rater never said the class, the reference never did,
    neither did): no rows of a class say nothing about how it is recognised."""
    tp, fp, fn = (c.tp, c.fp, c.fn) if positive else (c.tn, c.fn, c.fp)
    precision = tp / (tp + fp) if tp + fp else math.nan
    recall = tp / (tp + fn) if tp + fn else math.nan
    f1 = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else math.nan
    return precision, recall, f1


def macro_f1(c: Confusion) -> float:
    """Unweighted mean of the F1 of "met" and of "not met"; NaN when either is undefined (a class
    neither rater used: the mean of one F1 and a stand-in 0 would read as a verdict on the rater)."""
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
    return sxy / math.sqrt(sxx * syy) if shows_spread(x) and shows_spread(y) else math.nan  # a constant side: sxx is rounding


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


# -- intervals: the one case bootstrap ----------------------------------------------------------------


@dataclass(frozen=True)
class ZeroEvents:
    """Why an interval's end is the exact zero-event bound (:func:`zero_event_interval`): no
    ``event`` in any of ``cases`` cases, so the share of cases that hold one is at most ``bound``
    (:func:`zero_event_bound`); ``chance``: a kappa's chance agreement ``p_e`` (its lower end is
    kappa at ``p_o = 1 - bound``), NaN for a share."""

    event: str
    cases: int
    bound: float
    chance: float = math.nan

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"event": self.event, "cases": self.cases, "bound": self.bound}
        if math.isfinite(self.chance):
            out["chance"] = self.chance
        return out


@dataclass(frozen=True)
class Interval:
    """An estimate with its standard error and interval; ``cases``: the cases that contributed
    (``None`` where the interval is not a resample of cases); ``zero_events``: set where the
    interval's end is the exact bound of a sample without a discordant event (no standard error then:
    the resamples' spread of such a sample is 0, which is no figure)."""

    estimate: float
    stderr: float
    low: float
    high: float
    cases: int | None = None
    zero_events: ZeroEvents | None = None

    @classmethod
    def around(cls, estimate: float, stderr: float, z: float = Z_95) -> Interval:
        return cls(estimate, stderr, estimate - z * stderr, estimate + z * stderr)

    @classmethod
    def undefined(cls, estimate: float = math.nan, cases: int | None = None) -> Interval:
        return cls(estimate, math.nan, math.nan, math.nan, cases)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"estimate": self.estimate, "stderr": self.stderr, "low": self.low, "high": self.high}
        if self.cases is not None:
            out["cases"] = self.cases
        if self.zero_events is not None:
            out["zero_events"] = self.zero_events.to_dict()
        return out


RATE, AGREEMENT, KAPPA, NET = "rate", "agreement", "kappa", "net"  # which end a zero-event interval bounds


def zero_event_interval(estimate: float, cases: int, event: str, side: str, chance: float = math.nan,
                        level: float = LEVEL) -> Interval:
    """The interval of a sample in which none of ``cases`` cases holds an ``event``, its end the exact
    bound ``B`` (:func:`zero_event_bound`): a ``RATE`` of the event (0) is in [0, B]; an ``AGREEMENT``
    share (1: precision, recall, percent agreement) in [1 - B, 1]; a ``KAPPA`` (1) in
    [kappa at ``p_o = 1 - B`` with the sample's chance agreement ``chance``, clamped to -1; 1]; a
    ``NET`` difference of two rates of the event (0) in [-B, B]. A row-level rate is at most the
    share of cases holding the event; an observed agreement of the rows at least one minus it."""
    bound = zero_event_bound(cases, level)
    low, high = {RATE: (0.0, bound), NET: (-bound, bound), AGREEMENT: (1 - bound, 1.0),
                 KAPPA: (kappa_from(1 - bound, chance), 1.0)}[side]
    return Interval(estimate, math.nan, low, high, cases, ZeroEvents(event, cases, bound, chance if side == KAPPA else math.nan))


def without_events(interval: Interval, events: float, event: str, side: str = RATE, chance: float = math.nan,
                   level: float = LEVEL) -> Interval:
    """``interval`` (a case bootstrap's, ``cases`` the contributing cases), or, where the data hold no
    ``event`` (``events``, counted from them, is 0) and the estimate is defined from at least
    :data:`MIN_CASES` cases, :func:`zero_event_interval` over those cases (undefined stays undefined:
    a kappa whose chance agreement is 1)."""
    if events or not event or interval.cases is None or interval.cases < MIN_CASES or not math.isfinite(interval.estimate):
        return interval
    return zero_event_interval(interval.estimate, interval.cases, event, side, chance, level)


def case_draws(cases: int, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """How often each of ``cases`` cases is drawn in each of ``resamples`` resamples of cases with
    replacement (``resamples`` x ``cases`` counts). The draws are numpy's ``integers`` indices for
    ``seed``, counted: the same resamples the report has always drawn, as weights."""
    if cases == 0:
        return np.zeros((resamples, 0), dtype=np.int64)
    index = np.random.default_rng(seed).integers(0, cases, size=(resamples, cases))
    offset = index + cases * np.arange(resamples)[:, None]
    return np.bincount(offset.ravel(), minlength=resamples * cases).reshape(resamples, cases)


def percentile_interval(estimate: float, drawn: Sequence[float] | np.ndarray, cases: int, level: float = LEVEL) -> Interval:
    """The percentile interval of the resampled statistic ``drawn``; undefined from fewer than
    :data:`MIN_CASES` contributing ``cases``, an undefined estimate, or a statistic undefined (NaN)
    in more than one tail's share of the resamples: an interval over the resamples where it happens
    to be defined (ten rows that all agree: kappa is 1.0 wherever both classes were drawn) would
    look far surer than the data is. A sample without a discordant event gives a zero-width one
    here; the callers that count the events replace it (:func:`without_events`)."""
    values = np.asarray(drawn, dtype=float)
    finite = values[np.isfinite(values)]
    if cases < MIN_CASES or len(finite) < 2 or not math.isfinite(estimate) or len(values) - len(finite) > (1 - level) / 2 * len(values):
        return Interval.undefined(estimate, cases)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Interval(estimate, float(finite.std(ddof=1)), float(low), float(high), cases)


def bootstrap(per_case: np.ndarray, statistic: Callable[[np.ndarray], float], draws: np.ndarray,
              contributing: np.ndarray | None = None, level: float = LEVEL) -> Interval:
    """``statistic`` of the pooled parts (the column sums of ``per_case``, one row per case) with its
    percentile interval over ``draws`` (:func:`case_draws`). ``contributing`` marks the cases whose
    parts enter the statistic (default: a row with any non-zero part)."""
    per_case = np.asarray(per_case, dtype=float)
    if contributing is None:
        contributing = per_case.any(axis=1)
    estimate = statistic(per_case.sum(axis=0))
    drawn = [statistic(row) for row in draws @ per_case]
    return percentile_interval(estimate, drawn, int(np.count_nonzero(contributing)), level)


CONFUSION_STATISTICS: dict[str, tuple[Callable[[Confusion], float], tuple[int, ...]]] = {
    # name -> (statistic, the confusion parts [tp, tn, fp, fn] a case must hold to contribute)
    "percent_agreement": (percent_agreement, (0, 1, 2, 3)),
    "kappa": (cohen_kappa, (0, 1, 2, 3)),
    "macro_f1": (macro_f1, (0, 1, 2, 3)),
    "precision_met": (lambda c: precision_recall_f1(c, True)[0], (0, 2)),
    "recall_met": (lambda c: precision_recall_f1(c, True)[1], (0, 3)),
}


def confusion_matrix(pairs_by_case: Mapping[Hashable, Iterable[tuple[bool, bool]]], keys: Sequence[Hashable]) -> np.ndarray:
    """One row per case of ``keys``: its confusion's counts [tp, tn, fp, fn]."""
    rows = [Confusion.of(pairs_by_case.get(k, ())) for k in keys]
    return np.array([[c.tp, c.tn, c.fp, c.fn] for c in rows], dtype=float).reshape(len(keys), 4)


def _of_parts(statistic: Callable[[Confusion], float]) -> Callable[[np.ndarray], float]:
    return lambda parts: statistic(Confusion(*(int(round(x)) for x in parts)))


def _chance(c: Confusion) -> float:
    """Cohen's chance agreement ``p_e`` of a confusion (NaN for no pairs)."""
    if not c.n:
        return math.nan
    ref_met, other_met = (c.tp + c.fn) / c.n, (c.tp + c.fp) / c.n
    return ref_met * other_met + (1 - ref_met) * (1 - other_met)


def _without_disagreement(name: str, interval: Interval, per_case: np.ndarray, event: str, level: float) -> Interval:
    """A confusion statistic's interval where no case holds a disagreement (:func:`without_events`):
    percent agreement, precision and recall of met are agreement shares over the cases they read;
    kappa is kappa at ``p_o = 1 - B``; macro F1 is at least the mean, over met and not met, of one
    minus the bound over the cases holding the class (with no disagreement a class's precision and
    recall read the same rows, and an F1 is at least the smaller of the two)."""
    pooled = Confusion(*(int(round(x)) for x in per_case.sum(axis=0)))
    if name == "kappa":
        return without_events(interval, 0, event, KAPPA, _chance(pooled), level)
    if name != "macro_f1":
        return without_events(interval, 0, event, AGREEMENT, level=level)
    exact = without_events(interval, 0, event, AGREEMENT, level=level)
    if exact is interval:
        return interval
    met, not_met = (int(np.count_nonzero(per_case[:, j])) for j in (0, 1))
    low = 1 - (zero_event_bound(met, level) + zero_event_bound(not_met, level)) / 2
    return Interval(exact.estimate, exact.stderr, low, exact.high, exact.cases, exact.zero_events)


def confusion_intervals(pairs_by_case: Mapping[Hashable, Iterable[tuple[bool, bool]]], resamples: int = RESAMPLES, seed: int = 0,
                        level: float = LEVEL, names: Sequence[str] = tuple(CONFUSION_STATISTICS),
                        zero_event: str = "") -> dict[str, Interval]:
    """Each statistic ``names`` of (reference, other) verdict pairs pooled over cases, with its case
    bootstrap interval; a case contributes to a statistic when it holds rows of the parts it reads
    (precision of met: cases where the second rater said met). ``zero_event`` (the name of a
    disagreement, e.g. ``"disagreement"``): where no row of any case disagrees (counted), each
    interval's end is the exact zero-event bound over its contributing cases (:func:`without_events`)."""
    keys = sorted(pairs_by_case, key=repr)
    per_case = confusion_matrix(pairs_by_case, keys)
    draws = case_draws(len(keys), resamples, seed)
    discordant = int(per_case[:, 2:].sum())
    out = {}
    for name in names:
        statistic, parts = CONFUSION_STATISTICS[name]
        out[name] = bootstrap(per_case, _of_parts(statistic), draws, per_case[:, list(parts)].any(axis=1), level)
        if zero_event and not discordant:
            out[name] = _without_disagreement(name, out[name], per_case, zero_event, level)
    return out


def kappa_interval(pairs_by_case: Mapping[Hashable, Iterable[tuple[bool, bool]]], resamples: int = RESAMPLES, seed: int = 0,
                   level: float = LEVEL, zero_event: str = "") -> Interval:
    """Cohen's kappa of verdict pairs pooled over cases, with its case bootstrap interval
    (``zero_event``: :func:`confusion_intervals`)."""
    return confusion_intervals(pairs_by_case, resamples, seed, level, ("kappa",), zero_event)["kappa"]


def fleiss_interval(votes_by_case: Mapping[Hashable, Sequence[int]], raters: int, resamples: int = RESAMPLES, seed: int = 0,
                    level: float = LEVEL, zero_event: str = "") -> Interval:
    """Fleiss' kappa of ``raters`` raters over every item of every case (an item given by its met
    votes, :func:`fleiss_parts`), with its case bootstrap interval. ``zero_event``: where every item
    is unanimous (its met votes 0 or ``raters``, counted), the lower end is kappa at the exact bound
    (an item's agreement is at most 1, so the mean agreement is at least ``1 - B``) with the sample's
    chance agreement (:func:`without_events`)."""
    keys = sorted(votes_by_case, key=repr)
    per_case = np.array([fleiss_parts(votes_by_case[k], raters) for k in keys], dtype=float).reshape(len(keys), 3)
    interval = bootstrap(per_case, lambda parts: fleiss_from_parts(*parts, raters), case_draws(len(keys), resamples, seed),
                         per_case[:, 0] > 0, level)
    split = sum(1 for k in keys for m in votes_by_case[k] if 0 < m < raters)
    if not zero_event or split or not keys:
        return interval
    items, _, met = per_case.sum(axis=0)
    p_met = met / (items * raters) if items else math.nan
    return without_events(interval, split, zero_event, KAPPA, p_met**2 + (1 - p_met) ** 2, level)


def mean_intervals(per_case: np.ndarray, resamples: int = RESAMPLES, seed: int = 0, level: float = LEVEL) -> list[Interval]:
    """The mean of each column of ``per_case`` (one row per case: a metric's per-case term) with its
    case bootstrap interval, every column from the same resamples in one matrix product."""
    per_case = np.asarray(per_case, dtype=float)
    cases = per_case.shape[0]
    if cases == 0:
        return [Interval.undefined(cases=0) for _ in range(per_case.shape[1] if per_case.ndim == 2 else 0)]
    means = case_draws(cases, resamples, seed) @ per_case / cases
    estimate = per_case.mean(axis=0)
    return [percentile_interval(float(estimate[j]), means[:, j], cases, level) for j in range(per_case.shape[1])]


# -- samples of cases ------------------------------------------------------------------------------------


def allocate(sizes: Mapping[Hashable, int], n: int, rng: random.Random | None = None) -> dict[Hashable, int]:
    """``n`` draws shared among strata in proportion to their ``sizes``, none above a stratum's size;
    ``n`` above the total takes every case. Each stratum gets the whole part of its quota, and the
    draws left over go to strata by their quotas' fractional parts: with ``rng``, at random with
    exactly those probabilities (systematic selection on the fractions from a random start, Madow's
    method), so every case of every stratum has the same chance ``n / total`` of being drawn and
    the sample is self-weighting; without, to the largest fractions (ties by the stratum's order),
    which leaves some small strata out of every draw."""
    total = sum(sizes.values())
    n = min(n, total)
    if n <= 0 or total == 0:
        return {s: 0 for s in sizes}
    quotas = {s: n * size / total for s, size in sizes.items()}
    out = {s: math.floor(q) for s, q in quotas.items()}
    short = n - sum(out.values())
    if rng is not None:
        point, reached = rng.random(), 0.0  # points point, point + 1, ... on the strata's fractions laid end to end
        for s in sorted(sizes, key=repr):
            before, reached = reached, reached + quotas[s] - out[s]
            if short and before <= point < reached:
                out[s] += 1
                short -= 1
                point += 1
        return out
    order = sorted(sizes, key=lambda s: (-(quotas[s] - out[s]), repr(s)))
    for s in order:
        if short == 0:
            break
        if out[s] < sizes[s]:
            out[s] += 1
            short -= 1
    return out


def stratified_draw(strata: Mapping[str, Hashable], counts: Callable[[Mapping[Hashable, int]], Mapping[Hashable, int]],
                    seed: int) -> list[str]:
    """Case ids drawn without replacement per stratum: ``strata`` maps a case id to its stratum,
    ``counts`` gives each stratum's draws from the strata's sizes. The draw depends on the ids, the
    strata, the counts and ``seed`` only, not on the order of ``strata``. Returned sorted."""
    groups: dict[Hashable, list[str]] = defaultdict(list)
    for case_id, stratum in strata.items():
        groups[stratum].append(case_id)
    chosen_counts = counts({s: len(ids) for s, ids in groups.items()})
    rng = random.Random(seed)
    chosen: list[str] = []
    for stratum in sorted(groups, key=repr):
        chosen += rng.sample(sorted(groups[stratum]), chosen_counts[stratum])
    return sorted(chosen)
