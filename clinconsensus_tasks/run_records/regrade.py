"""Stored answers graded again by a judge: the records of a run (``clinconsensus.logs``) sent to an
OpenAI-compatible judge through the project's client (``judge.client.judge_documents``), each answer
as the log holds it. ``rescore`` writes the fresh verdicts into a new log; ``audit`` compares
them with the run's own."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase


def case_documents(records: Sequence[LoggedCase]) -> list[dict[str, Any]]:
    """The judge's documents of ``records``: each case's labels, id, question and rubric."""
    return [{**r.metadata, "case_id": r.graded.case_id, "question": r.question,
             "rubrics": [{"criterion_id": c, "criterion": t} for c, t in r.rubrics]} for r in records]


async def regrade(records: Sequence[LoggedCase], settings: Any, mode: str, template: Any = None) -> list[GradedCase]:
    from clinconsensus_tasks.judge.client import judge_documents

    out, _ = await judge_documents([r.answer for r in records], case_documents(records), settings, mode, template=template)
    # The answer is the one the log holds: what was noted about it when it was first graded stays.
    return [replace(fresh, epoch=r.graded.epoch, answer_truncated=r.graded.answer_truncated, thinking_removed=r.graded.thinking_removed)
            for fresh, r in zip(out, records)]
