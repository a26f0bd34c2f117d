"""Paired comparison of two runs on the same cases: bootstrap interval and permutation p-value.

Why paired: two models answer the same cases, and cases differ far more in difficulty than the
models do. Comparing case by case removes that shared variation, so a regression gate can tell a
real change from noise with a few hundred cases.

Every headline metric of both benchmarks has one shape, a *stratified ratio*: the mean over
strata ``s`` of ``sum(num_i) / sum(den_i)`` over the cases ``i`` of ``s``.

* ClinConsensus (one stratum): every metric has ``num`` = the case's term (``met / judged``, the
  Pass@k indicator, the CACS@k term: ``metric_table.case_terms``) and ``den`` = 1. With several
  epochs ``num`` and ``den`` are summed over a case's epochs, so each (case, epoch) weighs as it
  does in the frameworks' own metrics.
* CliMedBench: the overall score has one stratum per scenario (``num`` = item value, ``den`` = 1),
  so it is the unweighted mean of scenario means, as in the paper.

:func:`paired_bootstrap` resamples cases with replacement (within each stratum, so every scenario
keeps its size), the same cases for both runs, and takes percentiles of the difference
(candidate - baseline). :func:`paired_permutation` swaps the two runs' values within each case at
random (for a plain mean this is the sign flip of the per-case difference) and counts how often
the difference is at least as far from zero as the observed one; with few cases it enumerates
every swap pattern exactly. Both are seeded and deterministic.

Plain numpy, no framework: ``clinconsensus_tasks.gates.regression`` feeds them from logs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import product
from typing import Sequence

import numpy as np

# Observed and resampled differences closer than this count as equal: sums of the same floats in
# another order may differ in the last bits, and a tie must not flip to "less extreme".
_TIE = 1e-12


@dataclass(frozen=True)
class PairedColumns:
    """Per-case numerators and denominators of one metric for the two runs, aligned by case."""

    baseline_num: np.ndarray
    baseline_den: np.ndarray
    candidate_num: np.ndarray
    candidate_den: np.ndarray
    strata: np.ndarray  # integer stratum of each case (all 0 for a plain ratio)

    @classmethod
    def build(
        cls,
        baseline_num: Sequence[float],
        candidate_num: Sequence[float],
        baseline_den: Sequence[float] | None = None,
        candidate_den: Sequence[float] | None = None,
        strata: Sequence[object] | None = None,
    ) -> "PairedColumns":
        """Columns from plain sequences; denominators default to 1, strata to one stratum."""
        n = len(baseline_num)
        ones = [1.0] * n
        columns = (baseline_num, ones if baseline_den is None else baseline_den, candidate_num, ones if candidate_den is None else candidate_den)
        arrays = [np.asarray(a, dtype=float) for a in columns]
        if any(a.shape != (n,) for a in arrays):
            raise ValueError(f"paired columns must all have one value per case ({n}); got lengths {[len(a) for a in arrays]}")
        labels = list(strata) if strata is not None else [0] * n
        if len(labels) != n:
            raise ValueError(f"strata must have one label per case ({n}); got {len(labels)}")
        codes = {label: i for i, label in enumerate(dict.fromkeys(labels))}
        return cls(arrays[0], arrays[1], arrays[2], arrays[3], np.asarray([codes[x] for x in labels], dtype=int))

    @property
    def n(self) -> int:
        return int(self.baseline_num.shape[0])


def _stratified_ratio(num: np.ndarray, den: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Mean over strata of sum(num)/sum(den); ``num``/``den`` are (draws, cases), result (draws,).

    A stratum whose denominators sum to zero contributes 0 (as ``cacs.rubric_accuracy`` does).
    """
    values = []
    for s in np.unique(strata):
        cols = strata == s
        top, bottom = num[:, cols].sum(axis=1), den[:, cols].sum(axis=1)
        values.append(np.divide(top, bottom, out=np.zeros_like(top), where=bottom != 0))
    return np.mean(values, axis=0)


