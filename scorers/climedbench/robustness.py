"""Paired drops between a clean and a variant run of CliMedBench, with seeded bootstrap intervals.

A robustness figure is the score lost when the same items are asked in a perturbed (or NOTA,
or CoT) form. Pairing items (same scenario, same item id) removes the between-item variance that
two independent means would carry, so the interval is the paired one: items are resampled with
replacement, within each scenario, and the drop recomputed. The overall drop mirrors the overall
score: the unweighted mean of the scenario drops, resampled scenario by scenario in the same
bootstrap round. numpy's generator is seeded, so the same runs give the same interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

OVERALL = "overall"


@dataclass(frozen=True)
class PairedDrop:
    """Clean and variant mean over the paired items of one scope, the drop and its interval."""

    scope: str  # a scenario code or "overall"
    items: int
    clean: float
    variant: float
    drop: float  # clean - variant: positive when the variant scores lower
    low: float
    high: float


def _bootstrap_means(diffs: np.ndarray, iterations: int, rng: np.random.Generator, chunk: int = 256) -> np.ndarray:
    out = np.empty(iterations)
    n = len(diffs)
    for start in range(0, iterations, chunk):
        size = min(chunk, iterations - start)
        out[start:start + size] = diffs[rng.integers(0, n, size=(size, n))].mean(axis=1)
    return out


def paired_drops(
    clean: Mapping[tuple[str, str], float],
    variant: Mapping[tuple[str, str], float],
    iterations: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[list[PairedDrop], dict[str, int]]:
    """Drops per scenario and overall, over the items present in both runs.

    ``clean`` and ``variant`` map ``(scenario code, item id)`` to the item's score. Returns the
    drops (scenarios in sorted order, then ``overall``) and how many items only one run holds
    (``only_clean``, ``only_variant``), so nothing is dropped silently.
    """
    if iterations < 1:
        raise ValueError("iterations must be at least 1")
    paired = sorted(set(clean) & set(variant))
    if not paired:
        raise ValueError("the two runs share no (scenario, item id): are they runs of the same items?")
    unpaired = {"only_clean": len(set(clean) - set(variant)), "only_variant": len(set(variant) - set(clean))}
    rng = np.random.default_rng(seed)
    tail = (1.0 - level) / 2 * 100
    by_code: dict[str, list[tuple[str, str]]] = {}
    for key in paired:
        by_code.setdefault(key[0], []).append(key)
    drops, boots = [], []
    for code, keys in by_code.items():
        c = np.array([clean[k] for k in keys], dtype=float)
        v = np.array([variant[k] for k in keys], dtype=float)
        boot = _bootstrap_means(c - v, iterations, rng)
        boots.append(boot)
        low, high = np.percentile(boot, [tail, 100 - tail])
        cm, vm = math.fsum(c) / len(c), math.fsum(v) / len(v)
        drops.append(PairedDrop(code, len(keys), cm, vm, cm - vm, float(low), float(high)))
    overall_boot = np.mean(boots, axis=0)
    low, high = np.percentile(overall_boot, [tail, 100 - tail])
    cm = math.fsum(d.clean for d in drops) / len(drops)
    vm = math.fsum(d.variant for d in drops) / len(drops)
    drops.append(PairedDrop(OVERALL, len(paired), cm, vm, cm - vm, float(low), float(high)))
    return drops, unpaired
