"""The judges' HTTP transport (issue 35): both frameworks send every judge request through the
OpenAI SDK's aiohttp transport (``protocol.async_http_client``), unless a proxy variable is set or
``CLINCONSENSUS_JUDGE_HTTP=httpx`` says otherwise, and reach the same numbers either way.

The judge is the stand-in over real HTTP on 127.0.0.1 (it stands in for a vLLM server or a hosted
API); the transport's own ``handle_async_request`` is wrapped (and still called) to count the
requests that went through it.
"""

from __future__ import annotations

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.judge.protocol import async_http_client
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PROBE_SYSTEM
from frameworks import HEADLINE, run_inspect, run_lmeval

JUDGMENTS = 30 * len(load_cases("sample").cases)  # 30 criteria for each case of the bundled sample


def _is_aiohttp(client) -> bool:
    from openai._vendor.httpx_aiohttp import Httpx2AiohttpClient

    return isinstance(client, Httpx2AiohttpClient)


@pytest.mark.parametrize(
    ("env", "aiohttp"),
    [
        ({}, True),
        ({"CLINCONSENSUS_JUDGE_HTTP": "aiohttp"}, True),
        ({"CLINCONSENSUS_JUDGE_HTTP": "httpx"}, False),
        ({"CLINCONSENSUS_JUDGE_HTTP": "HTTPX"}, False),
        ({"HTTPS_PROXY": "http://proxy.internal:3128"}, False),  # httpx honours it; the aiohttp transport would not
        ({"http_proxy": "http://proxy.internal:3128"}, False),
        ({"ALL_PROXY": ""}, True),  # set but empty: no proxy
    ],
)
def test_the_judge_transport_is_aiohttp_unless_told_or_behind_a_proxy(env, aiohttp):
    client = async_http_client(env)
    assert (client is not None and _is_aiohttp(client)) is aiohttp
    assert client is None or not aiohttp or client.is_closed is False


@pytest.fixture
def counted(monkeypatch):
    """Requests that went through the aiohttp transport, by model name (the real transport runs)."""
    from openai._vendor.httpx_aiohttp import transport

    seen: list[str] = []
    real = transport.AiohttpTransport.handle_async_request

    async def handle(self, request):
        if PROBE_SYSTEM not in request.content.decode("utf-8", "replace"):  # judgments only: not the judge check
            seen.append(request.url.path)
        return await real(self, request)

    monkeypatch.setattr(transport.AiohttpTransport, "handle_async_request", handle)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("http", ["aiohttp", "httpx"])
def test_both_frameworks_judge_through_the_transport_chosen_and_agree(fake_server, tmp_path, monkeypatch, counted, http):
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_HTTP", http)
    _, inspect_metrics = run_inspect(tmp_path / "logs")
    through_inspect = len(counted)
    _, lmeval_metrics = run_lmeval(fake_server.base_url)
    through_lmeval = len(counted) - through_inspect
    # Every judgment goes through the transport chosen (the judge check is not counted: Inspect
    # sends it through the grader or, when the role is bound before the task is built, with the
    # SDK's synchronous client, as lm-eval does). The model under test is not a judge.
    expected = (JUDGMENTS, JUDGMENTS) if http == "aiohttp" else (0, 0)
    assert (through_inspect, through_lmeval) == expected
    assert set(counted) <= {"/v1/chat/completions"}
    assert {k: inspect_metrics[k] for k in HEADLINE} == {k: lmeval_metrics[k] for k in HEADLINE}


@pytest.mark.parametrize("http", ["aiohttp", "httpx"])
@pytest.mark.parametrize("where", ["refused", "dropped"])
def test_a_failed_connection_is_a_connection_error_in_either_transport(fake_server, monkeypatch, http, where):
    # aiohttp's error table makes a refused or dropped connection a connect time-out; the judge's
    # reason would say "Request timed out." for a mistyped port. Both transports say what httpx says.
    import asyncio

    from openai import APIConnectionError

    from clinconsensus_tasks.judge.client import JudgeSettings
    from clinconsensus_tasks.judge.protocol import openai_client

    monkeypatch.setenv("CLINCONSENSUS_JUDGE_HTTP", http)
    fake_server.script("judge-drop", lambda request: None)  # closes the connection with no reply
    url = "http://127.0.0.1:9/v1" if where == "refused" else fake_server.base_url  # nothing listens on port 9
    settings = JudgeSettings(base_url=url, model="judge-drop", api_key="test-key", timeout=10.0)

    async def ask():
        client = openai_client(settings, retries=0)
        try:
            await client.chat.completions.create(model="judge-drop", messages=[{"role": "user", "content": "x"}])
        finally:
            await client.close()

    with pytest.raises(APIConnectionError) as raised:
        asyncio.run(ask())
    assert type(raised.value).__name__ == "APIConnectionError" and str(raised.value) == "Connection error."


