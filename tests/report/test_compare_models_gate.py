"""``compare-models`` holds each run to the release gate's run facts (issue 34, item 2).

A regression gate is the second gate of a release checklist: it refuses what ``summarize --strict``
knows is unfit, on either side, in the gate's own words, and compares as before two runs that are
fit. The release-only facts (the public data, an independent judge, the official prompt) do not
apply: the runs here are on four bundled cases, judged by a judge scripted on the stand-in server.

Every run is a real run of its framework against the stand-in on 127.0.0.1. ``judge-flaky`` answers
a verdict fixed by the request, or HTTP 500 for the judge prompts of the cases named in ``DEAD``:
a judge that died on 2 of the 4 cases of one run and was healthy for the others.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import sample_path
from clinconsensus_tasks.gates.bar import ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts
from clinconsensus_tasks.gates.release import COMPARISON_PROFILE, comparison_problems, run_problems
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ENV_FAILURE_THRESHOLD
from clinconsensus_tasks.scorers.clinconsensus.metric_table import TASK_VERSION

N_CASES = 4
FINISH = ("finish it: run the same lm_eval command again, with --use_cache PREFIX if its error named one (the answers "
          "it kept; verdicts come from the verdict cache)")
LIMIT = "a part of the data (--limit 2): run every case, without --limit"
REFUSED = f"REFUSED: the candidate run is not fit to compare ({COMPARISON_PROFILE}); nothing was compared"


# -- the profile on recorded facts alone -----------------------------------------------------------


def _graded(case_id: str, failed: int = 0, prompt: str = "my-prompt", suspect: bool = False):
    from clinconsensus_tasks.clinconsensus.logs import LoggedCase
    from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
    from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment

    judgments = [CriterionJudgment(f"r{i}", None if i < failed else True, "ok", 1) for i in range(30)]
    graded = GradedCase.of_judge(case_id, "judge-flaky", "batched", judgments)
    extra = {"judge_prompt": {"judge_prompt": prompt}, **({"suspect_answer": ["imitates the judge prompt"]} if suspect else {})}
    return LoggedCase(GradedCase.from_dict({**graded.to_dict(), **extra}))


def _facts(records, **facts) -> RunFacts:
    """A run's facts with the header numbers its records give (as a run writes them)."""
    from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize

    header = summarize([r.graded.result() for r in records], (7, 10), 30)
    return RunFacts("run.eval", "inspect", "clinconsensus", records=records, header_metrics=header, **facts)


def test_the_comparison_profile_is_the_gates_rules_without_the_release_only_facts():
    sample = {"data_source": str(sample_path()), "data_sha256": "", "data_revision": ""}
    run = _facts([_graded("c1"), _graded("c2")], task_version=str(TASK_VERSION), model="openai-api/cand/cand-model",
                 planned_cases=2, data=sample)
    # The bundled sample, a custom prompt in batched mode, a judge the header does not name: not a
    # release run, but two such runs may be compared.
    assert run_problems(run, ReleaseBar())[0].startswith("the bundled synthetic sample, not the benchmark")
    assert comparison_problems(run, ReleaseBar()) == []
    run = _facts([_graded("c1", failed=3), _graded("c2", suspect=True)], task_version="1.2", selection="--limit 2",
                 planned_cases=4, data=sample)
    problems = comparison_problems(run, ReleaseBar())
    assert [p.split(" (")[0] for p in problems] == [
        f"task version 1.2 is not this package's {TASK_VERSION}: re-run", "a part of the data", judgments_failed(3, 60),
        "1 suspect answer(s)"]
    assert problems[1] == LIMIT
    assert problems[3] == ("1 suspect answer(s) (imitating the judge prompt or carrying a verdict): read them "
                           "(clinconsensus-eval report) before publishing")
    # The bar is the gate's: a looser failure share is the command's flag.
    assert not any("judgments failed" in p for p in comparison_problems(run, ReleaseBar(failure_share=0.05)))


# -- real runs of both frameworks ----------------------------------------------------------------


@pytest.fixture
def four_cases(fake_server, tmp_path, monkeypatch):
    """Four bundled cases as the user's data file, and the judge that dies on the cases in ``DEAD``."""
    lines = [line for line in sample_path().read_text(encoding="utf-8").splitlines() if line.strip()][:N_CASES]
    data = tmp_path / "four.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cases = [json.loads(line) for line in lines]
    dead: set[str] = set()  # the user requests (user_request) of the cases the judge fails on

    def judge(request):
        if any(text in request.user for text in dead):
            return 500, "internal error"
        met = zlib.crc32(request.user.encode("utf-8")) % 3 != 0
        return json.dumps({"explanation": "依据回答内容判断。", "criteria_met": met}, ensure_ascii=False)

    fake_server.script("judge-flaky", judge)
    monkeypatch.setenv("CLINCONSENSUS_DATA", str(data))
    return data, cases, dead


