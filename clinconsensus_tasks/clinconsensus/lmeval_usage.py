"""Judge tokens in lm-eval's results: each case's tokens as per-document values, summed by lm-eval.

Each document's graded-case record carries the tokens its judge calls reported (``judge_usage``,
and the second judge's ``local_judge_usage`` in a dual-judge run). ``process_results`` puts them
under the metrics below, which ``metric_list`` declares with the ``total`` aggregation, so the
run's totals appear in lm-eval's results table and results JSON next to the scores.
"""

from __future__ import annotations

from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
from clinconsensus_tasks.scorers.usage import TokenUsage

TOKEN_METRICS = ("judge_prompt_tokens", "judge_cached_prompt_tokens", "judge_completion_tokens")


def usage_values(record: GradedCase) -> dict[str, int]:
    """A case's judge tokens (both judges of a dual run together) under the TOKEN_METRICS names."""
    used = TokenUsage.from_dict(record.judge_usage) + TokenUsage.from_dict(record.local_judge_usage)
    return dict(zip(TOKEN_METRICS, (used.prompt_tokens, used.cached_prompt_tokens, used.completion_tokens)))
