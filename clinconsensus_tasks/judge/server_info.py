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

How many requests it works on at once (``slots``), where it can be known: llama-cpp-python's
server one (it holds one model behind a lock: more requests only wait in its queue until the
client's time-out, and are sent again); llama.cpp's server the ``total_slots`` of its ``GET
/props``. Both frameworks then keep no more judge requests in flight than that (lm-eval's client
lowers its concurrency, Inspect's calls wait their turn before they are sent), and say so.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
    slots: int | None = None  # requests the server works on at once, where it says (or is known)

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
    slots = None
    if owner == "llamacpp" or (owner == "me" and "permissions" in entry):  # llama.cpp's server; llama-cpp-python's
        kind = LLAMA_CPP
        slots = 1 if owner == "me" else None  # llama-cpp-python answers one request at a time
    length = entry.get("max_model_len")
    return ServerInfo(kind, length if isinstance(length, int) and length > 0 else None, slots)


def read_props(props: Mapping[str, Any]) -> int | None:
    """llama.cpp's server's ``total_slots`` from its ``GET /props`` reply."""
    slots = props.get("total_slots")
    return slots if isinstance(slots, int) and slots > 0 else None


def _get_json(url: str, api_key: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(request, timeout=ASK_TIMEOUT) as reply:
        return json.loads(reply.read().decode("utf-8"))


_ASKED: dict[tuple[str, str], ServerInfo] = {}


def ask_server(base_url: str, api_key: str, model: str, declared: str = AUTO) -> ServerInfo:
    """The judge server's :class:`ServerInfo`: ``GET {base_url}/models`` once per (URL, model) and
    process. A declared kind (``vllm``, ``sglang``, ``openai``) wins over what the server says;
    its ``max_model_len`` is still read if the server reports one."""
    key = (base_url.rstrip("/"), model)
    if key not in _ASKED:
        try:
            found = read_models(_get_json(f"{key[0]}/models", api_key), model)
        except (OSError, ValueError):
            found = ServerInfo()
        if found.kind == LLAMA_CPP and found.slots is None:  # llama.cpp's server: /props, beside /v1
            try:
                found = replace(found, slots=read_props(_get_json(f"{key[0].removesuffix('/v1')}/props", api_key)))
            except (OSError, ValueError):
                pass
        _ASKED[key] = found
    found = _ASKED[key]
    return found if declared == AUTO else ServerInfo(declared, found.max_model_len, found.slots)


def in_flight(concurrency: int, server: ServerInfo, who: str) -> int:
    """``concurrency`` bounded by the server's ``slots``, saying so on standard error when it is."""
    if server.slots is None or server.slots >= concurrency:
        return concurrency
    print(f"[clinconsensus] judge {who}: its server works on {server.slots} request(s) at a time ({server.kind}); "
          f"{server.slots} in flight instead of {concurrency}", file=sys.stderr)
    return server.slots


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