def inspect_run(log_dir: Path, data: Path, limit: int | None = None):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    return inspect_eval(clinconsensus(data=str(data)), model="openai-api/cand/cand-model",
                        model_roles={"grader": "openai-api/judge/judge-flaky"}, log_dir=str(log_dir), display="none",
                        max_retries=1, limit=limit)[0]


def lmeval_run(base_url: str, out: Path, limit: int | None = None) -> tuple[Path, Path]:
    """``lm_eval --output_path out --log_samples [--limit N]``: the samples and results files."""
    from lm_eval.loggers import EvaluationTracker

    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = "judge-flaky"
    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(model="local-chat-completions", limit=limit, log_samples=True, bootstrap_iters=0,
                              model_args={"model": "cand-model", "base_url": f"{base_url}/chat/completions", "num_concurrent": 4},
                              apply_chat_template=True, evaluation_tracker=tracker)
    tracker.save_results_aggregated(results=results, samples=results["samples"])
    tracker.save_results_samples(task_name="clinconsensus", samples=results["samples"]["clinconsensus"])
    return next(out.rglob("samples_clinconsensus_*.jsonl")), next(out.rglob("results_*.json"))


def compare(capsys, *args) -> tuple[int, str]:
    code = cli_main(["compare-models", *map(str, args)])
    return code, capsys.readouterr().out


def refusals(out: str, side: str, where) -> list[str]:
    return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(f"FAIL {side} {where}: ")]


def judgments_failed(failed: int, total: int) -> str:
    return f"{failed} of {total} judgments failed, above the 1.0% allowed"


@pytest.mark.slow
def test_inspect_runs_a_dead_judge_a_limit_and_an_edited_header_are_refused(four_cases, tmp_path, capsys):
    from inspect_ai.log import read_eval_log, write_eval_log

    data, cases, dead = four_cases
    # The judge dies on 2 of the 4 cases: Inspect's log says error (the failure policy), 60 of 120 failed.
    dead.update(c["user_request"] for c in cases[2:])
    failed = inspect_run(tmp_path / "dead", data)
    dead.clear()
    assert failed.status == "error" and len(failed.samples) == N_CASES
    base = inspect_run(tmp_path / "base", data)
    again = inspect_run(tmp_path / "again", data)
    limited = inspect_run(tmp_path / "limit", data, limit=2)
    assert base.status == again.status == limited.status == "success"

    junit = tmp_path / "gate.xml"
    code, out = compare(capsys, base.location, failed.location, "--fail-if-worse", "cacs@10:0.01", "--junit", junit)
    assert code == 1
    # Inspect wrote no metrics into the header of a run its failure policy stopped: the gate says so
    # (not as an edited file).
    problems = refusals(out, "candidate", failed.location)
    assert [p.split(" (")[0] for p in problems] == [judgments_failed(60, 120), "the header holds no numbers"]
    assert problems[0].endswith("; ask the judge again for them (inspect score LOG --overwrite --action overwrite / the "
                                "lm_eval command again)")
    assert out.splitlines()[0] == f"ok   baseline {base.location}" and out.splitlines()[-1] == f"RESULT: {REFUSED}"
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("2", "1", "0")
    errors = [(c.get("name"), c.find("error").get("type")) for c in suite.iter("testcase") if c.find("error") is not None]
    assert errors == [("candidate run fit to compare", "refused")]
    # On either side, and in JSON.
    code, out = compare(capsys, failed.location, base.location, "--json")
    report = json.loads(out)
    assert code == 1 and report["passed"] is False and list(report["refused"]) == ["baseline"]
    assert report["refused"]["baseline"][0].startswith(judgments_failed(60, 120))

    # A looser failure bar does not make its header whole.
    code, out = compare(capsys, base.location, failed.location, "--judge-failure-threshold", "0.5")
    assert code == 1 and [p.split(" (")[0] for p in refusals(out, "candidate", failed.location)] == [
        "the header holds no numbers"]
    assert out.splitlines()[-1] == f"RESULT: {REFUSED}; EXCEPTIONS: --judge-failure-threshold 0.5"

    # --limit 2 against the whole run: refused before the data check.
    code, out = compare(capsys, base.location, limited.location, "--allow-different-data")
    assert code == 1 and refusals(out, "candidate", limited.location) == [LIMIT]
    assert out.splitlines()[-1] == f"RESULT: {REFUSED}; EXCEPTIONS: --allow-different-data"

    # An edited header (its numbers are not its records').
    edited = read_eval_log(again.location)
    true_value = edited.results.scores[0].metrics["cacs@10"].value
    edited.results.scores[0].metrics["cacs@10"].value = 0.9
    write_eval_log(edited, again.location)
    code, out = compare(capsys, base.location, again.location)
    assert code == 1 and refusals(out, "candidate", again.location) == [
        f"the header's numbers are not those of its records (cacs@10 0.9 vs {true_value:.6g}): the file was edited or is "
        "torn; use the run's own output"]

    # Two complete runs: compared as before.
    edited.results.scores[0].metrics["cacs@10"].value = true_value
    write_eval_log(edited, again.location)
    code, out = compare(capsys, base.location, again.location, "--json", "--fail-if-worse", "cacs@10:0.01")
    report = json.loads(out)
    assert code == 0 and report["passed"] and report["paired_cases"] == N_CASES and report["exceptions"] == []
    assert report["metrics"]["cacs@10"]["baseline"] == report["metrics"]["cacs@10"]["candidate"] == pytest.approx(true_value)
    assert all(m["difference"] == 0 for m in report["metrics"].values())


