"""A release published where models are published, and gated where releases are built (issue 60, items 1 and 2).

``clinconsensus-eval publish`` writes the Hugging Face Hub's files from runs the release gate passes,
and ``summarize --strict`` writes its verdicts as JUnit XML and a Markdown job summary. The runs are
real Inspect runs against the stand-in server, set up as a release by ``test_release_gate``'s
``release`` fixture (a copy of the bundled cases standing in for the public file, named to the gate
by its sha256; the official prompt from a fixture script; a scripted judge listed as a real one).

What the files are checked against, beside exact expected content:

* ``.eval_results/*.yaml``: the Hub's documented fields (``dataset.id`` required, ``task_id``,
  ``config``, ``split``, ``revision``; ``value`` required; ``date`` ISO 8601; ``source.url``
  required when a source is given, ``source.name``; ``notes``; no ``verifyToken``), and the Hub
  client's own reader and writer (``huggingface_hub.parse_eval_result_entries`` and
  ``eval_result_entries_to_yaml``: what it reads back it writes as the same structure);
* ``model-index.yaml``: pasted into a model card's front matter, read by ``huggingface_hub.ModelCard``;
* the JUnit file: read as ``pytest --junitxml`` files are (``testsuites``/``testsuite``/``testcase``,
  ``failure`` with its ``message``, ``skipped``) with ``xml.etree``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.gates.bar import ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts
from clinconsensus_tasks.gates.publication import PublishRefused, file_name, publication
from clinconsensus_tasks.gates.release import CHECKS
from clinconsensus_tasks.gates.release_gate import (
    NOT_CHECKED, OK, SMOKE_CHECK, GateResult, GateRun, check_name, check_outcomes, run_problems,
)
from clinconsensus_tasks.gates.release_outputs import junit_xml, markdown_summary
from clinconsensus_tasks.gates.texts import interval_text
from clinconsensus_tasks.scorers.clinconsensus.metric_table import TASK_VERSION
from test_release_gate import N_CASES, inspect_run, release  # noqa: F401 (release: the fixture)

SOURCE = "https://huggingface.co/datasets/org/cand-model-evals"
HEADLINE = ["cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy"]
HUB_TOP = {"dataset", "value", "date", "source", "notes"}  # the documented fields but verifyToken (the Hub's own jobs give it)
HUB_DATASET = {"id", "task_id", "config", "split", "revision"}
HUB_SOURCE = {"url", "name", "user", "org"}


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def check_hub_fields(entries) -> None:
    """An ``.eval_results/*.yaml`` file's content against the Hub's documented fields."""
    assert isinstance(entries, list) and entries
    for entry in entries:
        assert set(entry) <= HUB_TOP and {"dataset", "value"} <= set(entry), entry
        assert set(entry["dataset"]) <= HUB_DATASET and entry["dataset"]["id"].count("/") == 1
        assert isinstance(entry["dataset"].get("task_id", ""), str)
        if "revision" in entry["dataset"]:
            assert len(entry["dataset"]["revision"]) == 40 and int(entry["dataset"]["revision"], 16) >= 0
        assert isinstance(entry["value"], (int, float)) and not isinstance(entry["value"], bool) and math.isfinite(entry["value"])
        if "date" in entry:
            dt.datetime.fromisoformat(str(entry["date"]).replace("Z", "+00:00"))
        if "source" in entry:
            assert set(entry["source"]) <= HUB_SOURCE and entry["source"]["url"].startswith("https://")
        assert isinstance(entry.get("notes", ""), str)


def read_by_the_hub_client(text: str) -> list:
    """The file read by the Hub client, which then writes the same structure back."""
    from huggingface_hub import eval_result_entries_to_yaml, parse_eval_result_entries

    data = yaml.safe_load(text)
    entries = parse_eval_result_entries(data)
    assert eval_result_entries_to_yaml(entries) == data
    return entries


# -- the release, published ---------------------------------------------------------------------------


@pytest.mark.slow
def test_publish_writes_the_hubs_files_with_summarizes_numbers_and_refuses_what_the_gate_refuses(
        release, tmp_path, capsys, monkeypatch):  # noqa: F811 (release: test_release_gate's fixture)
    from huggingface_hub import ModelCard

    from clinconsensus_tasks.judge import official_template

    data, sha = release
    log = inspect_run(tmp_path / "logs", data)
    assert log.status == "success"
    where = log.location
    code, out, _ = run_cli(capsys, "summarize", where, "--json")
    overall = json.loads(out)[where]["overall"]
    code, gate_out, _ = run_cli(capsys, "summarize", "--strict", where, "--data-sha256", sha)
    assert code == 0
    code, out, _ = run_cli(capsys, "summarize", "--strict", where, "--data-sha256", sha, "--json")
    assert code == 0
    headline = json.loads(out)["runs"][0]["headline"]
    assert list(headline) == HEADLINE
    # The gate's intervals are the report's leaderboard's (gates cannot import the report: computed alike).
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.report.sections import bootstrap_intervals

    leaderboard = bootstrap_intervals([r.graded.result() for r in read_case_records(where)], 30, 1000, 0, thresholds=(10, 7))
    assert {name: (f["low"], f["high"]) for name, f in headline.items()} == {name: leaderboard[name] for name in HEADLINE}

    card = tmp_path / "card"
    code, out, err = run_cli(capsys, "publish", tmp_path / "logs", "--output", card, "--data-sha256", sha, "--source-url", SOURCE)
    assert code == 0, err
    accepted = f"release profile, data sha256 {sha[:12]}... (--data-sha256)"
    # The gate's own lines, as summarize --strict prints them; then each file written.
    assert out.splitlines()[:2] == gate_out.splitlines() and gate_out.startswith(f"ok   {where}: {accepted}\n")
    files = sorted(str(p.relative_to(card)) for p in card.rglob("*") if p.is_file())
    assert files == sorted([*(f".eval_results/{file_name('clinconsensus', m)}" for m in HEADLINE), "model-index.yaml", "provenance.json"])
    assert out.splitlines()[2:] == [f"wrote {card / f}" for f in [*(f".eval_results/{file_name('clinconsensus', m)}" for m in HEADLINE),
                                                                   "model-index.yaml", "provenance.json"]]
    assert err.splitlines() == [f"1 of 1 run(s) pass the {accepted}"]

    prompt_sha = official_template.official_template().describe()["judge_prompt_sha256"]  # the fixture's script's template
    for name in HEADLINE:
        text = (card / ".eval_results" / file_name("clinconsensus", name)).read_text(encoding="utf-8")
        k = name.split("@")[1] if "@" in name else None
        title = {"cacs@10": "CACS@10", "cacs@7": "CACS@7", "pass@10": "Pass@10", "pass@7": "Pass@7",
                 "rubric_accuracy": "rubric accuracy"}[name]
        f = headline[name]
        notes = (f"{title}{f', k={k} of N=30 criteria' if k else ''}; a fraction from 0 to 1 (the paper's tables: x100); "
                 f"95% CI [{f['low']:.4f}, {f['high']:.4f}], case bootstrap, 1000 resamples; {N_CASES} cases; "
                 f"judge openai-api/judge/release-judge (per_criterion, prompt official, sha256 {prompt_sha}); "
                 f"data {data.name} (a local copy), sha256 {sha}; task clinconsensus_tasks/clinconsensus version {TASK_VERSION} "
                 f"(clinconsensus-tasks 0.1.0, Inspect); passed the release gate (clinconsensus-eval summarize --strict: {accepted})")
        expected = [{"dataset": {"id": "skylenage/ClinConsensus", "task_id": "clinconsensus"}, "value": overall[name],
                     "date": log.eval.created, "source": {"url": SOURCE, "name": "Evaluation logs"}, "notes": notes}]
        found = yaml.safe_load(text)
        assert found[0]["notes"] == notes
        assert found == expected, name
        check_hub_fields(found)
        # summarize's number to the last digit, through the Hub client's own reader.
        (entry,) = read_by_the_hub_client(text)
        assert entry.value == overall[name] == f["estimate"] and repr(entry.value) in text
        assert (entry.dataset_id, entry.task_id, entry.source_url, entry.verify_token) == ("skylenage/ClinConsensus", "clinconsensus",
                                                                                          SOURCE, None)

    index_text = (card / "model-index.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(index_text) == {"model-index": [{"name": "cand-model", "results": [{
        "task": {"type": "text-generation", "name": "ClinConsensus (clinconsensus_tasks/clinconsensus)"},
        "dataset": {"name": "ClinConsensus (public set: 900 low-difficulty cases)", "type": "skylenage/ClinConsensus"},
        "metrics": [{"name": title, "type": name, "value": overall[name]}
                    for name, title in zip(HEADLINE, ["CACS@10", "CACS@7", "Pass@10", "Pass@7", "rubric accuracy"])],
        "source": {"name": "Evaluation logs", "url": SOURCE}}]}]}
    # Pasted between the --- lines of a model card, as the Hub reads it.
    model_card = ModelCard(f"---\nlicense: mit\n{index_text}---\n\n# cand-model\n")
    assert model_card.data.model_name == "cand-model" and model_card.data.license == "mit"
    assert [(r.task_type, r.dataset_type, r.metric_type, r.metric_value, r.source_url) for r in model_card.data.eval_results] == [
        ("text-generation", "skylenage/ClinConsensus", name, overall[name], SOURCE) for name in HEADLINE]

    provenance = json.loads((card / "provenance.json").read_text(encoding="utf-8"))
    assert provenance["gate"]["passed"] is True and provenance["gate"]["runs"][0]["headline"] == headline
    (run,) = provenance["runs"]
    assert (run["model"], run["judges"], run["judge_prompt"], run["judge_prompt_sha256"], run["task_version"], run["data_sha256"],
            run["cases"], run["date"]) == ("cand-model", ["openai-api/judge/release-judge"], "official", prompt_sha, TASK_VERSION, sha,
                                           N_CASES, log.eval.created)
    assert [(p["metric"], p["value"], p["file"]) for p in provenance["published"]] == [
        (name, overall[name], f".eval_results/{file_name('clinconsensus', name)}") for name in HEADLINE]

    # To a URL prefix like every output, the same files; --date over the run's own.
    code, out, err = run_cli(capsys, "publish", where, "--output", "memory://release/card", "--data-sha256", sha, "--date", "2026-01-15")
    assert code == 0, err
    import fsspec

    memory = fsspec.filesystem("memory")
    remote = yaml.safe_load(memory.cat("/release/card/.eval_results/clinconsensus-cacs-at-10.yaml").decode())
    assert remote[0]["value"] == overall["cacs@10"] and remote[0]["date"] == "2026-01-15" and "source" not in remote[0]

    # Refused: without the data's sha256 the copy is not the public data; the gate's lines are publish's.
    refused = tmp_path / "refused"
    code, gate_out, _ = run_cli(capsys, "summarize", "--strict", where)
    code_publish, out, err = run_cli(capsys, "publish", where, "--output", refused)
    assert code == code_publish == 1 and out == gate_out and out.startswith(f"FAIL {where}: data {data} is not the public dataset")
    assert err.splitlines()[-1].startswith("publish: nothing written") and not refused.exists()
    # A --limit run beside the release run: refused with the gate's two lines, nothing written.
    limited = inspect_run(tmp_path / "logs", data, limit=2)
    code, gate_out, _ = run_cli(capsys, "summarize", "--strict", tmp_path / "logs", "--data-sha256", sha)
    code_publish, out, err = run_cli(capsys, "publish", tmp_path / "logs", "--output", refused, "--data-sha256", sha)
    assert code == code_publish == 1 and out == gate_out and not refused.exists()
    assert [line for line in out.splitlines() if line.startswith(f"FAIL {limited.location}: ")][0].endswith(
        "a part of the data (--limit 2): run every case, without --limit")
    # The stand-in's judge: refused.
    stand_in = inspect_run(tmp_path / "stand-in", data, judge="judge-model")
    code, out, err = run_cli(capsys, "publish", stand_in.location, "--output", refused, "--data-sha256", sha)
    assert code == 1 and f"FAIL {stand_in.location}: judged by the project's stand-in server (judge-model), not a real judge" in out
    assert not refused.exists()
    # Two runs of the release: one value per score on a card, so name one.
    again = inspect_run(tmp_path / "again", data)
    code, out, err = run_cli(capsys, "publish", where, again.location, "--output", refused, "--data-sha256", sha)
    assert code == 1 and err.splitlines()[-1] == (
        f"publish: nothing written: 2 runs of ClinConsensus ({where}, {again.location}): a model card holds one value of each "
        "score; name the one run to publish (the Inspect log or the lm-eval output, not both)")
    assert not refused.exists()

    # Item 2: the gate's verdicts for CI, the exit code unchanged.
    junit, markdown = tmp_path / "ci" / "gate.xml", tmp_path / "ci" / "gate.md"
    code, plain, _ = run_cli(capsys, "summarize", "--strict", tmp_path / "logs", "--data-sha256", sha)
    code_ci, out, err = run_cli(capsys, "summarize", "--strict", tmp_path / "logs", "--data-sha256", sha, "--junit", junit,
                                "--markdown", markdown)
    assert code == code_ci == 1 and out == plain
    assert err.splitlines() == [f"wrote {junit}", f"wrote {markdown}", f"1 of 2 run(s) pass the {accepted}"]
    code, out, _ = run_cli(capsys, "summarize", "--strict", tmp_path / "logs", "--data-sha256", sha, "--json")
    gate = json.loads(out)
    verdicts = {r["run"]: r for r in gate["runs"]}

    suites = ET.parse(junit).getroot()
    assert suites.tag == "testsuites"
    assert [s.get("name") for s in suites.findall("testsuite")] == list(verdicts)
    names = [check_name(c) for c in CHECKS] + [SMOKE_CHECK]
    for suite in suites.findall("testsuite"):
        run = verdicts[suite.get("name")]
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == names and {c.get("classname") for c in cases} == {run["run"]}
        failures = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
        skipped = {c.get("name"): c.find("skipped").get("message") for c in cases if c.find("skipped") is not None}
        # A test case per check; a failure's message is its FAIL lines' words, its text the FAIL lines.
        assert [m for f in failures.values() for m in f.get("message").split("\n")] == run["problems"]
        assert all(f.text == "\n".join(f"FAIL {run['run']}: {m}" for m in f.get("message").split("\n")) for f in failures.values())
        assert skipped == {check_name(c): f"no bar asked ({flags})" for c, flags in zip(CHECKS[-4:], [
            "--min-kappa or --max-judge-bias", "--min-kappa", "--max-judge-bias", "--max-flip-rate"])}
        assert (suite.get("tests"), suite.get("failures"), suite.get("skipped"), suite.get("errors")) == (
            str(len(names)), str(len(failures)), "4", "0")
        props = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert props["verdict"] == run["verdict"] and props["bar"] == accepted
        if run["verdict"] == OK:
            assert failures == {} and all(props[n] == interval_text(f) for n, f in run["headline"].items())
        else:
            assert list(failures) == ["every case", SMOKE_CHECK]
    assert (suites.get("tests"), suites.get("failures")) == (str(2 * len(names)), "2")

    text = markdown.read_text(encoding="utf-8")
    assert text.startswith(f"## Release gate: FAILED\n\n1 of 2 run(s) pass the {accepted}.\n")
    for run in gate["runs"]:
        if run["verdict"] == OK:
            assert f"### ok: `{run['run']}`" in text
            assert all(f"| {n} | {interval_text(f)} |" in text for n, f in run["headline"].items())
        else:
            assert f"### FAIL: `{run['run']}`" in text and all(f"- {p}" in text for p in run["problems"])
    assert f"judge `openai-api/judge/release-judge` (per_criterion, prompt `official` (sha256 `{prompt_sha}`))" in text
    assert "<details><summary>What the gate read</summary>" in text and f"- named: `{tmp_path / 'logs'}`" in text

    # GitHub Actions: appended to the job summary the other steps wrote; a JUnit file at a URL.
    summary = tmp_path / "step_summary.md"
    summary.write_text("## tests\n\nall passed\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, out, err = run_cli(capsys, "summarize", "--strict", tmp_path / "logs", "--data-sha256", sha, "--markdown", str(summary),
                             "--junit", "memory://ci/gate.xml")
    assert code == 1 and err.splitlines()[:2] == ["wrote memory://ci/gate.xml", f"appended to {summary} ($GITHUB_STEP_SUMMARY)"]
    assert summary.read_text(encoding="utf-8") == "## tests\n\nall passed\n" + text
    assert memory.cat("/ci/gate.xml").decode() == junit.read_text(encoding="utf-8")


# -- the pieces, without runs -------------------------------------------------------------------------


def test_every_check_has_a_readable_name_and_a_run_that_did_not_finish_has_its_other_checks_not_checked():
    names = [check_name(c) for c in CHECKS]
    assert len(set(names)) == len(names) and not any(n.startswith("_") or "_" in n for n in names)
    facts = RunFacts("logs/x.eval", "inspect", "clinconsensus", "clinconsensus", unfinished=["status error: the judge died"])
    bar = ReleaseBar(min_kappa=0.6)
    problems = run_problems(facts, bar)
    assert problems[0].startswith("status error: the judge died; finish it")
    outcomes = check_outcomes(facts, bar, problems)
    assert [(o.name, o.problems) for o in outcomes if o.problems] == [("finished", problems)]
    skipped = {o.name: o.skipped for o in outcomes if not o.problems}
    assert skipped[check_name(CHECKS[-2])] == "no bar asked (--max-judge-bias)"  # no bar: never run
    assert skipped[check_name(CHECKS[-3])] == NOT_CHECKED  # asked for, but the run did not finish
    assert all(skipped[n] for n in names[1:])


def _run(where: str, benchmark: str = "clinconsensus", model: str = "my-model", revision: str = "", **provenance) -> GateRun:
    headline = ({"score": {"estimate": 0.625, "scenarios": 14, "items": 140}} if benchmark == "climedbench" else
                {"cacs@10": {"estimate": 0.1 + 0.2, "low": 0.25, "high": 0.35, "cases": 900},
                 "rubric_accuracy": {"estimate": 2 / 3, "low": 0.6, "high": 0.7, "cases": 900}})
    base = {"run": where, "framework": "lm-eval", "benchmark": benchmark, "task": benchmark, "model": model, "task_version": "1.8",
            "judges": ["gpt-4.1"], "judge_mode": "per_criterion", "judge_prompt": "official", "judge_prompt_sha256": "a" * 64,
            "data_source": "hf://datasets/skylenage/ClinConsensus/data/clinconsensus_low.jsonl", "data_sha256": "b" * 64,
            "data_revision": revision, "thresholds": [10], "cases": 900, "items": 140, "scenarios": ["ID1"] * 14, "variant": "clean"}
    verdict = {"run": where, "framework": "lm-eval", "benchmark": benchmark, "verdict": OK, "problems": [], "headline": headline,
               "physicians": None, "reliability": None}
    return GateRun(verdict, [], {**base, **provenance})


def _result(*runs: GateRun) -> GateResult:
    return GateResult({"profile": "release profile, hub data at the commit the run was given", "exceptions": [], "passed": True,
                       "runs": [r.verdict for r in runs], "superseded": []}, list(runs), ("results/",))


def test_a_hub_run_publishes_its_commit_and_climedbench_goes_to_model_index_unless_a_dataset_is_named():
    commit = "0123456789abcdef0123456789abcdef01234567"
    result = _result(_run("results/m/samples_clinconsensus_x.jsonl", revision=commit), _run("results/m/results_x.json", "climedbench"))
    made = publication(result, dates={"results/m/samples_clinconsensus_x.jsonl": "2026-01-15T10:30:00Z"})
    assert sorted(made.files) == [".eval_results/clinconsensus-cacs-at-10.yaml", ".eval_results/clinconsensus-rubric_accuracy.yaml",
                                  "model-index.yaml", "provenance.json"]
    (entry,) = yaml.safe_load(made.files[".eval_results/clinconsensus-cacs-at-10.yaml"])
    check_hub_fields([entry])
    assert entry["dataset"] == {"id": "skylenage/ClinConsensus", "task_id": "clinconsensus", "revision": commit}
    assert entry["value"] == 0.1 + 0.2 and "0.30000000000000004" in made.files[".eval_results/clinconsensus-cacs-at-10.yaml"]
    assert entry["date"] == "2026-01-15T10:30:00Z"
    assert entry["notes"] == (
        "CACS@10, k=10 of N=30 criteria; a fraction from 0 to 1 (the paper's tables: x100); 95% CI [0.2500, 0.3500], case "
        "bootstrap, 1000 resamples; 900 cases; judge gpt-4.1 (per_criterion, prompt official, sha256 " + "a" * 64 + "); data "
        f"hf://datasets/skylenage/ClinConsensus/data/clinconsensus_low.jsonl at revision {commit}, sha256 " + "b" * 64 + "; task "
        "clinconsensus version 1.8 (clinconsensus-tasks 0.1.0, lm-evaluation-harness); passed the release gate (clinconsensus-eval "
        "summarize --strict: release profile, hub data at the commit the run was given)")
    read_by_the_hub_client(made.files[".eval_results/clinconsensus-cacs-at-10.yaml"])
    index = yaml.safe_load(made.files["model-index.yaml"])["model-index"]
    assert [r["dataset"] for r in index[0]["results"]] == [
        {"name": "ClinConsensus (public set: 900 low-difficulty cases)", "type": "skylenage/ClinConsensus", "revision": commit},
        {"name": "CliMedBench", "type": "climedbench"}]
    assert index[0]["results"][1]["metrics"] == [{"name": "overall score", "type": "score", "value": 0.625}]
    from huggingface_hub.repocard_data import model_index_to_eval_results

    name, results = model_index_to_eval_results(index)
    assert name == "my-model" and [(r.dataset_type, r.dataset_revision, r.metric_type) for r in results] == [
        ("skylenage/ClinConsensus", commit, "cacs@10"), ("skylenage/ClinConsensus", commit, "rubric_accuracy"),
        ("climedbench", None, "score")]
    # A CliMedBench dataset of the team's own, named: its file too, with its task id.
    made = publication(result, dataset_ids={"climedbench": "org/climedbench"}, task_ids={"climedbench": "overall"}, model_name="org/m")
    (entry,) = yaml.safe_load(made.files[".eval_results/climedbench-score.yaml"])
    check_hub_fields([entry])
    assert entry["dataset"] == {"id": "org/climedbench", "task_id": "overall"} and entry["value"] == 0.625
    assert entry["notes"].startswith("CliMedBench overall score (the unweighted mean of 14 scenario scores, 140 items, 0 to 1; "
                                     "no interval); task climedbench version 1.8")
    assert yaml.safe_load(made.files["model-index.yaml"])["model-index"][0]["name"] == "org/m"


def test_publication_refuses_what_is_not_one_models_release():
    with pytest.raises(PublishRefused, match=r"runs of 2 models \(a, b\): a model card holds one model's numbers"):
        publication(_result(_run("x.jsonl", model="a"), _run("y.json", "climedbench", model="b")))
    failed = _run("x.jsonl")
    failed.verdict.update(verdict="FAIL", problems=["a part of the data (--limit 5): run every case, without --limit"], headline=None)
    with pytest.raises(PublishRefused, match=r"1 of 1 run\(s\) fail the release gate \(x.jsonl\)"):
        publication(_result(failed))


def test_the_junit_file_and_the_summary_of_a_refused_run_that_did_not_finish(tmp_path):
    facts = RunFacts("logs/x.eval", "inspect", "clinconsensus", "clinconsensus", unfinished=["status error: the judge died"])
    bar = ReleaseBar()
    problems = run_problems(facts, bar)
    from clinconsensus_tasks.gates.release_gate import run_provenance, verdict

    run = GateRun(verdict(facts, problems), check_outcomes(facts, bar, problems), run_provenance(facts))
    result = _result(run)
    result.document["passed"] = False
    suites = ET.fromstring(junit_xml(result))
    (suite,) = suites.findall("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["finished"].find("failure").get("message") == problems[0]
    assert cases["every case"].find("skipped").get("message") == NOT_CHECKED
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == (str(len(CHECKS)), "1", str(len(CHECKS) - 1))
    text = markdown_summary(result)
    assert text.startswith("## Release gate: FAILED\n\n0 of 1 run(s) pass the release profile")
    assert "| `logs/x.eval` | clinconsensus | inspect |  | **FAIL (1 problem)** |" in text
    assert "- status error: the judge died; finish it" in text
    # Nothing found is a failing test case, not an empty report.
    empty = GateResult({"profile": "p", "exceptions": [], "passed": False, "runs": [], "superseded": []}, [], ("logs/",))
    suites = ET.fromstring(junit_xml(empty))
    (case,) = suites.iter("testcase")
    assert case.get("name") == "runs found" and case.find("failure").get("message").startswith("no run to check in logs/")


def test_the_gates_outputs_belong_to_the_gate_and_publish_checks_its_flags(tmp_path, capsys):
    for flag in ("--junit", "--markdown"):
        code, _, err = run_cli(capsys, "summarize", tmp_path, flag, tmp_path / "x")
        assert code == 2 and err.strip() == f"clinconsensus-eval: error: {flag} belongs to the release gate: add --strict"
    for args, message in (
        (["--source-name", "logs"], "--source-name needs --source-url (the Hub requires a source's url)"),
        (["--source-url", "logs.example"], "--source-url 'logs.example': a URL (https://...)"),
        (["--date", "15/01/2026"], "--date '15/01/2026': not an ISO 8601 date or date and time (2026-01-15, 2026-01-15T10:30:00Z)"),
        (["--dataset-id", "medqa=org/x"], "--dataset-id 'medqa=org/x': expected BENCHMARK=ID, BENCHMARK one of clinconsensus, climedbench"),
        (["--min-kappa", "0.6"], "--min-kappa needs the physicians' review (the folder of review export): --review DIR"),
    ):
        code, out, err = run_cli(capsys, "publish", tmp_path, "--output", tmp_path / "card", *args)
        assert code == 2 and err.strip() == f"clinconsensus-eval: error: {message}" and not (tmp_path / "card").exists()
    assert Path(tmp_path).is_dir()
