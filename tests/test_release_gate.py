"""The release gate passes only a release run, in both frameworks (issue 26, items 2, 3 and 7).

Every run here is a real run of the framework against the stand-in server on 127.0.0.1, and the
gate is the command a release checklist types (``clinconsensus-eval summarize --strict``), run as
a subprocess with the environment the runs had, loosening variables included. What stands in for
what:

* ``release_data``: a copy of the 12 bundled cases under new ids, standing in for the public file
  (the gate is given its sha256, as a user names a copy of the public file); the bundled sample
  itself is always refused.
* the official prompt: the template of ``test_judge_prompt`` served as a ``file://`` mirror with
  its sha256 pinned in the process (the real one cannot be downloaded here).
* ``release-judge``: a scripted judge on the stand-in, listed by its ``/v1/models`` as a real
  hosted judge would be; the stand-in's own judges name themselves and are refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from clinconsensus_tasks.clinconsensus.dataset import sample_path
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ENV_FAILURE_THRESHOLD
from clinconsensus_tasks.scorers.clinconsensus.metric_table import TASK_VERSION
from frameworks import run_lmeval

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
N_CASES = 12


def verdict(request) -> str:
    """A judge with a mind of its own: met for about two criteria in three, fixed by the request."""
    met = zlib.crc32(request.user.encode("utf-8")) % 3 != 0
    return json.dumps({"explanation": "依据回答内容判断。", "criteria_met": met}, ensure_ascii=False)


@pytest.fixture
def release(fake_server, tmp_path, monkeypatch):
    """A release set-up: data standing in for the public file, the official prompt, a real judge."""
    from clinconsensus.test_judge_prompt import SCRIPT

    from clinconsensus_tasks.judge import official_template

    lines = sample_path().read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines if line.strip()]
    for case in cases:
        case["case_id"] = case["case_id"].replace("SYN", "REL")
    data = tmp_path / "clinconsensus_low.jsonl"
    data.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    script = tmp_path / "run_local_judge.py"
    script.write_text(SCRIPT, encoding="utf-8")
    monkeypatch.setattr(official_template, "OFFICIAL_SHA256", hashlib.sha256(script.read_bytes()).hexdigest())
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT_URL", script.as_uri())
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "official")
    monkeypatch.setenv("CLINCONSENSUS_DATA", str(data))
    fake_server.script("release-judge", verdict)
    fake_server.script("dead-judge", lambda request: (500, "internal error"))
    return data, hashlib.sha256(data.read_bytes()).hexdigest()


def inspect_run(log_dir: Path, data: Path, judge: str | None = "release-judge", candidate: str = "cand-model", **args):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    limit = args.pop("limit", None)
    roles = {"grader": judge if "/" in (judge or "") else f"openai-api/judge/{judge}"} if judge else {}
    return inspect_eval(clinconsensus(data=str(data), **args), model=f"openai-api/cand/{candidate}", model_roles=roles,
                        log_dir=str(log_dir), display="none", max_retries=1, limit=limit)[0]


def lmeval_run(fake_server, out: Path, judge: str = "release-judge", candidate: str = "cand-model", limit: int | None = None):
    """lm-eval's run with results and samples files written as ``--output_path out --log_samples``."""
    if limit is None:
        run_lmeval(fake_server.base_url, out, judge=judge, candidate=candidate)
    else:
        from lm_eval.loggers import EvaluationTracker

        from clinconsensus_tasks.lmeval_glue import simple_evaluate

        os.environ["CLINCONSENSUS_JUDGE_MODEL"] = judge
        tracker = EvaluationTracker(output_path=str(out))
        results = simple_evaluate(model="local-chat-completions", limit=limit, log_samples=True, bootstrap_iters=0,
                                  model_args={"model": candidate, "base_url": f"{fake_server.base_url}/chat/completions",
                                              "num_concurrent": 4}, apply_chat_template=True, evaluation_tracker=tracker)
        tracker.save_results_aggregated(results=results, samples=results["samples"])
        tracker.save_results_samples(task_name="clinconsensus", samples=results["samples"]["clinconsensus"])
    return next(out.rglob("samples_clinconsensus_*.jsonl")), next(out.rglob("results_*.json"))


def gate(*paths, flags=(), env=None) -> subprocess.CompletedProcess:
    """The gate as a user types it, in the environment of the runs (their loosening variables too)."""
    return subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", "--strict", *map(str, paths), *flags],
                          capture_output=True, text=True, env=env or dict(os.environ), timeout=300)


