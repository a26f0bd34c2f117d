"""Two judges on the same answers: each judge's metrics and how far they agree.

Used for ClinConsensus's dual judge (an API judge as reference, a distilled local judge beside it)
and for comparing judge modes. Criterion pairs where either judge failed are left out of the
agreement statistics (they are counted as failures of their judge).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from clinconsensus_tasks.scorers.agreement import Confusion, cohen_kappa, pearson, percent_agreement, verdict_report
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, cacs_at_k, slice_metric_name, summarize
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS


@dataclass(frozen=True)
class PairedCase:
    """One case graded by the reference judge and by the other judge."""

    reference: CaseResult
    other: CaseResult
    confusion: Confusion  # criterion verdict pairs, reference first


def pair_verdicts(reference: Sequence[bool | None], other: Sequence[bool | None]) -> Confusion:
    """Confusion of two verdict lists in the same criterion order, skipping failed judgments."""
    return Confusion.of((r, o) for r, o in zip(reference, other) if r is not None and o is not None)


AGREEMENT_DIMENSIONS = ("subject", "task")


def comparison_metrics(
    cases: Sequence[PairedCase],
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
    n_criteria: int = DEFAULT_N_CRITERIA,
    prefix: str = "local",
    by_label: bool = True,
) -> dict[str, float]:
    """``<prefix>/<metric>`` for the other judge, and ``agreement/...`` between the two.

    Agreement: ``percent`` and ``kappa`` over criterion verdicts, ``macro_f1``, ``precision_met``
    and ``recall_met`` of the other judge against the reference, ``met_count_pearson`` over
    cases, ``cacs@k_diff`` (reference minus other), and, with ``by_label``, ``percent`` and
    ``kappa`` per subject and task label.
    """
    other = summarize([c.other for c in cases], thresholds, n_criteria)
    out = {f"{prefix}/{k}": v for k, v in other.items() if k != "cases"}
    total = sum((c.confusion for c in cases), Confusion())
    report = verdict_report(total)
    out["agreement/percent"] = report["percent_agreement"]
    out["agreement/kappa"] = report["kappa"]
    out["agreement/macro_f1"] = report["macro_f1"]
    out["agreement/precision_met"] = report["precision_met"]
    out["agreement/recall_met"] = report["recall_met"]
    out["agreement/met_count_pearson"] = pearson([c.reference.met for c in cases], [c.other.met for c in cases])
    for k in thresholds:
        ref_cacs = cacs_at_k([c.reference.met for c in cases], k, n_criteria)
        other_cacs = cacs_at_k([c.other.met for c in cases], k, n_criteria)
        out[f"agreement/cacs@{k}_diff"] = ref_cacs - other_cacs
    if by_label:
        groups: dict[str, dict[str, Confusion]] = defaultdict(lambda: defaultdict(Confusion))
        for c in cases:
            for dim in AGREEMENT_DIMENSIONS:
                for label in dict.fromkeys(c.reference.slices.get(dim, ())):
                    groups[dim][label] = groups[dim][label] + c.confusion
        for dim in AGREEMENT_DIMENSIONS:
            for label in sorted(groups.get(dim, {})):
                matrix = groups[dim][label]
                out[slice_metric_name("agreement/percent", dim, label)] = percent_agreement(matrix)
                out[slice_metric_name("agreement/kappa", dim, label)] = cohen_kappa(matrix)
    return out
