"""The Inspect side of ``judge.server_info`` and ``judge.input_limit``: what a bound judge model's
provider and server take, found once per judge model and run.

* ``vllm/`` and ``sglang/`` providers are those servers: thinking is switched off through
  ``extra_body`` (``chat_template_kwargs``), and the context length is read from the server.
* ``hf/`` runs the model in process: its chat template gets ``enable_thinking=False`` unless the
  user passed ``-M enable_thinking=...`` (the provider reads the attribute at every call).
* any other provider with a base URL (``openai-api/...``, ``openai/`` pointed at a local server)
  is asked ``GET /v1/models`` (``judge.server_info.ask_server``): a vLLM or SGLang server gets the
  switch, anything else (a hosted API) is sent nothing it might reject.
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
    if not api.base_url:
        return ServerInfo(OPENAI if declared == AUTO else declared)
    return ask_server(api.base_url, str(api.api_key or ""), served_model_name(model), declared)


def judge_extra_body(model: Model, server: ServerInfo) -> dict[str, Any]:
    """The ``extra_body`` of every request to a judge, the judge check's and each judgment's: the
    role's own config's, plus thinking off where taken (``protocol.request_fields``)."""
    return request_fields(server, getattr(model.config, "extra_body", None))


def judges_provenance(graders: list[Model], local: Model | None, mode: str, prompt: dict[str, str]) -> dict[str, Any]:
    """``provenance`` (and ``local_provenance`` for a second judge) as lm-eval's records hold
    them: the model named as its server knows it, not by Inspect's ``provider/[service/]`` spelling.
    A jury's ``provenance`` names the panel and lists each juror's under ``jurors``."""
    out = {"provenance": jurors_provenance([(served_model_name(g), g.api.base_url) for g in graders], mode, prompt)}
    if local is not None:
        out["local_provenance"] = judge_provenance(served_model_name(local), local.api.base_url, mode, prompt)
    return out
