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
    # Every judgment goes through the transport chosen, and Inspect's judge check (sent by the
    # solver through the grader); lm-eval's check uses the SDK's synchronous client. The model
    # under test is not a judge: its requests never do.
    expected = (JUDGMENTS + 1, JUDGMENTS) if http == "aiohttp" else (0, 0)
    assert (through_inspect, through_lmeval) == expected
    assert set(counted) <= {"/v1/chat/completions"}
    assert {k: inspect_metrics[k] for k in HEADLINE} == {k: lmeval_metrics[k] for k in HEADLINE}
