"""The judge failure policy judges the whole run once, the same way in Inspect and lm-eval; a judge
failure never costs a model answer; a wrong judge URL fails in seconds; the release gate (issue 18,
items 4-7).

Every test talks to the real HTTP stand-in on 127.0.0.1 (``fake_server``). Scripted judges
(``fake_server.script``) stand in for judges that garble a verdict, answer HTTP 500, or die in the
middle of a run; ``cand-*`` model names stand in for the model under test.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ENV_FAILURE_THRESHOLD, JudgeFailureError

pytestmark = pytest.mark.slow

CASES = load_cases("sample").cases[:4]  # --limit 4: 120 judgments
VERDICT_MET = json.dumps({"explanation": "回答满足该标准。", "criteria_met": True}, ensure_ascii=False)
BIN = Path(sys.executable).parent


def garbling(criteria: list[str]):
    """A judge that says "met" to everything, but answers the given criteria with prose only."""
    def reply(req) -> str:
        return "我认为这条标准大致满足。" if any(c in req.user for c in criteria) else VERDICT_MET
    return reply


def failing_cases(cases, status: int = 500):
    """A judge answering ``status`` for every criterion of the given cases, "met" otherwise."""
    questions = [c.question for c in cases]

    def reply(req):
        return (status, "internal error") if any(q in req.user for q in questions) else VERDICT_MET
    return reply


def inspect_run(log_dir: Path, judge: str, candidate: str = "cand-model", **eval_args):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    task_args = eval_args.pop("task_args", {})
    eval_args.setdefault("limit", 4)
    return inspect_eval(clinconsensus(data="sample", **task_args), model=f"openai-api/cand/{candidate}",
                        model_roles={"grader": f"openai-api/judge/{judge}"}, log_dir=str(log_dir),
                        max_retries=1, **{"display": "none", **eval_args})[0]


def lmeval_run(base_url: str, judge: str, output_path: Path | None = None):
    from lm_eval.loggers import EvaluationTracker

    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = judge
    tracker = EvaluationTracker(output_path=str(output_path)) if output_path else None
    results = simple_evaluate(model="local-chat-completions", limit=4, log_samples=True, bootstrap_iters=0,
                              model_args={"model": "cand-model", "base_url": f"{base_url}/chat/completions", "num_concurrent": 4},
                              apply_chat_template=True, evaluation_tracker=tracker)
    if tracker is not None:
        tracker.save_results_aggregated(results=results, samples=results["samples"])
        tracker.save_results_samples(task_name="clinconsensus", samples=results["samples"]["clinconsensus"])
    return results


def metric(log, name: str) -> float:
    return next(m.value for s in log.results.scores for k, m in s.metrics.items() if k == name)


def gate(*paths, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", "--strict", *map(str, paths)],
                          capture_output=True, text=True, env=env, timeout=120)


# These runs are on the bundled sample with the project's prompt (and --limit): never a release
# run, nor is the stand-in a real judge (tests/test_release_gate.py). What is tested here is the gate's reading of their judgments.
NOT_RELEASE = ("the bundled synthetic sample", "a part of the data", "judge prompt project", "judged by the project's stand-in")


def judging_problems(out: subprocess.CompletedProcess, path) -> list[str]:
    """The gate's refusals of the run in ``path`` other than those of every sample run."""
    lines = [line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith(f"FAIL {path}: ")]
    return [line for line in lines if not line.startswith(NOT_RELEASE)]


# -- item 4: the whole run, once -------------------------------------------------------------------


