"""A graded case as one row of numbers (the Inspect score's value) and the run's metrics from the rows:
the same numbers as the records give through the scorers' own functions, to the last bit."""

from __future__ import annotations

import math

import pytest

from clinconsensus_tasks.scorers.clinconsensus.cacs import breakdowns, flatten_breakdowns, summarize, without_failed_means
from clinconsensus_tasks.scorers.clinconsensus.case_values import breakdown_metrics, case_value, run_metrics
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import comparison_metrics
from clinconsensus_tasks.scorers.clinconsensus.jury import panel_record
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment as J

SLICES = [{"difficulty": ("low",), "subject": ("心血管内科", "急诊科"), "task": ("诊断",), "audience": ("lay",)},
          {"difficulty": ("low",), "subject": ("心血管内科",), "task": ("治疗",), "audience": ("professional",)},
          {"difficulty": ("low",), "subject": ("儿科",), "task": ("诊断",), "audience": ("lay",)}]


def graded(case: int, judge: str, met: int, failed: int = 0) -> GradedCase:
    verdicts = [J(f"c{i}", True if i < met else None if i < met + failed else False) for i in range(30)]
    return GradedCase.of_judge(f"CASE-{case}", judge, "per_criterion", verdicts, slices=SLICES[case])


def test_a_case_row_holds_its_terms_counts_and_met_count():
    assert case_value(graded(0, "j", 12, failed=2)) == {
        "cacs@10": 3 / 21, "cacs@7": 6 / 24, "pass@10": 1.0, "pass@7": 1.0, "rubric_accuracy": 12 / 30,
        "judge_failures": 2.0, "empty_answers": 0.0, "truncated_answers": 0.0, "suspect_answers": 0.0, "criteria_met": 12.0}


def test_the_runs_metrics_from_rows_are_the_records_metrics():
    records = [graded(0, "j", 12, failed=2), graded(1, "j", 25), graded(2, "j", 6)]
    rows = [case_value(r) for r in records]
    out = run_metrics(rows, ["lay", "professional", "lay"])
    want = summarize([r.result() for r in records])
    assert {k: out[k] for k in ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy", "judge_failures")} == {
        k: want[k] for k in ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy", "judge_failures")}
    assert out["rubric_accuracy_stderr"] == pytest.approx(math.sqrt(((12 - 43 / 3) ** 2 + (25 - 43 / 3) ** 2 + (6 - 43 / 3) ** 2) / 2) / 30 / math.sqrt(3))
    assert {k: v for k, v in out.items() if "(judgments=complete)" in k} == without_failed_means([r.result() for r in records])
    lay = summarize([records[0].result(), records[2].result()])
    assert out["cacs@10(audience=lay)"] == lay["cacs@10"] and out["rubric_accuracy(audience=professional)"] == 25 / 30
    assert not any(k.startswith(("local/", "agreement/", "juror_", "jury/")) for k in out)
    # By difficulty, subject and task: the breakdowns the records give (a case in each of its labels).
    tables = flatten_breakdowns(breakdowns([r.result() for r in records]))
    by_label = breakdown_metrics(rows, SLICES)
    assert by_label == {k: v for k, v in tables.items() if "(audience=" not in k}  # the audience slices are run_metrics'
    assert by_label["cacs@10(subject=心血管内科)"] == (3 / 21 + 16 / 21) / 2


def test_a_second_judges_metrics_and_the_agreement_from_rows_are_the_comparisons():
    records = [graded(c, "a", met).with_role(SECOND_ROLE, graded(c, "b", other)) for c, met, other in ((0, 12, 14), (1, 25, 20), (2, 6, 9))]
    out = run_metrics([case_value(r) for r in records])
    want = comparison_metrics([r.paired() for r in records], by_label=False)
    assert {k: out[k] for k in want} == want


def test_a_jurys_jurors_from_rows():
    cases = [panel_record([graded(c, name, met) for name, met in zip("abc", mets)]) for c, mets in ((0, (12, 14, 10)), (1, (25, 20, 30)))]
    out = run_metrics([case_value(r) for r in cases])
    assert out["jury/jurors"] == 3.0
    assert out["juror_2/rubric_accuracy"] == (14 + 20) / 60 and out["juror_3/cacs@10"] == (1 / 21 + 21 / 21) / 2
    assert out["juror_1/judge_failures"] == 0.0


def test_rows_of_another_kind_and_partial_lists_never_raise():
    assert run_metrics([]) == {} and breakdown_metrics([], []) == {}
    old = {"met": 12, "judged": 30, "failures": 0, "empty": 0}  # a score value written before the rows
    assert run_metrics([old, 0.5, None]) == {}
    one = run_metrics([case_value(graded(0, "j", 12))], ["lay"])
    assert one["cacs@10"] == 3 / 21 and math.isnan(one["cacs@10_stderr"])  # one case: no standard error