@pytest.mark.slow
def test_lmeval_runs_a_dead_judge_a_limit_and_an_edited_header_are_refused(fake_server, four_cases, tmp_path, capsys, monkeypatch):
    from clinconsensus_tasks.clinconsensus.logs import read_case_records

    data, cases, dead = four_cases
    # lm-eval writes no output when the failure policy stops it: the run's own setting lets it
    # finish (0 = never stop), as a user following its advice does; the gate still refuses it.
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0")
    dead.update(c["user_request"] for c in cases[2:])
    failed, _ = lmeval_run(fake_server.base_url, tmp_path / "dead")
    dead.clear()
    monkeypatch.delenv(ENV_FAILURE_THRESHOLD)
    base, _ = lmeval_run(fake_server.base_url, tmp_path / "base")
    again, again_results = lmeval_run(fake_server.base_url, tmp_path / "again")
    limited, _ = lmeval_run(fake_server.base_url, tmp_path / "limit", limit=2)

    junit = tmp_path / "gate.xml"
    code, out = compare(capsys, tmp_path / "base", tmp_path / "dead", "--fail-if-worse", "cacs@10:0.01", "--junit", junit)
    assert code == 1
    assert [p.split(" (")[0] for p in refusals(out, "candidate", failed)] == [judgments_failed(60, 120)]
    assert out.splitlines()[0] == f"ok   baseline {base}" and out.splitlines()[-1] == f"RESULT: {REFUSED}"
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("2", "1", "0")

    # A looser bar is the command's flag, printed on the RESULT line; the runs are then compared:
    # the two dead cases' 60 failed judgments count as not met.
    code, out = compare(capsys, base, failed, "--json", "--fail-if-worse", "cacs@10:0.01", "--judge-failure-threshold", "0.5")
    report = json.loads(out)
    assert code == 0 and report["exceptions"] == ["--judge-failure-threshold 0.5"]
    met = {r.graded.case_id: r.graded.met for r in read_case_records(base)}
    accuracy = report["metrics"]["rubric_accuracy"]
    assert accuracy["baseline"] == pytest.approx(sum(met.values()) / 120)
    assert accuracy["candidate"] == pytest.approx(sum(met[c["case_id"]] for c in cases[:2]) / 120)
    code, out = compare(capsys, base, failed, "--fail-if-worse", "cacs@10:0.01", "--judge-failure-threshold", "0.5")
    assert code == 0 and out.splitlines()[-1] == "RESULT: pass; EXCEPTIONS: --judge-failure-threshold 0.5"

    code, out = compare(capsys, base, limited)
    assert code == 1 and refusals(out, "candidate", limited) == [LIMIT]

    body = json.loads(again_results.read_text(encoding="utf-8"))
    true_value = body["results"]["clinconsensus"]["cacs@10,judge"]
    body["results"]["clinconsensus"]["cacs@10,judge"] = 0.9
    again_results.write_text(json.dumps(body), encoding="utf-8")
    code, out = compare(capsys, base, again)
    assert code == 1 and refusals(out, "candidate", again) == [
        f"the header's numbers are not those of its records (cacs@10 0.9 vs {true_value:.6g}): the file was edited or is "
        "torn; use the run's own output"]

    # A samples file without its results file: a run that did not finish.
    alone = tmp_path / "alone" / base.name
    alone.parent.mkdir()
    alone.write_bytes(base.read_bytes())
    code, out = compare(capsys, alone, base)
    assert code == 1 and refusals(out, "baseline", alone) == [
        f"no lm-eval results file beside {alone.name}: the run did not finish; {FINISH}"]

    # Two complete runs: compared as before.
    body["results"]["clinconsensus"]["cacs@10,judge"] = true_value
    again_results.write_text(json.dumps(body), encoding="utf-8")
    code, out = compare(capsys, base, again, "--json", "--fail-if-worse", "cacs@10:0.01")
    report = json.loads(out)
    assert code == 0 and report["passed"] and report["paired_cases"] == N_CASES
    assert report["metrics"]["cacs@10"]["baseline"] == report["metrics"]["cacs@10"]["candidate"] == pytest.approx(true_value)
    assert all(m["difference"] == 0 for m in report["metrics"].values())