def test_one_failed_judgment_in_120_is_a_success_in_both_frameworks_and_two_are_not(fake_server, tmp_path):
    first, second = CASES[0].rubrics[0][1], CASES[2].rubrics[5][1]
    fake_server.script("judge-one-bad", garbling([first]))
    # display="plain": Inspect computes metrics on the samples finished so far for its live display
    # (it skips that with display="none"), where 1 failure in 30, 60 or 90 judgments is above 1%.
    log = inspect_run(tmp_path / "one", "judge-one-bad", display="plain")
    assert log.status == "success", log.error  # 1 of 120 = 0.83%: under the 1% threshold
    assert metric(log, "judge_failures") == 1.0 and len(log.samples) == 4
    assert log.results.early_stopping.metadata == {"planned_judgments": 120, "judged": 120, "failed_judgments": 1,
                                                   "unjudged": 0, "threshold": 0.01}
    results = lmeval_run(fake_server.base_url, "judge-one-bad")
    assert results["results"]["clinconsensus"]["judge_failures,judge"] == 1.0

    fake_server.script("judge-two-bad", garbling([first, second]))
    log = inspect_run(tmp_path / "two", "judge-two-bad")
    assert log.status == "error" and len(log.samples) == 4  # every answer kept
    assert log.error.message.startswith('JudgeFailureError("2 of 120 judge verdicts failed (1.7%, above the 1.0%')
    with pytest.raises(JudgeFailureError, match=r"^2 of 120 judge verdicts failed \(1\.7%, above the 1\.0%"):
        lmeval_run(fake_server.base_url, "judge-two-bad")


# -- item 5: judgments of failed cases are failed judgments ----------------------------------------


def test_a_judge_failing_two_of_four_cases_is_not_a_success_whatever_fail_on_error_says(fake_server, tmp_path):
    fake_server.script("judge-half", failing_cases(CASES[:2]))
    for flags in ({"fail_on_error": 0.8}, {"fail_on_error": False}):
        log = inspect_run(tmp_path / str(flags["fail_on_error"]), "judge-half", **flags)
        assert log.status == "error" and len(log.samples) == 4 and not any(s.error for s in log.samples)
        failed = int(re.match(r"JudgeFailureError\(\"(\d+) of 120 judge verdicts failed", log.error.message).group(1))
        assert failed >= 60  # both cases' 60, and any the breaker then failed unsent
    with pytest.raises(JudgeFailureError, match=r"^(\d+) of 120 judge verdicts failed"):
        lmeval_run(fake_server.base_url, "judge-half")


def test_cases_that_errored_count_their_planned_judgments_as_failed(fake_server, tmp_path, monkeypatch):
    # The model under test answers 500 for 2 of the 4 cases: with --fail-on-error 0.8 Inspect
    # leaves those samples out and would report a success over half the run.
    questions = [c.question for c in CASES[:2]]
    fake_server.script("cand-half", lambda req: (500, "down") if any(q in req.user for q in questions) else "建议及时就医。")
    log = inspect_run(tmp_path / "logs", "judge-model", candidate="cand-half", fail_on_error=0.8)
    assert log.status == "error"
    assert log.error.message.startswith('JudgeFailureError("60 of 120 judge verdicts failed (50.0%')
    assert "not judged (the case errored before its verdicts) x60" in log.error.message
    # With no limit, the run is a success, and the log still says 60 judgments were not made.
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0")
    log = inspect_run(tmp_path / "accepted", "judge-model", candidate="cand-half", fail_on_error=0.8)
    assert log.status == "success"
    assert log.results.early_stopping.metadata["failed_judgments"] == 60
    failed = gate(log.location, env={k: v for k, v in os.environ.items() if k != ENV_FAILURE_THRESHOLD})
    assert failed.returncode == 1 and "2 sample(s) errored" in failed.stdout and "60 of 120 judgments failed" in failed.stdout


# -- item 6: a dead judge costs no answer; `inspect score` finishes the run -------------------------


