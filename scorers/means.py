"""The mean over samples that every metric of both benchmarks is, in both frameworks.

A sum of floats added one by one depends on the order of its terms: lm-eval's data-parallel
evaluation (several GPUs, each rank scoring its share, the values gathered to rank 0 rank by rank)
hands its aggregation the same per-case values in another order than one process does, and a
plain sum then differs in its last digit (0.5888888888888889 against 0.588888888888889). The sum
here is exactly rounded (:func:`math.fsum`): the float nearest to the true sum of the terms,
whatever their order, so one process, several ranks and Inspect give the same number to the bit.
lm-eval's tasks aggregate with :func:`mean` too (``clinconsensus_tasks.lmeval_glue.case_mean``).
"""

from __future__ import annotations

import math
from typing import Sequence


def mean(values: Sequence[float]) -> float:
    """The exactly rounded sum of ``values`` divided by their count (0.0 for no values): the same
    float for the same values in any order."""
    return math.fsum(values) / len(values) if values else 0.0


def stderr_of_mean(values: Sequence[float]) -> float:
    """Standard error of the mean with the sample standard deviation (n - 1), the statistic of
    lm-eval's ``mean_stderr``, with exactly rounded sums (the same float in any order); NaN for
    fewer than two values."""
    n = len(values)
    if n < 2:
        return float("nan")
    mu = mean(values)
    return math.sqrt(math.fsum((x - mu) ** 2 for x in values) / (n - 1)) / math.sqrt(n)
