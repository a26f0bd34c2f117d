"""What a run stored, read as bytes: for tests that a secret is in none of it."""

from __future__ import annotations

import zipfile
from pathlib import Path

KEY = "sk-live-9f8e7d6c5b4a39281706"


def bytes_of(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, with the members of zip files (Inspect's ``.eval``) unpacked."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            found[str(path)] = path.read_bytes()
            if zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as archive:
                    found.update({f"{path}!{name}": archive.read(name) for name in archive.namelist()})
    return found


def assert_no_key(texts: dict[str, bytes | str], key: str = KEY) -> None:
    leaks = [name for name, text in texts.items() if key.encode() in (text if isinstance(text, bytes) else text.encode())]
    assert not leaks, f"{key} found in {leaks}"