def headline_line(path) -> str:
    """The numbers a passing run's line shows, made here from its records: each headline metric with
    the report's interval (the one case bootstrap, 1000 resamples, seed 0)."""
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.scorers.agreement import mean_intervals
    from clinconsensus_tasks.scorers.clinconsensus.cacs import case_term_rows

    names = ["cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy"]
    rows = case_term_rows([r.graded.result() for r in read_case_records(path)], (10, 7), 30)
    shown = [f"{name} {i.estimate:.3f} [{i.low:.3f}, {i.high:.3f}]"
             for name, i in zip(names, mean_intervals([[row[n] for n in names] for row in rows], 1000, 0))]
    return ", ".join(shown) + f" ({len(rows)} cases; 95% intervals: case bootstrap, 1000 resamples)"


def fails(out: subprocess.CompletedProcess, path) -> list[str]:
    assert out.returncode == 1, out.stdout + out.stderr
    return [line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith(f"FAIL {path}: ")]


def test_a_release_run_passes_in_both_frameworks_and_nothing_in_its_environment_loosens_the_gate(fake_server, release, tmp_path, monkeypatch):
    data, sha = release
    log = inspect_run(tmp_path / "logs", data)
    samples, _ = lmeval_run(fake_server, tmp_path / "lm")
    flags = ("--data-sha256", sha)
    out = gate(log.location, samples, flags=flags)
    accepted = f"release profile, data sha256 {sha[:12]}... (--data-sha256)"
    assert out.returncode == 0, out.stdout + out.stderr
    # each run passed, with the headline numbers it passed under its line (issue 58, item 8b)
    assert out.stdout.splitlines() == [f"ok   {samples}: {accepted}", f"     {samples}: {headline_line(samples)}",
                                       f"ok   {log.location}: {accepted}", f"     {log.location}: {headline_line(log.location)}"]
    # --json: the same facts as strict JSON, the same exit code (item 8a)
    as_json = gate(log.location, samples, flags=(*flags, "--json"))
    assert as_json.returncode == 0 and as_json.stderr.splitlines() == [f"2 of 2 run(s) pass the {accepted}"]
    found = json.loads(as_json.stdout)
    assert (found["profile"], found["exceptions"], found["passed"], found["superseded"]) == (accepted, [], True, [])
    assert [(r["run"], r["verdict"], r["problems"]) for r in found["runs"]] == [(str(samples), "ok", []), (log.location, "ok", [])]
    for run in found["runs"]:
        assert ", ".join(f"{name} {f['estimate']:.3f} [{f['low']:.3f}, {f['high']:.3f}]" for name, f in run["headline"].items()) \
            == headline_line(run["run"]).split(" (")[0]
        assert {f["cases"] for f in run["headline"].values()} == {N_CASES}
    # Without the file named, the copy is not the hub data at the pinned revision.
    refusal = [f"data {data} is not the public dataset from the hub: run with the hub data (Inspect -T data=hub), or name this "
               f"file's sha256 if it is a copy of the public file (--data-sha256 {sha})"]
    assert fails(gate(log.location), log.location) == refusal
    refused = gate(log.location, flags=("--json",))
    assert refused.returncode == 1 and json.loads(refused.stdout)["runs"] == [
        {"run": log.location, "framework": "inspect", "benchmark": "clinconsensus", "verdict": "FAIL", "problems": refusal,
         "headline": None, "physicians": None, "reliability": None}]

    # Item 2: the run's own advice (raise the threshold, 0 = never stop) lets a dead judge's run
    # finish as a success; the gate, run in the same shell, still refuses it, in both frameworks.
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0")
    dead = inspect_run(tmp_path / "dead", data, judge="dead-judge")
    dead_samples, _ = lmeval_run(fake_server, tmp_path / "lm-dead", judge="dead-judge")
    assert dead.status == "success"
    out = gate(dead.location, dead_samples, flags=flags)
    for path in (dead.location, dead_samples):
        assert [p.split(" (")[0] for p in fails(out, path)] == [f"{30 * N_CASES} of {30 * N_CASES} judgments failed, above the 1.0% allowed"]
    # A looser bar is a flag of the gate, printed on the verdict line; no flag turns it off.
    loose = gate(log.location, flags=(*flags, "--judge-failure-threshold", "0.05"))
    assert loose.returncode == 0 and loose.stdout.splitlines()[0].endswith("EXCEPTIONS: --judge-failure-threshold 0.05")
    loose = gate(log.location, flags=(*flags, "--judge-failure-threshold", "0.05", "--json"))
    assert loose.returncode == 0 and json.loads(loose.stdout)["exceptions"] == ["--judge-failure-threshold 0.05"]
    for never in ("1", "100%"):
        refused = gate(dead.location, flags=(*flags, "--judge-failure-threshold", never))
        assert refused.returncode == 2 and "the gate has no 'never'" in refused.stderr
    assert fails(gate(dead.location, flags=(*flags, "--judge-failure-threshold", "0")), dead.location)


