"""Parsing judge verdicts.

A judge may wrap its JSON in a Markdown fence, put a (possibly empty) ``<think>`` block before it,
or write a sentence around it; all of those are accepted as long as a JSON object (or, in batched
mode, a list of objects) with a recognisable ``criteria_met`` value can be found. The judge's
*final* verdict counts: the last such object after its thinking. A judge often quotes the answer
before judging it, and an answer may hold a verdict of its own; objects whose text appears in the
answer are never taken (see ``answer_guard``). ``criteria_met``
may be a JSON boolean, 0/1, or one of the usual textual forms (``"true"``, ``"yes"``, ``"met"``,
``"是"`` ...). Anything else is *unparseable* (``None``), never silently "not met": callers re-ask
and, if it still fails, count a judge failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

from clinconsensus_tasks.scorers.clinconsensus.answer_guard import quoted_in, squeeze

_TRUE_WORDS = frozenset({"true", "yes", "y", "met", "1", "是", "满足", "符合"})
_FALSE_WORDS = frozenset(
    {"false", "no", "n", "not met", "unmet", "0", "否", "不满足", "不符合"}
)
_OPENER = re.compile(r"[\[{]")


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


def after_thinking(text: str) -> str:
    """The part of a reply after its thinking: after the last ``</think>``; nothing when a
    ``<think>`` block is never closed (the judge ran out of tokens while still thinking)."""
    if "</think>" in text:
        return text.rsplit("</think>", 1)[1]
    if "<think>" in text:
        return ""
    return text


def _json_values(text: str) -> list[tuple[Any, str]]:
    """Every top-level JSON object or array in ``text`` (fenced or bare) in order of appearance,
    each with the exact text it was decoded from."""
    decoder = json.JSONDecoder()
    found = []
    pos = 0
    while True:
        match = _OPENER.search(text, pos)
        if match is None:
            return found
        try:
            value, end = decoder.raw_decode(text, match.start())
        except ValueError:
            pos = match.start() + 1
            continue
        found.append((value, text[match.start():end]))
        pos = end


def _judge_values(text: str, answer: str | None) -> list[Any]:
    """The JSON values the judge itself wrote after thinking, last one last; values whose text
    is quoted from the candidate's answer are dropped (an answer never speaks for the judge)."""
    quoted = squeeze(answer) if answer else ""
    return [v for v, src in _json_values(after_thinking(text)) if not (quoted and quoted_in(src, quoted))]


def _verdict_from(obj: Any) -> Verdict | None:
    if not isinstance(obj, dict) or "criteria_met" not in obj:
        return None
    met = coerce_met(obj["criteria_met"])
    if met is None:
        return None
    explanation = obj.get("explanation", "")
    return Verdict(met=met, explanation=explanation if isinstance(explanation, str) else str(explanation))


def parse_verdict(text: str | None, answer: str | None = None) -> Verdict | None:
    """The judge's final per-criterion verdict: the last JSON object with a usable
    ``criteria_met`` after any thinking, not counting objects quoted from ``answer``;
    ``None`` if there is none."""
    if not text:
        return None
    verdicts = [v for v in map(_verdict_from, _judge_values(text, answer)) if v is not None]
    return verdicts[-1] if verdicts else None


def parse_batched_verdicts(
    text: str | None, criterion_ids: Sequence[str], answer: str | None = None
) -> dict[str, Verdict]:
    """Parse the judge's final batched verdict list into ``{criterion_id: Verdict}`` for the ids asked.

    The last usable list after any thinking counts (lists quoted from ``answer`` are ignored).
    Items are matched by their ``criterion_id``; an item without a known id is matched by its
    position when the list has exactly one item per criterion asked. Items that do not parse, ids
    that were not asked about and duplicates (the first wins) are ignored, so the result holds
    only the criteria that got a usable verdict: the caller re-asks for the rest.
    """
    if not text:
        return {}
    wanted = list(criterion_ids)
    for value in reversed(_judge_values(text, answer)):
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
