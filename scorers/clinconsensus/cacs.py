"""Rubric accuracy, Pass@k and CACS@k: the ClinConsensus summary metrics.

Definitions follow the benchmark's official scoring script:

* ``s_c`` is the number of case ``c``'s criteria judged met. A missing or unparseable verdict
  counts as not met. ``N`` is the *expected* number of criteria per case (30), not the number of
  verdicts that came back, so a judge that drops criteria cannot raise a score.
* Rubric accuracy = total met / total criteria judged.
* Pass@k = share of cases with ``s_c >= k``.
* CACS@k = 1 / (N - k + 1) * sum_{l=k..N} Pass@l, which equals the mean over cases of
  ``max(0, s_c - k + 1) / (N - k + 1)``. The paper reports it x100; here it is a fraction.

All values are fractions in [0, 1]. Breakdowns slice the same statistics by case attributes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

DEFAULT_N_CRITERIA = 30
DEFAULT_THRESHOLDS: tuple[int, ...] = (7, 10)


@dataclass(frozen=True)
class CaseResult:
    """What the summary metrics need to know about one graded case.

    ``met`` counts criteria judged met, ``judged`` the criteria a verdict was asked for (failed
    judgments included: they count as not met), ``failures`` the judgments that never produced a
    parseable verdict. ``slices`` maps a breakdown dimension (``difficulty``, ``subject``, ``task``,
    ``audience``) to the labels this case carries in it.
    """

    met: int
    judged: int
    failures: int = 0
    slices: Mapping[str, Sequence[str]] = field(default_factory=dict)


def pass_at_k(met_counts: Sequence[int], k: int) -> float:
    """Share of cases with at least ``k`` criteria met (0.0 for no cases)."""
    if not met_counts:
        return 0.0
    return sum(1 for s in met_counts if s >= k) / len(met_counts)


def cacs_at_k(met_counts: Sequence[int], k: int, n_criteria: int = DEFAULT_N_CRITERIA) -> float:
    """CACS@k as a fraction: mean over cases of max(0, s - k + 1) / (N - k + 1).

    Equal to the mean of Pass@l for l = k..N (see module docstring); a met count above ``N``
    (more verdicts than expected criteria) is capped at ``N``.
    """
    if not 1 <= k <= n_criteria:
        raise ValueError(f"CACS threshold k={k} must lie in 1..{n_criteria}")
    if not met_counts:
        return 0.0
    span = n_criteria - k + 1
    return sum(max(0, min(s, n_criteria) - k + 1) for s in met_counts) / (span * len(met_counts))


def rubric_accuracy(results: Iterable[CaseResult]) -> float:
    """Total criteria met over total criteria judged (0.0 when nothing was judged)."""
    met = judged = 0
    for r in results:
        met += r.met
        judged += r.judged
    return met / judged if judged else 0.0


def summarize(
    results: Sequence[CaseResult],
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
    n_criteria: int = DEFAULT_N_CRITERIA,
) -> dict[str, float]:
    """The headline metrics of a run, keyed by their published names.

    Keys: ``rubric_accuracy``, ``pass@k`` and ``cacs@k`` for each threshold, ``judge_failures``
    (a count, not a fraction) and ``cases``.
    """
    met = [r.met for r in results]
    out: dict[str, float] = {"rubric_accuracy": rubric_accuracy(results)}
    for k in thresholds:
        out[f"pass@{k}"] = pass_at_k(met, k)
    for k in thresholds:
        out[f"cacs@{k}"] = cacs_at_k(met, k, n_criteria)
    out["judge_failures"] = float(sum(r.failures for r in results))
    out["cases"] = float(len(results))
    return out


BREAKDOWN_DIMENSIONS: tuple[str, ...] = ("difficulty", "subject", "task", "audience")


def breakdowns(
    results: Sequence[CaseResult],
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
    n_criteria: int = DEFAULT_N_CRITERIA,
) -> dict[str, dict[str, dict[str, float]]]:
    """Rubric accuracy, Pass@k, CACS@k and case count per label of each breakdown dimension.

    Returns ``{dimension: {label: {"cases": n, "rubric_accuracy": x, "pass@k": p, "cacs@k": y, ...}}}``
    (the official summary reports Pass@k beside CACS@k for every slice). A case
    with several labels in a dimension (subject and task labels are lists) counts in each of them,
    as in the official script's subject slices.
    """
    groups: dict[str, dict[str, list[CaseResult]]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        for dim in BREAKDOWN_DIMENSIONS:
            for label in dict.fromkeys(r.slices.get(dim, ())):
                groups[dim][label].append(r)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for dim in BREAKDOWN_DIMENSIONS:
        if dim not in groups:
            continue
        out[dim] = {}
        for label in sorted(groups[dim]):
            rows = groups[dim][label]
            met = [r.met for r in rows]
            stats = {"cases": float(len(rows)), "rubric_accuracy": rubric_accuracy(rows)}
            for k in thresholds:
                stats[f"pass@{k}"] = pass_at_k(met, k)
            for k in thresholds:
                stats[f"cacs@{k}"] = cacs_at_k(met, k, n_criteria)
            out[dim][label] = stats
    return out


def flatten_breakdowns(tables: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, float]:
    """Flatten :func:`breakdowns` into ``"cacs@10[subject=心血管内科]"``-style keys.

    Case counts are left out: they are not metrics.
    """
    flat: dict[str, float] = {}
    for dim, labels in tables.items():
        for label, stats in labels.items():
            for name, value in stats.items():
                if name != "cases":
                    flat[f"{name}[{dim}={label}]"] = value
    return flat
