"""The part every small test HTTP server shares: listen on 127.0.0.1 in a background thread, give
its ``/v1`` base URL, start and stop as a context manager (``with Server(...) as s: s.base_url``)."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    """Subclasses call :meth:`listen` with their request handler class at the end of ``__init__``."""

    def listen(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def closed_port_url(path: str = "/run_local_judge.py") -> str:
    """A URL on 127.0.0.1 where nothing listens any more: stands in for an unreachable download."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"
