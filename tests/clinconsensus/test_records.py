"""The graded-case record: one shape from the judge's verdicts to every metric in both frameworks."""

from __future__ import annotations

import json
import math

import pytest

from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, headline_means, headline_stderrs, mean, stderr_of_mean
from clinconsensus_tasks.scorers.clinconsensus.metric_table import case_terms
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, SECOND_ROLE, GradedCase, RoleVerdicts
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment

SLICES = {"difficulty": ("low",), "subject": ("心血管内科", "急诊医学"), "task": ("诊断",), "audience": ("lay",)}


def judgments(pattern: str) -> tuple[CriterionJudgment, ...]:
    """'1' met, '0' not met, 'x' failed."""
    out = []
    for i, c in enumerate(pattern, start=1):
        met = None if c == "x" else c == "1"
        out.append(CriterionJudgment(str(i), met, "理由" if met is not None else "", 1 if met is not None else 3,
                                     None if met is not None else "unparseable verdict: 'oops'"))
    return tuple(out)


def test_counts_come_from_the_verdicts():
    record = GradedCase.of_judge("C1", "judge-a", "per_criterion", judgments("1101x0"), slices=SLICES)
    assert (record.met, record.judged, record.failures) == (3, 6, 1)
    assert record.result() == CaseResult(3, 6, 1, SLICES, case="C1")
    assert record.role_result(SECOND_ROLE) is None and record.paired() is None


def test_round_trip_single_and_dual():
    single = GradedCase.of_judge("C1", "judge-a", "batched", judgments("10x"), answer_empty=False, slices=SLICES, epoch=2)
    assert GradedCase.from_dict(json.loads(json.dumps(single.to_dict(), ensure_ascii=False))) == single
    dual = single.with_role(SECOND_ROLE, GradedCase.of_judge("C1", "judge-b", "batched", judgments("110")))
    data = dual.to_dict()
    second = data["roles"][SECOND_ROLE]
    assert (second["judge"], second["met"], second["failures"], len(second["judgments"])) == ("judge-b", 2, 0, 3)
    assert GradedCase.from_dict(json.loads(json.dumps(data))) == dual
    paired = dual.paired()
    # criterion 1: both met (tp); 2: reference not, other met (fp); 3: reference failed, left out.
    assert (paired.confusion.tp, paired.confusion.tn, paired.confusion.fp, paired.confusion.fn) == (1, 0, 1, 0)


def test_a_dual_record_written_before_judge_roles_reads_as_two_roles():
    """A record of version 1 (an Inspect log or lm-eval sample of an older run) kept its second
    judge in ``local_*`` fields: it reads back as the headline and the second role."""
    old = {"record_version": 1, "case_id": "C1", "epoch": 1, "judge": "judge-a", "judge_mode": "per_criterion",
           "met": 1, "judged": 2, "failures": 0, "judgments": [j.to_dict() for j in judgments("10")],
           "judge_usage": {"calls": 2, "prompt_tokens": 40},
           "local_judge": "judge-b", "local_met": 2, "local_failures": 0,
           "local_judgments": [j.to_dict() for j in judgments("11")], "local_judge_usage": {"calls": 2, "prompt_tokens": 50}}
    record = GradedCase.from_dict(json.loads(json.dumps(old)))
    assert record.roles == {HEADLINE_ROLE: RoleVerdicts("judge-a", judgments("10"), {"calls": 2, "prompt_tokens": 40}),
                            SECOND_ROLE: RoleVerdicts("judge-b", judgments("11"), {"calls": 2, "prompt_tokens": 50})}
    assert (record.met, record.role_result(SECOND_ROLE).met, record.dual) == (1, 2, True)
    # Written again, it takes the current shape and reads back equal.
    assert "local_judgments" not in record.to_dict() and GradedCase.from_dict(record.to_dict()) == record


def test_a_record_needs_the_headline_role():
    with pytest.raises(ValueError, match="no verdicts of the headline role 'grader'"):
        GradedCase("C1", "per_criterion", {SECOND_ROLE: RoleVerdicts("judge-b", judgments("1"))})


def test_stored_counts_are_never_trusted():
    data = GradedCase.of_judge("C1", "judge-a", "per_criterion", judgments("000")).to_dict()
    data["met"] = 3  # a hand-edited (or forged) count
    assert GradedCase.from_dict(data).met == 0


def test_pairing_other_cases_is_refused():
    with pytest.raises(ValueError, match="cannot pair case 'C1' with case 'C2'"):
        GradedCase.of_judge("C1", "a", "per_criterion", judgments("1")).with_role(SECOND_ROLE, GradedCase.of_judge("C2", "b", "per_criterion", judgments("1")))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "log.jsonl:3: not a graded-case record (expected a JSON object, got list)"),
        ({"judgments": []}, "log.jsonl:3: not a graded-case record: field 'case_id' is missing"),
        ({"case_id": "C9", "judgments": [{"criterion_id": "1", "met": "yes"}]},
         "log.jsonl:3: case 'C9': field 'judgments': ValueError: criterion '1': 'met' must be true, false or null, got 'yes'"),
        ({"case_id": "C9", "judgments": [{"met": True}]}, "log.jsonl:3: case 'C9': field 'judgments': KeyError: 'criterion_id'"),
    ],
)
def test_bad_records_name_where_and_field(data, message):
    with pytest.raises(ValueError) as info:
        GradedCase.from_dict(data, "log.jsonl:3")
    assert str(info.value) == message


def test_case_terms_and_their_mean():
    assert case_terms(10, 30) == {"rubric_accuracy": 1 / 3, "pass@7": 1.0, "pass@10": 1.0, "cacs@7": 4 / 24, "cacs@10": 1 / 21}
    assert case_terms(6, 30, (7,)) == {"rubric_accuracy": 0.2, "pass@7": 0.0, "cacs@7": 0.0}
    assert mean([]) == 0.0 and mean([0.1, 0.2, 0.3]) == mean([0.3, 0.2, 0.1]) == 0.6 / 3  # the exact sum 0.6, not 0.6000000000000001


def test_stderr_equals_lmevals_and_clusters_epochs():
    from lm_eval.api.metrics import mean_stderr

    mets = [3, 12, 7, 30, 0, 18, 9]
    results = [CaseResult(m, 30) for m in mets]
    errors = headline_stderrs(results)
    for name in ("rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10"):
        # lm-eval's statistic; the sums here are exactly rounded (the same in any order of the cases)
        assert errors[f"{name}_stderr"] == pytest.approx(mean_stderr([case_terms(m, 30)[name] for m in mets]), rel=1e-12, abs=0), name
    # Two identical epochs of every case: each case is averaged over its epochs first, so the
    # metrics are exactly the single-epoch ones and the error does not shrink.
    named = [CaseResult(m, 30, case=f"C{i}") for i, m in enumerate(mets)]
    assert headline_stderrs(named + named) == headline_stderrs(named) == errors
    assert headline_means(named + named) == headline_means(named)
    assert headline_stderrs(results + results)["cacs@10_stderr"] < errors["cacs@10_stderr"]  # (unnamed, they would count twice)
    assert math.isnan(stderr_of_mean([0.5]))
