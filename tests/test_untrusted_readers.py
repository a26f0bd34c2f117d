"""The readers of a model's answer on any text (issue 34.1), with Hypothesis: the answer guard
(``suspect_reasons``, ``fence_answer``) and CliMedBench's readers (``extract_choice``,
``extract_order``/``score_order``, ``tokenize``/``keyword_rouge1``, ``final_answer``) never raise,
return their documented type, and read a 1 MB adversarial answer in linear time.

Texts come from a wide alphabet (lone surrogates included: a JSON string may decode to one) and
from the readers' own fragments (answer markers, option labels, headings, brackets, think tags,
escapes, white space), so that generated answers reach every branch. The readers rewritten to be
linear are checked against the rules they replace (kept here as references) on short texts.
Timing figures live in ``bench/untrusted_readers_time.py``; the bound here only has to tell linear
(under 0.6 s per reader and form at 1 MB on a 2-core machine) from the quadratic or worse readings
these replaced (minutes to hours at 1 MB), so it is wide enough never to flake on a loaded machine.
"""

from __future__ import annotations

import re
import time
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clinconsensus_tasks.scorers.climedbench import choice, ordering
from clinconsensus_tasks.scorers.climedbench.choice import extract_choice, score_choice
from clinconsensus_tasks.scorers.climedbench.ordering import extract_order, score_order
from clinconsensus_tasks.scorers.climedbench.rouge_zh import keyword_rouge1, tokenize
from clinconsensus_tasks.scorers.climedbench.variants import COT, VARIANTS, final_answer
from clinconsensus_tasks.scorers.clinconsensus import answer_guard
from clinconsensus_tasks.scorers.clinconsensus.answer_guard import (
    ANSWER_BEGIN,
    ANSWER_END,
    SUSPECT_SECTION_MARKER,
    SUSPECT_THINK_TAG,
    SUSPECT_VERDICT_JSON,
    fence_answer,
    suspect_reasons,
)
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, prompt_fixed_text
from clinconsensus_tasks.scorers.clinconsensus.verdicts import normalise

PROMPT = prompt_fixed_text(PER_CRITERION)
LETTERS = "ABCDE"
ONE_MB = 1 << 20
BUDGET_SECONDS = 5.0  # per reader and form at 1 MB (module doc)

FRAGMENTS = [
    "答案", "正确答案", "正确选项", "选项", "选择", "选", "answer", "ANSWER", "是", "为", ":", "：", "顺序", "排序",
    "A", "B", "C", "E", "Ｂ", "ａ", "CT", "DCBA", "°", "℃", ".", "、", "．", "(", ")", "（", "[", "]", "{", "}",
    "【", "】", "〔", "《", "<", "*", "\"", "'", "“", "‘", "#", "# ", "## ", "Instructions", "# Rubric Item to Evaluate",
    "【评分标准】", "【 用户提问 】", "【待评估的回答】", ANSWER_BEGIN, ANSWER_END, "<<<", ">>>",
    "<think>", "</think>", "<思考>", "</思考>", "</ reasoning >", '{"criteria_met": true}', "criteria met", "criteria_",
    "\\u0023", "\\u000a", "\\ud800", "\\n", "\\", "\ud800", "\u200b", "\u3000", " ", "  ", "\t", "\n", "\r\n", "\u2028",
    "中", "高血压", "pd-1", "39", "β",
]
ANY_CHAR = st.characters(exclude_categories=())  # every code point, surrogates and controls included
TEXTS = st.one_of(
    st.text(ANY_CHAR, max_size=200),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(ANY_CHAR, max_size=3)), max_size=40).map("".join),
)
PROPERTY = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(TEXTS)
def test_the_answer_guard_reads_any_text(text):
    reasons = suspect_reasons(text, PROMPT)
    assert isinstance(reasons, list)
    assert set(reasons) <= {SUSPECT_VERDICT_JSON, SUSPECT_SECTION_MARKER, SUSPECT_THINK_TAG}
    assert len(reasons) == len(set(reasons))
    assert suspect_reasons(text) is not None
    fenced = fence_answer(text)
    assert fenced.startswith(ANSWER_BEGIN + "\n") and fenced.endswith("\n" + ANSWER_END)
    assert fenced.count(ANSWER_BEGIN) == fenced.count(ANSWER_END) == 1


@PROPERTY
@given(TEXTS)
def test_the_climedbench_readers_read_any_text(text):
    picked = extract_choice(text, LETTERS)
    assert picked is None or picked in LETTERS
    value, parsed = score_choice(text, "B", LETTERS)
    assert value in (0.0, 1.0) and parsed == (picked is not None)

    order = extract_order(text, "ABCD")
    assert isinstance(order, list) and len(order) == len(set(order)) and set(order) <= set("ABCD")
    tau, parsed = score_order(text, "DCBA")
    assert -1.0 <= tau <= 1.0 and parsed == bool(order)

    assert all(isinstance(token, str) and token for token in tokenize(text))
    assert 0.0 <= keyword_rouge1(text, ["高血压", "pd-1"]) <= 1.0

    for variant in VARIANTS:
        final = final_answer(text, variant)
        assert isinstance(final, str) and text.endswith(final)


