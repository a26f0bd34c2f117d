"""The judge protocol: what every judge call is, whichever transport sends it.

A judge call is chat messages in and text out, greedy, with a verdict-sized token budget. The
transports (Inspect's model roles in ``clinconsensus.inspect_task``, the OpenAI SDK client of the
lm-eval path and the command line in ``judge.client``, the provider's batch API in
``judge.batch_api``) build their requests from this module, so these live here once:

* :func:`decoding`: the decoding settings of a call (temperature 0, ``max_tokens``, the judge's
  ``extra_body``). The batch API's requests and the verdict cache's keys are built from it, so a
  batch answer is found again by the synchronous client byte for byte;
* :func:`request_fields`: the extra fields every request to a judge carries, the judge check's
  and every judgment's alike (its ``extra_body``, and thinking off where its server takes it);
* the judge check: :data:`PROBE_MESSAGES` with :data:`PROBE_MAX_TOKENS`, and
  :func:`check_failed`, the one message of a judge that did not answer it;
* :func:`openai_client`: the SDK client every OpenAI-compatible request goes through (grading,
  the check, the batch API), so no transport imports another.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.judge.server_info import ServerInfo, with_thinking_off
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PROBE_MESSAGES
from clinconsensus_tasks.scorers.redact import redact

__all__ = ["PROBE_MAX_TOKENS", "PROBE_MESSAGES", "check_failed", "decoding", "async_http_client", "openai_client", "request_fields", "response_format"]

PROBE_MAX_TOKENS = 8  # the judge check asks for a word, not a verdict


def decoding(max_tokens: int, extra_body: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The decoding settings of one judge call: greedy, ``max_tokens`` new tokens, and the judge's
    ``extra_body`` (thinking switch, ``response_format``) merged in."""
    return {"temperature": 0.0, "max_tokens": max_tokens, **dict(extra_body or {})}


