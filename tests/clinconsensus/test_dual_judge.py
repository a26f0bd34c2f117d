"""Two judges on the same answers: both judges' metrics and their agreement, over real HTTP.

The test server's ``judge-alt`` judge disagrees with ``judge-model`` on a fixed fifth of the
criteria (``alt_disagrees``), so the expected agreement is known exactly.
"""

from __future__ import annotations

import json
import math

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import candidate_answer, oracle_verdict
from clinconsensus_tasks.scorers.agreement import Confusion, cohen_kappa
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, cacs_at_k, summarize

pytestmark = pytest.mark.slow


def expected(reference: str, other: str):
    ref_rows, other_rows, pairs, per_subject = [], [], [], {}
    for case in load_cases("sample").cases:
        answer = candidate_answer(case.question)
        ref = [oracle_verdict(answer, c, reference) for _, c in case.rubrics]
        oth = [oracle_verdict(answer, c, other) for _, c in case.rubrics]
        ref_rows.append(CaseResult(sum(ref), 30, 0, case.slices()))
        other_rows.append(CaseResult(sum(oth), 30, 0, case.slices()))
        matrix = Confusion.of(zip(ref, oth))
        pairs.append(matrix)
        for label in case.slices()["subject"]:
            per_subject[label] = per_subject.get(label, Confusion()) + matrix
    total = sum(pairs, Confusion())
    return ref_rows, other_rows, total, per_subject


def run_dual_inspect(log_dir):
    """ClinConsensus on the sample with ``judge-model`` as grader and ``judge-alt`` as local_grader."""
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(
        clinconsensus(data="sample"),
        model="openai-api/cand/cand-model",
        model_roles={"grader": "openai-api/judge/judge-model", "local_grader": "openai-api/judge/judge-alt"},
        log_dir=str(log_dir),
        display="none",
    )[0]
    assert log.status == "success", log.error
    return log


def test_inspect_grader_and_local_grader(fake_server, tmp_path):

    log = run_dual_inspect(tmp_path)
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    ref_rows, other_rows, total, per_subject = expected("judge-model", "judge-alt")
    assert total.fp + total.fn > 0  # the judges do disagree

    assert metrics["cacs@10"] == summarize(ref_rows)["cacs@10"]
    assert metrics["local/cacs@10"] == summarize(other_rows)["cacs@10"]
    assert metrics["local/rubric_accuracy"] == summarize(other_rows)["rubric_accuracy"]
    assert metrics["agreement/percent"] == (total.tp + total.tn) / 360
    assert metrics["agreement/kappa"] == pytest.approx(cohen_kappa(total), abs=1e-15)
    assert metrics["agreement/cacs@7_diff"] == pytest.approx(
        cacs_at_k([r.met for r in ref_rows], 7) - cacs_at_k([r.met for r in other_rows], 7), abs=1e-15
    )
    # The log's results hold the run's figures; the agreement by subject is `compare`'s (it reads every verdict).
    assert not any("(subject=" in k for k in metrics)
    from clinconsensus_tasks.commands.compare import compare_logs

    by_label = compare_logs(log.location)
    for subject, matrix in per_subject.items():
        want = cohen_kappa(matrix)
        got = by_label.get(f"agreement/kappa(subject={subject})")
        assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want, abs=1e-15), subject
    # Both judges' verdicts are logged per criterion.
    sample = log.samples[0].scores["rubric_scorer"]
    assert len(sample.metadata["judgments"]) == len(sample.metadata["roles"]["local_grader"]["judgments"]) == 30
    assert sample.metadata["roles"]["local_grader"]["judge"].endswith("judge-alt")
    assert fake_server.stats()["calls"]["judge-alt"] == 361  # 360 verdicts and the test request


def test_lmeval_dual_task_matches_inspect(fake_server, tmp_path, monkeypatch):

    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    log = run_dual_inspect(tmp_path)
    inspect_metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("CLINCONSENSUS_LOCAL_JUDGE_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("CLINCONSENSUS_LOCAL_JUDGE_MODEL", "judge-alt")
    fake_server.reset()
    results = simple_evaluate(
        tasks=["clinconsensus_dual"],
        model="local-chat-completions",
        model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions", "num_concurrent": 4},
        apply_chat_template=True,
        log_samples=True,
    )
    lm = {k.split(",")[0]: v for k, v in results["results"]["clinconsensus_dual"].items() if k.endswith(",judge") and "_stderr" not in k}
    for key in ("cacs@10", "local/cacs@10", "local/rubric_accuracy", "agreement/percent", "agreement/kappa",
                "agreement/macro_f1", "agreement/met_count_pearson", "agreement/cacs@7_diff"):
        assert lm[key] == inspect_metrics[key], key
    # Both judges' verdicts are in the sample log.
    record = results["samples"]["clinconsensus_dual"][0]["filtered_resps"][0]
    second = json.loads(record)["roles"]["local_grader"]
    assert len(second["judgments"]) == 30 and second["judge"] == "judge-alt"


def test_lmeval_dual_task_needs_the_second_judge(fake_server, monkeypatch):
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    with pytest.raises(ConfigurationError, match="CLINCONSENSUS_LOCAL_JUDGE_BASE_URL and CLINCONSENSUS_LOCAL_JUDGE_MODEL"):
        simple_evaluate(
            tasks=["clinconsensus_dual"],
            model="local-chat-completions",
            model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
            apply_chat_template=True,
        )


def test_local_judge_in_process_through_inspects_hf_provider(fake_server, tmp_path, tiny_judge_dir):
    # The in-process path of a local judge: a model folder loaded by Inspect's real hf/ provider,
    # bound as local_grader next to the API grader. The tiny model's output is noise, so its
    # verdicts are unparseable: the run must still finish, with every one of them counted.
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    case = load_cases("sample").cases[0]
    one = tmp_path / "one_case.jsonl"
    record = {**case.to_record(), "rubrics": [{"criterion_id": c, "criterion": t} for c, t in case.rubrics[:3]]}
    one.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    # Greedy, thinking off: how docs/judges.md says to bind the local judge through hf/.
    local = get_model(f"hf/{tiny_judge_dir}", device="cpu", do_sample=False, enable_thinking=False, memoize=False)
    log = inspect_eval(
        # Every local verdict fails here by design: the failure policy is off so the run can finish.
        clinconsensus(data=str(one), n_criteria=3, thresholds=[1, 2], judge_max_tokens=4, judge_failure_threshold=0),
        model="openai-api/cand/cand-model",
        model_roles={"grader": "openai-api/judge/judge-model", "local_grader": local},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )[0]
    assert log.status == "success", log.error
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    assert metrics["judge_failures"] == 0 and metrics["local/judge_failures"] == 3
    local_judgments = log.samples[0].scores["rubric_scorer"].metadata["roles"]["local_grader"]["judgments"]
    # Its re-ask (the reply refused and a note) gets noise back too: failed, not asked a third time.
    assert [j["attempts"] for j in local_judgments] == [2, 2, 2], [j["error"] for j in local_judgments]
    assert all(j["error"].startswith("unparseable verdict") for j in local_judgments)
