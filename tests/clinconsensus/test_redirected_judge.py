"""An ``openai/`` judge sent to another server by ``OPENAI_BASE_URL`` is seen for what it is.

Inspect keeps ``base_url`` ``None`` for an ``openai/`` model whose URL comes from the
environment, so the run recorded no endpoint, the judge's server was never asked what it is, and
Inspect's response cache keyed its verdicts as OpenAI's own model of that name. A user who
pointed ``OPENAI_BASE_URL`` at the demo's stand-in (or any local server) and ran with
``--model-role grader=openai/gpt-4.1`` got a run the release gate could not tell from one judged
by OpenAI, and a later run against another server under the same name was served the first
server's verdicts.

The servers are the project's stand-in (a real OpenAI-compatible HTTP server on 127.0.0.1,
standing in for the demo's server or any local one that ``OPENAI_BASE_URL`` points at) and a
second one whose scripted ``gpt-4.1`` stands in for a different judge behind the same name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clinconsensus_tasks.stand_in.server import FakeOpenAIServer

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
CASES = 2


def run(log_dir: Path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    return inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model", model_roles={"grader": "openai/gpt-4.1"},
                        log_dir=str(log_dir), display="none", limit=CASES, max_retries=1)[0]


def never_met(request) -> str:
    return json.dumps({"explanation": "未提及。", "criteria_met": False}, ensure_ascii=False)


def test_an_openai_judge_redirected_by_openai_base_url_is_recorded_refused_by_the_gate_and_cached_apart(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    first = run(tmp_path / "first")
    assert first.status == "success"
    host = fake_server.base_url.removesuffix("/v1")
    recorded = first.samples[0].scores["rubric_scorer"].metadata["provenance"]
    assert (recorded["judge_model"], recorded["judge_endpoint"], recorded["judge_server"]) == ("gpt-4.1", host, "stand-in")
    assert fake_server.stats()["judge_calls"] == 30 * CASES

    gate = subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", "--strict", first.location],
                          capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert gate.returncode == 1
    problems = [line.split(": ", 1)[1] for line in gate.stdout.splitlines() if line.startswith(f"FAIL {first.location}: ")]
    assert "judged by the project's stand-in server (gpt-4.1), not a real judge: bind a real judge model" in problems

    # Another server, another judge under the same name, the same response cache: asked, not served
    # the first server's verdicts.
    with FakeOpenAIServer() as other:
        other.script("gpt-4.1", never_met)
        monkeypatch.setenv("OPENAI_BASE_URL", other.base_url)
        second = run(tmp_path / "second")
        asked = other.stats()["calls"]["gpt-4.1"]
    assert second.status == "success"
    assert asked == 30 * CASES + 1  # every criterion, and the judge check
    metrics = {name: m.value for s in second.results.scores for name, m in s.metrics.items()}
    first_metrics = {name: m.value for s in first.results.scores for name, m in s.metrics.items()}
    assert metrics["rubric_accuracy"] == 0.0 < first_metrics["rubric_accuracy"]
    assert second.samples[0].scores["rubric_scorer"].metadata["provenance"]["judge_endpoint"] == other.base_url.removesuffix("/v1")