def test_a_run_whose_judge_died_is_finished_by_inspect_score_with_no_model_call(fake_server, tmp_path):
    # The judge gives 30 verdicts, then dies: HTTP 500 for every request after.
    answered = itertools.count()
    fake_server.script("judge-dies", lambda req: VERDICT_MET if next(answered) < 30 else (500, "judge crashed"))
    log = inspect_run(tmp_path / "logs", "judge-dies", limit=2)
    assert log.status == "error" and len(log.samples) == 2 and all(s.output.completion for s in log.samples)
    judgments = [j for s in log.samples for j in s.scores["rubric_scorer"].metadata["judgments"]]
    failed = sum(j["met"] is None for j in judgments)  # recorded as failed judgments, the samples not errored
    assert len(judgments) == 60 and failed == 30
    # After 20 transport failures in a row, nothing more was sent: only the calls then in flight
    # (the judge's 10 connections) were, two attempts each (--max-retries 1).
    assert {j["error_kind"] for j in judgments if j["met"] is None} == {"transport", "judge_unavailable"}
    assert fake_server.stats()["statuses"]["500"] <= 2 * (20 + 10)
    assert "inspect score LOG_FILE --overwrite" in log.error.message
    before = gate(log.location)
    assert before.returncode == 1 and f"{failed} of 60 judgments failed" in before.stdout

    fake_server.script("judge-dies", lambda req: VERDICT_MET)  # the judge is back
    calls_before = dict(fake_server.stats()["calls"])
    done = subprocess.run([str(BIN / "inspect"), "score", log.location, "--overwrite", "--action", "overwrite"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    calls = fake_server.stats()["calls"]
    assert calls.get("cand-model", 0) == calls_before.get("cand-model", 0)  # 0 model calls: only the judge was asked
    assert calls["judge-dies"] - calls_before["judge-dies"] == failed  # the verdicts obtained came from the cache

    from inspect_ai.log import read_eval_log

    rescored = read_eval_log(log.location)
    assert metric(rescored, "judge_failures") == 0.0 and metric(rescored, "rubric_accuracy") == 1.0
    assert rescored.eval.scorers[0].options == log.eval.scorers[0].options  # the logged scorer options were used
    after = gate(log.location)
    assert judging_problems(after, log.location) == [], after.stdout


# -- item 7: a wrong judge URL fails in seconds; the release gate ----------------------------------


def test_a_wrong_judge_url_fails_in_seconds_with_one_readable_line(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    started = time.monotonic()
    log = inspect_run(tmp_path / "logs", "judge-model", limit=2)
    elapsed = time.monotonic() - started
    assert log.status == "error" and elapsed < 20, elapsed
    message = log.error.message
    assert "\n" not in message and "did not answer a test request (APIConnectionError: Connection error.)" in message
    assert "http://127.0.0.1:9/v1" in message
    assert fake_server.stats()["calls"].get("cand-model", 0) == 0  # nothing generated


def test_inspect_cli_with_a_wrong_judge_url_prints_one_message_and_generates_nothing(fake_server, tmp_path):
    # What a user types: the roles are bound before the task is built, so the judge check runs then
    # and Inspect prints the reason alone (no traceback panel), exits 1, writes no log, and no
    # answer is generated. Port 9 stands in for a mistyped judge URL (nothing listens there).
    env = {**os.environ, "JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "COLUMNS": "200"}
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).parent / "inspect"), "eval", "clinconsensus_tasks/clinconsensus",
                           "-T", "data=sample", "--model", "openai-api/cand/cand-model",
                           "--model-role", "grader=openai-api/judge/judge-model", "--log-dir", str(tmp_path / "logs")],
                          env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - started
    output = done.stdout + done.stderr
    assert done.returncode == 1 and elapsed < 60, (elapsed, output[-2000:])
    assert "Traceback" not in output and "did not answer a test request (APIConnectionError" in output
    assert " ".join(output.split()).count("ClinConsensus: The judge openai-api/judge/judge-model at http://127.0.0.1:9/v1") == 1
    assert not list((tmp_path / "logs").glob("*.eval")) and fake_server.stats()["calls"] == {}


def test_the_release_gate_reads_runs_of_both_frameworks(fake_server, tmp_path):
    good = inspect_run(tmp_path / "good", "judge-model", limit=2)
    assert judging_problems(gate(good.location), good.location) == []
    inject = inspect_run(tmp_path / "inject", "judge-model", candidate="cand-inject", limit=2)
    out = gate(good.location, inject.location)
    assert out.returncode == 1
    suspect = ("2 suspect answer(s) (imitating the judge prompt or carrying a verdict): read them (clinconsensus-eval "
               "report) before publishing")
    assert judging_problems(out, good.location) == [] and judging_problems(out, inject.location) == [suspect]
    lmeval_run(fake_server.base_url, "judge-model", tmp_path / "lm")
    samples = next((tmp_path / "lm").rglob("samples_clinconsensus_*.jsonl"))
    assert judging_problems(gate(samples), samples) == []
    # Folders, as the README's `summarize --strict logs/ results/` gives them: every run inside.
    out = gate(tmp_path / "good", tmp_path / "inject", tmp_path / "lm")
    assert {line.split(": ", 1)[0] for line in out.stdout.splitlines()} == {
        f"FAIL {good.location}", f"FAIL {inject.location}", f"FAIL {samples}"}
    assert judging_problems(out, inject.location) == [suspect] and judging_problems(out, samples) == []
    next((tmp_path / "lm").rglob("results_*.json")).unlink()  # as if lm-eval had died before writing its results
    out = gate(samples)
    assert out.returncode == 1 and "the run did not finish" in out.stdout


# -- issue 26.5: a dead judge is known within a minute; cached verdicts survive it -----------------


def test_a_judge_that_dies_after_the_check_is_known_in_seconds_and_the_last_words_say_inspect_score(fake_server, tmp_path):
    # The stand-in's judge-down passes the judge check, then answers HTTP 500 to every judgment.
    # Inspect at its default retry settings (the command line as a user types it) used to send 174
    # requests over 408 s for 4 cases; the breaker now sees each HTTP attempt.
    env = {**os.environ, "COLUMNS": "200"}
    done = subprocess.run([str(BIN / "inspect"), "eval", "clinconsensus_tasks/clinconsensus", "-T", "data=sample", "--limit", "4",
                           "--model", "openai-api/cand/cand-model", "--model-role", "grader=openai-api/judge/judge-down",
                           "--log-dir", str(tmp_path / "logs")], env=env, capture_output=True, text=True, timeout=300)
    sent = fake_server.stats()["calls"].get("judge-down", 0)
    assert 0 < sent <= 25, sent
    last = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()][-1]
    assert last.startswith("ClinConsensus: 120 of 120 judge verdicts failed") and "inspect score LOG_FILE" in last
    assert last.endswith("Not inspect eval-retry: it keeps every sample as it is, failed verdicts included.")
    # Which is what eval-retry does (on another machine: no response cache): no answer and no verdict asked again.
    (log,) = (tmp_path / "logs").glob("*.eval")
    before = dict(fake_server.stats()["calls"])
    retried = subprocess.run([str(BIN / "inspect"), "eval-retry", str(log), "--log-dir", str(tmp_path / "retried")],
                             env={**env, "INSPECT_CACHE_DIR": str(tmp_path / "another-machine")}, capture_output=True, text=True, timeout=300)
    assert "ClinConsensus: 120 of 120 judge verdicts failed" in retried.stdout + retried.stderr
    calls = fake_server.stats()["calls"]
    assert calls.get("cand-model", 0) == before.get("cand-model", 0) and calls["judge-down"] - before["judge-down"] <= 1  # the judge check
    # lm-eval, same judge: the same outcome (the policy stops the run), as few requests.
    fake_server.reset()
    with pytest.raises(JudgeFailureError, match="120 of 120 judge verdicts failed"):
        lmeval_run(fake_server.base_url, "judge-down")
    assert 0 < fake_server.stats()["calls"].get("judge-down", 0) <= 25  # the breaker sees each attempt here too