def request_fields(server: ServerInfo, extra_body: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The extra fields of every request to a judge on ``server``: the judge check's and each
    judgment's, in both frameworks, so they cannot differ. The judge's own ``extra_body``, plus
    ``chat_template_kwargs: {"enable_thinking": false}`` where the server takes it (vLLM, SGLang:
    the released judge thinks unless told, and the official runner told it); a hosted API gets
    nothing added (``judge.server_info``). A judgment may add ``response_format`` on top (the
    check asks for a word, not a verdict)."""
    return with_thinking_off(server, extra_body or {})


def response_format(server_kind: str, mode: str) -> dict[str, Any]:
    """The ``response_format`` that asks the judge's server for the verdict's JSON schema, in the
    form that server takes: OpenAI's ``json_schema`` (hosted APIs, vLLM, SGLang), or llama.cpp's
    ``json_object`` with a ``schema``, which its server enforces with a grammar (it answers the
    ``json_schema`` form with HTTP 500)."""
    from clinconsensus_tasks.judge.server_info import LLAMA_CPP
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import openai_response_format, verdict_schema

    if server_kind == LLAMA_CPP:
        return {"type": "json_object", "schema": verdict_schema(mode)}
    return openai_response_format(mode)


def check_failed(judge: str, where: str, reason: str, hint: str) -> ConfigurationError:
    """The error of a judge that did not answer the check: which judge, where, why (redacted: an
    SDK's text may repeat what it was sent) and what to check."""
    return ConfigurationError(f"The judge {judge} at {where} did not answer a test request ({redact(reason)}). {hint}")


def openai_client(settings: Any, asynchronous: bool = True, retries: int | None = None) -> Any:
    """The OpenAI SDK client of a judge's settings (``judge.client.JudgeSettings``): base URL, key,
    time-out, and for the asynchronous client the HTTP transport of :func:`async_http_client`.
    ``retries``: the SDK's own retries (default ``settings.max_retries``; the grading client
    retries itself, so that its breaker sees every attempt)."""
    from openai import AsyncOpenAI, OpenAI

    transport = async_http_client() if asynchronous else None
    kind = AsyncOpenAI if asynchronous else OpenAI
    return kind(base_url=settings.base_url, api_key=settings.api_key, timeout=settings.timeout,
                max_retries=settings.max_retries if retries is None else retries,
                **({"http_client": transport} if transport is not None else {}))


AIOHTTP, HTTPX = "aiohttp", "httpx"
_PROXY_VARIABLES = ("https_proxy", "http_proxy", "all_proxy")
SDK_CONNECTIONS = 1000  # the OpenAI SDK's own pool limit; the callers bound what is in flight


def async_http_client(env: Mapping[str, str] | None = None) -> Any | None:
    """The HTTP client judge requests go through, in both frameworks (Inspect: the grader role's
    provider, where it is OpenAI-compatible): the OpenAI SDK's aiohttp transport, or ``None`` for
    the SDK's default httpx client.

    Why: httpx's connection pool asks every pooled connection whether it has expired each time it
    places a request, so each request costs more the more connections there are (22% of
    Inspect's judge-path CPU at 256 connections, ``bench/cache_order.py``); aiohttp's connector
    does not. httpx stays where the user said so (``CLINCONSENSUS_JUDGE_HTTP=httpx``), behind a
    proxy (a proxy variable set: httpx's proxy handling is the one the frameworks' own clients
    use and this project tests), or where the SDK's aiohttp transport cannot be had."""
    env = os.environ if env is None else env
    if (settings_table.raw("judge_http", env) or AIOHTTP).lower() == HTTPX:
        return None
    if any(env.get(name) or env.get(name.upper()) for name in _PROXY_VARIABLES):
        return None
    try:
        return _aiohttp_client()
    except (ImportError, RuntimeError):  # the SDK without its aiohttp transport
        return None


def _aiohttp_client() -> Any:
    import asyncio
    import warnings

    import aiohttp
    import httpx2
    from openai import DefaultAioHttpClient
    from openai._vendor.httpx_aiohttp import AiohttpTransport

    class Transport(AiohttpTransport):
        """The SDK's aiohttp transport, with three corrections:

        * a session for each event loop: an aiohttp session serves only the loop it was made in,
          and Inspect keeps a model (its client, this transport) from one ``eval()`` to the next,
          each in a loop of its own; a session left by a loop that is gone is let go, closed;
        * the session is closed when its event loop ends, however it ends (normally, on an error,
          cancelled), whoever owns the client: Inspect closes no model's client (neither ``inspect
          eval`` nor ``inspect score``), and aiohttp prints "Unclosed client session" and
          "Unclosed connector" for a session left open (:func:`_closed_with_its_loop`);
        * a connection that failed (refused, reset, closed with no reply) is a connection error,
          as httpx reports it (the SDK's ``APIConnectionError``), where the transport's error
          table makes it a connect time-out."""

        loop: asyncio.AbstractEventLoop | None = None
        closer: Any = None  # the loop's async generator that closes the session when the loop shuts down

        async def handle_async_request(self, request: Any) -> Any:
            running = asyncio.get_running_loop()
            if self.loop is not running:
                self.loop, stale, self.client = running, self.client, None
                if isinstance(stale, aiohttp.ClientSession) and stale.connector is not None:
                    # Its loop is gone: the connector's synchronous close only marks it closed
                    # (its connections went with the loop), with nothing left to await.
                    with warnings.catch_warnings():  # "close() is a coroutine": not on a loop that is gone
                        warnings.simplefilter("ignore", DeprecationWarning)
                        aiohttp.BaseConnector.close(stale.connector)
                    stale.detach()
                self.closer = _closed_with_its_loop(self, running)
                await self.closer.__anext__()  # now the loop holds it, to close at its end
            try:
                return await super().handle_async_request(request)
            except httpx2.ConnectTimeout as exc:
                cause = exc.__cause__
                if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, aiohttp.ServerTimeoutError):
                    raise httpx2.ConnectError(str(cause), request=request) from cause
                raise

    limits = httpx2.Limits(max_connections=SDK_CONNECTIONS, max_keepalive_connections=SDK_CONNECTIONS)
    return DefaultAioHttpClient(transport=Transport(limits=limits), limits=limits)


async def _closed_with_its_loop(transport: Any, loop: Any) -> Any:
    """Close the session ``transport`` opens in ``loop`` when the loop ends.

    An event loop has one hook at its end that runs in the loop: ``asyncio.run`` and
    ``anyio.run`` (Inspect's) call ``loop.shutdown_asyncgens()`` on every way out (the main task
    returned, raised or was cancelled), which closes each async generator the loop saw start and
    that is still suspended; this one is suspended at its ``yield`` from the transport's first
    request in the loop, so its ``finally`` awaits the session's close there. A client closed by
    its owner first (``JudgeClient.aclose``, the SDK's ``close()``) leaves nothing to close. A loop
    closed without that call is left as before: the next loop's first request lets its session go."""
    import contextlib

    import aiohttp

    try:
        yield
    finally:
        if transport.loop is loop:
            session, transport.client, transport.loop = transport.client, None, None
            if isinstance(session, aiohttp.ClientSession):
                with contextlib.suppress(Exception):  # the loop is ending: nothing is left to tell of a failed close
                    await session.close()
