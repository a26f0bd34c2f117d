"""How long a judge request may be, and what is judged when an answer is longer: one rule, one
place, for both frameworks and every transport (:class:`JudgeInputLimits`).

Why: a judge server refuses a prompt longer than its context (vLLM and llama.cpp answer 400), and
that refusal came after the model's answer had been paid for, as 30 failed judgments. The official
runner of the released judge never meets it: it cuts every input at 5,120 tokens and leaves 512 for
the verdict.

The rule. A judge's input limit is the smallest of what is known of it:

* the released judge (a model name containing ``ClinConsensus-Judge``): 5,120 input tokens, the
  official limit;
* a server that lists its context (vLLM's and SGLang's ``max_model_len``): that context minus the
  verdict's tokens;
* a server that lists nothing (llama.cpp, a hosted API) but refused a request for its length: the
  context its refusal names, minus the verdict's tokens, scaled by the refused request's estimate
  over the tokens the server counted in it (:func:`limit_from_refusal`), learned for the rest of
  the run; the case whose request was refused is judged again within the learned limit (again
  after a further refusal, :data:`REFITS` times at most).

A case whose requests are longer than its judge's limit is judged with the tail of its *answer* cut
(:meth:`InputLimit.fit_answer`), and the record says so (``judge_input_cut``: the answer's and the
judged part's characters, the limit and why). The official runner cuts the tail of the whole
templated prompt, which drops the rubric item and the answer format; cutting the answer keeps both
and gives the judge the same budget. A request still too long (a question and rubric item that do
not fit even with no answer) is not sent: each of its judgments fails as ``request``, with the
reason (:meth:`InputLimit.check`). With no limit known the request is sent as it is.

Tokens are estimated from characters, not counted with the judge's tokenizer (which the
frameworks do not have for a remote judge): one token per non-ASCII character and one per two
ASCII characters, rounded up. For Qwen's tokenizer this errs high on clinical Chinese (common
words merge two or more characters into a token, digits take one token each, English words
average about four characters), so an input kept under the estimate fits the real limit, and the
cut is at most a little earlier than a tokenizer's. A small model's tokenizer can count more than
the estimate (SmolLM2's: 1.6 tokens per estimated token on clinical Chinese): a server's refusal
then gives the ratio. Chat-template markers are allowed :data:`TEMPLATE_TOKENS` per request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from clinconsensus_tasks.judge.server_info import ServerInfo
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    ERROR_REQUEST,
    JudgeCallError,
    message_of,
    unwrapped,
)
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, GradedCase, grade_case
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import (
    BATCHED,
    batched_messages,
    per_criterion_messages,
)

OFFICIAL_MAX_INPUT_TOKENS = 5120  # scripts/run_local_judge.py --max-input-length
RELEASED_JUDGE = "clinconsensus-judge"  # skylenage/ClinConsensus-Judge-8B, in any provider's spelling
OFFICIAL_CUT = "the released judge's official input limit"  # the one cut a release run may hold (gates.release)
TEMPLATE_TOKENS = 32  # role markers and the empty thinking block Qwen3's chat template adds
SAFETY = 0.95  # a limit learned from a refusal is kept this far under it: answers tokenize unevenly
# Gradings of a case again within a limit learned while it was judged. The first refusal's ratio of
# server tokens to the estimate is that of a request made mostly of the long answer; the cut
# request is mostly the template, which may tokenize otherwise (SmolLM2: English answers under the
# estimate, the Chinese template 1.6 times over it), so a second refusal can follow and teach the
# ratio of a request like the ones that fit.
REFITS = 3

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
    """At most ``max_tokens`` estimated input tokens per judge request (``None``: no known limit),
    and ``why`` that is the limit."""

    max_tokens: int | None = None
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
        """``answer`` cut at its tail so that the longest of the case's requests fits. An answer
        that cannot fit even when empty is returned whole: :meth:`check` refuses its requests."""
        if self.max_tokens is None or not rubrics:
            return answer
        room = self.max_tokens - max(request_tokens(p) for p in prompts_without_answer(question, rubrics, mode, template))
        if room <= 0 or estimated_tokens(answer) <= room:
            return answer
        kept, used = 0, 0.0
        for kept, char in enumerate(answer):
            used += 1 if ord(char) >= 128 else 0.5
            if used > room:
                break
        return answer[:kept]


def judge_input_limit(model: str, server: ServerInfo | None, max_new_tokens: int) -> InputLimit:
    """What is known before any request of a judge ``model`` on ``server`` that may write
    ``max_new_tokens``: the released judge's official limit, the server's listed context."""
    limits = []
    if server and server.max_model_len:
        limits.append(InputLimit(server.max_model_len - max_new_tokens,
                                 f"the server's max_model_len {server.max_model_len} minus {max_new_tokens} verdict tokens"))
    if is_released_judge(model):
        limits.append(InputLimit(OFFICIAL_MAX_INPUT_TOKENS, OFFICIAL_CUT))
    return min(limits, key=lambda limit: limit.max_tokens or 0, default=InputLimit())


# A context refusal, in the words of the servers met (vLLM, llama-cpp-python, OpenAI, SGLang,
# llama.cpp's server, TGI, Anthropic): the context, and the prompt's tokens as the server counted them.
_CONTEXT = re.compile(r"maximum context length is (\d+)|context length \((\d+) tokens\)|context (?:size|window) (?:of )?\(?(\d+)"
                      r"|[\"']n_ctx[\"']\s*:\s*(\d+)|`max_new_tokens` must be <= (\d+)|tokens > (\d+) maximum", re.IGNORECASE)
_PROMPT = re.compile(r"\((\d+) in the messages|resulted in (\d+) tokens|(?:has|have) (\d+) input tokens|input \((\d+) tokens\)"
                     r"|request \((\d+) tokens\)|[\"']n_prompt_tokens[\"']\s*:\s*(\d+)|Given: (\d+) `inputs` tokens"
                     r"|prompt is too long: (\d+) tokens|Requested tokens \((\d+)\)", re.IGNORECASE)


def _number(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.search(text)
    return int(next(g for g in found.groups() if g)) if found else None


def limit_from_refusal(reason: str, messages: Messages, max_new_tokens: int) -> InputLimit | None:
    """The input limit a server's refusal of ``messages`` for their length gives (``None``: the
    refusal names no context). The context minus ``max_new_tokens`` is in the server's tokens;
    where the refusal also counts the prompt, it is turned into this module's estimate by the
    request's ratio, and kept :data:`SAFETY` under it."""
    context = _number(_CONTEXT, reason)
    if context is None:
        return None
    room = max(context - max_new_tokens, 0)
    why = f"the server's context of {context} tokens, from its refusal, minus {max_new_tokens} verdict tokens"
    prompt = _number(_PROMPT, reason)
    if not prompt:
        return InputLimit(room, why)
    estimate = request_tokens(messages)
    return InputLimit(int(room * estimate / prompt * SAFETY),
                      f"{why}, at {estimate} estimated for the server's {prompt} prompt tokens, less {round((1 - SAFETY) * 100)}%")


