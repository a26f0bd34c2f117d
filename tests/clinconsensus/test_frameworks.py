"""ClinConsensus end to end in Inspect and lm-eval, over real HTTP, against one deterministic server.

The server (``clinconsensus_tasks.stand_in``) plays the candidate model and the judge, so
both frameworks score the very same answers with the very same verdicts: their metrics must be
identical to each other and to the values the server's rules imply.
"""

from __future__ import annotations

import json
import os

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.stand_in import FAULT_MALFORMED_ALWAYS, FAULT_MALFORMED_ONCE, candidate_answer, fault_for
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ENV_FAILURE_THRESHOLD
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import REPEATED

from frameworks import HEADLINE, expected_metrics, expected_without_failed, run_inspect, run_lmeval
from hand_worked import CLINCONSENSUS, TOLERANCE

pytestmark = pytest.mark.slow


def test_both_frameworks_report_identical_metrics(fake_server, tmp_path):
    _, inspect_metrics = run_inspect(tmp_path / "logs")
    inspect_calls = fake_server.stats()["kinds"]
    fake_server.reset()
    _, lmeval_metrics = run_lmeval(fake_server.base_url, bootstrap_iters=100)
    lmeval_calls = fake_server.stats()["kinds"]

    expected = expected_metrics()
    assert {k: inspect_metrics[k] for k in HEADLINE} == expected
    assert {k: lmeval_metrics[k] for k in HEADLINE} == expected
    # And both equal the numbers worked out by hand (derivation in tests/hand_worked.py).
    for metrics in (inspect_metrics, lmeval_metrics):
        assert {k: metrics[k] for k in CLINCONSENSUS} == pytest.approx(CLINCONSENSUS, abs=TOLERANCE, rel=0)
    # The audience breakdown is in both results and equal to the last bit.
    for key in ("cacs@10(audience=lay)", "cacs@7(audience=professional)", "rubric_accuracy(audience=lay)"):
        assert inspect_metrics[key] == lmeval_metrics[key]
    # Standard errors: lm-eval computes them itself from the per-case values (its closed form for a
    # mean, given to the tasks' order-free case_mean); Inspect's metric computes the same formula.
    # Equal, equal to the formula with exactly rounded sums, and lm-eval's own mean_stderr's statistic.
    from lm_eval.api.metrics import mean_stderr

    from clinconsensus_tasks.scorers.means import stderr_of_mean

    from clinconsensus_tasks.clinconsensus.dataset import load_cases
    from clinconsensus_tasks.stand_in import candidate_answer, oracle_verdict
    from clinconsensus_tasks.scorers.clinconsensus.metric_table import case_terms

    terms = [case_terms(sum(oracle_verdict(candidate_answer(c.question), t) for _, t in c.rubrics), 30) for c in load_cases("sample").cases]
    for name in ("rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10"):
        values = [t[name] for t in terms]
        assert inspect_metrics[f"{name}_stderr"] == lmeval_metrics[f"{name}_stderr"] == stderr_of_mean(values), name
        assert lmeval_metrics[f"{name}_stderr"] == pytest.approx(mean_stderr(values), rel=1e-12, abs=0), name
    assert lmeval_metrics["cacs@10_stderr"] > 0
    # 12 cases, 30 criteria each: one judge call per criterion, one candidate call per case.
    # One test request to the judge before anything is generated.
    assert inspect_calls == lmeval_calls == {"probe": 1, "candidate": 12, "per_criterion": 360}


