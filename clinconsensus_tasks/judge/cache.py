"""A persistent on-disk cache of judge responses (used by the lm-eval path and the CLI).

lm-eval's ``--use_cache`` caches the model's answers only, not calls a filter makes, so judge
verdicts get their own cache. Entries are keyed by a hash of the judge's base URL and model name,
the exact messages and the decoding settings (another server with the same model name is another
judge), and live in one SQLite file (write-ahead log: readers and a
writer do not block each other, and a crash loses at most the entry being written). Several
processes may open the same file at the same instant (the ranks of a multi-GPU lm-eval run, two
runs started together): every statement waits for another's lock, and the steps of opening are
tried again where SQLite answers "locked" without waiting (docs/lm-eval.md says what a shared
folder on a network file system can and cannot promise).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from clinconsensus_tasks import settings_table



def default_cache_dir() -> Path:
    """``$CLINCONSENSUS_CACHE_DIR``, else ``$XDG_CACHE_HOME/clinconsensus_tasks`` (``~/.cache/...``)."""
    chosen = settings_table.raw("cache_dir")
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "clinconsensus_tasks"


CACHE_FILE = "judge_cache.sqlite3"


def cache_file(directory: str | Path | None = None) -> Path:
    """Where the verdict cache lives: ``<dir>/judge_cache.sqlite3``."""
    return (Path(directory) if directory else default_cache_dir()) / CACHE_FILE


def cache_key(base_url: str, model: str, messages: list[dict[str, str]], decoding: dict[str, Any]) -> str:
    payload = {"base_url": base_url.rstrip("/"), "model": model, "messages": messages, "decoding": decoding}
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


def check_cache_file(directory: str | Path | None = None) -> str | None:
    """Make sure the verdict cache opens; a corrupt file is moved aside (with its ``-wal``/``-shm``).

    Returns a warning naming both paths when it moved the file, else ``None``. Run when a task
    loads, so a damaged cache cannot crash the run after every answer has been generated.
    """
    path = cache_file(directory)
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(path)) as db:
            db.execute("PRAGMA quick_check").fetchall()
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return None
    except sqlite3.DatabaseError as exc:
        aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
        for suffix in ("", "-wal", "-shm"):
            part = Path(f"{path}{suffix}")
            if part.exists():
                part.rename(Path(f"{aside}{suffix}"))
        return (f"the verdict cache {path} could not be read ({exc}); moved it to {aside} and starting an "
                "empty cache (CLINCONSENSUS_JUDGE_CACHE=0 runs without a cache)")


BUSY_SECONDS = 30.0  # how long a statement waits for another process's lock before "database is locked"
OPEN_ATTEMPTS = 20  # SQLite answers BUSY without waiting in a few states (a switch to WAL or a WAL
                    # recovery under way in another process): the open steps are tried again


def _with_retries(step: Any) -> None:
    """Run an opening step, again after a short pause while SQLite says the file is locked or busy."""
    for attempt in range(OPEN_ATTEMPTS):
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if attempt == OPEN_ATTEMPTS - 1 or not ("locked" in text or "busy" in text):
                raise
            time.sleep(0.05 * (attempt + 1))


class JudgeCache:
    """Key-value store of judge outputs in ``<dir>/judge_cache.sqlite3``."""

    def __init__(self, directory: str | Path | None = None):
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / CACHE_FILE
        self._lock = threading.Lock()
        # The busy timeout is set by connect() before any statement: every lock another process
        # holds (its writes, its schema change, its switch to WAL) is waited for, not an error.
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_SECONDS)
        _with_retries(self._use_wal)
        self._db.execute("PRAGMA synchronous=NORMAL")
        _with_retries(self._make_table)

    def _use_wal(self) -> None:
        """Switch the file to write-ahead logging once: a file already in WAL (every opener after the
        first) is left as it is, so openers at the same instant do not all ask for the exclusive lock."""
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")

    def _make_table(self) -> None:
        """The table, created by one opener: the check and the creation in one write transaction."""
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'judge'").fetchone():
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("CREATE TABLE IF NOT EXISTS judge (key TEXT PRIMARY KEY, output TEXT NOT NULL)")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

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
