"""A campaign across machines in one bucket (issue 40, item 2): the recipe of docs/judge-bill.md
"Past one machine", run as a team runs it.

What stands in for what:
- moto's S3 server on 127.0.0.1 (``bucket`` fixture) for the team's bucket;
- one ``inspect eval-set`` subprocess per machine, each with its own Inspect response cache,
  verdict cache and Inspect data folder (``XDG_DATA_HOME``, where Inspect keeps its sample buffer),
  as separate machines have; a SIGKILL for a machine that dies (preempted, OOM-killed);
- the project's stand-in server (``fake_server``) for the models under test and the judge: a
  scripted ``cand-a`` that answers 6 questions and then hangs (a slow endpoint, so the machine
  is killed mid-run), and a scripted judge ``judge-dies`` that gives 30 verdicts and then answers
  HTTP 500 (a judge that died);
- an in-process lm-eval run whose output folder is uploaded with fsspec ``put``.

Then the release gate and the report read the whole campaign from the bucket.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import threading
import time

import pytest

from campaign_machines import BIN, eval_set, machine_env, wait_for
from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases

pytestmark = pytest.mark.slow

CASES = len(load_cases("sample").cases)  # 12
ANSWER = "建议完善血常规、肝肾功能及影像学检查，明确诊断后规范治疗，并密切随访。"
VERDICT_MET = json.dumps({"explanation": "回答满足该标准。", "criteria_met": True}, ensure_ascii=False)
ANSWERED_BEFORE_KILL = 6
FLUSH_EVERY = 4  # Inspect's default log buffer for a 12-sample .eval log: max(1, min(12 // 3, 10))
RETRIES = ("--retry-attempts", "1", "--retry-wait", "1", "--display", "plain")
NOT_RELEASE = ("the bundled synthetic sample", "judge prompt project", "judged by the project's stand-in")


def logs_of(log_dir: str) -> dict[str, list]:
    """The Inspect logs under ``log_dir`` by the model they ran, oldest first."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    out: dict[str, list] = {}
    for info in list_eval_logs(log_dir):
        header = read_eval_log(info.name, header_only=True)
        out.setdefault(header.eval.model.rsplit("/", 1)[-1], []).append(header)
    return {model: sorted(headers, key=lambda h: h.eval.created) for model, headers in out.items()}


