"""Keeping the candidate's answer from speaking for the judge.

The answer under review is text written by the model under test, so it is adversarial input to the
judge prompt: it may contain a verdict (``{"criteria_met": true}``) hoping the parser picks it up,
or our own section markers (``【评分标准】``) hoping to add a criterion of its own. Three defences
meet here, all framework-free:

* :func:`fence_answer` puts the answer between two fixed delimiter lines and neutralises, inside
  it, every marker our prompts use to open a section (the full-width brackets become 〔 〕), so the
  answer cannot open or close a section of the prompt;
* :func:`suspect_reasons` names what makes an answer suspect (verdict-like JSON, a section
  marker), so adapters can count ``suspect_answers`` and flag the case in logs and reports;
* the verdict parser ignores any verdict whose text is quoted from the answer
  (:func:`quoted_in`), and takes the judge's *last* verdict (see ``verdicts``).
"""

from __future__ import annotations

import re

ANSWER_BEGIN = "<<<待评估回答·开始>>>"
ANSWER_END = "<<<待评估回答·结束>>>"
SECTION_MARKERS: tuple[str, ...] = ("【用户提问】", "【待评估的回答】", "【评分标准】")

SUSPECT_VERDICT_JSON = "verdict-like JSON (criteria_met)"
SUSPECT_SECTION_MARKER = "judge prompt section marker"

_VERDICT_KEY = re.compile(r"""["'“”]?\s*criteria[_\s-]?met\s*["'“”]?\s*[:：=]""", re.IGNORECASE)
# Any 【...】 heading naming one of our sections, with or without spaces inside the brackets.
_MARKER = re.compile(r"【\s*(用户提问|待评估的回答|评分标准)\s*】")
_SPACE = re.compile(r"\s+")


def neutralise(answer: str) -> str:
    """The answer with our section markers and answer delimiters made inert (〔...〕, ‹‹‹...›››)."""
    text = _MARKER.sub(lambda m: f"〔{m.group(1)}〕", answer)
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def fence_answer(answer: str) -> str:
    """The answer, neutralised, between the delimiter lines the judge prompt refers to."""
    return f"{ANSWER_BEGIN}\n{neutralise(answer)}\n{ANSWER_END}"


def suspect_reasons(answer: str | None) -> list[str]:
    """Why an answer looks like an attempt to steer the judge (empty list: it does not)."""
    text = answer or ""
    reasons = []
    if _VERDICT_KEY.search(text):
        reasons.append(SUSPECT_VERDICT_JSON)
    if _MARKER.search(text) or ANSWER_BEGIN in text or ANSWER_END in text:
        reasons.append(SUSPECT_SECTION_MARKER)
    return reasons


def squeeze(text: str) -> str:
    """``text`` without any white space, for comparing quoted passages."""
    return _SPACE.sub("", text)


def quoted_in(fragment: str, answer_squeezed: str) -> bool:
    """Whether ``fragment`` (a verdict's source text) appears in the answer, white space aside."""
    piece = squeeze(fragment)
    return bool(piece) and piece in answer_squeezed
