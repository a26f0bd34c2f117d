"""The stand-in's HTTP side: routes, settings, scripted models, and :class:`FakeOpenAIServer`.

A chat request goes, in this order, to the test's script for its model name
(:meth:`FakeOpenAIServer.script`), to the ``unauthorized`` rule (HTTP 401), to the judge
(:func:`~clinconsensus_tasks.stand_in.judges.judge_reply`) when it is a judge prompt, and
otherwise to the candidate (:func:`~clinconsensus_tasks.stand_in.candidates.candidate_reply`).
Counting is :class:`~clinconsensus_tasks.stand_in.usage.Ledger`'s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from clinconsensus_tasks.scorers.clinconsensus.judge_template import parse_template
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PROBE_SYSTEM
from clinconsensus_tasks.judge.server_info import STAND_IN_OWNER
from clinconsensus_tasks.stand_in.candidates import candidate_reply
from clinconsensus_tasks.stand_in.judges import (
    CRITERION_MARK, JUDGE_KINDS, JudgeReply, judge_reply, outage_for, template_pattern,
)
from clinconsensus_tasks.stand_in.usage import Ledger, prompt_tokens, usage_for

SCRIPTED_OWNER = "scripted-test-judge"  # a test's scripted model stands in for a real hosted judge


def _text_of(message: dict[str, Any]) -> str:
    """A message's text: its string content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


@dataclass(frozen=True)
class ScriptedRequest:
    """A chat request to a scripted model, as its script sees it (``attempt``: how many times this
    judgment has been asked, this time included: the times this exact body was received, plus
    the earlier replies a re-ask carries as assistant messages)."""

    model: str
    messages: list[dict[str, Any]]
    body: dict[str, Any]
    attempt: int
    texts: list[str]  # each message's text

    @property
    def user(self) -> str:
        """The first user message's text: the question, or the judge prompt (a re-ask's later
        user message is only the note that the reply before it was no verdict)."""
        return next((t for m, t in zip(self.messages, self.texts) if m.get("role") == "user"), "")

    @property
    def system(self) -> str:
        """The first system (or developer) message's text."""
        return next((t for m, t in zip(self.messages, self.texts) if m.get("role") in ("system", "developer")), "")


class State:
    """A running server's settings (changed by ``POST /config``), scripts and counters."""

    def __init__(self, latency: float, answer_chars: int = 0):
        self.latency = latency
        self.answer_chars = answer_chars
        self.cache_min_tokens = 0  # a prefix shorter than this is never served cached (OpenAI: 1,024)
        self.templates: list[re.Pattern[str]] = []
        self.record_judge_messages = False
        self.scripts: dict[str, Callable[[ScriptedRequest], Any]] = {}  # model name -> script
        self.ledger = Ledger()

    def configure(self, settings: dict[str, Any]) -> dict[str, Any]:
        self.latency = float(settings.get("latency", self.latency))
        self.answer_chars = int(settings.get("answer_chars", self.answer_chars))
        self.cache_min_tokens = int(settings.get("cache_min_tokens", self.cache_min_tokens))
        if "judge_templates" in settings:
            self.templates = [template_pattern(t) for t in settings["judge_templates"]]
        if "record_judge_messages" in settings:
            self.record_judge_messages = bool(settings["record_judge_messages"])
        return {"latency": self.latency, "answer_chars": self.answer_chars, "judge_templates": len(self.templates)}

    def match_template(self, request: ScriptedRequest) -> "re.Match[str] | None":
        """The filled-in registered template, if the request opens with a user message made from one
        and has no system message (a re-ask adds the refused reply and a note after it)."""
        messages = request.messages
        if not self.templates or not messages or messages[0].get("role") != "user" or any(m.get("role") == "system" for m in messages):
            return None
        return next((m for m in (p.match(request.user) for p in self.templates) if m), None)