def difference(cols: PairedColumns) -> float:
    """Candidate minus baseline, on all cases."""
    b = _stratified_ratio(cols.baseline_num[None, :], cols.baseline_den[None, :], cols.strata)
    c = _stratified_ratio(cols.candidate_num[None, :], cols.candidate_den[None, :], cols.strata)
    return float(c[0] - b[0])


# Resamples (or swap patterns) scored at a time: bounds the (rows, cases) float array of one chunk
# (8 bytes a value: 20 MB at 2,500 cases) whatever the number of resamples.
_ROWS = 1000


def _by_stratum(values: np.ndarray, strata: np.ndarray, count: int) -> np.ndarray:
    """(cases, strata): each case's value in its stratum's column, 0 elsewhere; a (rows, cases)
    matrix of weights times this is each row's per-stratum sum, one matrix product."""
    out = np.zeros((values.size, count))
    out[np.arange(values.size), strata] = values
    return out


def _ratio_of_sums(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """Mean over strata (columns) of top / bottom; a stratum whose bottom is 0 contributes 0."""
    return np.mean(np.divide(top, bottom, out=np.zeros_like(top), where=bottom != 0), axis=1)


def _codes(strata: np.ndarray) -> tuple[np.ndarray, int]:
    """Each case's stratum as 0..S-1 (in the order of the codes given), and S."""
    labels, codes = np.unique(strata, return_inverse=True)
    return codes.reshape(-1), int(labels.size)


@functools.lru_cache(maxsize=2)
def _bootstrap_counts(strata_key: bytes, resamples: int, seed: int) -> np.ndarray:
    """(resamples, cases): how often each case is drawn in each resample, within its stratum.

    The draws are numpy's ``default_rng(seed)``: per stratum in order, ``integers(0, size)`` for
    every resample and member, drawn a chunk of resamples at a time (the same numbers as drawing
    them at once). Every metric of one comparison (same cases, strata and seed) reuses them, so they
    are drawn once; kept as small integers, read-only."""
    strata = np.frombuffer(strata_key, dtype=int)
    rng = np.random.default_rng(seed)
    largest = max(int(np.bincount(strata).max()), 1) if strata.size else 1
    counts = np.zeros((resamples, strata.size), dtype=np.int16 if largest < 2**15 else np.int32)
    for s in np.unique(strata):
        members = np.flatnonzero(strata == s)
        m = members.size
        for start in range(0, resamples, _ROWS):
            rows = min(_ROWS, resamples - start)
            draw = rng.integers(0, m, size=(rows, m))
            tally = np.bincount((np.arange(rows)[:, None] * m + draw).ravel(), minlength=rows * m).reshape(rows, m)
            counts[start:start + rows, members] = tally
    counts.flags.writeable = False
    return counts


def paired_bootstrap(cols: PairedColumns, resamples: int = 10_000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of candidate - baseline, resampling cases (within strata) with replacement.

    The same resampled cases score both runs, which is what makes it paired. A resample is a vector
    of case counts (how often each case was drawn), so its per-stratum sums of both runs are one
    matrix product with the per-case values. Deterministic for a given ``seed`` (numpy
    ``default_rng``); the draws are shared by the metrics of one comparison.
    """
    if cols.n == 0:
        raise ValueError("no paired cases to resample")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    strata, count = _codes(cols.strata)
    counts = _bootstrap_counts(np.ascontiguousarray(cols.strata, dtype=int).tobytes(), resamples, seed)
    columns = np.hstack([_by_stratum(v, strata, count) for v in (cols.baseline_num, cols.baseline_den, cols.candidate_num, cols.candidate_den)])
    diffs = np.empty(resamples)
    for start in range(0, resamples, _ROWS):
        sums = counts[start:start + _ROWS].astype(float) @ columns
        bn, bd, cn, cd = np.split(sums, 4, axis=1)
        diffs[start:start + _ROWS] = _ratio_of_sums(cn, cd) - _ratio_of_sums(bn, bd)
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(diffs, [tail, 100 - tail])
    return float(lo), float(hi)


def _swapped_differences(cols: PairedColumns, swap: np.ndarray) -> np.ndarray:
    """Candidate - baseline for each row of ``swap`` (draws, cases): True swaps that case's runs.

    A swap moves the case's values from one run to the other, so each run's per-stratum sums are
    its own sums plus the swap pattern times the per-case differences: one matrix product."""
    strata, count = _codes(cols.strata)
    own = [_by_stratum(v, strata, count).sum(axis=0) for v in (cols.baseline_num, cols.baseline_den, cols.candidate_num, cols.candidate_den)]
    moves = np.hstack([_by_stratum(v, strata, count) for v in (cols.candidate_num - cols.baseline_num, cols.candidate_den - cols.baseline_den)])
    out = np.empty(swap.shape[0])
    for start in range(0, swap.shape[0], _ROWS):
        gained_num, gained_den = np.split(swap[start:start + _ROWS].astype(float) @ moves, 2, axis=1)
        b = _ratio_of_sums(own[0] + gained_num, own[1] + gained_den)
        c = _ratio_of_sums(own[2] - gained_num, own[3] - gained_den)
        out[start:start + _ROWS] = c - b
    return out


@functools.lru_cache(maxsize=2)
def _swap_patterns(n: int, permutations: int, seed: int) -> tuple[np.ndarray, ...]:
    """The random swap patterns of :func:`paired_permutation`, drawn in chunks of 2,000: the same
    for every metric of one comparison, so drawn once (one byte a case each), read-only."""
    rng = np.random.default_rng(seed)
    chunks = []
    for start in range(0, permutations, 2000):
        chunk = rng.random((min(2000, permutations - start), n)) < 0.5
        chunk.flags.writeable = False
        chunks.append(chunk)
    return tuple(chunks)


def paired_permutation(cols: PairedColumns, permutations: int = 10_000, seed: int = 0) -> tuple[float, bool]:
    """Two-sided p-value of "the two runs are exchangeable within each case"; and whether it is exact.

    When ``2**n <= permutations`` every swap pattern is enumerated and the p-value is the share of
    patterns (the identity included) whose difference is at least as far from zero as the
    observed one. Otherwise ``permutations`` random patterns are drawn (seeded) and the p-value is
    ``(1 + hits) / (1 + permutations)``, which is never 0 and never below the exact value's scale.
    """
    if cols.n == 0:
        raise ValueError("no paired cases to permute")
    observed = abs(difference(cols))
    if 2 ** cols.n <= permutations:
        swap = np.array(list(product((False, True), repeat=cols.n)), dtype=bool)
        hits = int(np.sum(np.abs(_swapped_differences(cols, swap)) >= observed - _TIE))
        return hits / swap.shape[0], True
    hits = 0
    for swap in _swap_patterns(cols.n, permutations, seed):
        hits += int(np.sum(np.abs(_swapped_differences(cols, swap)) >= observed - _TIE))
    return (1 + hits) / (1 + permutations), False


@dataclass(frozen=True)
class PairedResult:
    baseline: float
    candidate: float
    difference: float
    interval: tuple[float, float]
    p_value: float
    exact_p: bool
    cases: int


def compare_paired(cols: PairedColumns, resamples: int = 10_000, seed: int = 0, level: float = 0.95) -> PairedResult:
    """Both runs' values, their difference, its bootstrap interval and permutation p-value."""
    b = _stratified_ratio(cols.baseline_num[None, :], cols.baseline_den[None, :], cols.strata)[0]
    c = _stratified_ratio(cols.candidate_num[None, :], cols.candidate_den[None, :], cols.strata)[0]
    interval = paired_bootstrap(cols, resamples, seed, level)
    p, exact = paired_permutation(cols, resamples, seed)
    return PairedResult(float(b), float(c), float(c - b), interval, p, exact, cols.n)


def worse_beyond(result: PairedResult, delta: float = 0.0) -> bool:
    """The regression-gate rule: the candidate is lower by more than ``delta`` and the whole
    interval lies below zero (higher is better for every headline metric)."""
    return result.difference < -delta and result.interval[1] < 0