def test_the_official_script_given_as_a_path_offline_is_the_official_prompt_in_both_frameworks(fake_server, release, tmp_path, monkeypatch, capfd):
    # Issue 58 item 3. No network (the download URL leads nowhere): the docs and the error say to
    # pass the downloaded run_local_judge.py as a path. A template is official by its content.
    from loopback_server import closed_port_url

    data, sha = release
    script = tmp_path / "run_local_judge.py"  # the release fixture's copy of the official script
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT_URL", closed_port_url())
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", str(script))
    log = inspect_run(tmp_path / "logs", data, judge_prompt=str(script))
    samples, _ = lmeval_run(fake_server, tmp_path / "lm")
    for recorded in (log.samples[0].scores["rubric_scorer"].metadata,
                     json.loads(json.loads(samples.read_text(encoding="utf-8").splitlines()[0])["filtered_resps"][0])):
        assert recorded["judge_prompt"] == "official" and recorded["judge_prompt_source"] == str(script)
    out = gate(log.location, samples, flags=("--data-sha256", sha))
    assert out.returncode == 0, out.stdout + out.stderr
    # Kept as a download is: `official` now works offline, with no path.
    assert (Path(os.environ["CLINCONSENSUS_CACHE_DIR"]) / "judge_prompts" / f"run_local_judge-{hashlib.sha256(script.read_bytes()).hexdigest()}.py").is_file()

    # An altered copy under the same name is a template of its own: said when loaded and by the gate.
    altered = tmp_path / "altered" / "run_local_judge.py"
    altered.parent.mkdir()
    altered.write_text(script.read_text(encoding="utf-8").replace("Grading item", "Grading  item"), encoding="utf-8")
    capfd.readouterr()
    other = inspect_run(tmp_path / "other", data, judge_prompt=str(altered))
    assert f"WARNING: {altered} has sha256 {hashlib.sha256(altered.read_bytes()).hexdigest()}, not the pinned official file's" in capfd.readouterr().err
    pinned = "a559d9051f96fc24aa1441ff03338dd83e32cd13d1071ce80b91bacf7048b1ce"  # the gate's process: the package's own pin
    assert fails(gate(other.location, flags=("--data-sha256", sha)), other.location) == [
        f"judge prompt {altered} is not the official prompt (run_local_judge.py files are official by their sha256, "
        f"{pinned}: this one's content differs; download it again and check it): run with judge_prompt=official "
        f"(the default), or accept it with --allow-prompt {altered}"]


def test_a_smoke_test_left_beside_the_release_run_is_named_with_the_fix_in_both_frameworks(fake_server, release, tmp_path):
    # Issue 58 item 5: the quick start's --limit 1 run written where the release run goes.
    data, sha = release
    smoke = inspect_run(tmp_path / "logs", data, limit=1)
    full = inspect_run(tmp_path / "logs", data)
    lm_smoke, _ = lmeval_run(fake_server, tmp_path / "results" / "smoke", limit=1)
    lm_full, _ = lmeval_run(fake_server, tmp_path / "results" / "full")
    out = gate(tmp_path / "logs", tmp_path / "results", flags=("--data-sha256", sha))
    fix = ("keep smoke tests in a folder of their own (inspect eval --log-dir logs-smoke, lm_eval --output_path "
           "results-smoke), move this run there and gate the release folder again")
    assert fails(out, smoke.location) == [
        "a part of the data (--limit 1): run every case, without --limit",
        f"a smoke test beside the release run: cand-model ran part of clinconsensus here (--limit 1) and "
        f"all of it in {full.location}; {fix}"]
    assert fails(out, lm_smoke) == [
        "a part of the data (--limit 1): run every case, without --limit",
        f"a smoke test beside the release run: cand-model ran part of clinconsensus here (--limit 1) and all of it in "
        f"{lm_full}; {fix}"]
    assert f"ok   {full.location}: " in out.stdout and f"ok   {lm_full}: " in out.stdout
    # Alone, a partial run is just that: no smoke-test line.
    assert fails(gate(smoke.location, flags=("--data-sha256", sha)), smoke.location) == [
        "a part of the data (--limit 1): run every case, without --limit"]


