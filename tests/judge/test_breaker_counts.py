"""The judge's circuit breaker counts each request really sent once, in both frameworks.

It is told of failures in one place, the transport (the project's client, each of its HTTP
attempts; Inspect's provider, each attempt through ``inspect_compat.wrap_generate``). When grading
also counted a call's last failure, a failed attempt counted twice on Inspect's path and the
breaker opened after 10 requests where its limit says 20. A judge that answers HTTP 500 to every
judgment (the stand-in, scripted), one request at a time: the breaker opens after exactly
``BREAKER_LIMIT`` requests, and nothing more is sent.
"""

from __future__ import annotations

import os

import pytest

from clinconsensus_tasks.scorers.clinconsensus.judge_failures import BREAKER_LIMIT

pytestmark = pytest.mark.slow


def test_inspect_sends_exactly_the_breakers_limit_to_a_dead_judge(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    fake_server.script("judge-500", lambda req: (500, "down"))
    # No retry: each call one attempt, at once (Inspect's retries back off for seconds, and the breaker
    # also opens on 5 failures with no reply for 30 s, which would hide the count).
    judge = get_model("openai-api/judge/judge-500", config=GenerateConfig(max_connections=1, max_retries=0))
    log = inspect_eval(clinconsensus(data="sample", judge_check=False), model="openai-api/cand/cand-model", limit=1,
                       model_roles={"grader": judge}, log_dir=str(tmp_path), display="none", max_retries=0)[0]
    kinds = [j["error_kind"] for j in log.samples[0].scores["rubric_scorer"].metadata["judgments"]]
    assert fake_server.stats()["calls"]["judge-500"] == BREAKER_LIMIT
    assert kinds == ["transport"] * BREAKER_LIMIT + ["judge_unavailable"] * (30 - BREAKER_LIMIT)


def test_lmeval_sends_exactly_the_breakers_limit_to_a_dead_judge(fake_server, monkeypatch):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    fake_server.script("judge-500", lambda req: (500, "down"))
    for name, value in {"CLINCONSENSUS_JUDGE_MODEL": "judge-500", "CLINCONSENSUS_JUDGE_CONCURRENCY": "1",
                        "CLINCONSENSUS_JUDGE_MAX_RETRIES": "1", "CLINCONSENSUS_JUDGE_CHECK": "0",
                        "CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD": "0"}.items():
        monkeypatch.setenv(name, value)
    results = simple_evaluate(model="local-chat-completions", limit=1, log_samples=True, bootstrap_iters=0, apply_chat_template=True,
                              model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"})
    assert fake_server.stats()["calls"]["judge-500"] == BREAKER_LIMIT
    assert os.environ["CLINCONSENSUS_JUDGE_MAX_RETRIES"] == "1"
    assert results["results"]["clinconsensus"]["judge_failures,judge"] == 30.0
