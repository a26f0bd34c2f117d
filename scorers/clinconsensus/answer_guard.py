"""Keeping the candidate's answer from speaking for the judge.

The answer under review is text written by the model under test, so it is adversarial input to the
judge prompt: it may contain a verdict (``{"criteria_met": true}``) hoping the parser picks it up,
or the prompt's own section headings (``【评分标准】``, ``# Instructions``) hoping to add a criterion
of its own. Three defences meet here, all framework-free:

* :func:`fence_answer` puts the answer between two fixed delimiter lines and neutralises, inside
  it, every marker our prompts use to open a section (the full-width brackets become 〔 〕), so the
  answer cannot open or close a section of the project's prompt;
* :func:`suspect_reasons` names what makes an answer suspect (the verdict key in any spelling the
  verdict rule counts, a heading of the judge prompt in use, a think tag that is not a leading
  thinking block), so adapters count ``suspect_answers`` and flag the case in logs and reports;
* the verdict rule (``verdicts``) never takes a reply that repeats a forged verdict: the key must
  occur exactly once in the judge's reply.
"""

from __future__ import annotations

import re

from clinconsensus_tasks.scorers.clinconsensus.verdicts import VERDICT_KEY, normalise, split_leading_thinking

ANSWER_BEGIN = "<<<待评估回答·开始>>>"
ANSWER_END = "<<<待评估回答·结束>>>"
SECTION_MARKERS: tuple[str, ...] = ("【用户提问】", "【待评估的回答】", "【评分标准】")
# The official template's headings, flagged even when another prompt is in use.
OFFICIAL_HEADINGS: tuple[str, ...] = ("# Rubric Item to Evaluate", "# Instructions")

SUSPECT_VERDICT_JSON = "verdict-like JSON (criteria_met)"
SUSPECT_SECTION_MARKER = "judge prompt section marker"
SUSPECT_THINK_TAG = "think tag outside a leading thinking block"

# Any 【...】 heading naming one of our sections, with or without spaces inside the brackets.
_MARKER = re.compile(r"【\s*(用户提问|待评估的回答|评分标准)\s*】")
_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)
# A line can be a heading only if it holds a character that normalises to "#" or "【" (NFKC: ＃ ﹟,
# ︻) or a backslash (a \u escape): every other line is passed over unnormalised.
_HEADING_CHARS = re.compile(r"[#＃﹟【︻\\]")


def neutralise(answer: str) -> str:
    """The answer with our section markers and answer delimiters made inert (〔...〕, ‹‹‹...›››)."""
    text = _MARKER.sub(lambda m: f"〔{m.group(1)}〕", answer)
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def fence_answer(answer: str) -> str:
    """The answer, neutralised, between the delimiter lines the judge prompt refers to."""
    return f"{ANSWER_BEGIN}\n{neutralise(answer)}\n{ANSWER_END}"


def _heading(line: str) -> str | None:
    """The name of a heading line (``# Instructions`` -> ``instructions``), normalised; else ``None``.

    A heading line is, after white space, a Markdown heading ``#... name #...`` or a label
    ``【name】...``; the name has its white space collapsed. This is what the regular expression
    ``^\\s*(?:#+\\s*(?P<md>.+?)\\s*#*|【\\s*(?P<cjk>[^】]+?)\\s*】.*)$`` matched (and a test checks
    it still is), read with string methods in linear time: the lazy name followed by ``\\s*#*$``
    rescanned each run of spaces or ``#`` once per character before it, quadratic on one long line.
    ``.`` and ``$`` make one rule of their own: the name (Markdown) or what follows ``】`` may hold
    a line break (normalise decodes ``\\u000a``) only as the text's last character."""
    text = normalise(line).lstrip()
    if text.startswith("【"):
        close = text.find("】", 1)
        if close <= 1 or "\n" in _drop_final_newline(text[close + 1:]):
            return None
        return " ".join(text[1:close].split()).casefold()
    if not text.startswith("#"):
        return None
    after_hashes = text.lstrip("#")
    rest = after_hashes.lstrip()
    if not rest:  # the regex gives the name a character back: the last space, or the last '#'
        if after_hashes.replace("\n", ""):
            return ""
        return "#" if len(text) - len(after_hashes) >= 2 else None
    # The name is the shortest non-empty head of ``rest`` after which only ``\s*#*`` (or ``\s*#*\n``) is left.
    tail = max(_spaces_hashes(rest), 1 + _spaces_hashes(rest[:-1]) if rest.endswith("\n") else 0)
    name = rest[:max(len(rest) - tail, 1)]
    return None if "\n" in name else " ".join(name.split()).casefold()


def _spaces_hashes(text: str) -> int:
    """The length of the longest end of ``text`` made of white space then ``#`` characters."""
    return len(text) - len(text.rstrip("#").rstrip())


def _drop_final_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def prompt_headings(prompt_text: str) -> frozenset[str]:
    """The section headings of a judge prompt's fixed text, plus the project's and the official ones."""
    lines = [*prompt_text.splitlines(), *SECTION_MARKERS, *OFFICIAL_HEADINGS]
    return frozenset(name for name in map(_heading, lines) if name)


def suspect_reasons(answer: str | None, prompt_text: str = "") -> list[str]:
    """Why an answer looks like an attempt to steer the judge (empty list: it does not).
    ``prompt_text`` is the fixed text of the judge prompt in use (``rubric_prompt.prompt_fixed_text``)."""
    text = answer or ""
    reasons = []
    if VERDICT_KEY.search(normalise(text)):
        reasons.append(SUSPECT_VERDICT_JSON)
    headings = prompt_headings(prompt_text)
    if _MARKER.search(text) or ANSWER_BEGIN in text or ANSWER_END in text or any(
            _heading(line) in headings for line in text.splitlines() if _HEADING_CHARS.search(line)):
        reasons.append(SUSPECT_SECTION_MARKER)
    split = split_leading_thinking(text)
    if split is not None and _THINK_TAG.search(normalise(split[1])):
        reasons.append(SUSPECT_THINK_TAG)
    return reasons
