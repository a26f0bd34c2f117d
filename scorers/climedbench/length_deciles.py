"""Input-length deciles: CliMedBench's scores over ten length segments of each scenario.

The paper (section 5) sorts each dataset by input length, cuts it into ten segments (1 shortest,
10 longest) and reports the score per segment, overall 47.3 falling to 43.1. Deciles here are
computed per scenario over its *full* item file, before any subset or limit is taken, so an
item's decile is the same in every run, in both frameworks.

Length is the number of characters of the question and the options' texts (what varies between
items; the role line and answer instruction are the same for all). Items are ranked by length,
ties by id, and item ``r`` of ``n`` (from 0) falls in decile ``r * 10 // n + 1``: with ten or
more items every decile is filled and sizes differ by at most one.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from clinconsensus_tasks.scorers.means import mean

DECILES = tuple(range(1, 11))


def input_length(item: Mapping[str, Any]) -> int:
    options = item.get("options") or {}
    return len(str(item["question"])) + sum(len(str(t)) for t in options.values())


def length_deciles(items: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Item id -> its input-length decile (1..10) within ``items`` (one scenario's full file)."""
    ranked = sorted(items, key=lambda item: (input_length(item), str(item["id"])))
    n = len(ranked)
    return {str(item["id"]): rank * 10 // n + 1 for rank, item in enumerate(ranked)}


def decile_metric(decile: int) -> str:
    return f"length_decile_{decile}"


def decile_scores(rows: Iterable[tuple[str, int, float]]) -> dict[str, float]:
    """Scores per decile from ``(scenario code, decile, value)`` rows.

    Keys: ``<CODE>/length_decile_<d>`` (mean value of that scenario's items in decile d) and
    ``length_decile_<d>`` (unweighted mean over the scenarios that have items in decile d, as the
    overall score is the unweighted mean of scenario scores).
    """
    values: dict[tuple[str, int], list[float]] = {}
    for code, decile, value in rows:
        values.setdefault((code, decile), []).append(value)
    out: dict[str, float] = {}
    per_decile: dict[int, list[float]] = {}
    for (code, decile), vals in sorted(values.items()):
        value = mean(vals)  # the mean lm-eval's tasks aggregate with too, in any order of the items
        out[f"{code}/{decile_metric(decile)}"] = value
        per_decile.setdefault(decile, []).append(value)
    for decile in sorted(per_decile):
        out[decile_metric(decile)] = math.fsum(per_decile[decile]) / len(per_decile[decile])
    return out
