"""Reading JSON Lines record files, for every benchmark's loader and log reader.

It belongs to neither benchmark: ClinConsensus cases, CliMedBench items and lm-eval sample files are
all read here, so both benchmarks report a bad file the same way (file and line, every problem at
once) without one importing the other's loader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.storage import open_binary


def read_jsonl(path: Path) -> list[tuple[str, Any]]:
    """``("file:line", record)`` for each non-blank line; a UTF-8 byte-order mark is allowed.

    Undecodable bytes and invalid JSON are reported with their line, all of them at once.
    """
    records: list[tuple[str, Any]] = []
    problems: list[str] = []
    with open_binary(path) as handle:  # a local file, or the object a URL names (one request)
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                problems.append(f"{path}:{number}: not UTF-8 text (byte {exc.start + 1} of the line)")
                continue
            if not line.strip():
                continue
            try:
                records.append((f"{path}:{number}", json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(f"{path}:{number}: invalid JSON: {exc.msg} (column {exc.colno})")
    if problems:
        raise DataValidationError(problems)
    return records
