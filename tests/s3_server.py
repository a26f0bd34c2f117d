"""A real S3-protocol server on 127.0.0.1 for the object-storage tests and bench.

moto's ``ThreadedMotoServer`` stands in for a team's bucket (AWS S3, or an S3-compatible store such
as MinIO or Ceph reached through ``AWS_ENDPOINT_URL``): it speaks the S3 REST protocol over HTTP,
so the real clients talk to it unchanged (s3fs/aiobotocore under the project's readers and
fsspec ``put``, Inspect's log writer under ``inspect eval --log-dir s3://...``). It keeps its
buckets in this process. Every request it receives is counted at its WSGI entry
(:attr:`MotoS3.requests`), so a test or the bench can say how many requests a listing cost.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

# Dummy credentials: moto accepts any unless IAM authentication is switched on (refused_credentials).
ENVIRONMENT = {"AWS_ACCESS_KEY_ID": "testing-key-id", "AWS_SECRET_ACCESS_KEY": "testing-secret-value",
               "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class MotoS3:
    endpoint: str
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, query) as the server saw them
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()

    def seen(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return list(self.requests)


class _Counting:
    """WSGI middleware in front of moto's app: records each request, then passes it on."""

    def __init__(self, app: Callable[..., Any], server: MotoS3):
        self.app, self.server = app, server

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        with self.server.lock:
            self.server.requests.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", "")))
        return self.app(environ, start_response)


def start() -> tuple[MotoS3, Callable[[], None]]:
    """Start moto on 127.0.0.1 and a free port; ``(server, stop)``."""
    from moto.server import ThreadedMotoServer

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    server = MotoS3(f"http://{host}:{port}")
    wsgi = moto._server  # werkzeug's server: it reads .app for every request
    wsgi.app = _Counting(wsgi.app, server)
    return server, moto.stop


def clear_client_caches() -> None:
    """s3fs keeps one filesystem instance per set of arguments (and its listings cache): a new
    endpoint or new credentials must not meet an instance made for the last ones."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


def listings(requests: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The ListObjects requests among ``requests``."""
    return [r for r in requests if r[0] == "GET" and "list-type=2" in r[2]]




@dataclass
class Bucket:
    """A fresh bucket on the moto server (the ``bucket`` fixture in ``tests/conftest.py``)."""

    fs: Any  # an s3fs.S3FileSystem pointed at the server
    name: str
    server: MotoS3

    def url(self, key: str = "") -> str:
        return f"s3://{self.name}/{key}" if key else f"s3://{self.name}"
