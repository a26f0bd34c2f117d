"""Answer-irrelevant edits of an answer: the same content in another form, for asking a judge whether
its verdicts follow content or form (``clinconsensus-eval reliability``'s invariance figures).

Each transform changes how an answer looks and nothing it says: no fact, dose, instruction or
advice is added, removed or reworded, and the question and the criterion are never touched, so a
criterion met before is met after. A judge whose verdict moves under one of them is reading form.
Why each is answer-irrelevant (docs/reliability.md says the same):

* ``markdown``: Markdown markup removed: heading marks, bullet marks, bold marks, quote marks and
  rules. The words and their order stay, numbered steps keep their numbers; only the typography goes.
* ``closing``: a neutral courteous closing sentence appended, in the answer's language
  (:data:`CLOSING`): it adds no clinical content, advice or claim. A judge that grows kinder to a
  longer or politer answer says met more often with it.
* ``line_breaks``: the same lines laid out otherwise: blank lines between paragraphs removed, or
  single line breaks doubled, or (an answer of one line) a line break after each sentence.
* ``traditional``: simplified Chinese characters shown as traditional ones (OpenCC ``s2t``): the same
  words in the other standard script.

A transform that leaves an answer as it was (no Markdown to remove, nothing to convert) says so
(:func:`transform` returns the text unchanged): such a row is no test of the transform and is left
out of its figures. Every transform reads its text once (linear time) and never raises.
"""

from __future__ import annotations

import functools
import re
from typing import Any

MARKDOWN, CLOSING_LINE, LINE_BREAKS, TRADITIONAL = "markdown", "closing", "line_breaks", "traditional"
TRANSFORMS = (MARKDOWN, CLOSING_LINE, LINE_BREAKS, TRADITIONAL)

# The closing sentence, by the answer's language: courteous, and nothing a clinical criterion asks about.
CLOSING = {"zh": "希望以上内容对您有所帮助。", "en": "I hope this helps."}

_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+", re.M)
_BULLET = re.compile(r"^([ \t]*)[-*+•][ \t]+", re.M)
_QUOTE = re.compile(r"^[ \t]*>[ \t]?", re.M)
_RULE = re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$\n?", re.M)
_BOLD = re.compile(r"\*\*(?=\S)([^*\n]+?)\*\*|__(?=\S)([^_\n]+?)__")
_SENTENCE_END = re.compile(r"(?<=[。！？!?])(?=[^\n。！？!?”’\"'）)])|(?<=[.!?])[ \t]+(?=\S)")
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")


def language(text: str) -> str:
    """``zh`` when Chinese ideographs are at least a third of the letters, else ``en``."""
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    return "zh" if cjk and cjk * 3 >= cjk + latin else "en"


def without_markdown(text: str) -> str:
    text = _RULE.sub("", text)
    text = _HEADING.sub("", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub(r"\1", text)
    return _BOLD.sub(lambda m: m.group(1) or m.group(2), text)


def with_closing(text: str) -> str:
    closing = CLOSING[language(text)]
    return text.rstrip() + ("\n\n" if text.strip() else "") + closing


def with_other_line_breaks(text: str) -> str:
    """Blank lines removed where there are any, else single line breaks doubled, else one sentence a line."""
    lines = text.splitlines()
    if any(not line.strip() for line in lines[1:-1]):
        return "\n".join(line for line in lines if line.strip())
    if len(lines) > 1:
        return "\n\n".join(lines)
    return _SENTENCE_END.sub("\n", text)


@functools.lru_cache(maxsize=4)
def opencc_converter(config: str) -> Any:
    """OpenCC's converter of ``config`` (``s2t``, ``t2s``), built once (about 60 ms each), or ``None``
    without OpenCC (a core dependency: only a broken install lacks it)."""
    try:
        import opencc
    except ImportError:
        return None
    return opencc.OpenCC(config)


def traditional(text: str) -> str:
    """``text`` with simplified characters as traditional ones (OpenCC ``s2t``); as it was without OpenCC."""
    converter = opencc_converter("s2t")
    return text if converter is None else converter.convert(text)


_FUNCTIONS = {MARKDOWN: without_markdown, CLOSING_LINE: with_closing, LINE_BREAKS: with_other_line_breaks, TRADITIONAL: traditional}


def transform(name: str, answer: str) -> str:
    """``answer`` under the transform ``name`` (one of :data:`TRANSFORMS`; a ``ValueError`` names the others)."""
    if name not in _FUNCTIONS:
        raise ValueError(f"unknown answer transform {name!r}: use {', '.join(TRANSFORMS)}")
    return _FUNCTIONS[name](answer)
