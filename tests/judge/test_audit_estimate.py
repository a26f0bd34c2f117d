"""The audited local judge's statistics, on values worked by hand (see each test's comments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clinconsensus_tasks.scorers.agreement import Confusion, cohen_kappa
from clinconsensus_tasks.scorers.audit_estimate import (
    Z_95,
    difference_estimate,
    kappa_interval,
    stratified_sample,
)


def test_difference_estimate_worked_by_hand():
    # Stratum A: 4 cases, local 0.2 0.4 0.6 0.8 (mean 0.5); a1 and a3 audited, API 0.5 and 0.6:
    #   differences 0.3 and 0.0, mean 0.15, variance ((0.15)^2 * 2) / 1 = 0.045; estimate 0.65.
    # Stratum B: 2 cases, local 1.0 and 0.0, both audited, API 1.0 and 1.0: estimate 0.5 + 0.5 = 1.0,
    #   no variance (the whole stratum was audited).
    # Overall: 4/6 * 0.65 + 2/6 * 1.0 = 23/30; variance (4/6)^2 * (1 - 2/4) * 0.045 / 2 = 0.005.
    # The interval: Student's t with 4 sampled cases less 2 strata = 2 degrees of freedom, 4.30265.
    local = {"a1": 0.2, "a2": 0.4, "a3": 0.6, "a4": 0.8, "b1": 1.0, "b2": 0.0}
    api = {"a1": 0.5, "a3": 0.6, "b1": 1.0, "b2": 1.0}
    strata = {"a1": "A", "a2": "A", "a3": "A", "a4": "A", "b1": "B", "b2": "B"}
    result = difference_estimate(local, api, strata)
    assert result.estimate == pytest.approx(23 / 30)
    assert result.stderr == pytest.approx(math.sqrt(0.005))
    t_2 = 4.302652729911275  # Student's t, 2 degrees of freedom, 97.5th percentile
    assert (result.low, result.high) == pytest.approx((23 / 30 - t_2 * math.sqrt(0.005), 23 / 30 + t_2 * math.sqrt(0.005)))
    # the normal's multiplier when the caller gives it
    given = difference_estimate(local, api, strata, z=Z_95)
    assert (given.low, given.high) == pytest.approx((23 / 30 - Z_95 * math.sqrt(0.005), 23 / 30 + Z_95 * math.sqrt(0.005)))


def test_difference_estimate_is_exact_when_every_case_is_audited():
    local = {"a": 0.0, "b": 0.25, "c": 1.0}
    api = {"a": 1.0, "b": 0.5, "c": 0.0}
    result = difference_estimate(local, api, dict.fromkeys(local, "s"))
    assert (result.estimate, result.stderr) == (pytest.approx(0.5), 0.0)


def test_difference_estimate_refuses_a_stratum_it_cannot_estimate():
    local = {"a": 0.0, "b": 0.5, "c": 1.0}
    with pytest.raises(ValueError, match="stratum 's': 1 of 3 cases graded by the API judge"):
        difference_estimate(local, {"a": 1.0}, dict.fromkeys(local, "s"))
    with pytest.raises(ValueError, match="not by the local judge: z"):
        difference_estimate(local, {"a": 1.0, "b": 1.0, "z": 0.0}, dict.fromkeys(local, "s"))


def test_kappa_interval_is_the_case_bootstrap_of_pairs_repeated_by_case():
    # Pairs (API, local). x: agree twice; y: agree on met, then API met / local not; z: agree on
    # not met, then API not / local met. Pooled tp 2, tn 2, fp 1, fn 1: p_o 2/3, p_e 1/2, kappa 1/3.
    # The interval: each resample's cases' pairs put together again (case x drawn twice: its pairs
    # twice), kappa of each, the 2.5th and 97.5th percentiles of those that are defined.
    pairs = {"x": [(True, True), (False, False)], "y": [(True, True), (True, False)], "z": [(False, False), (False, True)]}
    result = kappa_interval(pairs, resamples=200, seed=5)
    assert result.estimate == pytest.approx(1 / 3) and result.cases == 3
    keys = sorted(pairs)
    drawn = []
    for row in np.random.default_rng(5).integers(0, 3, size=(200, 3)):
        kappa = cohen_kappa(Confusion.of([pair for i in row for pair in pairs[keys[i]]]))
        if not math.isnan(kappa):
            drawn.append(kappa)
    low, high = np.percentile(drawn, [2.5, 97.5])
    assert (result.low, result.high) == (pytest.approx(low), pytest.approx(high))
    one_case = kappa_interval({"x": pairs["y"]})
    assert math.isnan(one_case.low) and one_case.cases == 1  # no interval from one case


def test_stratified_sample_takes_a_share_of_each_stratum_reproducibly():
    strata = {f"big{i}": ("内科", "low") for i in range(10)}
    strata |= {f"mid{i}": ("外科", "low") for i in range(3)}
    strata["solo"] = ("儿科", "low")
    chosen = stratified_sample(strata, 0.3, seed=7)
    # 3 of 10; round(0.9) = 1 of 3, raised to the minimum of 2; the lone case.
    assert [sum(c.startswith(p) for c in chosen) for p in ("big", "mid", "solo")] == [3, 2, 1]
    assert chosen == stratified_sample(dict(reversed(list(strata.items()))), 0.3, seed=7)  # order does not matter
    assert any(stratified_sample(strata, 0.3, seed=s) != chosen for s in range(8, 12))  # the seed does
    with pytest.raises(ValueError, match="audit share"):
        stratified_sample(strata, 0.0, seed=1)


def test_a_sample_without_spread_gives_no_interval_however_its_differences_round():
    # 20 cases in one stratum, local 0.0 to 0.6; 10 audited, the API judge 0.3 above the local one on
    # each: every difference is 0.3, but (v + 0.3) - v comes out 0.3 give or take 1e-16, so the
    # formula's standard error is about 1e-17, not 0, and its interval a zero-width [0.59, 0.59].
    local = {f"c{i:02d}": (i % 7) / 10 for i in range(20)}
    api = {c: local[c] + 0.3 for c in sorted(local)[:10]}
    diffs = [api[c] - local[c] for c in api]
    mean = sum(diffs) / 10
    assert 0 < math.sqrt((1 - 10 / 20) * sum((d - mean) ** 2 for d in diffs) / 9 / 10) < 1e-16  # what the formula gives
    result = difference_estimate(local, api, dict.fromkeys(local, "s"))
    assert result.estimate == pytest.approx(sum(local.values()) / 20 + 0.3)
    assert math.isnan(result.stderr) and math.isnan(result.low) and math.isnan(result.high)  # no interval, not a zero-width one
    # One audited case 0.2 further: differences 0.3 (9 times) and 0.5, mean 0.32, s^2 = (9 * 0.02^2 + 0.18^2) / 9 = 0.004,
    # variance (1 - 10/20) * 0.004 / 10 = 0.0002; Student's t with 10 - 1 = 9 degrees of freedom.
    api["c00"] += 0.2
    result = difference_estimate(local, api, dict.fromkeys(local, "s"))
    t_9 = 2.2621571627409915
    assert result.estimate == pytest.approx(sum(local.values()) / 20 + 0.32) and result.stderr == pytest.approx(math.sqrt(0.0002))
    assert (result.low, result.high) == pytest.approx((result.estimate - t_9 * math.sqrt(0.0002), result.estimate + t_9 * math.sqrt(0.0002)))
    # A census is known exactly, spread or none: its interval is the estimate, with a standard error of 0.
    every = {c: v + 0.3 for c, v in local.items()}
    census = difference_estimate(local, every, dict.fromkeys(local, "s"))
    assert census.stderr == 0.0 and census.low == census.high == census.estimate
    # Drawn criteria (finite_population=False): a stratum reviewed whole is still a sample, and without spread gives none.
    assert math.isnan(difference_estimate(local, every, dict.fromkeys(local, "s"), finite_population=False).stderr)
