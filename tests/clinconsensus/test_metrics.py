"""Hand-worked values for the ClinConsensus summary metrics (NOTES.md section 1)."""

import pytest

from clinconsensus_tasks.scorers.clinconsensus.cacs import (
    CaseResult,
    breakdowns,
    cacs_at_k,
    flatten_breakdowns,
    pass_at_k,
    rubric_accuracy,
    summarize,
)


@pytest.mark.parametrize(
    ("met", "expected"),
    [(6, 0.0), (7, 1 / 24), (10, 4 / 24), (29, 23 / 24), (30, 1.0), (0, 0.0)],
)
def test_cacs7_single_case_matches_the_papers_examples(met, expected):
    assert cacs_at_k([met], 7) == pytest.approx(expected, abs=1e-15)


def test_cacs_equals_mean_of_pass_at_l_over_l_from_k_to_n():
    met = [0, 3, 7, 7, 9, 10, 12, 18, 25, 30]
    for k in (1, 7, 10, 30):
        by_definition = sum(pass_at_k(met, l) for l in range(k, 31)) / (30 - k + 1)
        assert cacs_at_k(met, k) == pytest.approx(by_definition, abs=1e-12)


def test_hand_worked_three_case_run():
    # s = 6, 10, 30 with N = 30.
    # CACS@7  = mean(0, 4/24, 24/24) = 28/72;  CACS@10 = mean(0, 1/21, 21/21) = 22/63.
    # Pass@7 = 2/3, Pass@10 = 2/3; rubric accuracy = 46/90.
    results = [CaseResult(6, 30), CaseResult(10, 30, failures=2), CaseResult(30, 30)]
    out = summarize(results)
    assert out == {
        "rubric_accuracy": pytest.approx(46 / 90),
        "pass@7": pytest.approx(2 / 3),
        "pass@10": pytest.approx(2 / 3),
        "cacs@7": pytest.approx(28 / 72),
        "cacs@10": pytest.approx(22 / 63),
        "judge_failures": 2.0,
        "cases": 3.0,
    }
    assert list(out) == ["cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy", "judge_failures", "cases"]  # the metric table's order


def test_n_is_the_expected_count_not_the_number_of_verdicts():
    # A case whose judge returned 25 verdicts, all met: N stays 30 for CACS.
    assert cacs_at_k([25], 10, n_criteria=30) == pytest.approx(16 / 21)
    # More verdicts than criteria cannot push a case beyond a perfect score.
    assert cacs_at_k([33], 10, n_criteria=30) == 1.0


def test_edge_cases():
    assert pass_at_k([], 7) == 0.0
    assert cacs_at_k([], 7) == 0.0
    assert rubric_accuracy([]) == 0.0
    with pytest.raises(ValueError, match="k=31"):
        cacs_at_k([1], 31)


def test_breakdowns_count_multi_label_cases_in_each_label():
    a = CaseResult(10, 30, slices={"difficulty": ["low"], "subject": ["心血管内科", "内科"], "audience": ["lay"]})
    b = CaseResult(30, 30, slices={"difficulty": ["low"], "subject": ["内科"], "audience": ["professional"]})
    tables = breakdowns([a, b], thresholds=(10,))
    assert tables["subject"]["心血管内科"] == {"cases": 1.0, "rubric_accuracy": pytest.approx(1 / 3), "pass@10": 1.0, "cacs@10": pytest.approx(1 / 21)}
    assert tables["subject"]["内科"] == {"cases": 2.0, "rubric_accuracy": pytest.approx(40 / 60), "pass@10": 1.0, "cacs@10": pytest.approx(11 / 21)}
    # Pass@k per slice, as the official summary reports it: a case below k counts against its slices.
    c = CaseResult(9, 30, slices={"difficulty": ["low"], "subject": ["内科"], "audience": ["lay"]})
    assert breakdowns([a, b, c], thresholds=(10,))["subject"]["内科"]["pass@10"] == pytest.approx(2 / 3)
    assert tables["audience"]["professional"]["cacs@10"] == 1.0
    assert "task" not in tables
    flat = flatten_breakdowns(tables)
    assert flat["cacs@10(subject=内科)"] == pytest.approx(11 / 21)
    assert flat["rubric_accuracy(difficulty=low)"] == pytest.approx(40 / 60)
    assert not any(key.startswith("cases") for key in flat)


def test_a_case_without_subject_labels_is_in_no_subject_slice_as_in_the_official_script():
    # eval_cacs.py slices by subject_labels alone: no `subject` fallback (a slice it does not have).
    from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of

    assert slices_of({"subject": "儿科", "subject_labels": [], "task": "诊断", "task_labels": []})["subject"] == ()
    assert slices_of({"subject": "儿科", "subject_labels": ["儿科", "内科"]})["subject"] == ("儿科", "内科")