def test_rescoring_while_the_judge_is_still_down_keeps_the_verdicts_obtained(fake_server, tmp_path):
    # The judge gives 30 verdicts, then dies. Re-scoring with the judge still down used to turn
    # the cached good verdicts into failures (the breaker answered before the cache); now the
    # cache answers first, in both frameworks.
    answered = itertools.count()
    fake_server.script("judge-dies", lambda req: VERDICT_MET if next(answered) < 30 else (500, "judge crashed"))
    log = inspect_run(tmp_path / "logs", "judge-dies", limit=2)
    good = sum(j["met"] is True for s in log.samples for j in s.scores["rubric_scorer"].metadata["judgments"])
    assert good == 30
    done = subprocess.run([str(BIN / "inspect"), "score", log.location, "--overwrite", "--action", "overwrite"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    from inspect_ai.log import read_eval_log

    rescored = read_eval_log(log.location)
    assert sum(j["met"] is True for s in rescored.samples for j in s.scores["rubric_scorer"].metadata["judgments"]) == 30

    answered = itertools.count()
    fake_server.script("judge-dies-lm", lambda req: VERDICT_MET if next(answered) < 30 else (500, "judge crashed"))
    os.environ[ENV_FAILURE_THRESHOLD] = "0"
    try:
        first = lmeval_run(fake_server.base_url, "judge-dies-lm")
        again = lmeval_run(fake_server.base_url, "judge-dies-lm")  # the judge is still down
    finally:
        del os.environ[ENV_FAILURE_THRESHOLD]
    met = [sum(j["met"] is True for s in r["samples"]["clinconsensus"] for j in json.loads(s["filtered_resps"][0])["judgments"])
           for r in (first, again)]
    assert met == [30, 30]


def test_a_run_interrupted_while_judging_and_resumed_with_eval_retry_asks_only_for_the_answers_it_lacks(fake_server, tmp_path):
    # What a user does: Ctrl-C (SIGINT) while the judge is slow, then the command Inspect itself
    # prints, `inspect eval-retry LOG`. The retry keeps every sample the log holds and asks the
    # model again only for those it lacks (the ones stopped while being judged), as Inspect does:
    # no cache that could serve another checkpoint's answers (tests/clinconsensus/test_retrained_model.py).
    import signal
    import threading

    slow = threading.Event()
    slow.set()

    def judge(req):
        if slow.is_set():
            time.sleep(20)
        return VERDICT_MET

    fake_server.script("judge-slow", judge)
    command = [str(BIN / "inspect"), "eval", "clinconsensus_tasks/clinconsensus", "-T", "data=sample", "--limit", "4",
               "--model", "openai-api/cand/cand-model", "--model-role", "grader=openai-api/judge/judge-slow",
               "--log-dir", str(tmp_path / "logs"), "--display", "plain"]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        calls = fake_server.stats()["calls"]
        if calls.get("cand-model", 0) == 4 and calls.get("judge-slow", 0) >= 1:
            break
        time.sleep(0.5)
    assert fake_server.stats()["calls"].get("cand-model", 0) == 4
    run.send_signal(signal.SIGINT)
    run.communicate(timeout=120)
    slow.clear()
    log = next((tmp_path / "logs").glob("*.eval"))
    from inspect_ai.log import read_eval_log

    cancelled = read_eval_log(str(log))
    assert cancelled.status == "cancelled"
    kept = sum(1 for s in cancelled.samples or [] if s.error is None and s.scores)  # finished before Ctrl-C
    done = subprocess.run([str(BIN / "inspect"), "eval-retry", str(log), "--log-dir", str(tmp_path / "logs")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert fake_server.stats()["calls"].get("cand-model", 0) == 4 + (4 - kept)  # only the answers the log lacked
    retried = max((tmp_path / "logs").glob("*.eval"), key=lambda p: p.stat().st_mtime)
    assert read_eval_log(str(retried), header_only=True).status == "success"
