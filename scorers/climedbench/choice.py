"""Multiple-choice answer extraction for CliMedBench's single-answer question tasks.

CliMedBench scores its multiple-choice tasks by accuracy, which needs one option letter per
free-text answer. Chinese models reply in many shapes ("答案：B", "我选D", "Ｂ．肺炎链球菌",
"首选CT检查，答案为A") and clinical prose is full of Latin abbreviations (CT, ICU, DNA) that
must not be read as choices. The rules below are deliberately simple and ordered, so that a
score can be traced back to the rule that produced it:

1. the letter right after the *last* answer marker (答案, 正确答案, 正确选项, 选项, 选择, 选, answer)
   that is followed by a valid, standalone option letter, unless that letter heads a list of
   options ("答案：A. ... B. ...") or is an option label after 选项 ("选项：D. ...": a model
   repeating the options writes that; "选项D" and "正确选项：D." are choices);
2. otherwise, in an answer that does not list options, a valid option letter at the very start of
   the answer (after opening brackets, asterisks, quotes and whitespace);
3. otherwise, in an answer that does not list options, the option letter that stands alone in the
   text, if exactly one distinct one does;
4. otherwise nothing: the answer is unparseable.

An answer *lists options* when two or more distinct valid letters stand as option labels: a letter
at the start of a line or after a space, punctuation or an opening bracket, followed by ``.``,
``、``, ``:`` or a closing bracket ("A. 胃镜 B. 超声", "(A) ... (B) ...", "A、... B、..."). Such an
answer (a small model often repeats the whole option list, or goes through the options one by
one) says which option is right only by an answer marker; its first letter or its only
standalone letter is not a choice. One label alone ("Ｂ．肺炎链球菌") is an answer, not a list.

Text is NFKC-normalised first (full-width "Ｂ" and "：" become ASCII). Only *uppercase* letters
count as choices, so the English article "a" or a lowercase "e" never does; "答案：b" is
therefore unparseable. A letter is standalone when no ASCII letter touches it on either side
(digits may: "B12" still holds a standalone "B") and it does not follow a degree sign, so a
temperature such as "39℃" (NFKC: "39°C") or "38.5°C" is never read as option C. Rule 2 means
"A或者C都可以" gives A, and an English answer opening with the article "A" gives A.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Sequence

# A marker, an optional 是/为, an optional colon, optional opening brackets/emphasis, the letter.
# Longer markers come first so "正确答案" and "选项" are consumed whole. White space may follow
# the marker and each optional part; every \s* after the first comes right after a character it
# cannot match, so a run of white space is read one way only (linear time: four bare \s* in a
# row, "\s*(?:是|为)?\s*:?\s*[...]*\s*", tried every split of a run after a marker, k**4 steps).
_MARKED = re.compile(
    r"(正确答案|答案|正确选项|选项|选择|选|(?i:answer))"
    r"\s*(?:[是为]\s*)?(?::\s*)?(?:[(\[【〔《<*\"'“‘]+\s*)?"
    r"([A-Z])(?![A-Za-z])"
)
_OPTIONS = "选项"  # "options" as much as "option": 选项：A. ... names an option of a list
_LEADING = re.compile(r"[\s(\[{【〔《<*\"'“‘#_]*([A-Z])(?![A-Za-z])")
_STANDALONE = re.compile(r"(?<![A-Za-z°])([A-Z])(?![A-Za-z])")
# An option label: at a line start or after a space, punctuation or an opening bracket (NFKC has
# made full-width punctuation ASCII), an optional bracket, the letter, then . 、 : or a closing bracket.
_LABEL = re.compile(r"(?:^|(?<=[\s(\[【〔《<*\"'“‘:;,.!?，。；！？]))[(\[【〔]?([A-Z])\s*[.、:)\]】〕]", re.MULTILINE)


def _valid_letters(letters: Sequence[str]) -> frozenset[str]:
    return frozenset(unicodedata.normalize("NFKC", letter).strip() for letter in letters)


def extract_choice(answer: str, letters: Sequence[str]) -> str | None:
    """The option letter an answer chooses, or None when it cannot be told (rules in module doc)."""
    valid = _valid_letters(letters)
    text = unicodedata.normalize("NFKC", answer or "")
    labels = [(m.start(1), m.group(1)) for m in _LABEL.finditer(text) if m.group(1) in valid]
    label_at = {start for start, _ in labels}
    heads = _list_heads(labels)
    marked = [m.group(2) for m in _MARKED.finditer(text)
              if m.group(2) in valid and not (m.group(1) == _OPTIONS and m.start(2) in label_at) and m.start(2) not in heads]
    if marked:
        return marked[-1]
    if len({letter for _, letter in labels}) >= 2:
        return None  # a list of options and no marker: no choice (module doc)
    m = _LEADING.match(text)
    if m and m.group(1) in valid:
        return m.group(1)
    alone = {c for c in _STANDALONE.findall(text) if c in valid}
    if len(alone) == 1:
        return alone.pop()
    return None


def _list_heads(labels: list[tuple[int, str]]) -> set[int]:
    """The starts of the option labels followed, later in the text, by a label of another letter.
    One pass from the end (asking this of every marked letter over all labels was quadratic)."""
    heads: set[int] = set()
    later: set[str] = set()  # the letters of the labels after this one: at most the option letters
    for start, letter in reversed(labels):
        if later - {letter}:
            heads.add(start)
        later.add(letter)
    return heads


def score_choice(answer: str, gold: str, letters: Sequence[str]) -> tuple[float, bool]:
    """(1.0 if the extracted letter equals ``gold`` else 0.0, whether a letter was extracted)."""
    choice = extract_choice(answer, letters)
    if choice is None:
        return 0.0, False
    target = unicodedata.normalize("NFKC", gold).strip().upper()
    return (1.0 if choice == target else 0.0), True
