"""A graded case as one flat row of numbers, and the run's metrics as plain statistics of those rows.

Why: Inspect reduces a sample's epochs by its *value* (``--epochs-reducer``: mean, median, max,
...) and hands its metrics the reduced values; metadata does not survive a reduction. So the value
of a case is every number a metric needs, each a per-case term whose mean over cases (or a count
whose sum) is the metric: the headline terms (CACS@k, Pass@k, rubric accuracy, as
``metric_table.case_terms``), the counts (failed judgments, empty, truncated and suspect answers),
the criteria met, and, when other judges graded the case, theirs (``local/...`` for a second
judge, with the verdict pairs' confusion counts; ``juror_i/...`` for a jury's jurors). Every
metric is then a mean, a standard error, a sum or a statistic of sums over the rows, which Inspect
reduces and aggregates as it says, and which reads the same for any number of epochs.

What needs more than a row of numbers per case (breakdowns by subject and task, a jury's kappas
with their case-bootstrap intervals) is left to ``summarize`` and the report, which read the full
records. Framework-free: nothing here imports Inspect or lm-eval.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.scorers.agreement import Confusion, pearson, verdict_report
from clinconsensus_tasks.scorers.clinconsensus.cacs import BREAKDOWN_DIMENSIONS, slice_metric_name
from clinconsensus_tasks.scorers.clinconsensus.jury import JUROR_PREFIX, juror_roles
from clinconsensus_tasks.scorers.clinconsensus import metric_table
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS, case_terms
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.means import mean, stderr_of_mean

MET = "criteria_met"
LOCAL = "local"
CONFUSION = ("tp", "tn", "fp", "fn")
COUNTS = [name for name in metric_table.count_names() if name not in metric_table.TOKEN_COUNTS]  # Inspect records judge usage itself


def case_value(record: GradedCase, thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
               n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
    """One graded case (one epoch of it) as a flat row: every number the run's metrics are made of."""
    value = {**record.terms(thresholds, n_criteria), **{k: float(v) for k, v in metric_table.case_counts(record).items() if k in COUNTS},
             MET: float(record.met)}
    paired = record.paired(SECOND_ROLE)
    if paired is not None:
        other = paired.other
        value.update({f"{LOCAL}/{k}": v for k, v in case_terms(other.met, other.judged, thresholds, n_criteria).items()})
        value[f"{LOCAL}/judge_failures"] = float(other.failures)
        value[f"{LOCAL}/{MET}"] = float(other.met)
        value.update({f"agreement/{k}": float(getattr(paired.confusion, k)) for k in CONFUSION})
    for role in juror_roles(record):
        juror = record.role_result(role)
        assert juror is not None
        value.update({f"{role}/{k}": v for k, v in case_terms(juror.met, juror.judged, thresholds, n_criteria).items()})
        value[f"{role}/judge_failures"] = float(juror.failures)
    return value


