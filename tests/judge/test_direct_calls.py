"""``-T judge_calls=direct``: Inspect's judge calls through the project's own judge client (the one
lm-eval's path uses) reach the same outcome as Inspect's default path and as lm-eval: the same
numbers with a flaky judge, the same end for a dead judge, the same cut after a refusal for
length, the same one-at-a-time for a one-slot server, no key in anything stored; and a judge it
cannot serve is refused with a sentence saying why.

Every run talks to the real HTTP stand-in on 127.0.0.1 (``fake_server``), which stands in for an
OpenAI-compatible judge (a hosted API, or vLLM serving the released judge); ``ServerFront``
(tests/judge_servers.py) stands in for llama.cpp's server in front of it.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from frameworks import HEADLINE, expected_metrics, expected_without_failed, run_inspect, run_lmeval
from judge_servers import ServerFront, configure_stand_in
from stored_files import KEY, assert_no_key, bytes_of

from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ENV_FAILURE_THRESHOLD

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
DIRECT = ("-T", "judge_calls=direct")
VERDICT_MET = json.dumps({"explanation": "回答满足该标准。", "criteria_met": True}, ensure_ascii=False)


def judge_events(log) -> list:
    """The ModelEvents of the judge's calls in the log's transcripts."""
    return [e for s in log.samples for e in s.events if e.event == "model" and "judge" in str(getattr(e, "model", ""))]


def inspect_cli(tmp_path: Path, judge: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "inspect"), "eval", "clinconsensus_tasks/clinconsensus", "-T", "data=sample", "--limit", "4",
                           "--model", "openai-api/cand/cand-model", "--model-role", f"grader={judge}",
                           "--log-dir", str(tmp_path / "logs"), *args], env={**os.environ, "COLUMNS": "200"},
                          capture_output=True, text=True, timeout=timeout)


def test_a_flaky_judge_gives_the_same_numbers_as_inspects_own_calls_and_lmeval(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0.1")  # the flaky judge garbles ~5% for good
    log, direct = run_inspect(tmp_path / "logs", judge="judge-flaky", judge_calls="direct")
    stats = fake_server.stats()
    assert stats["statuses"].get("429", 0) > 0 and stats["statuses"].get("500", 0) > 0
    direct_fields = stats["judge_request_keys"]
    fake_server.reset()
    _, lmeval = run_lmeval(fake_server.base_url, judge="judge-flaky")
    assert fake_server.stats()["judge_request_keys"].keys() == direct_fields.keys()  # the same client, the same request
    expected = expected_metrics(flaky=True)
    assert expected["judge_failures"] > 0
    assert {k: direct[k] for k in HEADLINE} == {k: lmeval[k] for k in HEADLINE} == expected
    complete = expected_without_failed(flaky=True)
    assert {k: direct[k] for k in complete} == complete
    failed = [j for s in log.samples for j in s.scores["rubric_scorer"].metadata["judgments"] if j["met"] is None]
    assert len(failed) == expected["judge_failures"] and all(j["attempts"] == 2 for j in failed)
    # The trade-off: the judgments are not in the transcript, only the judge check, which still
    # goes through Inspect (in the first sample's solver: the roles were bound after the task was
    # built); each verdict, explanation and failure is in the score's record as always.
    events = judge_events(log)
    assert len(events) == 1 and events[0].config.max_tokens == 8
    assert any(e.event == "model" and "cand" in e.model for s in log.samples for e in s.events)
    assert log.eval.task_args["judge_calls"] == "direct"


def test_a_dead_judge_ends_the_run_as_inspects_own_calls_do_and_inspect_score_keeps_the_verdicts(fake_server, tmp_path):
    done = inspect_cli(tmp_path / "down", "openai-api/judge/judge-down", *DIRECT)
    calls = fake_server.stats()["calls"]
    assert set(calls) == {"judge-down", "cand-model"}  # the check too names the model as its server knows it, not judge/judge-down
    assert 1 < calls["judge-down"] <= 25, calls  # the check, then the breaker sees each attempt
    from inspect_ai.log import list_eval_logs, read_eval_log

    assert read_eval_log(list_eval_logs(str(tmp_path / "down" / "logs"))[0], header_only=True).status == "error"
    last = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()][-1]
    assert last.startswith("ClinConsensus: 120 of 120 judge verdicts failed") and "inspect score LOG_FILE" in last

    # 30 verdicts, then the judge dies: re-scoring with it still down keeps the 30 (the verdict cache answers first).
    answered = itertools.count()
    fake_server.script("judge-dies", lambda req: VERDICT_MET if next(answered) < 30 else (500, "judge crashed"))
    os.environ[ENV_FAILURE_THRESHOLD] = "0"
    try:
        log, _ = run_inspect(tmp_path / "logs", judge="judge-dies", judge_calls="direct", max_retries=1)
    finally:
        del os.environ[ENV_FAILURE_THRESHOLD]
    met = lambda log: sum(j["met"] is True for s in log.samples for j in s.scores["rubric_scorer"].metadata["judgments"])  # noqa: E731
    assert met(log) == 30
    again = subprocess.run([str(BIN / "inspect"), "score", log.location, "--overwrite", "--action", "overwrite"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[3000:6000]
    assert met(read_eval_log(log.location)) == 30


def test_a_key_in_a_200_reply_is_in_no_file_with_direct_calls(fake_server, monkeypatch, tmp_path, capfd):
    monkeypatch.setenv("JUDGE_API_KEY", KEY)
    fake_server.script("judge-echo", lambda req: f"upstream refused: invalid credentials {KEY} (retry later)")
    log, _ = run_inspect(tmp_path / "logs", judge="judge-echo", judge_calls="direct", judge_failure_threshold=0)
    reasons = [j["error"] for s in log.samples for j in s.scores["rubric_scorer"].metadata["judgments"]]
    assert reasons and all("invalid credentials ***" in r for r in reasons)
    files = bytes_of(tmp_path)  # the .eval log and the verdict cache (CLINCONSENSUS_CACHE_DIR is under tmp_path)
    assert any(name.endswith("judge_cache.sqlite3") for name in files)
    out, err = capfd.readouterr()
    assert_no_key({**files, "stdout": out, "stderr": err})


def test_a_refusal_for_length_and_a_one_slot_server_as_with_inspects_own_calls(fake_server, tmp_path):
    from test_judge_server import front_latency, inspect_log, run_inspect as front_run, run_lmeval as front_lmeval

    configure_stand_in(fake_server, {"answer_chars": 3000})
    try:
        with ServerFront(fake_server.base_url, "llamacpp", max_model_len=4000, tokens_per_estimate=2) as front:
            direct, direct_reasons = front_run(front, "judge-model", tmp_path, judge_calls="direct")
            direct_cuts = [s.scores["rubric_scorer"].metadata["judge_input_cut"] for s in inspect_log(tmp_path).samples]
            lmeval, lmeval_reasons, out = front_lmeval(front, "judge-model")
    finally:
        configure_stand_in(fake_server, {"answer_chars": 0})
    lmeval_cuts = [json.loads(s["filtered_resps"][0])["judge_input_cut"] for s in out["samples"]["clinconsensus"]]
    assert direct_reasons == lmeval_reasons == []
    assert [c["limit_tokens"] for c in direct_cuts] == [c["limit_tokens"] for c in lmeval_cuts] == [1656, 1656]
    assert direct["cacs@10"] == lmeval["cacs@10"]

    with ServerFront(fake_server.base_url, "llamacpp") as front:
        front_latency(fake_server, 0.02)
        try:
            front_run(front, "judge-model", tmp_path / "one", judge_calls="direct")
        finally:
            front_latency(fake_server, 0.0)
        assert front.most_in_flight == 1 and len(front.judge_bodies()) == 60


def test_a_judge_direct_calls_cannot_reach_and_a_mistyped_value_are_named(fake_server, tmp_path):
    done = inspect_cli(tmp_path, "mockllm/model", *DIRECT, "-T", "judge_check=false", timeout=150)
    said = done.stdout + done.stderr
    assert done.returncode != 0
    assert "-T judge_calls=direct sends judge calls with an OpenAI-compatible client, and mockllm/model is not reached" in said
    assert fake_server.stats()["calls"].get("cand-model", 0) == 0  # stopped before any answer
    done = inspect_cli(tmp_path, "{model: openai-api/judge/judge-model, batch: true}", *DIRECT, timeout=150)
    assert done.returncode != 0
    assert "asks for Inspect's batch mode (batch in the role's config), which only Inspect's own calls have" in done.stdout + done.stderr
    done = inspect_cli(tmp_path, "openai-api/judge/judge-model", "-T", "judge_calls=fast", timeout=150)
    assert done.returncode != 0 and "-T judge_calls='fast': use inspect or direct" in done.stdout + done.stderr


def test_every_path_sends_the_same_judge_request_byte_for_byte(fake_server, tmp_path):
    # The stand-in counts each exact request body (the bytes): Inspect's own calls, the direct
    # calls (judge_cache off, so the verdict cache cannot answer) and lm-eval's make each of the
    # 360 judgment bodies three times, and so does the judge check (1 body). The candidate's 12
    # requests are sent by each Inspect run (no answer cache: -T answer_cache is off) and once by
    # lm-eval, each framework laying out its own body.
    run_inspect(tmp_path / "inspect", judge="judge-model")
    run_inspect(tmp_path / "direct", judge="judge-model", judge_calls="direct", judge_cache=False)
    run_lmeval(fake_server.base_url, judge="judge-model")
    stats = fake_server.stats()
    assert stats["judge_calls"] == 3 * 360
    assert stats["bodies_by_times_seen"] == {"1": 12, "2": 12, "3": 361}
