"""What the report read of each run file, kept between reports: a campaign re-reported each time a
model joins reads only the new run.

A file's reading (``report.runs``: a ClinConsensus run as the report keeps it, a CliMedBench
file's scored items, a run left out and why) is stored under a key made of every file it was read
from (``report.runs.read_from``: an lm-eval samples file and the results file beside it) and of the
code that read it, so it is served only for the very files it was read from:

* a local file by the path as given (the report names a run by it), its resolved path, size,
  modification and change times (nanoseconds) and inode: a file written again, even to the same
  size, has a new change time (which no program can set back), and a file moved or copied has
  another path or inode;
* a file at a URL by its URL and what its store says of the object: its size and at least one of
  ETag (S3's changes with the bytes), modification time, generation or version (``fs.info``: one
  request, none where the folder's listing already said it); a store that says none of them keeps
  nothing (its file is read each time);
* the code by a sha256 of the package's code (every ``.py`` file of ``clinconsensus_tasks``) and
  the versions of the libraries that read logs (Inspect, msgspec, pydantic): a reading made by other
  code is never served.

A file that changed while it was read is not stored. A deleted file is not found, so its reading is
never asked for; an entry that cannot be read back, or holds anything but a reading, is read again
from the file. The report is the same to the byte whatever was read before (the tests hold a cold
and a warm report equal). Entries are pickles of the package's own objects, written atomically (a
temporary file renamed) to ``--runs-cache`` (default: ``runs/`` in the project's cache folder,
``$CLINCONSENSUS_CACHE_DIR`` or ``~/.cache/clinconsensus_tasks``), one folder per version of the code
(readings by other code are removed when a new one starts); reading a pickle runs what it names, so
the folder is created private (mode 0700) and must be one only you can write, as your own code is.
``--no-runs-cache`` reads every file.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.storage import is_url, storage_errors

FORMAT = 2  # bumped when what is stored changes shape
_IDENTITY_KEYS = ("size", "ETag", "etag", "LastModified", "last_modified", "mtime", "md5Hash", "generation", "VersionId", "version_id")
_CHANGE_KEYS = set(_IDENTITY_KEYS) - {"size"}
_READER_LIBRARIES = ("inspect_ai", "msgspec", "pydantic")
_CODE: str | None = None
_VERSIONS: list[str] | None = None
_VERSION_FOLDER = re.compile(r"[0-9a-f]{16}")


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


def readers() -> str:
    """The package's code and the versions of the libraries that read logs, as one digest."""
    global _VERSIONS
    if _VERSIONS is None:
        from importlib.metadata import PackageNotFoundError, version

        def known(name: str) -> str:
            try:
                return version(name)
            except PackageNotFoundError:
                return ""

        _VERSIONS = [known(name) for name in _READER_LIBRARIES]
    return hashlib.sha256(json.dumps([code_digest(), *_VERSIONS]).encode("utf-8")).hexdigest()


def identity(path: Any) -> list[Any] | None:
    """What makes this file this file, now (see the module docstring); ``None`` when it cannot be had."""
    try:
        if is_url(path):
            with storage_errors(path):
                info = path.fs.info(path.path)
            said = [f"{k}={info[k]}" for k in _IDENTITY_KEYS if info.get(k) not in (None, "")]
            if not any(k in _CHANGE_KEYS for k in (s.split("=", 1)[0] for s in said)):
                return None  # nothing that changes with the bytes: never served
            return [str(path), *said]
        resolved = Path(path).resolve()
        st = resolved.stat()
        return [str(path), str(resolved), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
    except (OSError, ValueError, ClinConsensusError):  # gone, unreadable, refused by its store: not kept, not served
        return None


class RunCache:
    """Readings by file identity in ``folder`` (created when first written), those of this code in a
    folder of their own."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser()
        self.hits = self.misses = 0

    def key(self, paths: Sequence[Any]) -> str | None:
        """The key of a reading made from ``paths`` (the file first); ``None`` when any cannot be identified."""
        found = [identity(path) for path in paths]
        if any(f is None for f in found):
            return None
        return hashlib.sha256(json.dumps([FORMAT, readers(), found]).encode("utf-8")).hexdigest()

    def _entry(self, key: str) -> Path:
        return self.folder / readers()[:16] / key[:2] / f"{key}.pickle"

    def get(self, key: str | None, expect: type) -> Any:
        """The reading kept under ``key`` if it is an ``expect``; ``None`` (a miss) otherwise."""
        if key is None:  # a file that cannot be identified: read
            self.misses += 1
            return None
        try:
            with self._entry(key).open("rb") as handle:
                found = pickle.load(handle)
        except Exception:  # noqa: BLE001 -- none kept, or one that cannot be read back: read again from the file
            found = None
        if not isinstance(found, expect):
            self.misses += 1
            return None
        self.hits += 1
        return found

    def put(self, key: str | None, value: Any) -> None:
        if key is None:
            return
        target = self._entry(key)
        handle = None
        try:
            version = target.parent.parent
            if not version.is_dir():  # the first reading of this code: those of other code are let go
                self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                for other in self.folder.iterdir():
                    if other.is_dir() and other.name != version.name and _VERSION_FOLDER.fullmatch(other.name):
                        shutil.rmtree(other, ignore_errors=True)
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("wb", dir=target.parent, delete=False, suffix=".tmp") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(handle.name, target)
        except Exception:  # noqa: BLE001 -- a cache that cannot be written (read-only, full) only costs the next report a reading
            if handle is not None:
                try:
                    os.unlink(handle.name)
                except OSError:
                    pass


def default_folder() -> Path:
    from clinconsensus_tasks.judge.cache import default_cache_dir

    return default_cache_dir() / "runs"
