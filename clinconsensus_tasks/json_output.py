"""JSON that every parser reads: what the project's ``--json`` outputs print.

Python's ``json`` writes NaN and Infinity as bare words, which ``JSON.parse``, ``jq`` and every
strict parser refuse. A statistic the data leaves undefined (kappa with one class, F1 of an empty
class, an interval from one case) is NaN in the code and ``null`` here: undefined, never a number.
"""

from __future__ import annotations

import json
import math
from typing import Any


def strict(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by ``None`` (in dicts, lists and tuples)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = 2) -> str:
    """``value`` as strict JSON (undefined figures ``null``), UTF-8 text kept as it is."""
    return json.dumps(strict(value), ensure_ascii=False, indent=indent, allow_nan=False)
