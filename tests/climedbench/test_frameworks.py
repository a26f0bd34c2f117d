"""CliMedBench end to end: every scenario through Inspect and lm-eval against the local server.

The server (``clinconsensus_tasks.stand_in``) stands in for the model under test and
answers CliMedBench prompts in the shapes real models use (markers, bare and full-width letters,
arrows, keyword lists, unusable replies). Both frameworks must produce identical scenario scores,
equal to what the shared scoring core gives for those answers. WTD similarity uses a real
sentence-transformers model that loads offline (``similarity_model_dir`` in conftest).
"""

from __future__ import annotations

import math


import pytest

from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.stand_in import climedbench_answer
from clinconsensus_tasks.scorers.climedbench.scenarios import DIMENSIONS, SCENARIOS, SIMILARITY, build_prompt, score_answer, summarize
from frameworks import run_lmeval_tasks
from hand_worked import CLIMEDBENCH, TOLERANCE

pytestmark = pytest.mark.slow


def expected_without_wtd() -> dict[str, float]:
    rows = []
    for code, scenario in SCENARIOS.items():
        if scenario.kind == SIMILARITY:
            continue
        for item in load_scenario(code, announce=False).items:
            value, parsed = score_answer(scenario, item, climedbench_answer(build_prompt(scenario, item)))
            rows.append((code, value, parsed))
    return summarize(rows)


def run_inspect_all(tmp_path, similarity_model_dir):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench

    log = inspect_eval(
        climedbench(data_dir="sample", similarity_model=str(similarity_model_dir)),
        model="openai-api/cand/cand-model",
        log_dir=str(tmp_path / "inspect"),
        display="none",
    )[0]
    assert log.status == "success", log.error
    return log, {k: v.value for s in log.results.scores for k, v in s.metrics.items()}


def run_lmeval_all(base_url, monkeypatch, similarity_model_dir, tasks=("climedbench",)):
    monkeypatch.setenv("CLIMEDBENCH_SIMILARITY_MODEL", str(similarity_model_dir))
    return run_lmeval_tasks(base_url, tasks)


def test_all_scenarios_identical_in_both_frameworks(fake_server, tmp_path, monkeypatch, similarity_model_dir):
    log, inspect_metrics = run_inspect_all(tmp_path, similarity_model_dir)
    evaluated = run_lmeval_all(fake_server.base_url, monkeypatch, similarity_model_dir)
    results = evaluated["results"]

    expected = expected_without_wtd()
    for code, scenario in SCENARIOS.items():
        lm = results[scenario.task_name]
        docs = sorted(evaluated["samples"][scenario.task_name], key=lambda s: s["doc_id"])
        for name in (scenario.metric, "score", "parse_failure"):
            if scenario.metric == "accuracy" or name == "parse_failure":  # sums of 0/1 values: exact in any order
                assert inspect_metrics[f"{code}/{name}"] == lm[f"{name},answer"], (code, name)
                continue
            # lm-eval aggregates with the core's mean (case_mean): the exactly rounded sum, equal to
            # the last bit in any order (SSO's tau is -0.16 in both; adding in document order gives
            # -0.15999999999999998, in reverse order another float again).
            values = [d[name] for d in docs]
            assert lm[f"{name},answer"] == math.fsum(values) / len(values) == math.fsum(values[::-1]) / len(values), (code, name)
            assert inspect_metrics[f"{code}/{name}"] == lm[f"{name},answer"], (code, name)
        if scenario.kind != SIMILARITY:
            assert inspect_metrics[f"{code}/score"] == expected[f"{code}/score"], code
            assert inspect_metrics[f"{code}/parse_failure"] == expected[f"{code}/parse_failure"], code
    # SSO's tau and ID1's accuracy equal the numbers worked out by hand (tests/hand_worked.py).
    for name, value in CLIMEDBENCH.items():
        code, metric = name.split("/")
        assert inspect_metrics[name] == pytest.approx(value, abs=TOLERANCE, rel=0), name
        assert results[SCENARIOS[code].task_name][f"{metric},answer"] == pytest.approx(value, abs=TOLERANCE, rel=0), name
    # The server's answers do exercise parse failures and imperfect orders.
    assert inspect_metrics["ID1/parse_failure"] + inspect_metrics["BKT/parse_failure"] > 0
    assert -1 <= inspect_metrics["SSO/kendall_tau"] < 1
    assert 0 < inspect_metrics["WTD/similarity"] < 1
    # Overall and dimension scores: the same means of the same scenario scores.
    assert results["climedbench"]["score,answer"] == pytest.approx(inspect_metrics["score"], abs=1e-12)
    for dim in DIMENSIONS:
        assert results[f"climedbench_{dim}"]["score,answer"] == pytest.approx(inspect_metrics[f"dimension/{dim}"], abs=1e-12)
    # Each WTD score says which model produced it.
    wtd = [s for s in log.samples if s.metadata["scenario"] == "WTD"]
    assert {s.scores["climedbench_scorer"].metadata["similarity_model"] for s in wtd} == {str(similarity_model_dir)}


def test_single_scenario_task_reports_plain_metric_names(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench_sso

    log = inspect_eval(climedbench_sso(data_dir="sample"), model="openai-api/cand/cand-model", log_dir=str(tmp_path), display="none")[0]
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    # Plain names, and the score per input-length decile (10 items: one per decile).
    assert set(metrics) == {"kendall_tau", "score", "parse_failure", *(f"length_decile_{d}" for d in range(1, 11))}
    assert metrics["score"] == expected_without_wtd()["SSO/score"]


def test_loglikelihood_variants_are_defined_for_the_multiple_choice_scenarios():
    from clinconsensus_tasks.lmeval_glue import task_manager

    manager = task_manager()
    names = set(manager.all_tasks)
    choice = [s.task_name for s in SCENARIOS.values() if s.kind == "choice"]
    assert {f"{n}_ll" for n in choice} <= names and "climedbench_ll" in names
    assert {s.task_name for s in SCENARIOS.values()} <= names and "climedbench" in names
    task = manager.load(["climedbench_ftt_ll"])["tasks"]["climedbench_ftt_ll"]
    doc = task.test_docs()[0]
    assert task.doc_to_text(doc).endswith("\n\n答案：")
    assert task.doc_to_choice(doc) == doc["choices"] and doc["choices"][task.doc_to_target(doc)] == next(
        item["answer"] for item in load_scenario("FTT", announce=False).items if item["id"] == doc["id"]
    )


def test_wtd_without_a_loadable_model_says_how_to_provide_one(fake_server, tmp_path):
    from clinconsensus_tasks.climedbench.inspect_task import climedbench_wtd
    from clinconsensus_tasks.errors import ConfigurationError

    # The model is checked when the task is built: the run stops before any answer is generated.
    with pytest.raises(ConfigurationError) as error:
        climedbench_wtd(data_dir="sample", similarity_model=str(tmp_path / "no-such-model"))
    message = str(error.value)
    assert "Could not load the similarity model" in message and "train-simcse" in message
    assert fake_server.stats()["calls"] == {}