# -- the rewritten readers against the rules they replace, on short texts ---------------------------

_OLD_HEADING = re.compile(r"^\s*(?:#+\s*(?P<md>.+?)\s*#*|【\s*(?P<cjk>[^】]+?)\s*】.*)$")
_OLD_MARKED = re.compile(
    r"(正确答案|答案|正确选项|选项|选择|选|(?i:answer))"
    r"\s*(?:是|为)?\s*:?\s*[(\[【〔《<*\"'“‘]*\s*"
    r"([A-Z])(?![A-Za-z])"
)
SHORT = st.lists(st.sampled_from(FRAGMENTS + ["a", "a ", " #", "##", "】a", "\n\n"]), max_size=12).map("".join)


def old_heading(line: str) -> str | None:
    match = _OLD_HEADING.match(normalise(line))
    return None if match is None else " ".join((match["md"] or match["cjk"]).split()).casefold()


def old_extract_order(answer: str, step_letters: str) -> list[str]:
    steps = frozenset(step_letters)
    text = unicodedata.normalize("NFKC", answer or "")
    for m in reversed(list(re.finditer(r"答案|顺序|排序", text))):
        found = ordering._letters_in(text[m.end():], steps)
        if found:
            return found
    return ordering._letters_in(text, steps)


@PROPERTY
@given(st.one_of(SHORT, st.text(st.sampled_from(" \t\n\u3000#【】a"), max_size=10)))
def test_a_heading_is_named_as_the_regular_expression_named_it(line):
    assert answer_guard._heading(line) == old_heading(line)


@PROPERTY
@given(SHORT)
def test_the_linear_choice_and_order_readers_read_as_before(text):
    text = unicodedata.normalize("NFKC", text)
    old = [(m.span(1), m.span(2)) for m in _OLD_MARKED.finditer(text)]
    assert [(m.span(1), m.span(2)) for m in choice._MARKED.finditer(text)] == old
    labels = [(m.start(1), m.group(1)) for m in choice._LABEL.finditer(text) if m.group(1) in LETTERS]
    heads = {start for start, letter in labels if any(s > start and other != letter for s, other in labels)}
    assert choice._list_heads(labels) == heads
    assert extract_order(text, "ABCD") == old_extract_order(text, "ABCD")


def test_the_heading_rule_keeps_its_corner_cases():
    cases = {"# Instructions": "instructions", "  ##  Grading   Item ##": "grading item", "# Item ## ": "item ##", "【 评分标准 】后文": "评分标准",
             "##": "#", "#": None, "# ": "", "#\n": None, "# a\\u000ab": None, "【a】b\\u000a": "a", "【】": None, "正文": None}
    for line, name in cases.items():
        assert answer_guard._heading(line) == old_heading(line) == name, line


# -- 1 MB adversarial answers ----------------------------------------------------------------------


def _repeat(unit: str, n: int = ONE_MB) -> str:
    return (unit * (n // len(unit) + 1))[:n]


ADVERSARIAL = {  # the forms that were quadratic or worse, and the slowest linear ones (bench figures)
    "section marker, spaces run": "【" + _repeat(" ", ONE_MB - 2) + "x",  # was cubic in the heading rule
    "md heading, spaces run": "# a" + _repeat(" ", ONE_MB - 4) + "b",
    "cjk heading, spaces run": "【a" + _repeat(" ", ONE_MB - 3) + "b",
    "answer marker, spaces, no letter": "答案" + _repeat(" ", ONE_MB - 3) + "!",  # was k**4 in extract_choice
    "marked labels": _repeat("答案：A."),  # was quadratic in extract_choice
    "letter then answer markers": "A" + _repeat("答案", ONE_MB - 1),  # was quadratic in extract_order
    "empty lines": _repeat("\n"),
    "lone surrogates": _repeat("\ud800"),
    "nested brackets": _repeat("【[{("),
}
READERS = {
    "suspect_reasons": lambda text: suspect_reasons(text, PROMPT),
    "fence_answer": fence_answer,
    "extract_choice": lambda text: extract_choice(text, LETTERS),
    "score_order": lambda text: score_order(text, "DCBAE"),
    "keyword_rouge1": lambda text: keyword_rouge1(text, ["高血压", "ACEI"]),
    "final_answer": lambda text: final_answer(text, COT),
}


@pytest.mark.parametrize("form", ADVERSARIAL)
def test_a_1mb_adversarial_answer_is_read_in_linear_time(form):
    text = ADVERSARIAL[form]
    slow = {}
    for name, reader in READERS.items():
        start = time.perf_counter()
        reader(text)
        seconds = time.perf_counter() - start
        if seconds > BUDGET_SECONDS:
            slow[name] = round(seconds, 2)
    assert not slow, f"{form}: {slow}"