def _samples_logged(headers) -> list:
    """The samples the newest of ``headers`` holds (for a running eval: those flushed so far)."""
    from inspect_ai.log import read_eval_log_sample_summaries

    return read_eval_log_sample_summaries(headers[-1].location) if headers else []


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_campaign_across_machines_in_one_bucket(fake_server, bucket, tmp_path, capsys):
    from inspect_ai.log import read_eval_log

    campaign = bucket.url("release-2026-12/inspect")
    hang = threading.Event()
    answers = itertools.count()

    def slow_endpoint(req):
        if next(answers) >= ANSWERED_BEFORE_KILL:
            hang.wait(300)
        return ANSWER

    verdicts = itertools.count()
    fake_server.script("cand-a", slow_endpoint)
    fake_server.script("judge-dies", lambda req: VERDICT_MET if next(verdicts) < 30 else (500, "judge crashed"))

    # Two machines start the campaign: machine 1 runs cand-a, machine 2 runs cand-b.
    machine_1 = eval_set(campaign, tmp_path / "machine-1", "cand-a", "judge-model", *RETRIES)
    machine_2 = eval_set(campaign, tmp_path / "machine-2", "cand-b", "judge-dies", *RETRIES)
    try:
        # Machine 1 dies once its 6 answers are judged (30 verdicts each), before its log buffer is full again.
        wait_for(lambda: fake_server.stats()["calls"].get("judge-model", 0) >= 1 + ANSWERED_BEFORE_KILL * 30,
                 "machine 1's six answers to be judged")
        wait_for(lambda: len(_samples_logged(logs_of(campaign).get("cand-a", []))) >= FLUSH_EVERY, "machine 1's first flush")
        time.sleep(2)
    finally:
        machine_1.send_signal(signal.SIGKILL)
        machine_1.wait(60)
        hang.set()
    assert machine_2.wait(300) == 1  # its judge died: the eval set is not complete

    # What the bucket holds: machine 1's log stopped at "started" with the samples it had flushed.
    (killed,) = logs_of(campaign)["cand-a"]
    assert killed.status == "started"
    held = read_eval_log(killed.location)
    flushed = {s.id: s.output.completion for s in held.samples}
    assert len(flushed) == FLUSH_EVERY  # 6 answered, 4 in the log: 2 were in the buffer that died with the process
    asked_before = fake_server.stats()["calls"]["cand-a"]

    # Another machine runs the same eval-set command again: it finishes cand-a and asks the model
    # again only for the samples the log did not hold.
    fake_server.script("cand-a", lambda req: ANSWER)
    machine_3 = eval_set(campaign, tmp_path / "machine-3", "cand-a", "judge-model", *RETRIES)
    assert machine_3.wait(300) == 0, (tmp_path / "machine-3" / "out.txt").read_text()[-3000:]  # its eval set (cand-a) is complete
    asked_again = fake_server.stats()["calls"]["cand-a"] - asked_before
    assert asked_again == CASES - FLUSH_EVERY  # 8: the 2 answers lost with the buffer, and the 6 never given
    killed_again, done = logs_of(campaign)["cand-a"]  # the killed attempt's log stays: another process wrote it
    assert killed_again.location == killed.location and done.status == "success"
    finished = read_eval_log(done.location)
    assert len(finished.samples) == CASES
    assert {s.id: s.output.completion for s in finished.samples if s.id in flushed} == flushed

    # Machine 2's run: every answer is in its log, 30 verdicts were given before the judge died.
    (judge_died,) = logs_of(campaign)["cand-b"]
    assert judge_died.status == "error" and "inspect score LOG_FILE --overwrite" in judge_died.error.message
    fake_server.script("judge-dies", lambda req: VERDICT_MET)  # the judge is back
    calls_before = dict(fake_server.stats()["calls"])
    scored = subprocess.run([str(BIN / "inspect"), "score", judge_died.location, "--overwrite", "--action", "overwrite"],
                            capture_output=True, text=True, timeout=300, env=machine_env(tmp_path / "machine-2"))
    assert scored.returncode == 0, scored.stderr[-3000:]
    calls = fake_server.stats()["calls"]
    assert calls.get("cand-b", 0) == calls_before.get("cand-b", 0)  # no answer asked for again
    assert calls["judge-dies"] - calls_before["judge-dies"] == CASES * 30 - 30  # the 30 verdicts obtained came from machine 2's cache
    (rescored,) = logs_of(campaign)["cand-b"]
    assert rescored.location == judge_died.location

    # An lm-eval run of the campaign, its output folder uploaded under another prefix.
    from frameworks import run_lmeval

    run_lmeval(fake_server.base_url, output_path=tmp_path / "lmeval")
    bucket.fs.put(str(tmp_path / "lmeval"), f"{bucket.name}/release-2026-12/lmeval", recursive=True)
    lmeval = bucket.url("release-2026-12/lmeval")

    # The gate and the report read the whole campaign from the bucket.
    code, out, err = cli(capsys, "summarize", "--strict", campaign, lmeval)
    assert code == 1, err  # the bundled sample is never a release run; nothing else is refused
    refusals = [line for line in out.splitlines() if line.startswith("FAIL ")]
    problems = [line for line in refusals if not line.split(": ", 1)[1].startswith(NOT_RELEASE)]
    assert problems == [], out
    runs = {line.split(": ", 1)[0].removeprefix("FAIL ") for line in refusals}
    assert killed.location not in runs and {done.location, rescored.location} <= runs and len(runs) == 3, out
    assert f"left out {killed.location}: superseded by {done.location}" in err  # named, never dropped silently
    assert f"left {killed.location}: superseded by {done.location}, a later attempt of the same task; not checked" in out

    report = bucket.url("release-2026-12/reports/campaign.html")
    code, out, err = cli(capsys, "report", campaign, lmeval, "--output", report)
    assert code == 0, err
    info = json.loads(out)
    assert sorted(info["clinconsensus_runs"]) == ["cand-a", "cand-b", "cand-model"]
    assert info["skipped"] == [{"log": killed.location, "reason": f"superseded by {done.location}, a later attempt of the same task"}]
    markdown = bucket.fs.cat(f"{bucket.name}/release-2026-12/reports/report.md").decode("utf-8")
    assert killed.location in markdown and b"<svg" in bucket.fs.cat(report.removeprefix("s3://"))