def test_self_graded_runs_are_refused_in_both_frameworks(fake_server, release, tmp_path, monkeypatch):
    # The model under test (the stand-in's cand-model) writes no verdicts as a judge: the failure
    # policy is off so that the runs finish and the gate's reading of who judged is what is tested.
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0")
    data, sha = release
    allowed = inspect_run(tmp_path / "a", data, judge=None, allow_self_grading=True)
    bound = inspect_run(tmp_path / "b", data, judge="openai-api/cand/cand-model")
    samples, _ = lmeval_run(fake_server, tmp_path / "lm", judge="cand-model")
    out = gate(allowed.location, bound.location, samples, flags=("--data-sha256", sha))
    refusal = ("self-graded: the model under test ({}) is its own judge; bind another model to the grader role "
               "(--model-role grader=..., CLINCONSENSUS_JUDGE_MODEL)")
    assert refusal.format("openai-api/cand/cand-model") in fails(out, allowed.location)
    assert refusal.format("openai-api/cand/cand-model") in fails(out, bound.location)
    assert refusal.format("cand-model") in fails(out, samples)


def test_a_run_rescored_by_another_judge_is_refused(fake_server, release, tmp_path):
    # `inspect score LOG --model-role grader=<the model under test>` turned 360 failed judgments
    # into 1.0 while the header still named the old grader.
    from inspect_ai import score
    from inspect_ai.log import write_eval_log

    from clinconsensus_tasks.clinconsensus.inspect_task import rubric_scorer

    data, sha = release
    dead = inspect_run(tmp_path / "dead", data, judge="dead-judge")
    rescored = score(dead, rubric_scorer(judge_prompt="official"), model_roles={"grader": "openai-api/judge/release-judge"},
                     action="overwrite")
    write_eval_log(rescored, dead.location)
    problems = fails(gate(dead.location, flags=("--data-sha256", sha)), dead.location)
    assert problems == ["judged by openai-api/judge/release-judge, but the run names openai-api/judge/dead-judge: a "
                        "re-scoring by another judge is another run; re-run with that judge bound from the start"]


