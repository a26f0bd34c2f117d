"""What kind of server a judge runs on, asked once per run, and what follows from it.

Why: the released judge (ClinConsensus-Judge-8B, a Qwen3-8B) thinks before it answers unless its
chat template is told ``enable_thinking=False``; thinking spends its 512-token budget and was off
in the official runner. vLLM and SGLang take that switch as a top-level request field
``chat_template_kwargs``; a hosted API such as OpenAI's answers 400 to a field it does not know.
So the field is sent exactly when the server is known to take it, and never otherwise.

How the kind is known: the setting ``CLINCONSENSUS_JUDGE_SERVER`` (``CLINCONSENSUS_LOCAL_JUDGE_SERVER``
for the second judge; ``--metadata`` ``judge_server`` in lm-eval) when set to ``vllm``, ``sglang``
``openai`` or ``llamacpp``; else (``auto``) the server's ``GET /v1/models``: vLLM and SGLang name
themselves in ``owned_by`` and report the context length as ``max_model_len``; llama.cpp's server
says ``llamacpp``, llama-cpp-python's ``me`` with a ``permissions`` list. The kind also picks the
form of structured output (``judge.protocol.response_format``). A server that does not answer,
or answers in another shape, is treated as a hosted API: nothing is added to the request.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clinconsensus_tasks.errors import ConfigurationError

AUTO, VLLM, SGLANG, OPENAI, LLAMA_CPP = "auto", "vllm", "sglang", "openai", "llamacpp"
STAND_IN = "stand-in"  # the project's own stand-in server (demo, tests): requests as to a hosted API
STAND_IN_OWNER = "clinconsensus-stand-in"  # what it says in ``owned_by``
SERVER_KINDS = (AUTO, VLLM, SGLANG, OPENAI, LLAMA_CPP)
TAKES_CHAT_TEMPLATE_KWARGS = (VLLM, SGLANG)
THINKING_OFF = {"enable_thinking": False}
ASK_TIMEOUT = 10.0


@dataclass(frozen=True)
class ServerInfo:
    """A judge server's kind (``vllm``, ``sglang`` or ``openai`` for anything else) and, if it
    says, the most tokens a request may hold (prompt and completion together)."""

    kind: str = OPENAI
    max_model_len: int | None = None

    @property
    def takes_chat_template_kwargs(self) -> bool:
        return self.kind in TAKES_CHAT_TEMPLATE_KWARGS


def check_kind(value: str | None, source: str) -> str:
    kind = (value or "").strip().lower() or AUTO
    if kind not in SERVER_KINDS:
        raise ConfigurationError(f"{source}={value!r}: expected one of {', '.join(SERVER_KINDS)}")
    return kind


def read_models(listing: Mapping[str, Any], model: str) -> ServerInfo:
    """The :class:`ServerInfo` in a ``/v1/models`` reply: the entry of ``model`` (else the first)."""
    entries = [e for e in listing.get("data") or [] if isinstance(e, Mapping)]
    entry = next((e for e in entries if e.get("id") == model), entries[0] if entries else {})
    owner = str(entry.get("owned_by") or "").lower()
    kind = owner if owner in TAKES_CHAT_TEMPLATE_KWARGS else STAND_IN if owner == STAND_IN_OWNER else OPENAI
    if owner == "llamacpp" or (owner == "me" and "permissions" in entry):  # llama.cpp's server; llama-cpp-python's
        kind = LLAMA_CPP
    length = entry.get("max_model_len")
    return ServerInfo(kind, length if isinstance(length, int) and length > 0 else None)


_ASKED: dict[tuple[str, str], ServerInfo] = {}


def ask_server(base_url: str, api_key: str, model: str, declared: str = AUTO) -> ServerInfo:
    """The judge server's :class:`ServerInfo`: ``GET {base_url}/models`` once per (URL, model) and
    process. A declared kind (``vllm``, ``sglang``, ``openai``) wins over what the server says;
    its ``max_model_len`` is still read if the server reports one."""
    key = (base_url.rstrip("/"), model)
    if key not in _ASKED:
        request = urllib.request.Request(f"{key[0]}/models", headers={"Authorization": f"Bearer {api_key}"})
        try:
            with urllib.request.urlopen(request, timeout=ASK_TIMEOUT) as reply:
                _ASKED[key] = read_models(json.loads(reply.read().decode("utf-8")), model)
        except (OSError, ValueError):
            _ASKED[key] = ServerInfo()
    found = _ASKED[key]
    return found if declared == AUTO else ServerInfo(declared, found.max_model_len)


def known_kind(base_url: str | None, model: str) -> str:
    """The kind :func:`ask_server` found for ``(base_url, model)`` in this process, without asking
    again; ``""`` when it was never asked (in-process judges, or a kind declared by setting)."""
    found = _ASKED.get(((base_url or "").rstrip("/"), model))
    return found.kind if found is not None else ""


def with_thinking_off(info: ServerInfo, extra_body: Mapping[str, Any]) -> dict[str, Any]:
    """``extra_body`` plus ``chat_template_kwargs: {"enable_thinking": false}`` when the server
    takes the field; a user's own ``chat_template_kwargs`` keys win. Unchanged otherwise."""
    body = dict(extra_body)
    if info.takes_chat_template_kwargs:
        body["chat_template_kwargs"] = {**THINKING_OFF, **dict(body.get("chat_template_kwargs") or {})}
    return body
