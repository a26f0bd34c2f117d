"""Judge tokens in lm-eval's results: per-case values and their sums.

Each document's judge record carries the tokens its judge calls reported (``judge_usage``, and
the local judge's under ``local`` in a dual-judge run). ``process_results`` puts them under the
metrics below, and ``aggregate_sum`` makes the run's totals appear in lm-eval's results table and
results JSON next to the scores (lm-eval has no built-in sum aggregation).
"""

from __future__ import annotations

from typing import Any, Sequence

from clinconsensus_tasks.scorers.usage import TokenUsage

TOKEN_METRICS = ("judge_prompt_tokens", "judge_cached_prompt_tokens", "judge_completion_tokens")


def usage_values(record: dict[str, Any]) -> dict[str, int]:
    """A case's judge tokens (both judges of a dual run together) under the TOKEN_METRICS names."""
    used = TokenUsage.from_dict(record.get("judge_usage")) + TokenUsage.from_dict((record.get("local") or {}).get("judge_usage"))
    return {"judge_prompt_tokens": used.prompt_tokens, "judge_cached_prompt_tokens": used.cached_prompt_tokens,
            "judge_completion_tokens": used.completion_tokens}


def aggregate_sum(items: Sequence[float]) -> float:
    return float(sum(items))
