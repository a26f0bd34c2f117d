"""The answer as the user saw it: what the judge grades.

A reasoning model served without a reasoning parser writes its thinking into the answer text as a
leading ``<think>...</think>`` block. The user of a chat product does not see that text, and the
official protocol grades the reply, so that block is removed before judging unless the run asks
to send it (the provider's separate reasoning field is handled by the Inspect adapter). Only a
*leading* block is thinking: a ``</think>`` or ``<think>`` anywhere else is text the user read
(harmful advice before a stray ``</think>`` must not be hidden from the judge), so the answer
then reaches the judge whole and ``answer_guard`` counts it as suspect. A leading block that
never closes was cut off by the generation limit while thinking: the user saw no reply at all, so
nothing is left to grade, and it counts as a truncated answer. The split is the verdict rule's own
(``verdicts.split_leading_thinking``). Both framework adapters call :func:`visible_answer`, so
both grade the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clinconsensus_tasks.scorers.clinconsensus.verdicts import split_leading_thinking

ANSWER_MAX_TOKENS = 8192
"""The generation limit for the model under test, the same in both frameworks (Inspect task
``answer_max_tokens``; lm-eval ``max_gen_toks`` in the YAML): room for a reasoning model's thinking
and a full reply. Answers that reach it are counted as ``truncated_answers``."""

_THINK_TAG = re.compile(r"</?think>")


@dataclass(frozen=True)
class VisibleAnswer:
    text: str  # what the judge is given
    thinking_removed: bool  # a leading thinking block was taken out
    cut_in_thinking: bool  # the leading thinking block never closed: the generation limit stopped it


def visible_answer(raw: str | None, keep_thinking: bool = False) -> VisibleAnswer:
    """``raw`` without its leading thinking block (unless ``keep_thinking``); whole when a think
    tag appears anywhere but in that block."""
    raw = raw or ""
    split = split_leading_thinking(raw)
    if split is None:
        return VisibleAnswer(raw if keep_thinking else "", False, True)
    rest = split[1]
    if keep_thinking or not raw.lstrip().startswith("<think>") or _THINK_TAG.search(rest):
        return VisibleAnswer(raw, False, False)
    return VisibleAnswer(rest.strip(), True, False)
