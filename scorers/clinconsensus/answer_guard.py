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
# A heading line: Markdown "# ..." or a 【...】 label.
_HEADING = re.compile(r"^\s*(?:#+\s*(?P<md>.+?)\s*#*|【\s*(?P<cjk>[^】]+?)\s*】.*)$")
_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)


def neutralise(answer: str) -> str:
    """The answer with our section markers and answer delimiters made inert (〔...〕, ‹‹‹...›››)."""
    text = _MARKER.sub(lambda m: f"〔{m.group(1)}〕", answer)
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def fence_answer(answer: str) -> str:
    """The answer, neutralised, between the delimiter lines the judge prompt refers to."""
    return f"{ANSWER_BEGIN}\n{neutralise(answer)}\n{ANSWER_END}"


def _heading(line: str) -> str | None:
    """The name of a heading line (``# Instructions`` -> ``instructions``), normalised; else ``None``."""
    match = _HEADING.match(normalise(line))
    if match is None:
        return None
    return " ".join((match["md"] or match["cjk"]).split()).casefold()


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
    if _MARKER.search(text) or ANSWER_BEGIN in text or ANSWER_END in text or any(_heading(line) in headings for line in text.splitlines()):
        reasons.append(SUSPECT_SECTION_MARKER)
    split = split_leading_thinking(text)
    if split is not None and _THINK_TAG.search(normalise(split[1])):
        reasons.append(SUSPECT_THINK_TAG)
    return reasons
