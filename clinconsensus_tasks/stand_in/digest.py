"""The stand-in's only source of variety: a stable hash of text, so every rule is a fixed function
of its inputs and tests can predict each reply."""

from __future__ import annotations

import hashlib


def digest(*parts: str) -> int:
    """A 48-bit integer from ``parts`` (joined with a separator no prompt contains)."""
    return int(hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:12], 16)
