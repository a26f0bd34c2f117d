"""Agreement of two judges (or two judge modes) on the same answers, from the records a log reader
made: what ``summarize``, the report and ``compare`` each compute on runs of either framework."""

from __future__ import annotations

from typing import Iterable, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.errors import DataValidationError
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
