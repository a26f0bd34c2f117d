"""A jury: several judges in the grader role, the panel's verdict their strict majority.

Unit tests of the rule (``scorers.clinconsensus.jury``) with hand-worked numbers, and end-to-end
runs in both frameworks on the bundled sample against the real HTTP stand-in (``fake_server``),
whose three scripted judges stand in for three hosted judge models that disagree in known ways:

* ``juror-a`` says met for the even criteria of a case (positions 0, 2, ..., 28: 15 of 30),
* ``juror-b`` for every third (0, 3, ..., 27: 10 of 30),
* ``juror-c`` for the first half (0-14: 15 of 30), and writes prose with no verdict for the
  last two criteria (28, 29): two failed judgments of that juror per case.

Worked by hand, per case (every case alike, since the verdicts depend on position only):
criteria 0-14 are met by the panel when juror a or b agrees with c (10 of them: the even ones and
3, 9); 15-27 when a and b both say met (18, 24); 28 is a tie (a met, b not, c no vote): a failed
judgment of the panel; 29 is not met (a and b). So 12 met, 1 failed, rubric accuracy 12/30.
Fleiss' kappa over criteria 0-27: P-bar = (7 x 1 + 21 x 1/3) / 28 = 1/2, met share 39/84, so
kappa = (1/2 - 197/392) / (1 - 197/392) = -1/195. Cohen's kappa: a-b 0 (over 30), a-c 1/14 and
b-c -1/20 (over 28). Every case being alike, the case bootstrap intervals have width 0 (every resample pools alike cases).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.scorers.clinconsensus.cacs import cacs_at_k
from clinconsensus_tasks.scorers.clinconsensus.jury import (
    ERROR_JURY,
    fleiss_kappa,
    min_votes,
    pairwise_kappas,
    panel_record,
    panel_verdict,
)
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment

CASES = load_cases("sample").cases
JURORS = ("juror-a", "juror-b", "juror-c")
RULES = {"juror-a": lambda i: i % 2 == 0, "juror-b": lambda i: i % 3 == 0, "juror-c": lambda i: i < 15}
NO_VERDICT = {"juror-c": (28, 29)}
BIN = Path(sys.executable).parent


def vote(judge: str, i: int) -> CriterionJudgment:
    if i in NO_VERDICT.get(judge, ()):
        return CriterionJudgment(f"c{i}", None, error="no verdict", error_kind="unparseable")
    return CriterionJudgment(f"c{i}", RULES[judge](i))


def juror_case(judge: str, case_id: str = "case-1") -> GradedCase:
    return GradedCase.of_judge(case_id, judge, "per_criterion", [vote(judge, i) for i in range(30)])


# -- the rule ------------------------------------------------------------------------------------


def test_strict_majority_of_usable_votes_with_ties_and_too_few_votes_failed():
    met, not_met, failed = CriterionJudgment("x", True), CriterionJudgment("x", False), CriterionJudgment("x", None, error="e")
    assert min_votes(3) == 2 and min_votes(4) == 3 and min_votes(5) == 3
    assert panel_verdict([met, met, not_met], 2).met is True
    assert panel_verdict([met, not_met, not_met], 2).met is False
    assert panel_verdict([met, failed, met], 2).met is True  # 2 of 2 usable votes
    tie = panel_verdict([met, not_met, failed], 2)
    assert tie.met is None and tie.error_kind == ERROR_JURY and tie.error == "jury: tie, 1 met and 1 not met of 2 usable votes"
    few = panel_verdict([met, failed, failed], 2)
    assert few.met is None and few.error == "jury: 1 usable vote(s) of 3 jurors (1 met, 0 not met); the panel needs at least 2"
    # Four jurors: 2-2 is a tie, and 2 usable votes of 4 are too few even when they agree.
    assert panel_verdict([met, met, not_met, not_met], 3).met is None
    assert panel_verdict([met, met, failed, failed], 3).met is None
    assert panel_verdict([met, met, met, failed], 3).met is True


def test_panel_record_keeps_every_juror_and_the_hand_worked_counts():
    record = panel_record([juror_case(j) for j in JURORS])
    assert record.judge == "jury(juror-a, juror-b, juror-c)"
    assert (record.met, record.failures, record.judged) == (12, 1, 30)
    assert [r.met for r in (record.role_result(f"juror_{i}") for i in (1, 2, 3))] == [15, 10, 15]
    assert record.roles["juror_3"].judge == "juror-c" and record.role_result("juror_3").failures == 2
    assert len(record.all_judgments) == 4 * 30 and sum(j.failed for j in record.all_judgments) == 3  # panel 1, juror c 2
    assert not record.dual
    again = GradedCase.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record  # a jury record survives the logs of both frameworks


def test_fleiss_and_pairwise_kappa_hand_worked():
    records = [panel_record([juror_case(j, f"case-{n}") for j in JURORS]) for n in range(4)]
    fleiss = fleiss_kappa(records)
    assert fleiss.estimate == pytest.approx(-1 / 195, abs=1e-15)
    assert (fleiss.low, fleiss.high) == pytest.approx((-1 / 195, -1 / 195), abs=1e-12)  # every case alike
    kappas = {pair: k.estimate for pair, k in pairwise_kappas(records).items()}
    assert kappas == pytest.approx({("juror_1", "juror_2"): 0.0, ("juror_1", "juror_3"): 1 / 14, ("juror_2", "juror_3"): -1 / 20},
                                   abs=1e-15)


def test_jurors_that_graded_different_criteria_are_refused():
    other = GradedCase.of_judge("case-1", "juror-b", "per_criterion", [vote("juror-b", i) for i in range(29)])
    with pytest.raises(ValueError, match="did not grade the same criteria"):
        panel_record([juror_case("juror-a"), other])


def test_a_jury_in_the_environment_is_refused_by_single_judge_commands():
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.judge.client import JudgeSettings, panel_from_env

    env = {"CLINCONSENSUS_JUDGE_BASE_URL": "http://a/v1,http://b/v1,http://c/v1", "CLINCONSENSUS_JUDGE_MODEL": "m1, m2,m3"}
    assert [(j.model, j.base_url) for j in panel_from_env(env=env)] == [("m1", "http://a/v1"), ("m2", "http://b/v1"), ("m3", "http://c/v1")]
    with pytest.raises(ConfigurationError, match="has 2 URLs for 3 jurors"):
        panel_from_env(env={**env, "CLINCONSENSUS_JUDGE_BASE_URL": "http://a/v1,http://b/v1"})
    with pytest.raises(ConfigurationError, match="a jury names each juror once"):
        panel_from_env(env={"CLINCONSENSUS_JUDGE_BASE_URL": "http://a/v1", "CLINCONSENSUS_JUDGE_MODEL": "m1,m1"})
    with pytest.raises(ConfigurationError, match="is a list of models \\(a jury\\)"):
        JudgeSettings.from_env(env=env)


# -- end to end, both frameworks ----------------------------------------------------------------


def scripted_juror(judge: str):
    """``judge``'s replies: its rule applied to the criterion's position in its case."""
    positions = {(case.question, text): i for case in CASES for i, (_, text) in enumerate(case.rubrics)}

    def reply(request) -> str:
        # a criterion's text may hold another's as a part: the longest found is the one asked
        hits = [(len(text), i) for (question, text), i in positions.items() if question in request.user and text in request.user]
        i = max(hits)[1]
        if i in NO_VERDICT.get(judge, ()):
            return "我认为这条标准大致满足。"
        return json.dumps({"explanation": "按标准核对。", "criteria_met": RULES[judge](i)}, ensure_ascii=False)

    return reply


def expected_headline() -> dict[str, float]:
    met = [12] * len(CASES)
    return {"rubric_accuracy": 12 / 30, "pass@7": 1.0, "pass@10": 1.0, "cacs@7": cacs_at_k(met, 7), "cacs@10": cacs_at_k(met, 10),
            "judge_failures": float(len(CASES))}


@pytest.fixture
def jury(fake_server):
    for judge in JURORS:
        fake_server.script(judge, scripted_juror(judge))
    return fake_server


@pytest.mark.slow
def test_inspect_and_lmeval_jury_give_the_hand_worked_numbers(jury, tmp_path):
    from inspect_ai import eval as inspect_eval
    from lm_eval.loggers import EvaluationTracker

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    log = inspect_eval(clinconsensus(data="sample", judge_failure_threshold=0.05), model="openai-api/cand/cand-model",
                       model_roles={"grader": [f"openai-api/judge/{j}" for j in JURORS]}, log_dir=str(tmp_path / "inspect"),
                       display="none")[0]
    assert log.status == "success", log.error
    metrics = {k: m.value for s in log.results.scores for k, m in s.metrics.items()}
    want = expected_headline()
    assert {k: metrics[k] for k in want} == pytest.approx(want, abs=1e-15)
    assert metrics["juror_1/rubric_accuracy"] == 0.5 and metrics["juror_2/rubric_accuracy"] == pytest.approx(1 / 3)
    assert metrics["juror_3/judge_failures"] == 2.0 * len(CASES)
    assert metrics["jury/jurors"] == 3.0 and not any(k.startswith("jury/kappa") for k in metrics)
    # The jurors' kappas need every verdict: `summarize` reads them from the records (the log's results hold the rows' figures).
    listed = subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", "--json", log.location], capture_output=True, text=True,
                            timeout=120, check=True)
    panel = json.loads(listed.stdout)[log.location]["jury"]
    assert panel["fleiss_kappa"]["estimate"] == pytest.approx(-1 / 195, abs=1e-12)
    assert panel["pairwise_kappa"]["juror_1-juror_3"]["estimate"] == pytest.approx(1 / 14, abs=1e-12)
    assert panel["pairwise_kappa"]["juror_2-juror_3"]["estimate"] == pytest.approx(-1 / 20, abs=1e-12)
    # 12 cases x 30 criteria x 4 roles planned; the panel's 12 ties and juror c's 24 prose replies failed.
    assert log.results.early_stopping.metadata["planned_judgments"] == len(CASES) * 30 * 4
    assert log.results.early_stopping.metadata["failed_judgments"] == 3 * len(CASES)
    score = log.samples[0].scores["rubric_scorer"].metadata
    assert score["judge"] == "jury(openai-api/judge/juror-a, openai-api/judge/juror-b, openai-api/judge/juror-c)"
    assert [j["judge_model"] for j in score["provenance"]["jurors"]] == list(JURORS)
    assert all(score["roles"][f"juror_{i}"]["usage"]["calls"] >= 30 for i in (1, 2, 3))  # each juror's tokens

    tracker = EvaluationTracker(output_path=str(tmp_path / "lmeval"))
    os.environ["CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD"] = "0.05"
    try:
        results = simple_evaluate(model="local-chat-completions", log_samples=True, bootstrap_iters=0, apply_chat_template=True,
                                  model_args={"model": "cand-model", "base_url": f"{jury.base_url}/chat/completions", "num_concurrent": 4},
                                  metadata={"judge_model": list(JURORS)}, evaluation_tracker=tracker)
    finally:
        del os.environ["CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD"]
    table = {k.split(",")[0]: v for k, v in results["results"]["clinconsensus"].items()}
    assert {k: table[k] for k in want} == pytest.approx(want, abs=1e-15)
    assert {k: table[k] for k in want} == {k: metrics[k] for k in want}  # the same numbers from both frameworks
    tracker.save_results_aggregated(results=results, samples=results["samples"])
    tracker.save_results_samples(task_name="clinconsensus", samples=results["samples"]["clinconsensus"])
    assert results["configs"]["clinconsensus"]["metadata"]["judge"]["judge_model"] == "jury(juror-a, juror-b, juror-c)"

    # summarize reads both runs alike: the panel, each juror, the kappas; the gate refuses a jury as the official protocol.
    inspect_out = subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", log.location], capture_output=True, text=True, timeout=120)
    samples = next((tmp_path / "lmeval").rglob("samples_clinconsensus_*.jsonl"))
    lmeval_out = subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", str(samples)], capture_output=True, text=True, timeout=120)
    for out in (inspect_out, lmeval_out):
        assert out.returncode == 0, out.stderr
        assert "jury of 3 (strict majority, at least 2 usable votes)" in out.stdout
        assert "fleiss_kappa -0.005 [-0.005, -0.005]" in out.stdout, out.stdout
        assert any(line.strip().startswith("juror_3 ") and "juror-c" in line for line in out.stdout.splitlines()), out.stdout
    strict = subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", "--strict", log.location, str(samples)],
                            capture_output=True, text=True, timeout=120)
    assert strict.returncode == 1
    assert strict.stdout.count("a jury's majority is not the single-judge official protocol") == 2, strict.stdout

    # The report shows every juror, their kappas, and says a jury is not the official protocol.
    report = subprocess.run([str(BIN / "clinconsensus-eval"), "report", log.location, str(samples), "--output", str(tmp_path / "r.html")],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    markdown = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "it is not the single-judge official protocol" in markdown
    assert markdown.count("| juror_3: ") == 2 and "-0.005 [-0.005, -0.005]" in markdown
