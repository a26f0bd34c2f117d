"""``clinconsensus-eval compare-models``: the regression gate on real runs of both frameworks.

The fake server on 127.0.0.1 stands in for the user's model endpoint and judge. ``cand-model``
answers every case; ``degraded-model`` answers nothing on the cases ``degraded_case`` picks (5 of
the 12 sample cases), so the expected differences follow from the server's own rules.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import candidate_answer, degraded_case, oracle_verdict
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, summarize
from frameworks import run_inspect, run_lmeval

pytestmark = pytest.mark.slow  # every test runs both frameworks

HEADLINE = ["rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10"]


def _expected(degraded: bool) -> dict[str, float]:
    rows = []
    for case in load_cases("sample").cases:
        empty = degraded and degraded_case(case.question)
        met = 0 if empty else sum(oracle_verdict(candidate_answer(case.question), text) for _, text in case.rubrics)
        rows.append(CaseResult(met, len(case.rubrics)))
    return summarize(rows)


def _compare(capsys, *args: str) -> tuple[int, dict]:
    code = cli_main(["compare-models", "--json", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if code in (0, 1) else {}


def test_degraded_candidate_fails_the_gate_identical_runs_pass(fake_server, tmp_path, capsys):
    run_inspect(tmp_path / "base")
    run_inspect(tmp_path / "again")
    _, worse_metrics = run_inspect(tmp_path / "worse", candidate="degraded-model")
    run_lmeval(fake_server.base_url, tmp_path / "lmeval-worse", candidate="degraded-model")
    cases = load_cases("sample").cases
    assert sum(degraded_case(c.question) for c in cases) == 5

    junit = tmp_path / "gate.xml"
    code, report = _compare(capsys, str(tmp_path / "base"), str(tmp_path / "worse"),
                            "--fail-if-worse", "cacs@10", "--fail-if-worse", "rubric_accuracy:0.05", "--junit", str(junit))
    assert code == 1 and not report["passed"]
    before, after = _expected(False), _expected(True)
    for name in HEADLINE:
        entry = report["metrics"][name]
        assert entry["baseline"] == pytest.approx(before[name], abs=1e-12)
        assert entry["candidate"] == pytest.approx(after[name], abs=1e-12) == pytest.approx(worse_metrics[name], abs=1e-12)
        assert entry["difference"] == pytest.approx(after[name] - before[name], abs=1e-12) and entry["difference"] < 0
        assert entry["ci95"][0] <= entry["difference"] <= entry["ci95"][1] < 0
        # 5 cases differ, all the same way: exactly 2 of the 2**5 sign patterns are as extreme.
        assert entry["p_value"] == pytest.approx(2 / 32) and entry["p_exact"]
    assert report["metrics"]["cacs@10"]["gate_failed"] and report["metrics"]["rubric_accuracy"]["gate_failed"]
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "5" and suite.get("failures") == "2"
    assert sorted(c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None) == ["cacs@10", "rubric_accuracy"]

    # A tolerance larger than the drop passes; the reverse direction is an improvement.
    assert _compare(capsys, str(tmp_path / "base"), str(tmp_path / "worse"), "--fail-if-worse", "cacs@10:0.2")[0] == 0
    code, report = _compare(capsys, str(tmp_path / "worse"), str(tmp_path / "base"), "--fail-if-worse", "cacs@10")
    assert code == 0 and report["metrics"]["cacs@10"]["difference"] > 0

    # Two runs of the same model: zero differences, p = 1, the gate passes.
    code, report = _compare(capsys, str(tmp_path / "base"), str(tmp_path / "again"), *sum((["--fail-if-worse", m] for m in HEADLINE), []))
    assert code == 0 and report["passed"]
    assert all(m["difference"] == 0 and m["ci95"] == [0, 0] and m["p_value"] == 1 for m in report["metrics"].values())

    # lm-eval output folder against the Inspect log of the same answers: the same run, paired across frameworks.
    code, report = _compare(capsys, str(tmp_path / "lmeval-worse"), str(tmp_path / "worse"), "--fail-if-worse", "cacs@10")
    assert code == 0 and all(m["difference"] == 0 for m in report["metrics"].values())
    code, report = _compare(capsys, str(tmp_path / "base"), str(tmp_path / "lmeval-worse"), "--fail-if-worse", "cacs@10")
    assert code == 1 and report["metrics"]["cacs@10"]["difference"] == pytest.approx(after["cacs@10"] - before["cacs@10"])

    # The table names the failing metrics.
    assert cli_main(["compare-models", str(tmp_path / "base"), str(tmp_path / "worse"), "--fail-if-worse", "cacs@10"]) == 1
    table = capsys.readouterr().out
    assert "RESULT: FAIL: candidate worse on cacs@10" in table and "cacs@10" in table


def test_runs_on_other_data_or_judges_are_refused_unless_allowed(fake_server, tmp_path, capsys, monkeypatch):
    from clinconsensus_tasks.clinconsensus.dataset import sample_path

    run_lmeval(fake_server.base_url, tmp_path / "lmeval")
    samples = next((tmp_path / "lmeval").rglob("samples_clinconsensus*.jsonl"))
    # A whole run on other data: the bundled cases but the last two (a samples file cut short would
    # be a run that did not finish, refused for that: tests/report/test_compare_models_gate.py).
    data = tmp_path / "ten.jsonl"
    data.write_text("\n".join(sample_path().read_text(encoding="utf-8").splitlines()[:-2]) + "\n", encoding="utf-8")
    monkeypatch.setenv("CLINCONSENSUS_DATA", str(data))
    run_lmeval(fake_server.base_url, tmp_path / "fewer")
    fewer = next((tmp_path / "fewer").rglob("samples_clinconsensus*.jsonl"))
    assert cli_main(["compare-models", str(samples), str(fewer)]) == 2
    assert "not on the same data: 2 case(s) only in the baseline" in capsys.readouterr().err
    code, report = _compare(capsys, str(samples), str(fewer), "--allow-different-data")
    assert code == 0 and report["paired_cases"] == 10 and len(report["only_baseline"]) == 2

    run_inspect(tmp_path / "alt", judge="judge-alt")
    assert cli_main(["compare-models", str(samples), str(tmp_path / "alt")]) == 2
    assert "graded differently" in capsys.readouterr().err
    code, report = _compare(capsys, str(samples), str(tmp_path / "alt"), "--allow-different-judge")
    assert code == 0 and report["judges"] == {"baseline": ["judge-model"], "candidate": ["openai-api/judge/judge-alt"]}

    assert cli_main(["compare-models", str(samples), str(samples), "--fail-if-worse", "cacs@99"]) == 2
    assert "unknown metric(s) cacs@99" in capsys.readouterr().err
    assert cli_main(["compare-models", str(tmp_path), str(samples)]) == 2
    assert "several runs" in capsys.readouterr().err


def _climedbench_expected(model: str, codes: list[str]) -> dict[str, float]:
    from clinconsensus_tasks.climedbench.dataset import load_scenario
    from clinconsensus_tasks.stand_in import climedbench_answer
    from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, build_prompt, score_answer
    from clinconsensus_tasks.scorers.climedbench.scenarios import summarize as summarize_items

    rows = []
    for code in codes:
        for item in load_scenario(code, announce=False).items:
            value, parsed = score_answer(SCENARIOS[code], item, climedbench_answer(build_prompt(SCENARIOS[code], item), model))
            rows.append((code, value, parsed))
    return summarize_items(rows)


def test_climedbench_runs_are_paired_by_item_across_frameworks(fake_server, tmp_path, capsys):
    # Two examinees the server answers differently (its rule depends on "examinee" model names).
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    codes = ["ID1", "SSO", "KE"]
    for model in ("examinee-a", "examinee-b"):
        log = inspect_eval(climedbench(data_dir="sample", scenarios=",".join(codes)), model=f"openai-api/cand/{model}",
                           log_dir=str(tmp_path / model), display="none")[0]
        assert log.status == "success", log.error
    a, b = _climedbench_expected("examinee-a", codes), _climedbench_expected("examinee-b", codes)
    code, report = _compare(capsys, str(tmp_path / "examinee-a"), str(tmp_path / "examinee-b"))
    from clinconsensus_tasks.climedbench.dataset import load_scenario

    items = sum(len(load_scenario(c, announce=False).items) for c in codes)  # every item of the three scenarios
    assert items == 30 and code == 0 and report["benchmark"] == "climedbench" and report["paired_cases"] == items
    for name in ("score", "ID1/score", "SSO/score", "KE/score", "dimension/reasoning"):
        entry = report["metrics"][name]
        assert entry["baseline"] == pytest.approx(a[name]) and entry["candidate"] == pytest.approx(b[name])
        assert entry["difference"] == pytest.approx(b[name] - a[name])
        assert entry["ci95"][0] <= entry["difference"] <= entry["ci95"][1]
    worse, better = ("examinee-b", "examinee-a") if b["score"] < a["score"] else ("examinee-a", "examinee-b")
    assert b["score"] != a["score"]
    gate = ["--fail-if-worse", "score"]
    code, report = _compare(capsys, str(tmp_path / better), str(tmp_path / worse), *gate)
    assert report["metrics"]["score"]["difference"] < 0
    assert code == (1 if report["metrics"]["score"]["ci95"][1] < 0 else 0)

    # lm-eval writes one samples file per scenario: the output folder is one run.
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(tmp_path / "lmeval-a"))
    results = simple_evaluate(tasks=[f"climedbench_{c.lower()}" for c in codes], model="local-chat-completions",
                              model_args={"model": "examinee-a", "base_url": f"{fake_server.base_url}/chat/completions"},
                              apply_chat_template=True, log_samples=True, bootstrap_iters=0, evaluation_tracker=tracker)
    tracker.save_results_aggregated(results=results, samples=results["samples"])
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=results["samples"][name])
    code, report = _compare(capsys, str(tmp_path / "lmeval-a"), str(tmp_path / "examinee-a"), *gate)
    assert code == 0 and report["paired_cases"] == items
    assert all(m["difference"] == 0 for m in report["metrics"].values())


def test_the_folder_of_one_lmeval_call_of_both_benchmarks_is_its_clinconsensus_run(fake_server, tmp_path, capsys, monkeypatch):
    # issue 58, item 8f: `lm_eval ... --tasks clinconsensus,climedbench --log_samples --output_path results/`
    # writes one ClinConsensus samples file beside the CliMedBench ones (one per scenario) and one
    # results file: compare-models takes the ClinConsensus run of such a folder.
    from lm_eval.loggers import EvaluationTracker

    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    tracker = EvaluationTracker(output_path=str(tmp_path / "results"))
    results = simple_evaluate(tasks=["clinconsensus", "climedbench_id1", "climedbench_sso"], model="local-chat-completions",
                              model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions",
                                          "num_concurrent": 4},
                              apply_chat_template=True, log_samples=True, bootstrap_iters=0, evaluation_tracker=tracker)
    tracker.save_results_aggregated(results=results, samples=results["samples"])
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=results["samples"][name])
    written = sorted(p.name.split("_20")[0] for p in (tmp_path / "results").rglob("*.json*"))
    assert written == ["results", "samples_climedbench_id1", "samples_climedbench_sso", "samples_clinconsensus"]
    samples = next((tmp_path / "results").rglob("samples_clinconsensus_*.jsonl"))
    run_inspect(tmp_path / "logs")  # the same answers and judge, through Inspect
    log = next((tmp_path / "logs").glob("*.eval"))

    assert cli_main(["compare-models", str(tmp_path / "results"), str(tmp_path / "logs"), "--fail-if-worse", "cacs@10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [f"baseline:  {samples}", f"candidate: {log}",
                         "clinconsensus: 12 paired cases; judges judge-model / openai-api/judge/judge-model"]
    assert lines[-1] == "RESULT: pass"
    code, report = _compare(capsys, str(tmp_path / "logs"), str(tmp_path / "results"))
    assert code == 0 and report["candidate"] == str(samples) and report["benchmark"] == "clinconsensus"
    assert all(m["difference"] == 0 for m in report["metrics"].values())
