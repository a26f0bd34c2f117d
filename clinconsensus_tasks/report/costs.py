"""What the judges of a run spent: tokens per judge from per-case records, and money from ``--prices``.

The per-case token counts come from the APIs' own ``usage`` fields, recorded by both frameworks'
judge paths in each case's record (``CaseRecord.judge_usage``; see ``scorers.usage``). Used by
``summarize``, ``summarize --csv`` and the HTML report.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from clinconsensus_tasks.scorers.clinconsensus.jury import is_jury
from clinconsensus_tasks.scorers.usage import Prices, TokenUsage, judge_name, price_for


def case_usage(record: Any) -> dict[str, TokenUsage]:
    """One case's tokens per judge name (:func:`scorers.usage.judge_name`, so both frameworks'
    runs name a judge alike; each further judge role of the run apart)."""
    out = {}
    if record.judge_usage or (record.judge and not is_jury(record)):  # a jury's panel calls no model: its jurors do
        out[judge_name(record.judge) or "judge"] = TokenUsage.from_dict(record.judge_usage)
    for role, verdicts in record.other_roles.items():
        if verdicts.usage:
            out[judge_name(verdicts.judge) or role] = TokenUsage.from_dict(verdicts.usage)
    return out


def judge_usage(records: Sequence[Any]) -> dict[str, TokenUsage]:
    """Tokens per judge over a run's records."""
    out: dict[str, TokenUsage] = {}
    for record in records:
        for judge, used in case_usage(record).items():
            out[judge] = out.get(judge, TokenUsage()) + used
    return out


def usage_rows(usage: Mapping[str, TokenUsage], prices: Mapping[str, Prices] | None = None) -> list[dict[str, Any]]:
    """One row per judge: calls, prompt / cached prompt / completion tokens, and cost when priced
    (``None`` when ``prices`` has no entry for that judge)."""
    rows = []
    for judge, used in usage.items():
        price = price_for(judge, prices or {})
        rows.append({"judge": judge, **used.to_dict(), "cost": price.cost(used) if price else None})
    return rows
