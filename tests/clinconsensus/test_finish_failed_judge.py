"""A judge that dies after the answers are generated costs no answer, in both frameworks, with the
commands as the docs print them (README "Quick start", docs/failures-and-recovery.md).

The stand-in server (a real OpenAI-compatible HTTP server on 127.0.0.1) is the model under test
(``cand-model``, a vLLM server in the docs) and, scripted as ``judge-dies``, a judge API that gives
30 verdicts and then answers HTTP 500 to everything until it is "back". Both frameworks run as
their command-line programs, as a user runs them.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clinconsensus_tasks.lmeval_glue import task_configs_dir
from test_packaging import installed_editable

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
VERDICT_MET = json.dumps({"explanation": "回答满足该标准。", "criteria_met": True}, ensure_ascii=False)


def dying_judge(fake_server, alive: int = 30) -> None:
    answered = itertools.count()
    fake_server.script("judge-dies", lambda req: VERDICT_MET if next(answered) < alive else (500, "judge crashed"))


def lm_eval_command(fake_server, output: Path, *extra: str) -> list[str]:
    # The README's command (model under test behind an OpenAI-compatible URL), on 4 cases.
    include = ["--include_path", str(task_configs_dir())] if installed_editable() else []  # a wheel install needs none
    return [str(BIN / "lm_eval"), "--model", "local-chat-completions",
            "--model_args", f"model=cand-model,base_url={fake_server.base_url}/chat/completions,num_concurrent=8",
            "--tasks", "clinconsensus", "--apply_chat_template", "--log_samples", "--output_path", str(output),
            "--limit", "4", *include, *extra]


def test_lmeval_keeps_the_answers_of_a_run_whose_judge_died_and_finishes_it_with_no_model_call(fake_server, tmp_path):
    dying_judge(fake_server)
    env = {**os.environ, "CLINCONSENSUS_JUDGE_MODEL": "judge-dies"}
    failed = subprocess.run(lm_eval_command(fake_server, tmp_path / "results"), env=env, capture_output=True, text=True,
                            timeout=600, cwd=tmp_path)
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0 and "JudgeFailureError: 90 of 120 judge verdicts failed" in output, output[-3000:]
    assert not list((tmp_path / "results").rglob("*.json*"))  # lm-eval wrote nothing: the judge failed before its samples
    assert fake_server.stats()["calls"]["cand-model"] == 4
    # The error's last words name the file and the command that finishes the run.
    found = re.search(r"The model's 4 answers are kept in (\S+_rank0\.db): once the judge works, finish this run with the "
                      r"same lm_eval command plus `--use_cache (\S+)` \(no model call", output)
    assert found, output[-3000:]
    kept, prefix = Path(found[1]), found[2]
    assert kept.is_file() and f"{prefix}_rank0.db" == found[1] and kept.is_relative_to(Path(env["CLINCONSENSUS_CACHE_DIR"]))

    fake_server.script("judge-dies", lambda req: VERDICT_MET)  # the judge is back
    before = dict(fake_server.stats()["calls"])
    done = subprocess.run(lm_eval_command(fake_server, tmp_path / "results", "--use_cache", prefix), env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    calls = fake_server.stats()["calls"]
    assert calls["cand-model"] == before["cand-model"]  # no model call
    assert calls["judge-dies"] - before["judge-dies"] == 90 + 1  # the 90 failed verdicts, and the judge check
    (samples,) = (tmp_path / "results").rglob("samples_clinconsensus_*.jsonl")
    records = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    verdicts = [j["met"] for r in records for j in json.loads(r["filtered_resps"][0])["judgments"]]
    assert len(records) == 4 and verdicts == [True] * 120
    # The finishing run judged: its own kept copy is let go (the samples file holds the answers); the
    # failed run's file is the one --use_cache named, lm-eval's cache now, the user's to delete.
    assert list(kept.parent.iterdir()) == [kept]


def test_inspect_finishes_a_run_whose_judge_died_with_inspect_score_and_no_model_call(fake_server, tmp_path):
    dying_judge(fake_server)
    command = [str(BIN / "inspect"), "eval", "clinconsensus_tasks/clinconsensus", "-T", "data=sample", "--limit", "4",
               "--model", "openai-api/cand/cand-model", "--model-role", "grader=openai-api/judge/judge-dies",
               "--log-dir", str(tmp_path / "logs")]
    failed = subprocess.run(command, env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True, timeout=600)
    assert "ClinConsensus: 90 of 120 judge verdicts failed" in " ".join((failed.stdout + failed.stderr).split())
    (log,) = (tmp_path / "logs").glob("*.eval")
    assert fake_server.stats()["calls"]["cand-model"] == 4

    fake_server.script("judge-dies", lambda req: VERDICT_MET)
    before = dict(fake_server.stats()["calls"])
    done = subprocess.run([str(BIN / "inspect"), "score", str(log), "--overwrite", "--action", "overwrite"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    calls = fake_server.stats()["calls"]
    assert calls["cand-model"] == before["cand-model"] and calls["judge-dies"] - before["judge-dies"] == 90
    from inspect_ai.log import read_eval_log

    rescored = read_eval_log(str(log))
    assert [j["met"] for s in rescored.samples for j in s.scores["rubric_scorer"].metadata["judgments"]] == [True] * 120
