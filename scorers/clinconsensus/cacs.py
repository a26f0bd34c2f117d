"""Rubric accuracy, Pass@k and CACS@k: the ClinConsensus summary metrics.

Definitions follow the benchmark's official scoring script:

* ``s_c`` is the number of case ``c``'s criteria judged met. A missing or unparseable verdict
  counts as not met. ``N`` is the *expected* number of criteria per case (30), not the number of
  verdicts that came back, so a judge that drops criteria cannot raise a score.
* Rubric accuracy = total met / total criteria judged.
* Pass@k = share of cases with ``s_c >= k``.
* CACS@k = 1 / (N - k + 1) * sum_{l=k..N} Pass@l, which equals the mean over cases of
  ``max(0, s_c - k + 1) / (N - k + 1)``. The paper reports it x100; here it is a fraction.

Every metric is computed as the mean of a per-case term (``metric_table.case_terms``, where every
reported metric is named once): ``met / judged``,
the Pass@k indicator, the CACS@k term. Every case has the same N criteria (the loaders refuse any
other count), so the mean of ``met / judged`` is total met / total judged. Defining each metric as
a mean of per-case values is what lets lm-eval aggregate them and compute a standard error; the
mean (``scorers.means.mean``, an exactly rounded sum divided by the count) is the one lm-eval's
tasks aggregate with too, so both frameworks give the same float to the last digit, whatever the
order of the cases (one process or several data-parallel ranks).

All values are fractions in [0, 1]. Breakdowns slice the same statistics by case attributes.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from clinconsensus_tasks.scorers.clinconsensus.metric_table import (
    DEFAULT_N_CRITERIA,
    DEFAULT_THRESHOLDS,
    accuracy_term,
    cacs_term,
    case_terms,
    pass_term,
    without_failed_name,
    without_failed_names,
)
from clinconsensus_tasks.scorers.means import mean, stderr_of_mean  # noqa: F401  (the metrics' mean, re-exported)


@dataclass(frozen=True)
class CaseResult:
    """What the summary metrics need to know about one graded case.

    ``met`` counts criteria judged met, ``judged`` the criteria a verdict was asked for (failed
    judgments included: they count as not met), ``failures`` the judgments that never produced a
    parseable verdict. ``slices`` maps a breakdown dimension (``difficulty``, ``subject``, ``task``,
    ``audience``) to the labels this case carries in it. ``case`` names the case when it may be
    observed more than once (Inspect epochs): observations of one case are averaged first, then
    the cases, so every case weighs the same and repeated epochs are not independent cases.
    """

    met: int
    judged: int
    failures: int = 0
    slices: Mapping[str, Sequence[str]] = field(default_factory=dict)
    case: str | None = None


def parse_thresholds(value: Any, n_criteria: int = DEFAULT_N_CRITERIA, name: str = "thresholds") -> tuple[int, ...]:
    """The k of Pass@k and CACS@k from ``[7, 10]``, ``"7,10"``, ``"[7, 10]"`` or ``7``: distinct, each in 1..N.

    The one parser of thresholds: Inspect's ``-T thresholds``, lm-eval's ``--metadata`` and the
    command line all call it. Raises ``ValueError`` with a message naming the value.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        parts: list[Any] = [value]
    elif isinstance(value, str):
        parts = [p for p in value.replace(" ", "").strip("[]").split(",") if p]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        raise ValueError(f"{name}={value!r}: expected integers such as 7,10")
    try:
        ks = tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r}: expected integers such as 7,10") from None
    if not ks or any(not 1 <= k <= n_criteria for k in ks):
        raise ValueError(f"{name}={value!r}: give one or more k with 1 <= k <= {n_criteria}")
    return tuple(dict.fromkeys(ks))


def pass_at_k(met_counts: Sequence[int], k: int) -> float:
    """Share of cases with at least ``k`` criteria met (0.0 for no cases)."""
    return mean([pass_term(s, k) for s in met_counts])


def cacs_at_k(met_counts: Sequence[int], k: int, n_criteria: int = DEFAULT_N_CRITERIA) -> float:
    """CACS@k as a fraction: mean over cases of max(0, s - k + 1) / (N - k + 1).

    Equal to the mean of Pass@l for l = k..N (see module docstring); a met count above ``N``
    (more verdicts than expected criteria) is capped at ``N``.
    """
    if not 1 <= k <= n_criteria:
        raise ValueError(f"CACS threshold k={k} must lie in 1..{n_criteria}")
    return mean([cacs_term(s, k, n_criteria) for s in met_counts])


def rubric_accuracy(results: Iterable[CaseResult]) -> float:
    """Criteria met over criteria judged, as the mean of each case's share (every case has the
    same N criteria, so this is total met / total judged; 0.0 when nothing was judged)."""
    return mean([accuracy_term(r.met, r.judged) for r in results])


