"""The answer as the user saw it: what the judge grades.

A reasoning model served without a reasoning parser writes its thinking into the answer text,
``<think>...</think>`` before the reply (or only ``...</think>`` when the chat template opened
the block in the prompt). The user of a chat product does not see that text, and the official
protocol grades the reply, so the thinking is removed before judging unless the run asks to send
it. An answer whose thinking never closes was cut off by the generation limit while thinking: the
user saw no reply at all, so nothing is left to grade, and it counts as a truncated answer.
Both framework adapters call :func:`visible_answer`, so both grade the same text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANSWER_MAX_TOKENS = 8192
"""The generation limit for the model under test, the same in both frameworks (Inspect task
``answer_max_tokens``; lm-eval ``max_gen_toks`` in the YAML): room for a reasoning model's thinking
and a full reply. Answers that reach it are counted as ``truncated_answers``."""

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)
_OPEN, _CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class VisibleAnswer:
    text: str  # what the judge is given
    thinking_removed: bool  # some thinking was taken out
    cut_in_thinking: bool  # the thinking never closed: the generation limit stopped it


def visible_answer(raw: str | None, keep_thinking: bool = False) -> VisibleAnswer:
    """``raw`` without its thinking (unless ``keep_thinking``)."""
    raw = raw or ""
    unclosed = raw.rfind(_OPEN) > raw.rfind(_CLOSE)
    if keep_thinking:
        return VisibleAnswer(raw, False, unclosed)
    text = _THINK_BLOCK.sub("", raw)
    if _CLOSE in text:  # the block was opened by the chat template, in the prompt
        text = text.rsplit(_CLOSE, 1)[1]
    if _OPEN in text:  # opened and never closed
        text = text.split(_OPEN, 1)[0]
    return VisibleAnswer(text.strip() if text != raw else raw, text != raw, unclosed)
