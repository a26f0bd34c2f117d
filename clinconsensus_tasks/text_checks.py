"""Text checks both benchmarks' loaders apply to every record before anything is sent to a model.

Records that pass a naive check can still fail after the model has been paid: an id that differs
from another only by a trailing or zero-width space (two cases that are one), a field made only of
invisible characters (a question or criterion the judge cannot grade), a lone surrogate (text no
HTTP request or log file can encode). These helpers find such text so that loading refuses it,
naming the field, before any call.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Iterator


def visible_text(text: str) -> str:
    """``text`` as a reader sees it: NFKC-normalised, format characters (category Cf: zero-width
    spaces and joiners, byte-order marks, bidi marks) removed, white space stripped at both ends."""
    folded = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in folded if unicodedata.category(ch) != "Cf").strip()


def is_blank(value: Any) -> bool:
    """Whether a string shows nothing: empty, white space or invisible characters only."""
    return isinstance(value, str) and not visible_text(_without_surrogates(value))


def normalized_id(value: str) -> str:
    """The identity of a record id: two ids that look the same are the same (:func:`visible_text`)."""
    return visible_text(_without_surrogates(value))


def lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in ``text`` (JSON ``"\\ud800"`` decodes to one), else ``None``."""
    return next((i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF), None)


def _without_surrogates(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8") if lone_surrogate(text) is not None else text


def strings_in(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(field path, string)`` for every string in a JSON-like record, keys included
    (``rubrics[3].criterion``)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            name = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                yield name, key
            yield from strings_in(item, name)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from strings_in(item, f"{path}[{index}]")


def surrogate_problems(record: Any) -> list[tuple[str, str]]:
    """``(field, problem)`` for every string of ``record`` holding a lone surrogate."""
    found = []
    for name, text in strings_in(record):
        at = lone_surrogate(text)
        if at is not None:
            found.append((name, f"lone surrogate U+{ord(text[at]):04X} at character {at + 1}: not valid Unicode text"))
    return found


def is_duplicate(
    record: Any, key: str, where: str, first_seen: dict[str, tuple[str, str]], problems: list[str], label: str
) -> bool:
    """Record the first location of ``record[key]``; report (and return True for) a repeat.

    Ids are compared as a reader sees them (:func:`normalized_id`), so ``"C1"``, ``"C1 "`` and
    ``"C1\\u200b"`` are one id, and the message names both lines. Every record with a usable id
    counts, valid or not, so all duplicates show in one report.
    """
    rid = record.get(key) if isinstance(record, dict) else None
    if not isinstance(rid, str) or is_blank(rid):
        return False
    identity = normalized_id(rid)
    if identity not in first_seen:
        first_seen[identity] = (where, rid)
        return False
    first_where, first_rid = first_seen[identity]
    how = "" if rid == first_rid else f" ({first_rid!r}: ids are compared without white space and invisible characters)"
    problems.append(f"{where}: {label} {rid!r}: field '{key}': duplicate of {first_where}{how}")
    return True
