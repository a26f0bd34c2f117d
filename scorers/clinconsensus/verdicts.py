"""The verdict rule: when a judge's reply is a verdict, and when it is not.

The answer under review is adversarial text, and the judge may quote it, so a reply can hold a
forged verdict next to the judge's own. No list of forms can tell them apart; one count can:

(a) A reply that starts (after white space) with ``<think>`` loses everything through the first
    ``</think>``; if that block never closes there is no verdict. No other think tag is special.
(b) If what remains, stripped, is exactly one Markdown code fence, its inside is the remainder.
(c) :func:`normalise` the remainder for counting: decode ``\\uXXXX`` and the other JSON escapes,
    NFKC (full-width forms become ASCII), drop format characters (Unicode ``Cf``: zero-width
    spaces, joiners, BOM). Count the verdict key where it stands as a key, followed by ``:``,
    ``=`` or ``|`` (JSON, YAML, Python, ``key=value``, a table header): in quotes in any case and
    spelling (``"criteria_met"``, ``'Criteria Met'``), or bare as an identifier (``criteria_met``,
    ``criteria-met``). A mention in prose ("all criteria met: ...", "so criteria_met is true")
    is no key and is not counted.
(d) Per criterion: the key occurs exactly once in the remainder, and exactly one JSON object of
    the remainder holds it (directly or one level down, ``{"result": {...}}``) with a true/false
    value (:func:`coerce_met`). Normal judges' forms parse: a fence, prose before or after, an
    empty ``<think></think>``, ``True``/``FALSE``, a trailing comma.
(e) Batched: exactly one JSON array of verdict objects (or one object wrapping exactly one such
    array) holds the key, the key occurs in the remainder exactly as often as the array has
    items, and the items are the criteria asked, each exactly once, by ``criterion_id``: an id
    missing, repeated or not asked, or an item without a true/false value, and the whole reply is
    no verdict (never a position, never the first of two).
(f) A reply longer than :data:`MAX_REPLY_CHARS` is no verdict, unread. The JSON values of
    (d) and (e) are the outermost balanced bracket spans of the remainder that parse
    (:func:`bracket_spans`, one pass); a span that does not parse is no value, and nothing inside
    it is. Every step is linear in the reply's length, and nothing in a reply raises.
Anything else (no key, two keys, a value that is not a boolean form) is no verdict: the caller
asks again, bypassing caches, and then records a failed judgment, never a pass. A forged verdict
in the answer that the judge repeats therefore makes the reply ambiguous, whatever its spelling:
everything that could parse as a key is counted by the same :func:`normalise`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Sequence

_TRUE_WORDS = frozenset({"true", "yes", "y", "met", "1", "是", "满足", "符合"})
_FALSE_WORDS = frozenset(
    {"false", "no", "n", "not met", "unmet", "0", "否", "不满足", "不符合"}
)
VERDICT_KEY = re.compile(r"criteria[\s_\-]*met", re.IGNORECASE)
# The key where it stands as a key (rule (c)): quoted or bare, then a separator.
# Quoted in any spelling, or bare as an identifier (``criteria_met``, ``criteria-met``); the bare
# words "criteria met" followed by a colon are prose ("All criteria met: ...").
KEY_POSITION = re.compile(r"""(?:["'`]criteria[\s_\-]*met["'`]|criteria[_\-]?met)\s*[:=|]""", re.IGNORECASE)
ECHO_MIN_CHARS = 12
# The longest reply read (rule (f)). The official runner gives the judge 512 new tokens for one
# verdict, and batched mode asks for 30 verdicts in one reply: 30 x 512 tokens is the most any
# verdict the project asks for can need, and a token decodes to about 4 characters of English
# prose at most (Chinese: 1 to 2), so 30 x 512 x 4 characters. Replies the project asks for stay
# far below it (512 tokens per criterion, 96 per criterion batched); a longer reply is a server
# that ignored max_tokens, thinking returned as content, or joined choices.
MAX_REPLY_CHARS = 30 * 512 * 4
_OPEN_THINK, _CLOSE_THINK = "<think>", "</think>"
_FENCE_INFO = re.compile(r"[A-Za-z]*[ \t]*")  # what may follow the opening ``` of a lone fence
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_C_ESCAPE = re.compile(r"\\[bfnrt]")
_SPACE = re.compile(r"\s+")
_STRUCTURE = re.compile(r'[\[\]{}"\\]')  # the characters the bracket scan looks at
# Outside JSON strings: Python/upper-case literals and trailing commas, which normal judges write.
_REPAIRABLE = re.compile(r'("(?:[^"\\]|\\.)*+(?:"|\\?\Z))|\b(True|TRUE|False|FALSE|None|NULL)\b|,(\s*[}\]])', re.DOTALL)
_LITERALS = {"True": "true", "TRUE": "true", "False": "false", "FALSE": "false", "None": "null", "NULL": "null"}
_FAILED = object()

ECHO = "echoes the judge prompt"
UNCLOSED_THINKING = "thinking never closed"
QUOTED = "the verdict is a quote of the answer under review"


@dataclass(frozen=True)
class Verdict:
    """One parsed judgment of one criterion."""

    met: bool
    explanation: str = ""


@dataclass(frozen=True)
class Reading:
    """What the rule made of one reply: verdicts (by criterion id in batched mode, ``None`` for
    the single criterion otherwise) and, when there are none, why."""

    verdicts: dict[str | None, Verdict]
    problem: str = ""


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


# -- (a) to (c): the remainder and its normal form ------------------------------------------------


def split_leading_thinking(text: str) -> tuple[str, str] | None:
    """``(thinking, rest)`` of a text that starts (after white space) with a ``<think>`` block;
    ``("", text)`` when it does not; ``None`` when the leading block never closes."""
    stripped = text.lstrip()
    if not stripped.startswith(_OPEN_THINK):
        return "", text
    end = stripped.find(_CLOSE_THINK)
    if end < 0:
        return None
    return stripped[len(_OPEN_THINK):end], stripped[end + len(_CLOSE_THINK):]


def remainder(reply: str) -> str | None:
    """The part of a reply the rule reads: after a leading thinking block, inside a lone fence."""
    split = split_leading_thinking(reply)
    if split is None:
        return None
    return _unfenced(split[1].strip())


def _unfenced(text: str) -> str:
    """The inside of ``text`` (white space stripped at its end) when ``text`` is exactly one
    Markdown code fence: ```, letters and blanks to the line's end, the inside, ```, and no other
    ``` in the inside; ``text`` itself otherwise."""
    newline = text.find("\n")
    if not (text.startswith("```") and text.endswith("```")) or newline < 0 or newline + 1 > len(text) - 3:
        return text
    inside = text[newline + 1:-3].rstrip()
    return inside if _FENCE_INFO.fullmatch(text, 3, newline) and "```" not in inside else text


def _combine_surrogates(text: str) -> str:
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def normalise(text: str) -> str:
    """``text`` as the rule counts it: JSON escapes decoded (``\\uXXXX`` to the character, ``\\n``
    and the like to a space, other backslashes dropped), NFKC, format characters removed."""
    text = _combine_surrogates(_U_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text))
    text = _C_ESCAPE.sub(" ", text).replace("\\", "")
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def key_count(text: str) -> int:
    """How often the verdict key stands as a key in ``text`` (rule (c)), in any of the spellings
    :func:`normalise` evens out; mentions in prose are not counted."""
    return len(KEY_POSITION.findall(normalise(text)))


@lru_cache(maxsize=256)  # a case's answer is squashed for each of its 30 verdicts: once is enough
def _squash(text: str) -> str:
    return _SPACE.sub(" ", normalise(text)).strip()


def echo_lines(prompt_text: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The lines of a judge prompt's fixed text a reply may not contain (normalised, white space
    squashed, at least :data:`ECHO_MIN_CHARS` characters), plus ``extra`` (the answer delimiters)."""
    lines = {_squash(line) for line in prompt_text.splitlines()}
    return frozenset({line for line in lines if len(line) >= ECHO_MIN_CHARS} | {_squash(e) for e in extra if e.strip()})


def echoes(text: str, lines: frozenset[str]) -> bool:
    squashed = _squash(text)
    return any(line in squashed for line in lines)


# -- (d) and (e): JSON values and the objects that hold the key -------------------------------------


def bracket_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every outermost balanced bracket span of ``text``, in order: one pass
    over its brackets, quotes and backslashes. Inside brackets a double-quoted string (backslash
    escapes) hides the brackets it holds; outside any bracket quotes are prose. A closer with no
    opener is prose; an opener never closed encloses nothing, so the spans closed after it count
    as outermost. Spans do not overlap, so reading them all reads ``text`` at most once more."""
    spans: list[tuple[int, int]] = []
    openers: list[int] = []
    in_string, escaped_at = False, -1
    for match in _STRUCTURE.finditer(text):
        i, ch = match.start(), match.group()
        if i == escaped_at:
            continue
        if in_string:
            if ch == "\\":
                escaped_at = i + 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = bool(openers)
        elif ch in "[{":
            openers.append(i)
        elif ch in "]}" and openers:
            start = openers.pop()
            while spans and spans[-1][0] > start:  # spans nested in this one are not outermost
                spans.pop()
            spans.append((start, i + 1))
    return spans


def _repair(span: str) -> str:
    def fix(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return m.group(1)
        return _LITERALS[m.group(2)] if m.group(2) else m.group(3)

    return _REPAIRABLE.sub(fix, span)


def _loads(span: str) -> Any:
    for candidate in (span, _repair(span)):
        try:
            return json.loads(candidate, strict=False)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than the decoder goes
            continue
    return _FAILED


def json_spans(text: str) -> list[tuple[str, Any]]:
    """Every outermost bracket span of ``text`` (:func:`bracket_spans`) that parses as JSON
    (leniently), in order, with its source text. A span that does not parse is no value, and
    nothing inside it is looked at: each character is parsed at most twice (as written, repaired)."""
    found = []
    for start, end in bracket_spans(text):
        value = _loads(text[start:end])
        if value is not _FAILED:
            found.append((text[start:end], value))
    return found


def json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array in ``text`` that parses (leniently), in order."""
    return [value for _, value in json_spans(text)]


def _quoted(span: str, answer: str) -> bool:
    """Rule (h): ``span`` stands in the answer (normalised, white space squashed)."""
    return bool(answer) and _squash(span) in _squash(answer)


def _key_in(obj: Any) -> str | None:
    """The verdict key of ``obj`` if it is an object holding one."""
    if isinstance(obj, dict):
        return next((k for k in obj if isinstance(k, str) and VERDICT_KEY.fullmatch(normalise(k).strip())), None)
    return None


def _holders(value: Any) -> list[dict]:
    """Objects holding the key: ``value`` itself, or an object one level inside it."""
    if _key_in(value) is not None:
        return [value]
    if isinstance(value, dict):
        return [v for v in value.values() if _key_in(v) is not None]
    return []


def _verdict_from(obj: dict) -> Verdict | None:
    met = coerce_met(obj[_key_in(obj)])
    if met is None:
        return None
    explanation = obj.get("explanation", "")
    return Verdict(met=met, explanation=explanation if isinstance(explanation, str) else _text_of(explanation))


def _text_of(value: Any) -> str:
    """``value`` (a parsed JSON value that is not a string) as text, or "" when it is nested too
    deep to print."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return ""


def _prepared(reply: str | None, echo: frozenset[str]) -> tuple[str | None, str]:
    """The remainder to read, or ``None`` and the reason there is nothing to read."""
    if not reply or not reply.strip():
        return None, "empty reply"
    if len(reply) > MAX_REPLY_CHARS:
        return None, f"the reply has {len(reply):,} characters, more than a verdict can need ({MAX_REPLY_CHARS:,}): not read"
    rest = remainder(reply)
    if rest is None:
        return None, UNCLOSED_THINKING
    if echoes(rest, echo):
        return None, ECHO
    return rest, ""


def read_verdict(reply: str | None, echo: frozenset[str], answer: str = "") -> Reading:
    """Rule (d): the one verdict of a per-criterion reply, or why there is none (``answer``: the
    answer under review, for rule (h))."""
    rest, problem = _prepared(reply, echo)
    if rest is None:
        return Reading({}, problem)
    count = key_count(rest)
    holders = [(span, h) for span, v in json_spans(rest) for h in _holders(v)]
    if count != 1 or len(holders) != 1:
        return Reading({}, f"criteria_met occurs {count} time(s), in {len(holders)} JSON object(s); exactly one of each is a verdict")
    span, holder = holders[0]
    if _quoted(span, answer):
        return Reading({}, QUOTED)
    verdict = _verdict_from(holder)
    if verdict is None:
        return Reading({}, f"criteria_met is not true or false: {holder[_key_in(holder)]!r}")
    return Reading({None: verdict})


def _verdict_list(value: Any) -> list | None:
    """``value`` if it is a list, or the one list an object wraps."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        return lists[0] if len(lists) == 1 else None
    return None


def _mentions_key(value: Any) -> bool:
    """Whether an object at any depth of ``value`` holds the key (iterative: a parsed value may be
    nested as deep as the decoder allows, deeper than the stack left to this call)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            if _key_in(item) is not None:
                return True
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _id_of(item: dict) -> str:
    """An item's ``criterion_id`` as the judge wrote it ("1", 1, "[1]"); "" for any other value."""
    value = item.get("criterion_id", "")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return ""
    return str(value).strip().strip("[]").strip()


def read_batched(reply: str | None, criterion_ids: Sequence[str], echo: frozenset[str], answer: str = "") -> Reading:
    """Rule (e): the verdict of every criterion asked, by its id, or none and why."""
    rest, problem = _prepared(reply, echo)
    if rest is None:
        return Reading({}, problem)
    candidates = [(span, v) for span, v in json_spans(rest) if _mentions_key(v)]
    items = _verdict_list(candidates[0][1]) if len(candidates) == 1 else None
    count = key_count(rest)
    if items is None or count != len(items) or any(_key_in(item) is None for item in items):
        return Reading({}, f"criteria_met occurs {count} time(s); a batched verdict is one list with it once per item")
    if _quoted(candidates[0][0], answer):
        return Reading({}, QUOTED)
    wanted = [str(c) for c in criterion_ids]
    ids = [_id_of(item) for item in items]
    if sorted(ids) != sorted(wanted):
        given, asked = Counter(ids), set(wanted)
        missing = [c for c in wanted if c not in given]
        extra = sorted(i for i, n in given.items() if i not in asked or n > 1)
        return Reading({}, f"the list must give each of the {len(wanted)} criteria asked exactly one verdict by its id "
                           f"(missing: {', '.join(missing) or 'none'}; repeated or not asked: {', '.join(extra) or 'none'})")
    verdicts = {cid: _verdict_from(item) for cid, item in zip(ids, items)}
    unusable = [cid for cid, v in verdicts.items() if v is None]
    if unusable:
        return Reading({}, f"criteria_met is not true or false for criteria {', '.join(unusable)}")
    return Reading(dict(verdicts))


def parse_verdict(reply: str | None, echo: frozenset[str], answer: str = "") -> Verdict | None:
    """The verdict of a per-criterion reply under the rule, or ``None``."""
    return read_verdict(reply, echo, answer).verdicts.get(None)


def parse_batched_verdicts(reply: str | None, criterion_ids: Sequence[str], echo: frozenset[str], answer: str = "") -> dict[str, Verdict]:
    """``{criterion_id: Verdict}`` for every criterion asked, or ``{}`` when the reply is no verdict."""
    return {k: v for k, v in read_batched(reply, criterion_ids, echo, answer).verdicts.items() if k is not None}


# -- the official runner's reading (a mode a user chooses; docs/verdict-rule.md compares the two) --

STRICT, OFFICIAL = "strict", "official"
VERDICT_READINGS: tuple[str, ...] = (STRICT, OFFICIAL)
# The released judge's runner reads the first quoted key followed by a bare true or false, in any
# letter case, anywhere in the reply (inside thinking, prose or a quoted answer alike); nothing else
# is a verdict, and it never asks again.
OFFICIAL_MATCH = re.compile(r'"criteria_met"\s*:\s*(true|false)', re.IGNORECASE)
NO_OFFICIAL_MATCH = 'no "criteria_met": true|false anywhere in the reply (the official reading; not asked again)'


def check_verdict_reading(reading: str, name: str = "judge_verdict_reading") -> str:
    """``reading`` if it is a verdict reading; ``ValueError`` naming the setting and the choices."""
    if reading not in VERDICT_READINGS:
        raise ValueError(f"{name}={reading!r}; choose one of {', '.join(VERDICT_READINGS)}")
    return reading


def read_official(reply: str | None) -> Reading:
    """A per-criterion reply read as the released judge's runner reads it: the first
    ``"criteria_met": true|false`` anywhere is the verdict; no match, no verdict. Nothing of the
    strict rule applies (thinking, fences, the key counted, quotes of the answer, echoes, length).
    The explanation is that of the JSON object holding the match, when one parses; else empty."""
    found = OFFICIAL_MATCH.search(reply or "")
    if found is None:
        return Reading({}, NO_OFFICIAL_MATCH)
    explanation = ""
    for start, end in bracket_spans(reply or ""):
        if start < found.start() < end:
            value = _loads(reply[start:end])
            holder = value if isinstance(value, dict) and "explanation" in value else None
            if holder is not None:
                explanation = holder["explanation"] if isinstance(holder["explanation"], str) else _text_of(holder["explanation"])
            break
    return Reading({None: Verdict(found.group(1).lower() == "true", explanation)})
