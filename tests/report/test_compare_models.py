"""``clinconsensus-eval compare-models``: the regression gate on real runs of both frameworks.

The fake server on 127.0.0.1 stands in for the user's model endpoint and judge. ``cand-model``
answers every case; ``degraded-model`` answers nothing on the cases ``degraded_case`` picks (5 of
the 12 sample cases), so the expected differences follow from the server's own rules.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.fake_openai_server import candidate_answer, degraded_case, oracle_verdict
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, summarize
from frameworks import run_inspect, run_lmeval

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


def test_runs_on_other_data_or_judges_are_refused_unless_allowed(fake_server, tmp_path, capsys):
    run_lmeval(fake_server.base_url, tmp_path / "lmeval")
    samples = next((tmp_path / "lmeval").rglob("samples_clinconsensus*.jsonl"))
    lines = samples.read_text(encoding="utf-8").splitlines()
    fewer = tmp_path / "fewer" / samples.name
    fewer.parent.mkdir()
    fewer.write_text("\n".join(lines[:-2]) + "\n", encoding="utf-8")
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
