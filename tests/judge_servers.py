"""Two judge servers as the frameworks meet them, in front of the stand-in (``fake_server``).

``ServerFront`` forwards every POST to the stand-in over real HTTP and records the request bodies.
Its ``GET /v1/models`` answers in one of two real shapes:

* ``vllm``: as vLLM answers (``owned_by: "vllm"``, ``max_model_len``), and, as vLLM does, it
  refuses (400) a request whose prompt does not fit ``max_model_len`` with its ``max_tokens``,
  counting the prompt as the project's estimate times ``tokens_per_estimate`` (a tokenizer that
  counts more than the estimate);
* ``openai``: as OpenAI's API answers (``owned_by: "openai"``, no length), and, as that API does,
  it refuses (400) a request carrying a field the API does not know (``chat_template_kwargs``);
* ``llamacpp``: as llama-cpp-python's server answers (``owned_by: "me"`` with a ``permissions``
  list, no length: with ``max_model_len`` it refuses a longer request without having listed it),
  and, as that server does (tests/real_server/ meets the real one), it refuses a
  ``response_format`` of type ``json_schema`` (HTTP 500 there; 400 here), taking only ``text`` and
  ``json_object`` (with an optional ``schema``).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackServer

from clinconsensus_tasks.judge.input_limit import request_tokens

def configure_stand_in(stand_in: Any, settings: dict[str, Any]) -> None:
    """Change a running stand-in's settings (``latency``, ``answer_chars``) over its ``/config`` route."""
    request = urllib.request.Request(f"{stand_in.base_url}/config", data=json.dumps(settings).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).read()


OPENAI_FIELDS = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "seed", "stop", "n",
                 "top_p", "stream", "stream_options", "logprobs", "top_logprobs", "frequency_penalty", "presence_penalty",
                 "response_format", "tools", "tool_choice", "parallel_tool_calls", "user", "metadata", "store"}


class ServerFront(LoopbackServer):
    def __init__(self, upstream: str, kind: str, max_model_len: int | None = None, tokens_per_estimate: float = 1.0):
        self.upstream, self.kind, self.max_model_len = upstream.rstrip("/"), kind, max_model_len
        self.tokens_per_estimate = tokens_per_estimate  # the server's tokenizer against the project's estimate
        self.bodies: list[dict[str, Any]] = []
        self.refused: list[str] = []
        self.in_flight = self.most_in_flight = 0  # judge requests being answered at once
        self._lock = threading.Lock()
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def reply(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self.reply(200, json.dumps(front.models()).encode())
                else:
                    self.reply(404, b"{}")

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw or b"{}")
                problem = front.problem(body)
                if problem:
                    front.refused.append(problem)
                    self.reply(400, json.dumps({"error": {"message": problem, "type": "invalid_request_error"}}).encode())
                    return
                front.bodies.append(body)
                request = urllib.request.Request(front.upstream + self.path.replace("/v1", "", 1), data=raw,
                                                 headers={"Content-Type": "application/json", "Authorization": "Bearer test-key"})
                judged = (body.get("max_tokens") or 0) > 8
                with front._lock:
                    front.in_flight += judged
                    front.most_in_flight = max(front.most_in_flight, front.in_flight)
                try:
                    with urllib.request.urlopen(request, timeout=60) as answer:
                        self.reply(answer.status, answer.read())
                except urllib.error.HTTPError as exc:
                    self.reply(exc.code, exc.read())
                finally:
                    with front._lock:
                        front.in_flight -= judged

        self.listen(Handler)

    def models(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": "any", "object": "model", "owned_by": self.kind}
        if self.kind == "llamacpp":
            entry.update(owned_by="me", permissions=[])
        if self.kind == "vllm" and self.max_model_len:
            entry["max_model_len"] = self.max_model_len
        return {"object": "list", "data": [entry]}

    def problem(self, body: dict[str, Any]) -> str:
        form = (body.get("response_format") or {}).get("type")
        if self.kind == "llamacpp" and form not in (None, "text", "json_object"):
            return f"response_format type {form!r} is not supported"
        if self.kind == "openai":
            unknown = sorted(set(body) - OPENAI_FIELDS)
            return f"Unrecognized request argument supplied: {', '.join(unknown)}" if unknown else ""
        if self.max_model_len and "messages" in body:  # in vLLM's and llama-cpp-python's words
            prompt = int(request_tokens(body["messages"]) * self.tokens_per_estimate)
            new = int(body.get("max_tokens") or 0)
            if prompt + new > self.max_model_len:
                return (f"This model's maximum context length is {self.max_model_len} tokens. However, you requested "
                        f"{prompt + new} tokens ({prompt} in the messages, {new} in the completion). "
                        "Please reduce the length of the messages or completion.")
        return ""

    def judge_bodies(self) -> list[dict[str, Any]]:
        """Bodies of judge requests (the connectivity probe left out)."""
        return [b for b in self.bodies if (b.get("max_tokens") or 0) > 8]