def prompts_without_answer(question: str, rubrics: Sequence[tuple[str, str]], mode: str,
                           template: JudgeTemplate | None) -> list[Messages]:
    """Every request the case sends, with an empty answer: what the answer must fit beside."""
    if mode == BATCHED:
        return [batched_messages(question, "", [(str(i + 1), text) for i, (_, text) in enumerate(rubrics)])]
    build: Callable[[str, str, str], Messages] = template.messages if template else per_criterion_messages
    return [build(question, "", text) for _, text in rubrics]


class JudgeInputLimits:
    """The input limit of each judge of a run, learned from refusals as they come, and the one
    place a case is graded within it (both frameworks, every transport)."""

    def __init__(self) -> None:
        self._learned: dict[str, InputLimit] = {}

    def limit(self, judge: str, server: ServerInfo | None, max_new_tokens: int) -> InputLimit:
        known = judge_input_limit(judge, server, max_new_tokens)
        learned = self._learned.get(judge)
        if learned is not None and (known.max_tokens is None or (learned.max_tokens or 0) < known.max_tokens):
            return learned
        return known

    async def grade(self, judge: str, server: ServerInfo | None, max_new_tokens: int, case_id: str, question: str, answer: str,
                    rubrics: Sequence[tuple[str, str]], complete: Callable[[Messages, bool], Any], mode: str, max_attempts: int,
                    template: JudgeTemplate | None, **record: Any) -> GradedCase:
        """:func:`grade_case` with ``answer`` fitted to ``judge``'s limit; a case whose request the
        server refused for its length is judged again within the limit that refusal gives."""
        limit = self.limit(judge, server, max_new_tokens)
        args = (judge, server, max_new_tokens, case_id, question, answer, rubrics, complete, mode, max_attempts, template, record)
        graded = await self._grade(limit, *args)
        for _ in range(REFITS):  # a refusal while this case was judged taught a smaller limit
            again = self.limit(judge, server, max_new_tokens)
            if again == limit or again.fit_answer(answer, question, rubrics, mode, template) == \
                    limit.fit_answer(answer, question, rubrics, mode, template):
                break
            limit = again
            graded = await self._grade(limit, *args)
        return graded

    async def _grade(self, limit: InputLimit, judge: str, server: ServerInfo | None, max_new_tokens: int, case_id: str, question: str,
                     answer: str, rubrics: Sequence[tuple[str, str]], complete: Callable[[Messages, bool], Any], mode: str,
                     max_attempts: int, template: JudgeTemplate | None, record: dict[str, Any]) -> GradedCase:
        sent = limit.fit_answer(answer, question, rubrics, mode, template)

        async def call(messages: Messages, fresh: bool) -> Any:
            # the limit as now known: once one request is refused for its length, the case's
            # others are not sent into the same refusal
            self.limit(judge, server, max_new_tokens).check(messages)
            try:
                return await complete(messages, fresh)
            except Exception as exc:
                learned = limit_from_refusal(message_of(unwrapped(exc)), messages, max_new_tokens)
                if learned is not None:
                    known = self._learned.get(judge)
                    if known is None or (learned.max_tokens or 0) < (known.max_tokens or 0):
                        self._learned[judge] = learned
                raise

        graded = await grade_case(case_id, question, sent, rubrics, call, judge, mode, max_attempts, template=template, **record)
        if sent == answer:
            return graded
        cut = {"answer_chars": len(answer), "judged_chars": len(sent), "limit_tokens": limit.max_tokens, "why": limit.why}
        return replace(graded, roles={**graded.roles, HEADLINE_ROLE: replace(graded.headline, input_cut=cut)})
