"""Ordering extraction and partial Kendall tau for CliMedBench's SSO and CPR tasks.

SSO (surgical step ordering) and CPR (clinical pathway reasoning) ask a model to put lettered
steps in order; the benchmark scores the agreement between the predicted and gold orders with
Kendall's tau. Free-text answers are often incomplete (a few steps only) or mix in clinical
abbreviations, so extraction keeps only the step letters it can trust, and the score is a
*partial* Kendall tau: every gold pair counts +1 when predicted in the gold order, -1 when
reversed and 0 when either step is missing, over all n(n-1)/2 gold pairs. For a complete
permutation this is the classic Kendall tau; missing steps pull the score towards 0.

Extraction (after NFKC normalisation) reads the text after the last marker (答案, 顺序, 排序)
that is followed by at least one step letter, or the whole answer when no marker is. Every run
of ASCII letters is a word: a word made only of step letters contributes each of its letters in
order ("DCBA", "D", "B A D C"); any other word is skipped whole ("CT", "ICU", and also "DCBAE"
when E is not a step), as is a word right after a degree sign ("39℃" is "39°C" after NFKC).
Matching is case-sensitive (step letters are uppercase), duplicates keep their first position.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Iterator, Sequence

_MARKER = re.compile(r"答案|顺序|排序")
_WORD = re.compile(r"°?[A-Za-z]+")
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def _trusted_words(text: str, steps: frozenset[str]) -> Iterator[re.Match[str]]:
    """The words of ``text`` made only of step letters and not after a degree sign."""
    return (m for m in _WORD.finditer(text) if m.group()[0] != "°" and all(c in steps for c in m.group()))


def _letters_in(text: str, steps: frozenset[str]) -> list[str]:
    out: dict[str, None] = {}
    for m in _trusted_words(text, steps):
        for c in m.group():
            out.setdefault(c, None)
    return list(out)


def extract_order(answer: str, step_letters: Sequence[str]) -> list[str]:
    """The step letters of an answer in the order given (rules in module doc); may be empty."""
    steps = frozenset(unicodedata.normalize("NFKC", s).strip() for s in step_letters)
    text = unicodedata.normalize("NFKC", answer or "")
    # The last marker followed by a step letter is the last one before the last word of step
    # letters (markers are CJK, words ASCII: a word after a marker is a word of the whole text).
    # Found in one pass: trying each marker from the end read the text after it, quadratic.
    last_word = None
    for last_word in _trusted_words(text, steps):
        pass
    last_marker = None
    if last_word is not None:
        for last_marker in _MARKER.finditer(text, 0, last_word.start()):
            pass
    return _letters_in(text[last_marker.end():] if last_marker else text, steps)


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def kendall_tau_partial(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Sum over gold pairs of +1 (same order), -1 (reversed), 0 (a step missing), over n(n-1)/2.

    Duplicates keep their first position in both sequences. A gold order with fewer than two
    steps has no pairs: 1.0 when its step is predicted, else 0.0 (also 0.0 for an empty gold).
    """
    gold = _dedupe(gold)
    pos = {item: i for i, item in reversed(list(enumerate(predicted)))}
    n = len(gold)
    if n < 2:
        return 1.0 if n == 1 and gold[0] in pos else 0.0
    ranks = [pos.get(item) for item in gold]
    total = 0
    for i in range(n - 1):
        a = ranks[i]
        if a is None:
            continue
        for j in range(i + 1, n):
            b = ranks[j]
            if b is not None:
                total += 1 if a < b else -1
    return total / (n * (n - 1) / 2)


def gold_steps(gold: str | Sequence[str]) -> list[str]:
    if isinstance(gold, str):
        return _dedupe(_ASCII_LETTER.findall(unicodedata.normalize("NFKC", gold).upper()))
    return _dedupe(unicodedata.normalize("NFKC", g).strip().upper() for g in gold)


def score_order(answer: str, gold: str | Sequence[str]) -> tuple[float, bool]:
    """(partial Kendall tau against ``gold``, True), or (0.0, False) when no step letter is found.

    The step letters are the gold letters; a gold string may be "DCBA" or "D→C→B→A".
    """
    steps = gold_steps(gold)
    predicted = extract_order(answer, steps)
    if not predicted:
        return 0.0, False
    return kendall_tau_partial(predicted, steps), True