def run_metrics(values: Sequence[Mapping[str, Any]], audiences: Sequence[str | None] = (),
                thresholds: Sequence[int] = DEFAULT_THRESHOLDS, n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
    """The run's metrics from its cases' rows (:func:`case_value`, reduced over epochs however the
    caller chose): each mean metric and its standard error, the counts' sums, the means over the
    cases with no failed judgment, the audience slices (``audiences[i]``: case i's audience), and a
    second judge's and a jury's jurors' metrics. A row missing a headline term (a score of another
    kind) is left out; an empty list gives no metric. Never raises on partial lists: Inspect calls
    its metrics on the samples done so far, for its live display."""
    names = metric_table.mean_names(thresholds)
    kept = [(v, a) for v, a in zip(values, list(audiences) + [None] * (len(values) - len(audiences)))
            if isinstance(v, Mapping) and all(isinstance(v.get(n), (int, float)) for n in names)]
    if not kept:
        return {}
    rows = [v for v, _ in kept]
    out: dict[str, float] = {}
    for name in names:
        column = [float(r[name]) for r in rows]
        out[name] = mean(column)
        out[f"{name}_stderr"] = stderr_of_mean(column)
    out.update({name: math.fsum(float(r.get(name, 0.0)) for r in rows) for name in COUNTS})
    complete = [r for r in rows if not r.get("judge_failures")]  # any failed judgment, in any epoch, leaves a case out
    for name in metric_table.without_failed_names(thresholds):
        out[metric_table.without_failed_name(name)] = mean([float(r[name]) for r in complete]) if complete else math.nan
    sliced = [name for m in metric_table.METRICS if m.by_audience for name in m.names(thresholds)]
    for who in sorted({a for _, a in kept if a}):
        members = [v for v, a in kept if a == who]
        out.update({slice_metric_name(name, "audience", who): mean([float(r[name]) for r in members]) for name in sliced})
    out.update(_second_judge(rows, names, thresholds))
    out.update(_jurors(rows, names))
    return out


def _second_judge(rows: Sequence[Mapping[str, Any]], names: Sequence[str], thresholds: Sequence[int]) -> dict[str, float]:
    """``local/<metric>`` and ``agreement/...`` over the rows a second judge graded."""
    paired = [r for r in rows if f"{LOCAL}/{names[0]}" in r]
    if not paired:
        return {}
    out = {f"{LOCAL}/{name}": mean([float(r[f"{LOCAL}/{name}"]) for r in paired]) for name in names}
    out[f"{LOCAL}/judge_failures"] = math.fsum(float(r.get(f"{LOCAL}/judge_failures", 0.0)) for r in paired)
    pooled = Confusion(*(math.fsum(float(r.get(f"agreement/{k}", 0.0)) for r in paired) for k in CONFUSION))
    report = verdict_report(pooled)
    out.update({"agreement/percent": report["percent_agreement"], "agreement/kappa": report["kappa"],
                "agreement/macro_f1": report["macro_f1"], "agreement/precision_met": report["precision_met"],
                "agreement/recall_met": report["recall_met"],
                "agreement/met_count_pearson": pearson([float(r[MET]) for r in paired], [float(r[f"{LOCAL}/{MET}"]) for r in paired])})
    for k in sorted(thresholds, reverse=True):
        name = f"cacs@{k}"
        out[f"agreement/{name}_diff"] = mean([float(r[name]) for r in paired]) - out[f"{LOCAL}/{name}"]
    return out


def _jurors(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, float]:
    """``juror_i/<metric>`` and ``juror_i/judge_failures`` of a jury's jurors, and ``jury/jurors``."""
    roles = sorted({key.split("/", 1)[0] for r in rows for key in r if key.startswith(JUROR_PREFIX)},
                   key=lambda role: int(role[len(JUROR_PREFIX):]))
    if not roles:
        return {}
    out: dict[str, float] = {"jury/jurors": float(len(roles))}
    for role in roles:
        graded = [r for r in rows if f"{role}/{names[0]}" in r]
        out.update({f"{role}/{name}": mean([float(r[f"{role}/{name}"]) for r in graded]) for name in names})
        out[f"{role}/judge_failures"] = math.fsum(float(r.get(f"{role}/judge_failures", 0.0)) for r in graded)
    return out


def breakdown_metrics(values: Sequence[Mapping[str, Any]], slices: Sequence[Mapping[str, Sequence[str]]],
                      thresholds: Sequence[int] = DEFAULT_THRESHOLDS) -> dict[str, float]:
    """Each headline metric by difficulty, subject and task label (``cacs@10(subject=...)``), from
    the cases' rows and their labels (``cacs.slices_of``); a case with several labels counts in
    each. The audience slices are in :func:`run_metrics`."""
    names = metric_table.headline_names(thresholds)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for value, labels in zip(values, slices):
        if not (isinstance(value, Mapping) and all(isinstance(value.get(n), (int, float)) for n in names)):
            continue
        for dim in BREAKDOWN_DIMENSIONS:
            if dim != "audience":
                for label in dict.fromkeys(labels.get(dim, ())):
                    groups.setdefault((dim, label), []).append(value)
    return {slice_metric_name(name, dim, label): mean([float(r[name]) for r in rows])
            for (dim, label), rows in sorted(groups.items()) for name in names}