def _error(status: int, message: str, kind: str = "fake", code: Any = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": status if code is None else code}}


def _completion(request: ScriptedRequest, content: str, usage: dict[str, Any], reply_id: str,
                finish_reason: str = "stop") -> dict[str, Any]:
    return {"id": reply_id, "object": "chat.completion", "created": 0, "model": request.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
            "usage": usage}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    @property
    def state(self) -> State:
        return self.server.state

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.state.ledger.status(status)

    def _drop(self) -> None:
        """Close the connection with no reply at all."""
        self.close_connection = True
        self.connection.shutdown(2)

    def do_GET(self) -> None:
        route = self.path.rstrip("/")
        if route.endswith("/stats"):
            self._send(200, self.state.ledger.snapshot())
        elif route.endswith("/judge_messages"):
            self._send(200, {"messages": self.state.ledger.kept()[1]})
        elif route.endswith("/models"):
            # The stand-in names itself, so a run's provenance and the release gate can tell it from a
            # real judge; a test's scripted models play a real hosted judge and are listed as one.
            scripted = [{"id": name, "object": "model", "owned_by": SCRIPTED_OWNER} for name in sorted(self.state.scripts)]
            self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": STAND_IN_OWNER}, *scripted]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        route = self.path.rstrip("/")
        if route.endswith("/reset"):
            self.state.ledger.reset()
            self._send(200, {"ok": True})
        elif route.endswith("/config"):
            self._send(200, self.state.configure(json.loads(raw or b"{}")))
        elif route.endswith("/chat/completions"):
            self._chat(raw)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _chat(self, raw: bytes) -> None:
        body = json.loads(raw)
        model = str(body.get("model", ""))
        messages = body.get("messages", [])
        texts = [_text_of(m) for m in messages]
        key = hashlib.sha256(raw).hexdigest()
        attempt = self.state.ledger.request(model, key, sum(len(t) for t in texts)) + sum(m.get("role") == "assistant" for m in messages)
        request = ScriptedRequest(model, messages, body, attempt, texts)
        script = self.state.scripts.get(model)
        if script is not None and request.system != PROBE_SYSTEM:
            self._scripted(script, request)
            return
        if "unauthorized" in model:  # a wrong API key: every request
            self.state.ledger.kind("rejected")
            self._send(401, _error(401, "injected 401"))
            return
        filled = None if request.system else self.state.match_template(request)
        judged = judge_reply(model, request.system, request.user, attempt, filled)
        if judged is None:
            self._as_candidate(request, key)
        else:
            if filled is not None and self.state.record_judge_messages:
                self.state.ledger.keep_judge_messages(messages)
            self._as_judge(request, judged, key, filled)

    def _as_candidate(self, request: ScriptedRequest, key: str) -> None:
        reply = candidate_reply(request.model, request.user, self.state.answer_chars)
        ledger = self.state.ledger
        if reply.climedbench:
            ledger.keep_climedbench_prompt(request.user)
        ledger.kind("candidate")
        ledger.output(reply.content)
        usage = usage_for(request.texts, reply.content, None)
        self._send(200, _completion(request, reply.content, usage, f"chatcmpl-{key[:12]}", reply.finish_reason))

    def _as_judge(self, request: ScriptedRequest, reply: JudgeReply, key: str, filled: "re.Match[str] | None") -> None:
        ledger = self.state.ledger
        ledger.kind(reply.kind)
        judging = reply.kind in JUDGE_KINDS  # the judge check is answered at once and never fails
        # Everything before the rubric item is the prefix a provider's prompt cache can serve.
        prefix = request.system + "\x1f" + (request.user[: filled.start("rubric_item")] if filled else request.user.split(CRITERION_MARK, 1)[0])
        cached = None
        if judging:
            if ledger.judge_request(request.body, sum(len(t) for t in request.texts), prefix):
                cached = [t for t in prefix.split("\x1f") if t]
                if prompt_tokens(cached) < self.state.cache_min_tokens:
                    cached = None
            if self.state.latency:
                time.sleep(self.state.latency)
            if self._outage(request.model):
                return
        if reply.status != 200:
            headers = {"Retry-After": "0", "retry-after-ms": "10"} if reply.status == 429 else {}
            self._send(reply.status, _error(reply.status, f"injected {reply.status}"), headers)
            return
        if judging:
            ledger.judge_output(reply.content, prefix)
        else:
            ledger.output(reply.content)
        usage = usage_for(request.texts, reply.content, cached)
        if judging:
            ledger.judge_tokens(usage)
        self._send(200, _completion(request, reply.content, usage, f"chatcmpl-{key[:12]}"))

    def _outage(self, model: str) -> bool:
        """Answer a judge call the way a broken judge does; False when this judge is not broken."""
        outage = outage_for(model)
        if outage is None:
            return False
        if outage.delay:
            time.sleep(outage.delay)
        if outage.status is None:
            self._drop()
        else:
            self._send(outage.status, {"error": outage.error})
        return True

    def _scripted(self, script: Callable[[ScriptedRequest], Any], request: ScriptedRequest) -> None:
        """Reply with what a test's script returns: reply text, ``(status, text)``, or ``None`` to
        close the connection with no reply. A status other than 200 is sent as an error body."""
        reply = script(request)
        if reply is None:
            self._drop()
            return
        status, content = reply if isinstance(reply, tuple) else (200, reply)
        if status != 200:
            self._send(status, _error(status, content or f"scripted {status}", "scripted"))
            return
        self._send(200, _completion(request, content, usage_for(request.texts, content, None), "chatcmpl-scripted"))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The default listen backlog (5) drops connection attempts when a client opens dozens at
    # once, and each dropped SYN costs a 1 s retransmit: keep room for real concurrency (bench/cache_order.py opens 512).
    request_queue_size = 1024
    state: State


class FakeOpenAIServer:
    """Start the server on 127.0.0.1 in a background thread: ``with FakeOpenAIServer() as s: s.base_url``."""

    def __init__(self, latency: float = 0.0, port: int = 0, answer_chars: int = 0, judge_templates: tuple[str, ...] = ()):
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.state = State(latency, answer_chars)
        self.set_judge_templates(judge_templates)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        return self._server.state.ledger.snapshot()

    def reset(self) -> None:
        """Clear counters and remembered prefixes, and remove every script."""
        self._server.state.ledger.reset()
        self._server.state.scripts.clear()

    def climedbench_prompts(self) -> list[str]:
        """The CliMedBench prompts received since the last reset, in arrival order."""
        return self._server.state.ledger.kept()[0]

    def script(self, model: str, reply: Callable[[ScriptedRequest], Any] | None) -> None:
        """Script every request (but the judge check) for ``model``: ``reply(ScriptedRequest)``
        returns the reply text, ``(status, text)`` or ``None`` (close the connection). ``None`` as
        ``reply`` removes the script. For tests that need a judge or a model no name rule covers."""
        if reply is None:
            self._server.state.scripts.pop(model, None)
        else:
            self._server.state.scripts[model] = reply

    def set_latency(self, seconds: float) -> None:
        self._server.state.latency = seconds

    def set_judge_templates(self, texts: Any, record: bool = False) -> None:
        """Recognise judge requests filled in from these templates (see the package docstring)."""
        self._server.state.configure({"judge_templates": list(texts), "record_judge_messages": record})

    def judge_messages(self) -> list[list[dict[str, Any]]]:
        """The template judge requests received since the last reset (with ``record``)."""
        return self._server.state.ledger.kept()[1]

    def start(self) -> "FakeOpenAIServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


MODEL_NAMES_HELP = """\
Model names: requests to /v1/chat/completions name a model; any name works, and these words in
it change what the server does:
  (any other name)  candidate: a fixed answer per question; ClinConsensus questions get a
                    generic clinical answer, CliMedBench prompts an answer in one of the shapes
                    real models use; judge prompts get verdicts fixed by (answer, criterion)
  empty             candidate answers with empty content
  examinee          CliMedBench answers depend on the model name too (several examinees differ)
  markdown          candidate: ClinConsensus answers as Markdown (a heading, bullets, bold)
  unauthorized      every request gets HTTP 401 (a wrong API key)
  flaky             judge faults: HTTP 429 or 500 on a first attempt, a malformed verdict once,
                    or a verdict malformed on every attempt
  alt               a judge that disagrees with the others on a fixed fifth of the criteria
  unreadable        a judge that writes prose, never a verdict: one reply to a request, another to
                    every re-ask of it
  flipN             a judge that reverses its verdict on a fixed half of the criteria with
                    probability N% on each ask of a request (flip10: 10%); the ask's number is how
                    often the server received that request
  courteous         a judge that says met whenever the answer ends with a courteous closing line
                    (every judge here reads an answer's content, not its Markdown, line breaks,
                    script or closing line)
Other routes: GET /v1/stats (call counts), POST /v1/reset, POST /v1/config
{"latency": s, "answer_chars": n, "cache_min_tokens": n}. The server binds 127.0.0.1 only and prints PORT <n> when ready.
"""


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The stand-in's options, for ``python -m clinconsensus_tasks.stand_in`` and
    ``clinconsensus-eval serve-stand-in`` alike."""
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each judge response")
    parser.add_argument("--answer-chars", type=int, default=0, help="pad candidate answers to this length (0: no padding)")
    parser.add_argument("--judge-template", action="append", default=[], metavar="FILE",
                        help="a judge template file (text, or .py with PROMPT) whose filled-in requests to recognise; repeatable (default none)")



def add_command_arguments(parser: argparse.ArgumentParser) -> None:
    """``clinconsensus-eval serve-stand-in``: the options, and the model names after them as written."""
    add_server_arguments(parser)
    parser.epilog = MODEL_NAMES_HELP
    parser.formatter_class = type("Formatter", (parser.formatter_class, argparse.RawDescriptionHelpFormatter), {})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m clinconsensus_tasks.stand_in",
        description="A deterministic OpenAI-compatible chat-completions server, for tests and benchmarks.",
        epilog=MODEL_NAMES_HELP,
        formatter_class=type("Formatter", (argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter), {}),
    )
    add_server_arguments(parser)
    return parser


def serve(args: argparse.Namespace) -> int:
    """Serve until interrupted; prints ``PORT <n>`` (and the base URL) once it listens."""
    texts = [parse_template(open(f, encoding="utf-8").read(), f).text for f in args.judge_template]
    server = FakeOpenAIServer(args.latency, args.port, args.answer_chars, tuple(texts))
    print(f"PORT {server.port}", flush=True)
    print(f"stand-in model and judge at {server.base_url} (Ctrl-C stops it)", file=sys.stderr, flush=True)
    try:
        server._server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def main() -> None:
    serve(build_parser().parse_args())
