"""What the report read of each run file, kept between reports: a campaign re-reported each time a
model joins reads only the new run.

A file's reading (``report.runs``: a ClinConsensus run as the report keeps it, a CliMedBench
file's scored items, a run left out and why) is stored under a key made of the file's identity
and of this package's code, so it is served only for the very file it was read from:

* a local file by its resolved path, size, modification and change times (nanoseconds) and inode:
  a file written again, even to the same size, has a new change time (which no program can set
  back), and a file moved or copied has another path or inode;
* a file at a URL by its URL and what its store says of the object: its size, ETag (S3's changes
  with the bytes), modification time, generation or version (``fs.info``: one request, none where
  the folder's listing already said it);
* the package by a sha256 of its code (every ``.py`` file of ``clinconsensus_tasks``): a reading
  made by other code is never served.

A file that changed while it was read is not stored. A deleted file is not found, so its reading is
never asked for; an entry that cannot be read back is read again from the file. The report is the
same to the byte whatever was read before (the tests hold a cold and a warm report equal).
Entries are pickles of the package's own objects, written atomically (a temporary file renamed)
to ``--runs-cache`` (default: ``runs/`` in the project's cache folder, ``$CLINCONSENSUS_CACHE_DIR``
or ``~/.cache/clinconsensus_tasks``); ``--no-runs-cache`` reads every file.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from clinconsensus_tasks.storage import is_url, storage_errors

FORMAT = 1  # bumped when what is stored changes shape
_IDENTITY_KEYS = ("size", "ETag", "etag", "LastModified", "last_modified", "mtime", "md5Hash", "generation", "VersionId", "version_id")
_CODE: str | None = None


def code_digest() -> str:
    """sha256 of this package's code (every ``.py`` file under ``clinconsensus_tasks``, ``scorers`` included
    where it is installed inside): readings made by other code are other keys."""
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
        scorers = root / "scorers"
        if not scorers.is_dir():  # a checkout: the core sits beside the package
            for path in sorted((root.parent / "scorers").rglob("*.py")):
                digest.update(b"scorers/" + str(path.relative_to(root.parent / "scorers")).encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
        _CODE = digest.hexdigest()
    return _CODE


def identity(path: Any) -> list[Any] | None:
    """What makes this file this file, now (see the module docstring); ``None`` when it cannot be had."""
    try:
        if is_url(path):
            with storage_errors(path):
                info = path.fs.info(path.path)
            return [str(path), *[f"{k}={info[k]}" for k in _IDENTITY_KEYS if info.get(k) not in (None, "")]]
        resolved = Path(path).resolve()
        st = resolved.stat()
        return [str(resolved), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
    except (OSError, ValueError):
        return None


class RunCache:
    """Readings by file identity in ``folder`` (created when first written)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        self.hits = self.misses = 0

    def key(self, path: Any) -> str | None:
        found = identity(path)
        if found is None:
            return None
        return hashlib.sha256(json.dumps([FORMAT, code_digest(), found]).encode("utf-8")).hexdigest()

    def get(self, key: str | None) -> Any:
        if key is None:
            return None
        entry = self.folder / key[:2] / f"{key}.pickle"
        try:
            with entry.open("rb") as handle:
                found = pickle.load(handle)
        except FileNotFoundError:
            self.misses += 1
            return None
        except Exception:  # noqa: BLE001 -- an entry that cannot be read back is read again from the file
            self.misses += 1
            return None
        self.hits += 1
        return found

    def put(self, key: str | None, value: Any) -> None:
        if key is None:
            return
        target = self.folder / key[:2] / f"{key}.pickle"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("wb", dir=target.parent, delete=False, suffix=".tmp") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(handle.name, target)
        except OSError:  # a cache that cannot be written (read-only, full) only costs the next report a reading
            try:
                os.unlink(handle.name)
            except (OSError, UnboundLocalError):
                pass


def default_folder() -> Path:
    from clinconsensus_tasks.judge.cache import default_cache_dir

    return default_cache_dir() / "runs"
