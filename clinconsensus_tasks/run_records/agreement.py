"""Agreement of two judges (or two judge modes) on the same answers, from the records a log reader
made: what ``summarize``, the report and ``compare`` each compute on runs of either framework."""

from __future__ import annotations

from typing import Iterable, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.scorers.agreement import Confusion
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import PairedCase, comparison_metrics, pair_verdicts
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment


def _verdicts(judgments: Iterable[CriterionJudgment]) -> dict[str, bool | None]:
    return {j.criterion_id: j.met for j in judgments}


def _pair_records(reference: Sequence[LoggedCase], other: Sequence[LoggedCase], other_local: bool = False) -> list[PairedCase]:
    """Pair cases (by case id and epoch) and their criteria (by criterion id)."""
    index = {(r.graded.case_id, r.graded.epoch): r for r in other}
    pairs = []
    for ref in reference:
        case = ref.graded
        match = index.get((case.case_id, case.epoch))
        if match is None:
            raise DataValidationError([f"{ref.where}: case {case.case_id!r} (epoch {case.epoch}) is missing from the other log"])
        if ref.answer != match.answer:
            raise DataValidationError([f"{ref.where}: case {case.case_id!r} has a different answer in the other log: compare logs of the same answers"])
        theirs = _verdicts(match.graded.roles[SECOND_ROLE].judgments if other_local else match.graded.judgments)
        ours = _verdicts(case.judgments)
        ids = list(ours)
        confusion = pair_verdicts([ours[i] for i in ids], [theirs.get(i) for i in ids])
        other_result = (match.graded.role_result(SECOND_ROLE) if other_local else None) or match.graded.result()
        pairs.append(PairedCase(case.result(), other_result, confusion))
    return pairs


def compare_records(reference: Sequence[LoggedCase], other: Sequence[LoggedCase] | None = None, thresholds: Sequence[int] = (7, 10),
                    n_criteria: int = DEFAULT_N_CRITERIA, where: str = "") -> dict[str, float]:
    """Agreement of two judges or judge modes on the same answers, from records a reader made.

    With one run's records of a dual-judge run: its reference judge against its local judge. With
    two (for example ``per_criterion`` and ``batched`` grading of the same answers, see
    ``rescore``): the first against the second. ``n_criteria`` is N in CACS.
    """
    if other is None:
        if not any(r.graded.dual for r in reference):
            raise DataValidationError([f"{where or 'the run'}: graded by one judge only; give a second log to compare with"])
        pairs = _pair_records(reference, reference, other_local=True)
    else:
        pairs = _pair_records(reference, other)
    return comparison_metrics(pairs, thresholds, n_criteria, prefix="other")


# -- intervals, and several runs pooled (a trained judge measured on held-out models' runs) -------------

INTERVAL_RESAMPLES = 1000  # the report's and the gate's case bootstrap: 1000 resamples, seed 0
INTERVAL_NAMES = {"percent_agreement": "percent", "kappa": "kappa", "macro_f1": "macro_f1", "precision_met": "precision_met",
                  "recall_met": "recall_met"}


def agreement_intervals(cases: Sequence[tuple[str, PairedCase]], resamples: int = INTERVAL_RESAMPLES, seed: int = 0) -> dict[str, float]:
    """``agreement/<statistic>_low`` and ``_high``: the 95% interval of each verdict statistic of
    ``comparison_metrics`` by the project's case bootstrap (``scorers.agreement``). ``cases`` are
    ``(case id, pair)``: a case's verdicts share one answer and one rubric, so cases are resampled,
    each with all its pairs (every model's answer to it, when several runs are pooled), never
    criteria; ``agreement/cases`` counts them. An interval the bootstrap leaves undefined (a single
    contributing case, a statistic undefined in too many resamples) is NaN (n/a)."""
    import numpy as np

    from clinconsensus_tasks.scorers.agreement import CONFUSION_STATISTICS, Confusion, bootstrap, case_draws

    by_case: dict[str, Confusion] = {}
    for case_id, pair in cases:
        by_case[case_id] = by_case.get(case_id, Confusion()) + pair.confusion
    keys = sorted(by_case)
    per_case = np.array([[by_case[k].tp, by_case[k].tn, by_case[k].fp, by_case[k].fn] for k in keys], dtype=float).reshape(len(keys), 4)
    draws = case_draws(len(keys), resamples, seed)
    out: dict[str, float] = {"agreement/cases": float(len(keys))}
    for name, short in INTERVAL_NAMES.items():
        statistic, parts = CONFUSION_STATISTICS[name]
        interval = bootstrap(per_case, lambda row, s=statistic: s(Confusion(*(int(round(x)) for x in row))), draws,
                             per_case[:, list(parts)].any(axis=1))
        out[f"agreement/{short}_low"], out[f"agreement/{short}_high"] = interval.low, interval.high
    return out


def pooled_pairs(runs: Sequence[tuple[str, Sequence[LoggedCase], Sequence[LoggedCase] | None]]) -> list[tuple[str, str, PairedCase]]:
    """Every run's paired cases, as ``(model, case id, pair)``: ``runs`` are ``(model, reference
    records, other records)``, the other ``None`` for a dual-judge run (its second judge)."""
    out = []
    for model, reference, other in runs:
        if other is None and not any(r.graded.dual for r in reference):
            raise DataValidationError([f"{model}: its run was graded by one judge only; pool dual-judge runs, or give the other "
                                       "judge's runs as the second folder"])
        pairs = _pair_records(reference, reference, other_local=True) if other is None else _pair_records(reference, other)
        out += [(model, ref.graded.case_id, pair) for ref, pair in zip(reference, pairs)]
    return out


def compare_pooled(runs: Sequence[tuple[str, Sequence[LoggedCase], Sequence[LoggedCase] | None]], thresholds: Sequence[int] = (7, 10),
                   n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
    """Agreement of two judges over several runs at once (the paper's measurement of a trained
    judge: against the API judge on the held-out models' runs): :func:`compare_records`' figures
    over every run's cases, ``agreement/percent(model=...)`` and ``agreement/kappa(model=...)`` per
    run, and the intervals of :func:`agreement_intervals`, cases resampled with every run's answer
    to them."""
    from clinconsensus_tasks.scorers.agreement import cohen_kappa, percent_agreement
    from clinconsensus_tasks.scorers.clinconsensus.cacs import slice_metric_name

    pairs = pooled_pairs(runs)
    out = comparison_metrics([p for _, _, p in pairs], thresholds, n_criteria, prefix="other")
    out["agreement/runs"] = float(len(runs))
    out.update(agreement_intervals([(case_id, p) for _, case_id, p in pairs]))
    for model in sorted({m for m, _, _ in pairs}):
        total = sum((p.confusion for m, _, p in pairs if m == model), Confusion())
        out[slice_metric_name("agreement/percent", "model", model)] = percent_agreement(total)
        out[slice_metric_name("agreement/kappa", "model", model)] = cohen_kappa(total)
    return out
