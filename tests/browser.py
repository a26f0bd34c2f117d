"""A real browser for the tests: a static site served on 127.0.0.1 and a page read in headless Chromium.

Inspect View is a single-page application: it fetches the log over HTTP (with range requests into
the ``.eval`` zip) and renders it with JavaScript, so ``chromium --dump-dom`` shows its loading
state. :func:`read_page` drives Chromium over its DevTools protocol instead (a websocket, through
aiohttp, which the package already depends on): it opens the URL, waits until the page's text holds
what the test looks for, and takes a screenshot, as a user would look at it.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import re
import shutil
import subprocess
import time
from http.server import SimpleHTTPRequestHandler
from io import BytesIO
from pathlib import Path

import pytest

from loopback_server import LoopbackServer

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def require_browser() -> None:
    """Fail (not skip) without Chromium and a CJK font: a skipped browser test would let a page
    that no browser can render pass in any install, editable or not."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not installed: run .ci/install_report_deps.sh (Debian, as root)")
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout if shutil.which("fc-list") else ""
    if "Noto Sans CJK" not in fonts:
        pytest.fail("no Noto Sans CJK font: run .ci/install_report_deps.sh (Debian, as root)")


class _RangeHandler(SimpleHTTPRequestHandler):
    """Python's static file handler with single byte-range requests (``Range: bytes=a-b``), which
    Inspect View uses to read a log's zip members."""

    def log_message(self, *args: object) -> None:
        pass

    def send_head(self):  # type: ignore[override]
        wanted = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
        path = self.translate_path(self.path)
        if wanted is None or not os.path.isfile(path) or wanted[1] == wanted[2] == "":
            return super().send_head()
        size = os.path.getsize(path)
        start = int(wanted[1]) if wanted[1] else max(0, size - int(wanted[2]))
        end = min(int(wanted[2]) if wanted[1] and wanted[2] else size - 1, size - 1)
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        return BytesIO(data)


class StaticSite(LoopbackServer):
    """``folder`` served on 127.0.0.1 (``with StaticSite(dir) as site: site.root``)."""

    def __init__(self, folder: Path):
        self.listen(functools.partial(_RangeHandler, directory=str(folder)))

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")


def read_page(url: str, wanted: str, screenshot: Path, profile: Path, timeout: float = 60.0) -> str:
    """The visible text of ``url`` once it contains ``wanted`` (or when ``timeout`` runs out), with
    a PNG of the page written to ``screenshot``."""
    return asyncio.run(_read_page(url, wanted, screenshot, profile, timeout))


async def _read_page(url: str, wanted: str, screenshot: Path, profile: Path, timeout: float) -> str:
    import aiohttp

    browser = subprocess.Popen([CHROMIUM, *FLAGS, "--remote-debugging-port=0", f"--user-data-dir={profile}",
                                "--window-size=1400,2000", "about:blank"], stderr=subprocess.PIPE, text=True)
    try:
        devtools = None
        while devtools is None:
            line = browser.stderr.readline()
            if not line:
                raise RuntimeError("Chromium exited before it listened for DevTools")
            devtools = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
        async with aiohttp.ClientSession() as session:
            pages = await (await session.get(f"http://127.0.0.1:{devtools[1]}/json/list")).json()
            page = next(p for p in pages if p["type"] == "page")
            async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                calls = iter(range(1, 1_000_000))

                async def call(method: str, **params: object) -> dict:
                    sent = next(calls)
                    await ws.send_json({"id": sent, "method": method, "params": params})
                    while True:
                        reply = await ws.receive_json()
                        if reply.get("id") == sent:
                            return reply.get("result") or {}

                await call("Page.enable")
                await call("Page.navigate", url=url)
                deadline, text = time.monotonic() + timeout, ""
                while time.monotonic() < deadline and wanted not in text:
                    await asyncio.sleep(0.5)
                    shown = await call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''", returnByValue=True)
                    text = str((shown.get("result") or {}).get("value") or "")
                shot = await call("Page.captureScreenshot", format="png")
                screenshot.write_bytes(base64.b64decode(shot["data"]))
                return text
    finally:
        browser.kill()
        browser.wait()