def test_flaky_judge_429_500_and_malformed_verdicts(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0.1")  # the flaky judge garbles ~5% for good: above the 1% default
    log, inspect_metrics = run_inspect(tmp_path / "logs", judge="judge-flaky")
    statuses = fake_server.stats()["statuses"]
    assert statuses.get("429", 0) > 0 and statuses.get("500", 0) > 0
    fake_server.reset()
    _, lmeval_metrics = run_lmeval(fake_server.base_url, judge="judge-flaky")

    expected = expected_metrics(flaky=True)
    assert expected["judge_failures"] > 0  # the sample does hit permanently malformed verdicts
    assert {k: inspect_metrics[k] for k in HEADLINE} == expected
    assert {k: lmeval_metrics[k] for k in HEADLINE} == expected
    # Beside the headline (the official rule: a failed judgment is not met), the same metrics with
    # the cases that have a failed judgment left out (an instrument failure, not a zero): equal in
    # both frameworks to the last bit, and higher here than the headline.
    complete = expected_without_failed(flaky=True)
    assert {k: inspect_metrics[k] for k in complete} == {k: lmeval_metrics[k] for k in complete} == complete
    assert complete["rubric_accuracy(judgments=complete)"] > expected["rubric_accuracy"]
    # Failed judgments are visible per criterion, with the judge's output, and count as not met.
    failed = [j for s in log.samples for j in s.scores["rubric_scorer"].metadata["judgments"] if j["met"] is None]
    assert len(failed) == expected["judge_failures"]
    # The judge garbles the same way each time: asked once more with its reply refused, then failed
    # (the verdict rule asks again once).
    assert all(j["attempts"] == 2 and j["error"].startswith("unparseable verdict") and REPEATED not in j["error"] for j in failed)


def test_batched_mode_one_call_per_case_same_verdicts(fake_server, tmp_path):
    _, inspect_metrics = run_inspect(tmp_path / "logs", judge_mode="batched")
    assert fake_server.stats()["kinds"] == {"probe": 1, "candidate": 12, "batched": 12}
    fake_server.reset()
    _, lmeval_metrics = run_lmeval(fake_server.base_url, mode="batched")
    assert fake_server.stats()["kinds"] == {"probe": 1, "candidate": 12, "batched": 12}
    # The server's verdicts depend only on (answer, criterion), so batched equals per-criterion.
    assert {k: inspect_metrics[k] for k in HEADLINE} == expected_metrics()
    assert {k: lmeval_metrics[k] for k in HEADLINE} == expected_metrics()


def test_batched_flaky_judge_is_asked_again_whole_and_fails_cases_it_never_completes(fake_server, tmp_path, monkeypatch):
    # The flaky judge leaves criteria out of its list: a list that is not whole is no verdict
    # (issue 26.1), so the case is asked again; a case it never completes fails all 30 criteria.
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0")
    _, lmeval_metrics = run_lmeval(fake_server.base_url, judge="judge-flaky", mode="batched")
    assert {k: lmeval_metrics[k] for k in HEADLINE} == expected_metrics(flaky=True, batched=True)
    assert 12 < fake_server.stats()["kinds"]["batched"] <= 36


def test_lmeval_repeated_run_makes_zero_judge_calls(fake_server, tmp_path):
    _, first = run_lmeval(fake_server.base_url)
    assert fake_server.stats()["judge_calls"] == 360
    fake_server.reset()
    results, second = run_lmeval(fake_server.base_url)
    assert fake_server.stats()["judge_calls"] == 0
    assert second == first
    assert results["results"]["clinconsensus"]["judge_prompt_tokens,judge"] == 0  # verdicts from the cache cost nothing


def test_lmeval_cached_rerun_reasks_a_cached_unparseable_verdict(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0.1")  # the flaky judge garbles ~5% for good: above the 1% default
    # With a flaky judge, permanently malformed verdicts are in the cache as the last answer seen.
    # A re-run serves the good verdicts from the cache and re-asks only the failures, fresh.
    run_lmeval(fake_server.base_url, judge="judge-flaky")
    failures = int(expected_metrics(flaky=True)["judge_failures"])
    fake_server.reset()
    _, again = run_lmeval(fake_server.base_url, judge="judge-flaky")
    # Attempt 1 of every criterion is served from the cache; a cached unusable reply is re-asked,
    # fresh: the verdicts garbled once (their re-ask is its own request, cached apart) and the
    # failures, each once (their re-ask would be repeated next: no attempt 3).
    garbled = sum(fault_for(candidate_answer(case.question), criterion) in (FAULT_MALFORMED_ONCE, FAULT_MALFORMED_ALWAYS)
                  for case in load_cases("sample").cases for _, criterion in case.rubrics)
    assert fake_server.stats()["judge_calls"] == garbled and failures < garbled
    assert again["judge_failures"] == failures


def test_lmeval_missing_judge_config_fails_before_the_model_runs(fake_server, monkeypatch):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    monkeypatch.delenv("CLINCONSENSUS_JUDGE_BASE_URL")
    with pytest.raises(ConfigurationError, match="CLINCONSENSUS_JUDGE_BASE_URL and CLINCONSENSUS_JUDGE_MODEL"):
        simple_evaluate(
            model="local-chat-completions",
            model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
            apply_chat_template=True,
        )
    assert fake_server.stats()["kinds"] == {}


def test_inspect_without_grader_stops_with_instructions(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(
        clinconsensus(data="sample"), model="openai-api/cand/cand-model", log_dir=str(tmp_path), display="none"
    )[0]
    assert log.status == "error"
    assert "No judge bound" in log.error.message and "--model-role grader=" in log.error.message
    # Nothing was generated, and nothing was graded by the model under test.
    assert fake_server.stats()["kinds"] == {}


def test_inspect_self_grading_only_when_asked(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(
        clinconsensus(data="sample", allow_self_grading=True),
        model="openai-api/cand/cand-model",
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success"
    assert fake_server.stats()["calls"] == {"cand-model": 373}  # 12 answers, 1 test request, 360 verdicts


def test_summarize_recomputes_the_same_metrics_from_either_log(fake_server, tmp_path, capsys):
    log, inspect_metrics = run_inspect(tmp_path / "logs", breakdowns=True)  # -T breakdowns=true: by subject in the log too
    fake_server.reset()
    results, _ = run_lmeval(fake_server.base_url)
    samples = tmp_path / "samples_clinconsensus.jsonl"
    with samples.open("w", encoding="utf-8") as handle:
        for sample in results["samples"]["clinconsensus"]:
            # What lm-eval's --log_samples writes (EvaluationTracker.save_results_samples).
            handle.write(json.dumps({**sample, "filtered_resps": [str(r) for r in sample["filtered_resps"]]}, ensure_ascii=False, default=str) + "\n")
    assert cli_main(["summarize", "--json", "--thresholds", "5,7,10", log.location, str(samples)]) == 0
    report = json.loads(capsys.readouterr().out)
    from_inspect, from_lmeval = report[log.location], report[str(samples)]
    assert from_inspect == from_lmeval
    assert from_inspect["overall"]["cacs@10"] == inspect_metrics["cacs@10"]
    assert from_inspect["breakdowns"]["subject"]["心血管内科"]["cacs@10"] == inspect_metrics["cacs@10(subject=心血管内科)"]
    assert set(from_inspect["breakdowns"]) == {"difficulty", "subject", "task", "audience"}
    assert "pass@5" in from_inspect["overall"]
    # The tables: fractions, the frameworks' scale, unless --percent is asked for.
    overall = from_inspect["overall"]
    assert cli_main(["summarize", str(samples)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[2].split() == ["overall", *(f"{overall[n]:.4f}" for n in ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy"))]
    assert text.rstrip().endswith("(fractions, as the frameworks report them; --percent for %)")
    assert cli_main(["summarize", "--percent", str(samples)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[2].split() == ["overall", *(f"{100 * overall[n]:.2f}" for n in ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy"))]
    assert text.rstrip().endswith("(values in %)")


def test_judge_requests_are_greedy_and_carry_extra_body(fake_server, tmp_path, monkeypatch):
    # What a Qwen3-based judge on vLLM needs to run with thinking disabled.
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_EXTRA_BODY", '{"chat_template_kwargs": {"enable_thinking": false}}')
    run_lmeval(fake_server.base_url)
    stats = fake_server.stats()
    assert stats["judge_request_keys"]["chat_template_kwargs"] == 360
    assert stats["judge_temperatures"] == {"0.0": 360}
    fake_server.reset()
    # Inspect: the same through the grader role's generate config.
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    grader = get_model("openai-api/judge/judge-model", config=GenerateConfig(extra_body={"chat_template_kwargs": {"enable_thinking": False}}), memoize=False)
    log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model", model_roles={"grader": grader}, log_dir=str(tmp_path), display="none")[0]
    assert log.status == "success"
    stats = fake_server.stats()
    assert stats["judge_request_keys"]["chat_template_kwargs"] == 360
    assert stats["judge_temperatures"] == {"0.0": 360}


def test_bad_judge_settings_are_named(monkeypatch):
    from clinconsensus_tasks.judge.client import JudgeSettings

    env = {"CLINCONSENSUS_JUDGE_BASE_URL": "http://127.0.0.1:1/v1", "CLINCONSENSUS_JUDGE_MODEL": "j"}
    assert JudgeSettings.from_env(env=env).concurrency == 32
    with pytest.raises(ConfigurationError, match="CLINCONSENSUS_JUDGE_CONCURRENCY='many' is not a valid int"):
        JudgeSettings.from_env(env={**env, "CLINCONSENSUS_JUDGE_CONCURRENCY": "many"})
    with pytest.raises(ConfigurationError, match="CLINCONSENSUS_JUDGE_EXTRA_BODY must be a JSON object"):
        JudgeSettings.from_env(env={**env, "CLINCONSENSUS_JUDGE_EXTRA_BODY": "[1]"})
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODE", "fast")
    from clinconsensus_tasks.clinconsensus.lmeval_judge import judge_mode

    with pytest.raises(ConfigurationError, match="CLINCONSENSUS_JUDGE_MODE='fast'; choose one of per_criterion, batched"):
        judge_mode(os.environ)


def test_epochs_keep_every_epochs_counts(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0.1")  # the flaky judge garbles ~5% for good: above the 1% default
    # Two epochs of the same deterministic answers: every case observed twice, so the metrics equal
    # the single-epoch ones. Inspect reduces each case's epochs (the mean, --epochs-reducer), counts
    # too: judge_failures is the mean over epochs of each case's count, summed over cases; the
    # failure policy counts every epoch's failed judgments (the log's early_stopping metadata).
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(
        clinconsensus(data="sample"), model="openai-api/cand/cand-model",
        model_roles={"grader": "openai-api/judge/judge-flaky"}, epochs=2, log_dir=str(tmp_path), display="none",
    )[0]
    assert log.status == "success"
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    expected = expected_metrics(flaky=True)
    assert {k: metrics[k] for k in HEADLINE if k != "judge_failures"} == {k: expected[k] for k in HEADLINE if k != "judge_failures"}
    assert metrics["judge_failures"] == expected["judge_failures"]
    assert log.results.early_stopping.metadata["failed_judgments"] == 2 * expected["judge_failures"]



def test_the_epochs_reducer_means_what_inspect_says(fake_server, tmp_path):
    # A judge that flips a verdict on some asks (judge-flip30, seeded by the ask), asked anew in each
    # epoch (judge_cache off): a case's epochs differ, and each reducer gives its own number, the
    # headline of the per-case reduced terms (mean: their mean; max: the best epoch's).
    from inspect_ai import Epochs, eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
    from clinconsensus_tasks.scorers.means import mean

    def run(reducer: str):
        log = inspect_eval(clinconsensus(data="sample", judge_cache=False, judge_failure_threshold=0.2),
                           model="openai-api/cand/cand-model", epochs=Epochs(2, reducer), log_dir=str(tmp_path / reducer),
                           model_roles={"grader": "openai-api/judge/judge-flip30"}, display="none")[0]
        assert log.status == "success", log.error
        return log, {k: v.value for s in log.results.scores for k, v in s.metrics.items()}

    by_case: dict[str, list[float]] = {}
    log, mean_metrics = run("mean")
    for sample in log.samples:
        record = GradedCase.from_dict(sample.scores["rubric_scorer"].metadata)
        by_case.setdefault(record.case_id, []).append(record.terms()["cacs@10"])
    assert any(len(set(epochs)) > 1 for epochs in by_case.values())  # the judge did flip between epochs
    assert mean_metrics["cacs@10"] == mean([mean(epochs) for epochs in by_case.values()])
    _, max_metrics = run("max")
    assert max_metrics["cacs@10"] >= mean_metrics["cacs@10"]


def test_empty_answers_are_not_sent_to_the_judge(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(
        clinconsensus(data="sample"), model="openai-api/cand/empty-model",
        model_roles={"grader": "openai-api/judge/judge-model"}, log_dir=str(tmp_path), display="none",
    )[0]
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    assert metrics["empty_answers"] == 12 and metrics["rubric_accuracy"] == 0 and metrics["judge_failures"] == 0
    assert fake_server.stats()["kinds"] == {"probe": 1, "candidate": 12}
    fake_server.reset()
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = "judge-model"
    results = simple_evaluate(
        model="local-chat-completions",
        model_args={"model": "empty-model", "base_url": f"{fake_server.base_url}/chat/completions"},
        apply_chat_template=True,
    )["results"]["clinconsensus"]
    assert results["empty_answers,judge"] == 12 and results["cacs@7,judge"] == 0
    assert fake_server.stats()["kinds"] == {"probe": 1, "candidate": 12}


def test_a_judge_that_rejects_requests_stops_both_runs_before_generation(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    log = inspect_eval(
        clinconsensus(data="sample"), model="openai-api/cand/cand-model",
        model_roles={"grader": "openai-api/judge/unauthorized-judge"}, log_dir=str(tmp_path), display="none",
    )[0]
    # One message in both frameworks (judge.protocol.check_failed): the judge, where, why, what to check.
    assert log.status == "error" and "did not answer a test request (AuthenticationError (HTTP 401)" in log.error.message
    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = "unauthorized-judge"
    with pytest.raises(ConfigurationError, match=r"did not answer a test request \(AuthenticationError \(HTTP 401\)"):
        simple_evaluate(
            model="local-chat-completions",
            model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
            apply_chat_template=True,
        )
    assert "candidate" not in fake_server.stats()["kinds"]


def test_thresholds_are_a_task_parameter_in_both_frameworks(fake_server, tmp_path):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate, task_manager

    _, inspect_metrics = run_inspect(tmp_path / "logs", thresholds="5,7,10")
    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = "judge-model"
    results = simple_evaluate(
        task_manager=task_manager(metadata={"thresholds": [5]}),
        model="local-chat-completions",
        model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
        apply_chat_template=True,
    )["results"]["clinconsensus"]
    # A --metadata threshold's metrics are aggregated as the YAML's are (case_mean, its stderr; not
    # lm-eval's fallback mean with a warning): the same float as Inspect's.
    assert inspect_metrics["pass@5"] == results["pass@5,judge"]
    assert inspect_metrics["cacs@5"] == results["cacs@5,judge"]
    assert inspect_metrics["cacs@5_stderr"] == results["cacs@5_stderr,judge"]
    from clinconsensus_tasks.lmeval_glue import case_mean

    task = task_manager(metadata={"thresholds": [5]}).load(["clinconsensus"])["tasks"]["clinconsensus"]
    assert task.aggregation()["cacs@5"] is task.aggregation()["pass@5"] is task.aggregation()["cacs@10"] is case_mean
    assert task.higher_is_better()["cacs@5"] is True
    assert inspect_metrics["cacs@7"] == results["cacs@7,judge"] == expected_metrics()["cacs@7"]
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    with pytest.raises(ConfigurationError, match="1 <= k <= 30"):
        clinconsensus(data="sample", thresholds=[0, 7])
    with pytest.raises(ConfigurationError, match="1 <= k <= 30"):
        clinconsensus(data="sample", thresholds="")