def _case_means(results: Sequence[CaseResult], thresholds: Sequence[int], n_criteria: int) -> list[dict[str, float]]:
    """Each case's terms, averaged over its observations (results with the same ``case``), in the
    order cases first appear. A case observed once keeps its terms exactly. Rows may be shared
    between cases with the same counts: read them, never change them."""
    groups: dict[Any, list[dict[str, float]]] = {}
    terms: dict[tuple[int, int], dict[str, float]] = {}  # a case's terms depend on its counts alone: each pair once
    for i, r in enumerate(results):
        key = (r.met, r.judged)
        if key not in terms:
            terms[key] = case_terms(r.met, r.judged, thresholds, n_criteria)
        groups.setdefault(r.case if r.case is not None else ("#", i), []).append(terms[key])
    out = []
    for rows in groups.values():
        out.append(rows[0] if len(rows) == 1 else {name: mean([row[name] for row in rows]) for name in rows[0]})
    return out


def case_term_rows(results: Sequence[CaseResult], thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
                   n_criteria: int = DEFAULT_N_CRITERIA) -> list[dict[str, float]]:
    """Each case's term of every mean metric (averaged over its epochs), in the order cases first
    appear: the per-case values a case bootstrap resamples (each metric is their mean)."""
    return _case_means(results, thresholds, n_criteria)


def headline_means(
    results: Sequence[CaseResult],
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
    n_criteria: int = DEFAULT_N_CRITERIA,
) -> dict[str, float]:
    """Rubric accuracy, Pass@k and CACS@k: the mean over cases of each case's term."""
    rows = _case_means(results, thresholds, n_criteria)
    names = list(case_terms(0, 1, thresholds, n_criteria))
    return {name: mean([row[name] for row in rows]) for name in names}


def headline_stderrs(
    results: Sequence[CaseResult],
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
    n_criteria: int = DEFAULT_N_CRITERIA,
) -> dict[str, float]:
    """``<metric>_stderr`` for rubric accuracy, Pass@k and CACS@k: the standard error of the mean
    of the per-case terms (clustered by case: with several epochs, of the per-case means). With
    one observation per case this is exactly lm-eval's ``mean_stderr``."""
    rows = _case_means(results, thresholds, n_criteria)
    names = list(case_terms(0, 1, thresholds, n_criteria))
    return {f"{name}_stderr": stderr_of_mean([row[name] for row in rows]) for name in names}


def without_failed_means(
    results: Sequence[CaseResult],
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
    n_criteria: int = DEFAULT_N_CRITERIA,
) -> dict[str, float]:
    """The ``without_failed`` metrics (``cacs@10(judgments=complete)`` ...): the same means over the
    observations with no failed judgment, a case with one left out rather than scored as not met
    (NaN when no case is complete). The official rule, and the headline, counts them as not met."""
    complete = [r for r in results if r.failures == 0]
    means = headline_means(complete, thresholds, n_criteria) if complete else {}
    return {without_failed_name(name): means.get(name, float("nan")) for name in without_failed_names(thresholds)}


def summarize(
    results: Sequence[CaseResult],
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
    n_criteria: int = DEFAULT_N_CRITERIA,
) -> dict[str, float]:
    """The headline metrics of a run, keyed by their published names.

    Keys: ``rubric_accuracy``, ``pass@k`` and ``cacs@k`` for each threshold, ``judge_failures``
    (a count over all observations, not a fraction) and ``cases`` (observations).
    """
    out = headline_means(results, thresholds, n_criteria)
    out["judge_failures"] = float(sum(r.failures for r in results))
    out["cases"] = float(len(results))
    return out


BREAKDOWN_DIMENSIONS: tuple[str, ...] = ("difficulty", "subject", "task", "audience")


def slices_of(meta: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Breakdown labels of a case from its metadata (a case, an Inspect sample or an lm-eval doc):
    difficulty, subject labels, task labels (falling back to task) and audience. A case without
    subject labels is in no subject slice, as in the official ``eval_cacs.py`` (which slices by
    ``subject_labels`` alone); the task and audience slices are this project's own."""
    return {
        "difficulty": (str(meta.get("difficulty", "")),),
        "subject": tuple(meta.get("subject_labels") or ()),
        "task": tuple(meta.get("task_labels") or [meta.get("task", "")]),
        "audience": (str(meta.get("audience", "")),),
    }


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
            out[dim][label] = {"cases": float(len(rows)), **headline_means(rows, thresholds, n_criteria)}
    return out


def slice_metric_name(name: str, dimension: str, label: str) -> str:
    """The name of a metric over one slice, ``cacs@10(subject=心血管内科)``: the one naming rule for
    both frameworks. Parentheses, not brackets: Inspect's terminal reads ``[...]`` as markup and
    would drop it."""
    return f"{name}({dimension}={label})"


def flatten_breakdowns(tables: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, float]:
    """Flatten :func:`breakdowns` into ``"cacs@10(subject=心血管内科)"``-style keys.

    Case counts are left out: they are not metrics.
    """
    flat: dict[str, float] = {}
    for dim, labels in tables.items():
        for label, stats in labels.items():
            for name, value in stats.items():
                if name != "cases":
                    flat[slice_metric_name(name, dim, label)] = value
    return flat
