"""Judge prompts for ClinConsensus rubric grading.

Two modes:

* ``per_criterion`` (the benchmark's protocol): one judge call per (case, criterion) returning
  ``{"explanation": ..., "criteria_met": true|false}``.
* ``batched``: one call per case grading every criterion, returning a JSON list of verdicts.

Prompts are chat messages as plain dicts (``{"role", "content"}``) so both framework adapters and the
OpenAI-compatible judge client can use them unchanged. Everything the 30 prompts of a case have in
common (instructions, the question, the answer) comes first and the criterion comes last, so a
provider's or vLLM's prefix cache can serve most of each prompt.
"""

from __future__ import annotations

from typing import Sequence

PER_CRITERION = "per_criterion"
BATCHED = "batched"
JUDGE_MODES: tuple[str, ...] = (PER_CRITERION, BATCHED)


def check_judge_mode(mode: str, name: str = "judge_mode") -> str:
    """``mode`` if it is a judge mode; ``ValueError`` naming the setting and the choices otherwise
    (the one check, whichever way the setting came in)."""
    if mode not in JUDGE_MODES:
        raise ValueError(f"{name}={mode!r}; choose one of {', '.join(JUDGE_MODES)}")
    return mode

PER_CRITERION_MAX_TOKENS = 512  # the local judge's budget (ClinConsensus-Judge-8B: 512 new tokens)
BATCHED_TOKENS_PER_CRITERION = 96  # batched verdicts ask for a one-sentence explanation each


def judge_max_tokens(mode: str, n_criteria: int, per_criterion: int | None = None) -> int:
    """The judge's token budget for one call: ``per_criterion`` (default 512) in per-criterion mode,
    96 per criterion in batched mode. Both framework adapters use this one rule."""
    if mode == BATCHED:
        return BATCHED_TOKENS_PER_CRITERION * n_criteria
    return per_criterion or PER_CRITERION_MAX_TOKENS

_RULES = """评分规则：
1. 一条标准若同时提出多项要求，只有每一项都做到才算满足。
2. 标准中用“如”“例如”“比如”“包括”列出的内容只是举例，回答不必覆盖全部示例，给出与标准意图相符的合理内容即可。
3. 标准中点名的医学事实、疾病、药物、剂量、阈值或指南，回答必须表述正确；表述错误即为不满足。
4. 以“是否”提出的标准从严判断：回答中必须清楚地出现该内容或行为，含糊、暗示或只在字面上沾边都不算满足。
只依据给出的回答判断，不要替回答补充内容；理由用中文，简明扼要。"""

PER_CRITERION_SYSTEM = f"""你是一名资深临床医学专家，负责按照评分标准审阅一段医疗问答中的回答。
你会看到用户的提问、待评估的回答，以及一条评分标准。请判断回答是否满足这条标准。

{_RULES}

只输出一个 JSON 对象，不要输出其他内容，格式为：
{{"explanation": "判断理由", "criteria_met": true}}
其中 criteria_met 为 true（满足）或 false（不满足）。"""

BATCHED_SYSTEM = f"""你是一名资深临床医学专家，负责按照评分标准审阅一段医疗问答中的回答。
你会看到用户的提问、待评估的回答，以及一组带编号的评分标准。请逐条独立判断回答是否满足每条标准。

{_RULES}

只输出一个 JSON 数组，不要输出其他内容；每条标准对应一个对象，顺序与编号一致，格式为：
[{{"criterion_id": "标准编号", "explanation": "一句话理由", "criteria_met": true}}]
其中 criteria_met 为 true（满足）或 false（不满足），每条标准都必须出现且只出现一次。"""


PROBE_SYSTEM = "clinconsensus-tasks: judge connectivity check."
PROBE_MESSAGES: list[dict[str, str]] = [
    {"role": "system", "content": PROBE_SYSTEM},
    {"role": "user", "content": "请只回复 OK。"},
]
"""One tiny request sent before a run, so a wrong key, URL or model name fails at once instead
of turning every judgment into a failure after the model under test has answered everything."""


def case_question(clinical_context: str, user_request: str) -> str:
    """The message put to the model under test: the clinical context, a blank line, the request."""
    return f"{clinical_context}\n\n{user_request}"


def _case_block(question: str, answer: str) -> str:
    return f"【用户提问】\n{question}\n\n【待评估的回答】\n{answer}\n\n"


def per_criterion_messages(question: str, answer: str, criterion: str) -> list[dict[str, str]]:
    """Messages for one (case, criterion) judgment; the criterion is the only varying suffix."""
    return [
        {"role": "system", "content": PER_CRITERION_SYSTEM},
        {"role": "user", "content": _case_block(question, answer) + f"【评分标准】\n{criterion}"},
    ]


def batched_messages(
    question: str, answer: str, criteria: Sequence[tuple[str, str]]
) -> list[dict[str, str]]:
    """Messages grading several criteria, given as ``(criterion_id, criterion)`` pairs, at once."""
    listing = "\n".join(f"[{cid}] {text}" for cid, text in criteria)
    return [
        {"role": "system", "content": BATCHED_SYSTEM},
        {"role": "user", "content": _case_block(question, answer) + f"【评分标准】\n{listing}"},
    ]
