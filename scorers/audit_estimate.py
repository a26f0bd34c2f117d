"""An audited cheap judge: the expensive judge's score estimated from a stratified sample.

Why: grading every criterion with an API judge is most of a run's bill. A local judge can grade
every case for the price of a GPU, and the API judge only a sample of cases; the run then reports
how well the two agree (Cohen's kappa on the sampled criteria, with an interval) and what the API
judge's score over *all* cases would have been, with an interval that is narrow when the judges
agree and honest when they do not.

The estimator is the stratified difference estimator (prediction-powered inference with the local
judge as the predictor): in each stratum h of N_h cases, n_h of them sampled without replacement,

    estimate = sum_h W_h * (mean of local over the N_h cases + mean of (api - local) over the n_h)
    variance = sum_h W_h^2 * (1 - n_h / N_h) * s_h^2 / n_h
    interval = estimate +- t(n - H) * sqrt(variance)

with W_h = N_h / N and s_h^2 the sample variance (n_h - 1) of the differences. The local judge's
mean is a census of the run's cases, not a sample, so it adds no variance; the finite-population
factor makes a stratum sampled in full contribute none. The variance is estimated from the n
sampled cases in H strata, so the interval uses Student's t with the design's n - H degrees of
freedom, not the normal's 1.96: a review of 30 cases in 11 strata estimates its variance about as
well as 19 cases would, and 1.96 there covered 0.93 at best (bench/physician_estimate.py
--small-campaign). Any per-case value works: a CACS@k term, a Pass@k indicator, a case's share of
met criteria.

A census (every stratum sampled whole) is known exactly: its interval is the estimate itself, with
a standard error of 0. A sample is not: when no sampled stratum shows any spread in its differences
(``scorers.agreement.shows_spread``: the two judges differ by the same amount on every sampled
case of each stratum, most often by nothing), the variance is 0 only because the sample happened to
show none, and the interval is undefined (NaN), never the zero-width interval the formula gives
(or 1e-17 wide, as the differences of equal shares through sums come out).

The kappa interval is the project's one case bootstrap (``scorers.agreement``): the 30 criteria
of a case are graded from one answer and are not independent, so cases, not criteria, are the
units resampled. The sample is its one stratified draw.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping

from clinconsensus_tasks.scorers.agreement import Z_95, Interval, kappa_interval, shows_spread, stratified_draw, t_quantile

__all__ = ["MIN_PER_STRATUM", "Z_95", "Interval", "difference_estimate", "kappa_interval", "stratified_sample"]

MIN_PER_STRATUM = 2  # the fewest sampled cases that give a stratum a variance


def stratified_sample(strata: Mapping[str, Hashable], share: float, seed: int) -> list[str]:
    """Case ids drawn without replacement: ``share`` of each stratum, rounded, and at least
    :data:`MIN_PER_STRATUM` (or the whole stratum when it is smaller). ``strata`` maps a case id to
    its stratum (e.g. ``(subject, difficulty)``); the draw depends only on the ids, the strata,
    ``share`` and ``seed``, not on the order of ``strata``. Returned sorted."""
    if not 0 < share <= 1:
        raise ValueError(f"audit share must be in (0, 1], got {share}")
    return stratified_draw(strata, lambda sizes: {s: min(n, max(MIN_PER_STRATUM, round(share * n))) for s, n in sizes.items()}, seed)


def difference_estimate(local: Mapping[str, float], api: Mapping[str, float], strata: Mapping[str, Hashable],
                        z: float | None = None, finite_population: bool = True) -> Interval:
    """The API judge's mean over every case of ``local`` (the local judge's per-case values), from
    the sampled cases in ``api``; ``strata`` gives each case's stratum (see the module docstring).
    ``finite_population=False`` when a sampled case's value is itself estimated (a share of its
    criteria reviewed, rows left out): the factor (1 - n_h / N_h) is dropped, so a stratum sampled
    whole still carries the variance of its cases' values (the with-replacement variance, which
    is conservative for a two-stage sample). ``z``: the interval's multiplier; by default Student's
    t with the design's degrees of freedom, the sampled cases less the strata. The interval is the
    estimate itself for a census (every stratum sampled whole, ``finite_population``), and undefined
    (NaN) for a sample whose sampled strata show no spread in their differences (see the module
    docstring): that is the only undefined interval it returns."""
    missing = sorted(set(api) - set(local))
    if missing:
        raise ValueError(f"cases graded by the API judge but not by the local judge: {', '.join(missing[:5])}")
    groups: dict[Hashable, list[str]] = defaultdict(list)
    for case_id in local:
        groups[strata[case_id]].append(case_id)
    total = len(local)
    estimate = variance = 0.0
    sampled = 0
    census, spread = finite_population, False  # every stratum sampled whole; a sampled stratum whose differences differ
    for stratum, ids in groups.items():
        sampled_ids = [i for i in ids if i in api]
        diffs = [api[i] - local[i] for i in sampled_ids]
        if len(diffs) < min(MIN_PER_STRATUM, len(ids)):
            raise ValueError(f"stratum {stratum!r}: {len(diffs)} of {len(ids)} cases graded by the API judge; "
                             f"need at least {MIN_PER_STRATUM} (or all) to estimate it")
        weight, n = len(ids) / total, len(diffs)
        sampled += n
        d_mean = sum(diffs) / n
        estimate += weight * (sum(local[i] for i in ids) / len(ids) + d_mean)
        census = census and n == len(ids)
        if n < len(ids) or (not finite_population and n > 1):
            # the differences' rounding is that of the values they were taken from
            if shows_spread(diffs, max(abs(v) for i in sampled_ids for v in (api[i], local[i]))):
                spread = True
                s2 = sum((d - d_mean) ** 2 for d in diffs) / (n - 1)
                variance += weight**2 * ((1 - n / len(ids)) if finite_population else 1.0) * s2 / n
    if not census and not spread:
        return Interval.undefined(estimate)  # a sample that shows no spread: no interval, not a zero-width one
    if z is None:
        df = sampled - len(groups)
        z = t_quantile(df) if df > 0 else Z_95  # a census: no variance to multiply
    return Interval.around(estimate, math.sqrt(variance), z)
