"""A small server that speaks the OpenAI batch protocol on 127.0.0.1, for tests.

It stands in for a provider's Batch API: ``POST /v1/files`` (multipart upload, purpose ``batch``),
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``. A batch's lines are
answered by forwarding each request body to an upstream chat-completions server (the project's
stand-in, which supplies verdicts and usage), when the batch is polled while not ``held``; until
then it stays ``in_progress``, as a real batch does for hours. Other requests (the judge probe,
synchronous re-asks) are forwarded to the upstream as they are, and counted apart.
"""

from __future__ import annotations

import itertools
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackServer


class BatchServer(LoopbackServer):
    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")  # e.g. http://127.0.0.1:PORT/v1
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.counts: Counter[str] = Counter()
        self.held = False
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        handler = type("Handler", (_Handler,), {"owner": self})
        self.listen(handler)


    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    def forward(self, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(self.upstream + path, data=body, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def run_batch(self, batch: dict[str, Any]) -> None:
        """Answer every line of the batch's input file into an output file; mark it completed."""
        out = []
        for line in self.files[batch["input_file_id"]].decode("utf-8").splitlines():
            request = json.loads(line)
            status, body = self.forward("/chat/completions", json.dumps(request["body"]).encode("utf-8"))
            out.append({"id": self.new_id("batch_req"), "custom_id": request["custom_id"], "error": None,
                        "response": {"status_code": status, "request_id": self.new_id("req"), "body": body}})
            self.counts["batch_lines"] += 1
        file_id = self.new_id("file")
        self.files[file_id] = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in out).encode("utf-8")
        batch.update(status="completed", output_file_id=file_id, request_counts={"total": len(out), "completed": len(out), "failed": 0})


class _Handler(BaseHTTPRequestHandler):
    owner: BatchServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        owner, parts = self.owner, self.path.split("?")[0].strip("/").split("/")
        if parts[1:2] == ["batches"] and len(parts) == 3 and parts[2] in owner.batches:
            with owner.lock:
                owner.counts["polls"] += 1
                batch = owner.batches[parts[2]]
                if batch["status"] != "completed" and not owner.held:
                    owner.run_batch(batch)
                self._send(200, batch)
        elif parts[1:2] == ["files"] and len(parts) == 4 and parts[3] == "content" and parts[2] in owner.files:
            self._send(200, None, raw=owner.files[parts[2]])
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        owner = self.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/files"):
            message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
            fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True) for part in message.iter_parts()}
            file_id = owner.new_id("file")
            owner.files[file_id] = fields["file"]
            owner.counts["uploads"] += 1
            self._send(200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": 0,
                             "filename": "input.jsonl", "purpose": fields["purpose"].decode(), "status": "processed"})
        elif path.endswith("/batches"):
            body = json.loads(raw)
            batch_id = owner.new_id("batch")
            lines = owner.files[body["input_file_id"]].count(b"\n")
            owner.batches[batch_id] = {"id": batch_id, "object": "batch", "endpoint": body["endpoint"], "input_file_id": body["input_file_id"],
                                       "completion_window": body["completion_window"], "status": "in_progress", "created_at": 0,
                                       "request_counts": {"total": lines, "completed": 0, "failed": 0}}
            owner.counts["batches"] += 1
            self._send(200, owner.batches[batch_id])
        else:  # a synchronous call: to the upstream
            owner.counts["direct"] += 1
            status, body = owner.forward(path.removeprefix("/v1"), raw)
            self._send(status, body)
