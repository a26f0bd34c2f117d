"""``summarize --csv DIR``: per-case and summary CSV files, the shape release dashboards ingest.

``cases.csv`` has one row per (log, case, epoch): labels, met/judged, and the case's term of every
mean metric and value of every count in the metric table (``scorers.clinconsensus.metric_table``:
rubric accuracy, Pass@k indicators and CACS@k terms, whose means are the run's metrics; judge
failures, empty answers, judge tokens ...).
``summary.csv`` has one row per (log, slice): ``overall`` and every breakdown label, with the
headline metrics (fractions), the case count, judge failures and, on ``overall``, the judge
tokens and cost. Every value comes from ``scorers.clinconsensus.cacs`` and ``report.costs``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.report.costs import judge_usage, usage_rows
from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.scorers.clinconsensus.cacs import breakdowns, summarize
from clinconsensus_tasks.scorers.clinconsensus.metric_table import case_counts
from clinconsensus_tasks.scorers.usage import Prices, TokenUsage
from clinconsensus_tasks.storage import make_folder, output_location, write_text


def _case_rows(path: str, records: Sequence[LoggedCase], thresholds: Sequence[int], n_criteria: int) -> list[dict[str, Any]]:
    """One row per case: labels, met/judged, then every metric table term and count of the case."""
    rows = []
    for r in records:
        g = r.graded
        used = sum((TokenUsage.from_dict(v.usage) for v in g.roles.values()), TokenUsage())
        meta = r.metadata or {}
        rows.append({"log": path, "case_id": g.case_id, "epoch": g.epoch, "difficulty": meta.get("difficulty", ""),
                     "subject": meta.get("subject", ""), "audience": meta.get("audience", ""), "judge": g.judge,
                     "met": g.met, "judged": g.judged, **g.terms(thresholds, n_criteria), **case_counts(g), "judge_calls": used.calls})
    return rows


def _summary_rows(path: str, records: Sequence[LoggedCase], thresholds: Sequence[int], n_criteria: int,
                  prices: Mapping[str, Prices]) -> list[dict[str, Any]]:
    results = [r.graded.result() for r in records]
    overall = {"log": path, "slice": "overall", **summarize(results, thresholds, n_criteria)}
    used = list(judge_usage([r.graded for r in records]).items())
    spent = sum((u for _, u in used), TokenUsage())
    costs = [row["cost"] for row in usage_rows(dict(used), prices)]
    overall.update({"judge_calls": spent.calls, "judge_prompt_tokens": spent.prompt_tokens,
                    "judge_cached_prompt_tokens": spent.cached_prompt_tokens, "judge_completion_tokens": spent.completion_tokens,
                    "judge_cost": sum(costs) if costs and all(c is not None for c in costs) else ""})
    rows = [overall]
    for dim, labels in breakdowns(results, thresholds, n_criteria).items():
        for label, stats in labels.items():
            rows.append({"log": path, "slice": f"{dim}={label}", **stats})
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=columns, restval="")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, text.getvalue(), newline="")  # a local file, or a URL (one upload)


def write_csv(folder: str | Path, runs: Mapping[str, Sequence[LoggedCase]], thresholds: Sequence[int], n_criteria: int,
              prices: Mapping[str, Prices] | None = None) -> tuple[Path, Path]:
    """Write ``cases.csv`` and ``summary.csv`` for ``{log path: records}``; return their paths."""
    folder = output_location(folder)
    make_folder(folder)
    cases = [row for path, records in runs.items() for row in _case_rows(path, records, thresholds, n_criteria)]
    summary = [row for path, records in runs.items() for row in _summary_rows(path, records, thresholds, n_criteria, prices or {})]
    _write(folder / "cases.csv", cases)
    _write(folder / "summary.csv", summary)
    return folder / "cases.csv", folder / "summary.csv"
