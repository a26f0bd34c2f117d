"""The lm-eval judge through a provider's batch API (the OpenAI protocol): half the price, within 24 h.

Why: a provider's batch API bills the same requests at half price when the answers may take up to
a day, and a judge run is exactly that. With ``CLINCONSENSUS_JUDGE_BATCH=1``, before grading, the
first-attempt judge requests of the run that the verdict cache lacks are sent as one batch:
a JSONL file uploaded (``POST /v1/files``), a batch created on it (``POST /v1/batches``), polled
(``GET /v1/batches/{id}``, every ``CLINCONSENSUS_JUDGE_BATCH_POLL`` seconds, default 30) and its
output file downloaded (``GET /v1/files/{id}/content``). Each reply goes into the verdict cache
under the key the synchronous client would use, so grading then proceeds exactly as always,
served from the cache: the verdict rules, re-asks and failure accounting are the ordinary ones.
Only what the batch did not answer (a failed line, an expired batch) and re-asks after an
unparseable verdict go to the synchronous API.

A batch in flight is written to ``judge_batches.json`` beside the verdict cache before the run
waits for it. A process stopped while waiting (Ctrl-C, a lost machine) finds its batch there on
the next run and downloads it instead of paying again; what the cache already holds is never sent.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.judge import protocol
from clinconsensus_tasks.judge.cache import JudgeCache, cache_file, cache_key
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import grade_answer
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import judge_max_tokens
from clinconsensus_tasks.scorers.usage import TokenUsage

ENV_POLL = settings_table.setting("judge_batch_poll").env
DEFAULT_POLL_SECONDS = 30.0
ENDPOINT = "/v1/chat/completions"
DONE = ("completed", "failed", "expired", "cancelled")


def ledger_path(cache_dir: str | Path | None) -> Path:
    """Where batches in flight are recorded: beside the verdict cache."""
    return cache_file(cache_dir).with_name("judge_batches.json")


class Ledger:
    """Batch ids in flight, on disk: ``{batch_id: {"model": ..., "requests": n, "created": t}}``."""

    def __init__(self, path: Path):
        self.path = path

    def read(self) -> dict[str, dict[str, Any]]:
        if not self.path.is_file():
            return {}
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ConfigurationError(f"{self.path}: not a valid batch ledger ({exc}); remove it to start the batch afresh") from None

    def _write(self, batches: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".part")
        partial.write_text(json.dumps(batches, indent=1), encoding="utf-8")
        partial.replace(self.path)

    def add(self, batch_id: str, settings: Any, requests: int) -> None:
        entry = {"base_url": settings.base_url, "model": settings.model, "requests": requests, "created": time.time()}
        self._write({**self.read(), batch_id: entry})

    def of(self, settings: Any) -> list[str]:
        """The batches in flight for this judge (endpoint and model)."""
        return [b for b, e in self.read().items() if (e.get("base_url"), e.get("model")) == (settings.base_url, settings.model)]

    def remove(self, batch_id: str) -> None:
        self._write({k: v for k, v in self.read().items() if k != batch_id})


async def first_requests(answers: Sequence[str], docs: Sequence[dict], settings: Any, mode: str,
                         template: JudgeTemplate | None) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Every first-attempt judge request the run will send, as (verdict-cache key, request body),
    case by case: found by running the grading protocol itself, once, with a judge that only takes
    note (its empty replies are thrown away), so the batch holds byte for byte what the
    synchronous client would send."""
    for answer, doc in zip(answers, docs):
        rubrics = [(r["criterion_id"], r["criterion"]) for r in doc["rubrics"]]
        decoding = protocol.decoding(judge_max_tokens(mode, len(rubrics), settings.max_tokens), settings.extra_body)
        noted: list[tuple[str, dict[str, Any]]] = []

        async def note(messages: list[dict[str, str]], fresh: bool, decoding: dict = decoding, noted: list = noted) -> str:
            noted.append((cache_key(settings.base_url, settings.model, messages, decoding),
                          {"model": settings.model, "messages": messages, **decoding}))
            return ""

        await grade_answer(doc["question"], answer, rubrics, note, mode, max_attempts=1, template=template)
        for item in noted:
            yield item