def test_partial_edited_and_unofficial_runs_are_refused_in_both_frameworks(fake_server, release, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    from clinconsensus.test_judge_prompt import TEMPLATE

    data, sha = release
    flags = ("--data-sha256", sha)
    # --limit 5
    log = inspect_run(tmp_path / "limit", data, limit=5)
    samples, _ = lmeval_run(fake_server, tmp_path / "lm-limit", limit=5)
    out = gate(log.location, samples, flags=flags)
    assert fails(out, log.location) == ["a part of the data (--limit 5): run every case, without --limit"]
    assert fails(out, samples) == ["a part of the data (--limit 5): run every case, without --limit"]
    # Every answer empty.
    log = inspect_run(tmp_path / "empty", data, candidate="cand-empty")
    samples, results = lmeval_run(fake_server, tmp_path / "lm-empty", candidate="cand-empty")
    empty = (f"{N_CASES} of {N_CASES} answers are empty, above the 1.0% allowed: check the model's output (generation "
             "limit, thinking removal) and run again")
    out = gate(log.location, samples, flags=flags)
    assert fails(out, log.location) == [empty] and fails(out, samples) == [empty]
    # A template of the user's calling every item met: named as what it is, refused unless accepted.
    custom = tmp_path / "lenient.txt"
    custom.write_text(TEMPLATE, encoding="utf-8")
    log = inspect_run(tmp_path / "custom", data, judge_prompt=str(custom))
    os.environ["CLINCONSENSUS_JUDGE_PROMPT"] = str(custom)
    custom_samples, custom_results = lmeval_run(fake_server, tmp_path / "lm-custom")
    out = gate(log.location, custom_samples, flags=flags)
    for path in (log.location, custom_samples):
        assert fails(out, path) == [f"judge prompt {custom} is not the official prompt: run with judge_prompt=official "
                                    f"(the default), or accept it with --allow-prompt {custom}"]
    accepted = gate(log.location, flags=(*flags, "--allow-prompt", str(custom)))
    assert accepted.returncode == 0 and accepted.stdout.splitlines()[0].endswith(f"EXCEPTIONS: --allow-prompt {custom}")
    # Header numbers edited (the samples say otherwise), and an older task version.
    edited = read_eval_log(log.location)
    edited.results.scores[0].metrics["cacs@10"].value = 0.9
    edited.eval.task_version = "1.2"
    write_eval_log(edited, log.location)
    body = json.loads(custom_results.read_text(encoding="utf-8"))
    body["results"]["clinconsensus"]["cacs@10,judge"] = 0.9
    body["versions"]["clinconsensus"] = 1.2
    custom_results.write_text(json.dumps(body), encoding="utf-8")
    out = gate(log.location, custom_samples, flags=(*flags, "--allow-prompt", str(custom)))
    for path in (log.location, custom_samples):
        problems = fails(out, path)
        assert problems[0] == (f"task version 1.2 is not this package's {TASK_VERSION}: re-run (or re-score) with the "
                               "installed clinconsensus-tasks")
        assert problems[1].startswith("the header's numbers are not those of its records (cacs@10 0.9 vs ") and len(problems) == 2
    # An lm-eval run with only its results file: not skipped, refused.
    samples.unlink()
    assert fails(gate(results, flags=flags), results) == [
        f"no samples file for clinconsensus beside {results.name}: nothing to check the numbers against; run lm_eval "
        "with --log_samples; finish it: run the same lm_eval command again, with --use_cache PREFIX if its error named one "
        "(the answers it kept; verdicts come from the verdict cache)"]


def test_the_demo_is_not_a_release_run_and_the_gate_says_why_in_one_line_each(fake_server, tmp_path):
    from clinconsensus_tasks.commands.demo import run_demo

    run_demo(tmp_path / "demo")
    out = gate(tmp_path / "demo" / "inspect-logs", tmp_path / "demo" / "lmeval-output")
    log = next((tmp_path / "demo" / "inspect-logs").glob("*clinconsensus*.eval"))
    problems = fails(out, log)
    assert problems == [
        "the bundled synthetic sample, not the benchmark: run on the 900 public cases (Inspect -T data=hub, lm-eval CLINCONSENSUS_DATA=hub)",
        "judged by the project's stand-in server (demo-judge), not a real judge: bind a real judge model",
        "judge prompt project is not the official prompt: run with judge_prompt=official (the default), or accept it with --allow-prompt project",
    ]
    samples = next((tmp_path / "demo" / "lmeval-output").rglob("samples_clinconsensus_*.jsonl"))
    assert fails(out, samples) == problems
    climedbench = next((tmp_path / "demo" / "inspect-logs").glob("*climedbench*.eval"))
    assert fails(out, climedbench)[0].startswith("the bundled synthetic sample, not CliMedBench")


def test_a_climedbench_run_with_unparseable_answers_is_refused_in_both_frameworks(fake_server, tmp_path, monkeypatch):
    # A copy of the bundled items under new ids stands in for the user's CliMedBench data; the
    # scripted model answers without a letter, as a model ignoring the answer format does.
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.dataset import sample_dir
    from clinconsensus_tasks.climedbench.inspect_task import climedbench
    from frameworks import run_lmeval_tasks

    folder = tmp_path / "cmb"
    folder.mkdir()
    for code in ("BKT", "ID1"):
        rows = [json.loads(line) for line in (sample_dir() / f"{code}.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        for row in rows:
            row["id"] = f"USER-{row['id']}"
        (folder / f"{code}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    fake_server.script("cand-rambling", lambda request: "这个问题需要结合临床具体分析，不能一概而论。")
    log = inspect_eval(climedbench(data_dir=str(folder), scenarios="BKT,ID1"), model="openai-api/cand/cand-rambling",
                       log_dir=str(tmp_path / "logs"), display="none")[0]
    monkeypatch.setenv("CLIMEDBENCH_DATA_DIR", str(folder))
    from lm_eval.loggers import EvaluationTracker

    results = run_lmeval_tasks(fake_server.base_url, ["climedbench_bkt", "climedbench_id1"], model="cand-rambling")
    tracker = EvaluationTracker(output_path=str(tmp_path / "lm"))
    tracker.save_results_aggregated(results=results, samples=results["samples"])
    for name in results["configs"]:
        tracker.save_results_samples(task_name=name, samples=results["samples"][name])
    results_file = next((tmp_path / "lm").rglob("results_*.json"))
    out = gate(log.location, results_file)
    refusal = ("20 of 20 answers unparseable, above the 1.0% allowed: check the model's answer format (the prompt's last "
               "line asks for it) before publishing")
    missing = ("scenarios not run: ID2, ID3, ID4, FIT, FTT, WTD, DS, MC, SSO, CPR, KE, CS: run all 14 (Inspect without "
               "-T scenarios, lm-eval --tasks climedbench; WTD needs a similarity model)")
    assert fails(out, log.location) == [missing, refusal]
    assert fails(out, results_file) == [missing, refusal]