def test_one_client_serves_one_event_loop_after_another(fake_server):
    # Inspect keeps a model, its SDK client and this transport, from one eval() to the next, each
    # in an event loop of its own; an aiohttp session serves only the loop it was made in.
    import asyncio

    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=fake_server.base_url, api_key="test-key", http_client=async_http_client({}), max_retries=0)

    async def ask():
        reply = await client.chat.completions.create(model="cand-model", messages=[{"role": "user", "content": "头痛三天怎么办？"}])
        return reply.choices[0].message.content

    answers = [asyncio.run(ask()) for _ in range(3)]
    assert len(set(answers)) == 1 and answers[0]
    assert fake_server.stats()["calls"] == {"cand-model": 3}


# -- every session the transport opens is closed (issue 58, item 8d) ----------------------------------


def _session_of(client):
    return client._transport.client  # the aiohttp session the transport opened in the loop that asked


@pytest.mark.parametrize("ending", ["normal", "error", "cancelled"])
def test_a_session_left_open_by_its_owner_is_closed_when_its_event_loop_ends(fake_server, ending):
    # Inspect never closes a model's client (neither `inspect eval` nor `inspect score` does), so the
    # transport closes the session it opened when the event loop that used it ends, however it ends.
    import asyncio

    http = async_http_client({})
    opened = []

    async def ask():
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=fake_server.base_url, api_key="test-key", http_client=http, max_retries=0)
        await client.chat.completions.create(model="cand-model", messages=[{"role": "user", "content": "头痛三天怎么办？"}])
        opened.append(_session_of(http))
        if ending == "error":
            raise RuntimeError("the caller failed")
        if ending == "cancelled":
            asyncio.current_task().cancel()
            await asyncio.sleep(1)

    expected = {"normal": None, "error": RuntimeError, "cancelled": asyncio.CancelledError}[ending]
    if expected is None:
        asyncio.run(ask())
    else:
        with pytest.raises(expected):
            asyncio.run(ask())
    (session,) = opened
    assert session.closed
    asyncio.run(ask()) if ending == "normal" else None  # the same client in the next loop: a session of its own, closed too
    assert ending != "normal" or (opened[1] is not session and opened[1].closed)


def _no_unclosed(result) -> None:
    said = result.stdout + result.stderr
    assert result.returncode == 0, said[-3000:]
    assert "Unclosed" not in said, f"{' '.join(result.args[:3])}: {said[-3000:]}"


@pytest.mark.slow
def test_no_unclosed_session_after_inspect_eval_inspect_score_or_the_reliability_check(fake_server, tmp_path):
    # The commands as a user types them (docs/failures-and-recovery.md: `inspect score LOG --overwrite
    # --action overwrite` finishes a run), each a process of its own, grader role bound to the stand-in:
    # aiohttp prints "Unclosed client session" / "Unclosed connector" when a session is left open.
    import os
    import subprocess
    import sys
    from pathlib import Path

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "COLUMNS": "200"}

    def run(*command, cache: str):
        return subprocess.run([str(bin_dir / command[0]), *command[1:]], capture_output=True, text=True, timeout=600,
                              env={**env, "INSPECT_CACHE_DIR": str(tmp_path / cache)}, cwd=tmp_path)

    _no_unclosed(run("inspect", "eval", "clinconsensus_tasks/clinconsensus", "-T", "data=sample", "--limit", "2",
                     "--model", "openai-api/cand/cand-model", "--model-role", "grader=openai-api/judge/judge-model",
                     "--log-dir", str(tmp_path / "logs"), "--display", "plain", cache="eval-cache"))
    (log,) = (tmp_path / "logs").glob("*.eval")
    calls = fake_server.stats()["calls"]["judge-model"]
    _no_unclosed(run("inspect", "score", str(log), "--overwrite", "--action", "overwrite", "--display", "plain",
                     cache="score-cache"))  # a cache of its own: the judge is asked again, over HTTP
    assert fake_server.stats()["calls"]["judge-model"] > calls
    _no_unclosed(run("clinconsensus-eval", "reliability", str(log), "--output", str(tmp_path / "check"), "--cases", "2",
                     "--transforms", "none", "--resamples", "50", cache="check-cache"))