class BatchRun:
    """Submits, finds again, polls and downloads batches for one judge's settings."""

    def __init__(self, settings: Any, cache: JudgeCache, poll_seconds: float | None = None):
        self.settings, self.cache = settings, cache
        self.poll = poll_seconds if poll_seconds is not None else float(settings_table.raw("judge_batch_poll") or DEFAULT_POLL_SECONDS)
        self.ledger = Ledger(ledger_path(settings.cache_dir))
        self.client = protocol.openai_client(settings)
        self.usage = TokenUsage()
        self.usage_by_key: dict[str, TokenUsage] = {}  # what each batch reply cost, by its cache key
        self.batch_ids: list[str] = []
        self.unanswered = 0

    async def submit(self, requests: AsyncIterator[tuple[str, dict[str, Any]]]) -> tuple[str | None, int]:
        """Send every request the verdict cache lacks as one batch: (its id, or None when nothing
        is missing; the number sent). The file is written to disk a case at a time."""
        sent: set[str] = set()
        with tempfile.TemporaryFile() as lines:
            async for key, body in requests:
                if key in sent or self.cache.get(key) is not None:
                    continue
                sent.add(key)
                lines.write((json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}, ensure_ascii=False) + "\n")
                            .encode("utf-8"))
            if not sent:
                return None, 0
            lines.seek(0)
            upload = await self.client.files.create(file=("judge_requests.jsonl", lines), purpose="batch")
        batch = await self.client.batches.create(input_file_id=upload.id, endpoint=ENDPOINT, completion_window="24h")
        self.ledger.add(batch.id, self.settings, len(sent))  # before waiting: a stopped run finds it here
        return batch.id, len(sent)

    async def collect(self, batch_id: str) -> None:
        """Wait for ``batch_id`` to end, put its replies in the verdict cache, forget it."""
        while True:
            batch = await self.client.batches.retrieve(batch_id)
            if batch.status in DONE:
                break
            await asyncio.sleep(self.poll)
        answered = 0
        if batch.output_file_id:
            content = await self.client.files.content(batch.output_file_id)
            for line in content.text.splitlines():
                answered += self._store(json.loads(line)) if line.strip() else 0
        missing = max(0, (batch.request_counts.total if batch.request_counts else answered) - answered)
        self.unanswered += missing
        if batch.status != "completed" or missing:
            print(f"[clinconsensus] batch {batch_id} ended {batch.status}: {answered} replies; the rest go to the synchronous API",
                  file=sys.stderr)
        self.batch_ids.append(batch_id)
        self.ledger.remove(batch_id)

    def _store(self, line: dict[str, Any]) -> int:
        """Cache one output line's reply; 0 for a line that carries an error instead."""
        response = line.get("response") or {}
        body = response.get("body") or {}
        if line.get("error") or response.get("status_code") != 200 or not body.get("choices"):
            return 0
        self.cache.put(str(line["custom_id"]), body["choices"][0]["message"].get("content") or "")
        used = TokenUsage.from_openai(body.get("usage"))
        self.usage = self.usage + used
        self.usage_by_key[str(line["custom_id"])] = used
        return 1

    async def aclose(self) -> None:
        await self.client.close()


async def prefill_by_batch(answers: Sequence[str], docs: Sequence[dict], settings: Any, mode: str,
                           template: JudgeTemplate | None = None,
                           poll_seconds: float | None = None) -> tuple[dict[str, Any], dict[str, TokenUsage]]:
    """Fill the verdict cache for this run through the batch API (see the module docstring);
    return what it did, for the run's judge stats, and what each reply cost by its cache key (so
    the case whose verdict it is records those tokens, as a synchronous call would)."""
    if not settings.use_cache:
        raise ConfigurationError("CLINCONSENSUS_JUDGE_BATCH=1 needs the verdict cache, which holds the batch's replies: "
                                 "remove CLINCONSENSUS_JUDGE_CACHE=0")
    cache = JudgeCache(settings.cache_dir)
    run = BatchRun(settings, cache, poll_seconds)
    try:
        for batch_id in run.ledger.of(settings):  # a stopped run's batch: collect it, do not pay again
            await run.collect(batch_id)
        batch_id, sent = await run.submit(first_requests(answers, docs, settings, mode, template))
        if batch_id is not None:
            await run.collect(batch_id)
    finally:
        await run.aclose()
        cache.close()
    stats = {"batch_ids": run.batch_ids, "batch_requests": sent, "batch_unanswered": run.unanswered, "batch_usage": run.usage.to_dict()}
    return stats, run.usage_by_key
