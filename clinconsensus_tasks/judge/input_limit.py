"""How long a judge request may be, known before it is sent: one rule for both frameworks.

Why: a judge server refuses a prompt longer than its context (vLLM answers 400), and that refusal
came after the model's answer had been paid for, as a failed judgment. The official runner of the
released judge never meets it: it cuts every input at 5,120 tokens and leaves 512 for the verdict.

The rule (:func:`judge_input_limit`):

* the released judge (a model name containing ``ClinConsensus-Judge``): at most 5,120 input
  tokens, the official limit (less if the server's ``max_model_len`` minus the verdict's tokens is
  smaller); a longer request is fitted by cutting the tail of the *answer* (:meth:`InputLimit.fit_answer`).
  The official runner cuts the tail of the whole templated prompt, which drops the rubric item and
  the answer format; cutting the answer keeps both and gives the judge the same budget.
* any other judge whose server reports ``max_model_len`` (vLLM, SGLang): at most ``max_model_len``
  minus the verdict's tokens, and nothing is cut: a longer request is not sent, and each of its
  judgments is a failed judgment of kind ``request`` with the reason (:meth:`InputLimit.check`).
* no limit known (a hosted API): the request is sent as it is.

Tokens are estimated from characters, not counted with the judge's tokenizer (which the
frameworks do not have for a remote judge): one token per non-ASCII character and one per two
ASCII characters, rounded up. For Qwen's tokenizer this errs high on clinical Chinese (common
words merge two or more characters into a token, digits take one token each, English words
average about four characters), so an input kept under the estimate fits the real limit, and the
cut is at most a little earlier than a tokenizer's. Chat-template markers are allowed
:data:`TEMPLATE_TOKENS` per request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from clinconsensus_tasks.judge.server_info import ServerInfo
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    ERROR_REQUEST,
    JudgeCallError,
)
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import (
    BATCHED,
    batched_messages,
    per_criterion_messages,
)

OFFICIAL_MAX_INPUT_TOKENS = 5120  # scripts/run_local_judge.py --max-input-length
RELEASED_JUDGE = "clinconsensus-judge"  # skylenage/ClinConsensus-Judge-8B, in any provider's spelling
TEMPLATE_TOKENS = 32  # role markers and the empty thinking block Qwen3's chat template adds

Messages = list[dict[str, str]]


def estimated_tokens(text: str) -> int:
    """The module's estimate: one token per non-ASCII character, one per two ASCII characters."""
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return (len(text) - ascii_chars) + (ascii_chars + 1) // 2


def request_tokens(messages: Messages) -> int:
    return sum(estimated_tokens(m["content"]) for m in messages) + TEMPLATE_TOKENS


def is_released_judge(model: str) -> bool:
    return RELEASED_JUDGE in model.lower()


@dataclass(frozen=True)
class InputLimit:
    """At most ``max_tokens`` estimated input tokens per judge request (``None``: no known limit);
    ``cut``: fit a long request by cutting the answer (the released judge) rather than refuse it."""

    max_tokens: int | None = None
    cut: bool = False
    why: str = ""

    def check(self, messages: Messages) -> None:
        """Raise a ``request`` :class:`JudgeCallError` for a request over the limit: not sent, no spend."""
        if self.max_tokens is None:
            return
        size = request_tokens(messages)
        if size > self.max_tokens:
            raise JudgeCallError(ERROR_REQUEST, f"judge input of about {size} tokens exceeds the judge's limit of "
                                                f"{self.max_tokens} ({self.why}); not sent")

    def fit_answer(self, answer: str, question: str, rubrics: Sequence[tuple[str, str]], mode: str,
                   template: JudgeTemplate | None) -> str:
        """``answer`` cut at its tail so that the longest of the case's requests fits (``cut`` only).
        An answer that cannot fit even when empty is returned whole: :meth:`check` refuses it."""
        if not self.cut or self.max_tokens is None or not rubrics:
            return answer
        room = self.max_tokens - max(request_tokens(p) for p in prompts_without_answer(question, rubrics, mode, template))
        if room <= 0 or estimated_tokens(answer) <= room:
            return answer
        kept, used = 0, 0
        for kept, char in enumerate(answer):
            used += 1 if ord(char) >= 128 else 0.5
            if used > room:
                break
        return answer[:kept]


def judge_input_limit(model: str, server: ServerInfo | None, max_new_tokens: int) -> InputLimit:
    """The rule above, for a judge ``model`` on ``server`` that may write ``max_new_tokens``."""
    served = server.max_model_len - max_new_tokens if server and server.max_model_len else None
    served_why = f"the server's max_model_len {server.max_model_len} minus {max_new_tokens} verdict tokens" if served else ""
    if is_released_judge(model):
        if served is not None and served < OFFICIAL_MAX_INPUT_TOKENS:
            return InputLimit(served, True, served_why)
        return InputLimit(OFFICIAL_MAX_INPUT_TOKENS, True, "the released judge's official input limit")
    if served is not None:
        return InputLimit(served, False, served_why)
    return InputLimit()


def prompts_without_answer(question: str, rubrics: Sequence[tuple[str, str]], mode: str,
                           template: JudgeTemplate | None) -> list[Messages]:
    """Every request the case sends, with an empty answer: what the answer must fit beside."""
    if mode == BATCHED:
        return [batched_messages(question, "", [(str(i + 1), text) for i, (_, text) in enumerate(rubrics)])]
    build: Callable[[str, str, str], Messages] = template.messages if template else per_criterion_messages
    return [build(question, "", text) for _, text in rubrics]


def limited(complete: Callable[[Messages, bool], Any], limit: InputLimit) -> Callable[[Messages, bool], Any]:
    """``complete`` that refuses, unsent, a request over ``limit``."""

    async def call(messages: Messages, fresh: bool) -> Any:
        limit.check(messages)
        return await complete(messages, fresh)

    return call
