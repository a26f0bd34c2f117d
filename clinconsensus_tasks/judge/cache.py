"""A persistent on-disk cache of judge responses (used by the lm-eval path and the CLI).

lm-eval's ``--use_cache`` caches the model's answers only, not calls a filter makes, so judge
verdicts get their own cache. Entries are keyed by a hash of the judge model name, the exact
messages and the decoding settings, and live in one SQLite file (write-ahead log: readers and a
writer do not block each other, and a crash loses at most the entry being written).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

ENV_CACHE_DIR = "CLINCONSENSUS_CACHE_DIR"


def default_cache_dir() -> Path:
    """``$CLINCONSENSUS_CACHE_DIR``, else ``$XDG_CACHE_HOME/clinconsensus_tasks`` (``~/.cache/...``)."""
    if os.environ.get(ENV_CACHE_DIR):
        return Path(os.environ[ENV_CACHE_DIR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "clinconsensus_tasks"


def cache_key(model: str, messages: list[dict[str, str]], decoding: dict[str, Any]) -> str:
    payload = json.dumps({"model": model, "messages": messages, "decoding": decoding}, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class JudgeCache:
    """Key-value store of judge outputs in ``<dir>/judge_cache.sqlite3``."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "judge_cache.sqlite3"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS judge (key TEXT PRIMARY KEY, output TEXT NOT NULL)")

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT output FROM judge WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, output: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO judge (key, output) VALUES (?, ?)", (key, output))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM judge").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
