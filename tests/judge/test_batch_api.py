"""Judging through a provider's batch API, in both frameworks.

``BatchServer`` (127.0.0.1) stands in for the OpenAI Batch API: files, batches, polling, output
file; it answers a batch's lines by forwarding them to the project's stand-in judge, whose verdicts
the expected metrics are computed from. Synchronous calls through it are counted apart.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from frameworks import HEADLINE, expected_metrics, run_lmeval
from openai_batch_server import BatchServer

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import candidate_answer, oracle_verdict
from clinconsensus_tasks.judge.batch_api import ledger_path
from clinconsensus_tasks.judge.client import JudgeSettings, judge_documents

CALLS = 12 * 30  # the bundled sample, per criterion


@pytest.fixture
def batch_server(fake_server, monkeypatch):
    with BatchServer(fake_server.base_url) as server:
        monkeypatch.setenv("CLINCONSENSUS_JUDGE_BATCH_POLL", "0.05")
        yield server


def sample_docs():
    docs = [case.to_record() for case in load_cases("sample").cases]
    return docs, [candidate_answer(doc["question"]) for doc in docs]


def test_lmeval_run_judges_through_the_batch_api(fake_server, batch_server, monkeypatch):
    """``CLINCONSENSUS_JUDGE_BATCH=1``: one batch carries every judge request (no synchronous
    judge call but the configuration probe), and the metrics are those of the judge's verdicts."""
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_BASE_URL", batch_server.base_url)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_BATCH", "1")
    _, metrics = run_lmeval(fake_server.base_url, mode="per_criterion")
    assert {k: metrics[k] for k in HEADLINE} == pytest.approx(expected_metrics())
    assert dict(batch_server.counts) == {"uploads": 1, "batches": 1, "polls": 1, "batch_lines": CALLS, "direct": 1}  # direct: the probe
    assert fake_server.stats()["kinds"]["per_criterion"] == CALLS


def test_an_interrupted_batch_run_finds_its_batch_again(fake_server, batch_server, tmp_path):
    """The first process stops while its batch is still running; the next one finds the batch in
    the ledger beside the verdict cache, downloads it, and submits nothing new; a third run is
    served from the verdict cache entirely."""
    docs, answers = sample_docs()
    settings = JudgeSettings(base_url=batch_server.base_url, model="judge-model", cache_dir=str(tmp_path / "cache"), batch=True)
    batch_server.held = True

    async def stopped() -> None:  # stopped (as by Ctrl-C) while it waits for its batch
        run = asyncio.ensure_future(judge_documents(answers, docs, settings, "per_criterion"))
        while batch_server.counts["polls"] < 2:
            await asyncio.sleep(0.02)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(stopped())
    ledger = json.loads(ledger_path(settings.cache_dir).read_text(encoding="utf-8"))
    assert [entry["requests"] for entry in ledger.values()] == [CALLS]
    assert batch_server.counts["batch_lines"] == 0

    batch_server.held = False
    records, stats = asyncio.run(judge_documents(answers, docs, settings, "per_criterion"))
    assert (batch_server.counts["batches"], batch_server.counts["batch_lines"], batch_server.counts["direct"]) == (1, CALLS, 0)
    assert (stats["batch_ids"], stats["batch_requests"], stats["calls"], stats["cache_hits"]) == (list(ledger), 0, 0, CALLS)
    assert stats["batch_usage"]["calls"] == CALLS
    # Each case records what its batch replies cost, as a synchronous call's tokens would be: the
    # run's cost report adds up to what the batch was charged.
    recorded = [sum(r.judge_usage.get(name, 0) for r in records) for name in ("calls", "prompt_tokens", "completion_tokens")]
    assert recorded == [stats["batch_usage"][name] for name in ("calls", "prompt_tokens", "completion_tokens")]
    assert all(r.judge_usage["calls"] == 30 for r in records)
    expected = [sum(oracle_verdict(a, r["criterion"]) for r in d["rubrics"]) for a, d in zip(answers, docs)]
    assert [r.met for r in records] == expected
    assert json.loads(ledger_path(settings.cache_dir).read_text(encoding="utf-8")) == {}

    records, stats = asyncio.run(judge_documents(answers, docs, settings, "per_criterion"))
    assert (batch_server.counts["batches"], stats["batch_requests"], stats["calls"]) == (1, 0, 0)
    assert [r.met for r in records] == expected


def test_inspect_grader_batches_when_the_role_config_says_so(fake_server, batch_server, tmp_path, monkeypatch):
    """The grader role's own config carries ``batch`` (as ``--model-role grader="{model: ...,
    batch: ...}"`` makes it); Inspect's OpenAI provider then sends every grader call through the
    batch API, and the metrics are those of the judge's verdicts. (``responses_api: false``: the
    stand-in judge speaks chat completions; OpenAI itself batches either API.)"""
    from inspect_ai import eval as inspect_eval
    from inspect_ai._cli.util import parse_model_role_cli_args

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    monkeypatch.setenv("OPENAI_BASE_URL", batch_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    roles = parse_model_role_cli_args(('grader={model: openai/judge-model, model_args: {responses_api: false}, batch: {size: 400, send_delay: 0.3, tick: 0.1}}',))
    log = inspect_eval(clinconsensus(data="sample", judge_mode="per_criterion"), model="openai-api/cand/cand-model",
                       model_roles=roles, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success", log.error
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    assert {k: metrics[k] for k in HEADLINE} == pytest.approx(expected_metrics())
    assert (batch_server.counts["batch_lines"], batch_server.counts["direct"]) == (CALLS + 1, 0)  # + the judge probe
    assert batch_server.counts["batches"] >= 2  # first criteria, then the rest once they returned
