"""The Inspect side of ``judge.server_info`` and ``judge.input_limit``: what a bound judge model's
provider and server take, found once per judge model and run.

* ``vllm/`` and ``sglang/`` providers are those servers: thinking is switched off through
  ``extra_body`` (``chat_template_kwargs``), and the context length is read from the server.
* ``hf/`` runs the model in process: its chat template gets ``enable_thinking=False`` unless the
  user passed ``-M enable_thinking=...`` (the provider reads the attribute at every call).
* any other provider with a base URL (``openai-api/...``, ``openai/`` pointed at a local server
  by ``-M base_url`` or ``OPENAI_BASE_URL``: :func:`role_base_url`) is asked ``GET /v1/models``
  (``judge.server_info.ask_server``): a vLLM or SGLang server gets the switch, anything else (a
  hosted API) is sent nothing it might reject.
"""

from __future__ import annotations

import asyncio
from typing import Any

from inspect_ai.model import Model

from clinconsensus_tasks.inspect_compat import hf_thinking_off, provider_name
from clinconsensus_tasks.judge.protocol import request_fields
from clinconsensus_tasks.judge.provenance import judge_provenance, jurors_provenance
from clinconsensus_tasks.judge.server_info import (
    AUTO,
    OPENAI,
    SGLANG,
    VLLM,
    ServerInfo,
    ask_server,
)

_PROVIDER_KINDS = {"vllm": VLLM, "sglang": SGLANG}  # by the provider the model was named with


def served_model_name(model: Model) -> str:
    """The judge's model as its server knows it: ``judge-model`` for ``openai-api/judge/judge-model``
    (Inspect's ``model_name`` keeps the service: ``judge/judge-model``)."""
    api = model.api
    served = getattr(api, "service_model_name", None)
    return served() if callable(served) else api.model_name


HOSTED_OPENAI = "https://api.openai.com/v1"  # the OpenAI SDK's own base URL


def role_base_url(model: Model) -> str | None:
    """Where the judge role's requests go: its provider's base URL or, for an ``openai/`` judge
    given none, the URL its SDK client was made with when that is not OpenAI's own.
    ``OPENAI_BASE_URL`` sends an ``openai/`` judge to any server while Inspect's ``base_url`` stays
    ``None``; that server is asked what it is, recorded and kept apart in the response cache like
    any other (an environment variable must not hide the stand-in from the release gate)."""
    api = model.api
    if api.base_url:
        return str(api.base_url)
    if provider_name(model) == "openai":
        url = str(getattr(getattr(api, "client", None), "base_url", "") or "").rstrip("/")
        if url and url != HOSTED_OPENAI:
            return url
    return None


async def server_of(model: Model) -> ServerInfo:
    """The judge's :class:`ServerInfo` (``openai`` kind for in-process and hosted providers)."""
    return await asyncio.to_thread(server_now, model)


def server_now(model: Model) -> ServerInfo:
    """:func:`server_of` for a caller outside the event loop (the judge check made while the task is
    built): the server is asked here, blocking, once per URL and model (``ask_server``)."""
    api = model.api
    if provider_name(model) == "hf":
        hf_thinking_off(model)
        return ServerInfo(OPENAI)
    declared = _PROVIDER_KINDS.get(provider_name(model), AUTO)
    base_url = role_base_url(model)
    if not base_url:
        return ServerInfo(OPENAI if declared == AUTO else declared)
    return ask_server(base_url, str(api.api_key or ""), served_model_name(model), declared)


def judge_extra_body(model: Model, server: ServerInfo) -> dict[str, Any]:
    """The ``extra_body`` of every request to a judge, the judge check's and each judgment's: the
    role's own config's, plus thinking off where taken (``protocol.request_fields``)."""
    return request_fields(server, getattr(model.config, "extra_body", None))


def judges_provenance(graders: list[Model], local: Model | None, mode: str, prompt: dict[str, str]) -> dict[str, Any]:
    """``provenance`` (and ``local_provenance`` for a second judge) as lm-eval's records hold
    them: the model named as its server knows it, not by Inspect's ``provider/[service/]`` spelling.
    A jury's ``provenance`` names the panel and lists each juror's under ``jurors``."""
    out = {"provenance": jurors_provenance([(served_model_name(g), role_base_url(g)) for g in graders], mode, prompt)}
    if local is not None:
        out["local_provenance"] = judge_provenance(served_model_name(local), role_base_url(local), mode, prompt)
    return out
