"""Parsing judge verdicts.

A judge may wrap its JSON in a Markdown fence, put a (possibly empty) ``<think>`` block before it,
or write a sentence around it; all of those are accepted as long as a JSON object (or, in batched
mode, a list of objects) with a recognisable ``criteria_met`` value can be found. ``criteria_met``
may be a JSON boolean, 0/1, or one of the usual textual forms (``"true"``, ``"yes"``, ``"met"``,
``"是"`` ...). Anything else is *unparseable* (``None``), never silently "not met": callers re-ask
and, if it still fails, count a judge failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

_TRUE_WORDS = frozenset({"true", "yes", "y", "met", "1", "是", "满足", "符合"})
_FALSE_WORDS = frozenset(
    {"false", "no", "n", "not met", "unmet", "0", "否", "不满足", "不符合"}
)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Verdict:
    """One parsed judgment of one criterion."""

    met: bool
    explanation: str = ""


def coerce_met(value: Any) -> bool | None:
    """Map a ``criteria_met`` value to a boolean, or ``None`` when it is not a recognised form."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    return None


def _json_values(text: str) -> Iterator[Any]:
    """Yield the JSON values found in ``text``: fenced blocks first, then the text as a whole,
    then every object or array that decodes starting at a ``{`` or ``[``."""
    text = _THINK.sub("", text).strip()
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        try:
            yield json.loads(chunk)
            continue
        except ValueError:
            pass
        for match in re.finditer(r"[\[{]", chunk):
            try:
                value, _ = decoder.raw_decode(chunk, match.start())
            except ValueError:
                continue
            yield value


def _verdict_from(obj: Any) -> Verdict | None:
    if not isinstance(obj, dict) or "criteria_met" not in obj:
        return None
    met = coerce_met(obj["criteria_met"])
    if met is None:
        return None
    explanation = obj.get("explanation", "")
    return Verdict(met=met, explanation=explanation if isinstance(explanation, str) else str(explanation))


def parse_verdict(text: str | None) -> Verdict | None:
    """Parse a per-criterion verdict; ``None`` if no usable ``criteria_met`` is found."""
    if not text:
        return None
    for value in _json_values(text):
        verdict = _verdict_from(value)
        if verdict is not None:
            return verdict
    return None


def parse_batched_verdicts(text: str | None, criterion_ids: Sequence[str]) -> dict[str, Verdict]:
    """Parse a batched verdict list into ``{criterion_id: Verdict}`` for the ids asked about.

    Items are matched by their ``criterion_id``; an item without a known id is matched by its
    position when the list has exactly one item per criterion asked. Items that do not parse, ids
    that were not asked about and duplicates (the first wins) are ignored, so the result holds
    only the criteria that got a usable verdict: the caller re-asks for the rest.
    """
    if not text:
        return {}
    wanted = list(criterion_ids)
    for value in _json_values(text):
        if isinstance(value, dict):
            # Some judges wrap the list: {"verdicts": [...]} or similar; take the first list value.
            value = next((v for v in value.values() if isinstance(v, list)), None)
        if not isinstance(value, list):
            continue
        out: dict[str, Verdict] = {}
        positional = len(value) == len(wanted)
        for index, item in enumerate(value):
            verdict = _verdict_from(item)
            if verdict is None:
                continue
            cid = str(item.get("criterion_id", "")).strip().strip("[]")
            if cid not in wanted:
                if not positional:
                    continue
                cid = wanted[index]
            out.setdefault(cid, verdict)
        if out:
            return out
    return {}
