"""The paired statistics of the regression gate (scorers.paired), on hand-computable cases."""

from __future__ import annotations

from itertools import product

import pytest

from clinconsensus_tasks.scorers.paired import (
    PairedColumns,
    compare_paired,
    difference,
    paired_bootstrap,
    paired_permutation,
    worse_beyond,
)


def test_difference_of_means_ratios_and_strata():
    assert difference(PairedColumns.build([0, 0, 0], [1, 1, 1])) == 1.0
    # rubric accuracy: (2+4)/(2+4) - (1+3)/(2+4) = 1 - 4/6
    ratio = PairedColumns.build([1, 3], [2, 4], baseline_den=[2, 4], candidate_den=[2, 4])
    assert difference(ratio) == pytest.approx(1 / 3)
    # two strata: baseline mean(0.5, 0) = 0.25, candidate mean(1, 1) = 1
    strata = PairedColumns.build([0, 1, 0], [1, 1, 1], strata=["A", "A", "B"])
    assert difference(strata) == pytest.approx(0.75)


def test_permutation_exact_small_cases():
    # Every case +1: only "swap none" and "swap all" reach |mean| = 1: 2 of 8 patterns.
    assert paired_permutation(PairedColumns.build([0, 0, 0], [1, 1, 1])) == (0.25, True)
    # One case differs: every pattern has |difference| = 1/4, so p = 1.
    assert paired_permutation(PairedColumns.build([1, 0, 0, 0], [0, 0, 0, 0])) == (1.0, True)
    # Ratio metric: swapping either case alone gives 5/6 - 5/6 = 0, so p = 2/4.
    ratio = PairedColumns.build([1, 3], [2, 4], baseline_den=[2, 4], candidate_den=[2, 4])
    assert paired_permutation(ratio) == (0.5, True)
    # Identical runs: every pattern ties the observed 0.
    assert paired_permutation(PairedColumns.build([3, 1, 2], [3, 1, 2])) == (1.0, True)


def _enumerated_p(diffs: list[float]) -> float:
    """Sign-flip p-value by brute force over all 2**n sign vectors (plain Python)."""
    observed = abs(sum(diffs) / len(diffs))
    hits = total = 0
    for signs in product((1, -1), repeat=len(diffs)):
        total += 1
        hits += abs(sum(s * d for s, d in zip(signs, diffs)) / len(diffs)) >= observed - 1e-12
    return hits / total


def test_permutation_matches_exhaustive_enumeration():
    baseline = [5, 3, 8, 1, 0, 7, 2, 9, 4, 6, 3, 5]
    candidate = [6, 3, 9, 0, 2, 9, 2, 10, 4, 8, 1, 7]
    cols = PairedColumns.build(baseline, candidate)
    expected = _enumerated_p([c - b for b, c in zip(baseline, candidate)])
    p, exact = paired_permutation(cols, permutations=2 ** 12)
    assert exact and p == pytest.approx(expected, abs=1e-12)
    # Monte Carlo (fewer draws than patterns) lands near the exact value and is seeded.
    p_mc, exact_mc = paired_permutation(cols, permutations=4000, seed=3)
    assert not exact_mc and abs(p_mc - expected) < 0.03
    assert paired_permutation(cols, permutations=4000, seed=3) == (p_mc, False)


def test_bootstrap_hand_cases():
    # Constant differences: every resample gives the same difference.
    assert paired_bootstrap(PairedColumns.build([0, 0, 0], [1, 1, 1])) == (1.0, 1.0)
    assert paired_bootstrap(PairedColumns.build([2, 2], [2, 2])) == (0.0, 0.0)
    # Differences 0 and 1: resampled means 0, 1/2, 1 with chances 1/4, 1/2, 1/4, so the 2.5 and
    # 97.5 percentiles are exactly 0 and 1.
    assert paired_bootstrap(PairedColumns.build([0, 0], [0, 1]), resamples=4000) == (0.0, 1.0)
    # Stratified: each stratum keeps its size, a one-case stratum always contributes the same.
    cols = PairedColumns.build([0, 0, 0], [1, 1, 0], strata=["A", "A", "B"])
    assert paired_bootstrap(cols) == (0.5, 0.5)  # A: mean of (1, 1) = 1; B: 0; over strata 0.5


def test_bootstrap_is_seeded_and_covers_the_difference():
    baseline = [5, 3, 8, 1, 0, 7, 2, 9, 4, 6, 3, 5]
    candidate = [6, 3, 9, 0, 2, 9, 2, 10, 4, 8, 1, 7]
    cols = PairedColumns.build(baseline, candidate)
    lo, hi = paired_bootstrap(cols, seed=1)
    assert paired_bootstrap(cols, seed=1) == (lo, hi)
    assert paired_bootstrap(cols, seed=2) != (lo, hi)
    assert lo < difference(cols) < hi


def test_gate_rule():
    worse = compare_paired(PairedColumns.build([1, 1, 1, 1], [0, 0, 0, 0]))
    assert worse.difference == -1.0 and worse.interval == (-1.0, -1.0)
    assert worse_beyond(worse) and worse_beyond(worse, 0.5) and not worse_beyond(worse, 1.0)
    same = compare_paired(PairedColumns.build([1, 0, 1, 0], [1, 0, 1, 0]))
    assert same.difference == 0.0 and same.p_value == 1.0 and not worse_beyond(same)
    # Lower, but the interval reaches zero: not a regression.
    mixed = compare_paired(PairedColumns.build([0, 0], [0, -1]), resamples=4000)
    assert mixed.interval == (-1.0, 0.0) and not worse_beyond(mixed)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="one value per case"):
        PairedColumns.build([1, 2], [1])
    with pytest.raises(ValueError, match="no paired cases"):
        paired_bootstrap(PairedColumns.build([], []))
