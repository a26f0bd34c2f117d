"""An OpenAI-compatible judge client for the lm-eval path and the command line.

Inspect runs use Inspect's own model roles instead (see ``clinconsensus.inspect_task.rubric_scorer``). Here the judge is
any endpoint that speaks the OpenAI chat-completions API: a hosted API, or a vLLM server running
``skylenage/ClinConsensus-Judge-8B``. The ``openai`` SDK does the transport work, including retries
with exponential backoff on 429, 5xx, connection errors and timeouts; this module adds the
concurrency bound, greedy decoding, the on-disk cache and call accounting.

Settings (environment variables):

* ``CLINCONSENSUS_JUDGE_BASE_URL`` (required), e.g. ``https://api.example.com/v1`` or
  ``http://localhost:8000/v1``,
* ``CLINCONSENSUS_JUDGE_MODEL`` (required),
* ``CLINCONSENSUS_JUDGE_API_KEY`` (default ``EMPTY``, what a local vLLM server accepts),
* ``CLINCONSENSUS_JUDGE_CONCURRENCY`` (default 32), ``CLINCONSENSUS_JUDGE_MAX_RETRIES`` (default 6),
  ``CLINCONSENSUS_JUDGE_TIMEOUT`` seconds (default 120), ``CLINCONSENSUS_JUDGE_MAX_TOKENS``
  (default 512 per criterion; batched mode allows 96 per criterion),
* ``CLINCONSENSUS_JUDGE_EXTRA_BODY``: a JSON object merged into every request, e.g.
  ``{"chat_template_kwargs": {"enable_thinking": false}}`` for a Qwen3-based judge on vLLM,
* ``CLINCONSENSUS_CACHE_DIR`` (see ``judge_cache``); ``CLINCONSENSUS_JUDGE_CACHE=0`` disables it,
* ``CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD`` (default 0.01; 0 = never stop): the share of failed
  judgments that ends the run with an error (``scorers.clinconsensus.judge_failures``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.judge.cache import JudgeCache, cache_key
from clinconsensus_tasks.judge.official_template import prompt_record
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    DEFAULT_FAILURE_THRESHOLD,
    ENV_FAILURE_THRESHOLD,
    CircuitBreaker,
    parse_failure_share,
)
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase, failure_tally, grade_case
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION_MAX_TOKENS, judge_max_tokens
from clinconsensus_tasks.scorers.usage import TokenUsage, total


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    api_key: str = "EMPTY"
    concurrency: int = 32
    max_retries: int = 6
    timeout: float = 120.0
    max_tokens: int = PER_CRITERION_MAX_TOKENS
    use_cache: bool = True
    cache_dir: str | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    failure_threshold: float = DEFAULT_FAILURE_THRESHOLD

    @classmethod
    def from_env(cls, prefix: str = "CLINCONSENSUS_JUDGE_", env: Mapping[str, str] | None = None) -> "JudgeSettings":
        """Read settings from the environment; raise :class:`ConfigurationError` naming what is missing."""
        env = os.environ if env is None else env
        missing = [f"{prefix}{name}" for name in ("BASE_URL", "MODEL") if not env.get(f"{prefix}{name}")]
        if missing:
            raise ConfigurationError(
                f"The ClinConsensus judge is not configured: set {' and '.join(missing)} "
                f"(and {prefix}API_KEY if the endpoint needs one). The judge is any OpenAI-compatible "
                "endpoint, for example a hosted API or `vllm serve skylenage/ClinConsensus-Judge-8B` "
                f"with {prefix}BASE_URL=http://localhost:8000/v1."
            )

        def number(name: str, default: float, kind: type) -> Any:
            raw = env.get(f"{prefix}{name}")
            if raw in (None, ""):
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise ConfigurationError(f"{prefix}{name}={raw!r} is not a valid {kind.__name__}") from None
            if value <= 0 and name != "MAX_RETRIES":
                raise ConfigurationError(f"{prefix}{name} must be positive, got {raw!r}")
            return value

        try:
            failure_threshold = parse_failure_share(env.get(ENV_FAILURE_THRESHOLD))
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        raw_extra = env.get(f"{prefix}EXTRA_BODY") or "{}"
        try:
            extra_body = json.loads(raw_extra)
        except ValueError as exc:
            raise ConfigurationError(f"{prefix}EXTRA_BODY is not valid JSON: {exc}") from None
        if not isinstance(extra_body, dict):
            raise ConfigurationError(f"{prefix}EXTRA_BODY must be a JSON object, got {raw_extra!r}")

        return cls(
            base_url=env[f"{prefix}BASE_URL"],
            model=env[f"{prefix}MODEL"],
            api_key=env.get(f"{prefix}API_KEY") or "EMPTY",
            concurrency=number("CONCURRENCY", 32, int),
            max_retries=number("MAX_RETRIES", 6, int),
            timeout=number("TIMEOUT", 120.0, float),
            max_tokens=number("MAX_TOKENS", PER_CRITERION_MAX_TOKENS, int),
            use_cache=env.get("CLINCONSENSUS_JUDGE_CACHE", "1") not in ("0", "false", "no"),
            cache_dir=env.get("CLINCONSENSUS_CACHE_DIR") or None,
            extra_body=extra_body,
            failure_threshold=failure_threshold,
        )


@dataclass
class CallStats:
    """What the judge was asked: calls actually sent, cache hits, characters in and out, and the
    tokens the API reported (``usage``; cache hits spend none)."""

    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    input_chars: int = 0
    output_chars: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0


class JudgeClient:
    """Async judge client. Create it inside the event loop that will use it, then ``aclose()``."""

    def __init__(self, settings: JudgeSettings, cache: JudgeCache | None = None):
        from openai import AsyncOpenAI

        self.settings = settings
        self.cache = cache if cache is not None else (JudgeCache(settings.cache_dir) if settings.use_cache else None)
        self.stats = CallStats()
        self._semaphore = asyncio.Semaphore(settings.concurrency)
        self._client = AsyncOpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            max_retries=settings.max_retries,
            timeout=settings.timeout,
        )

    def decoding(self, max_tokens: int) -> dict[str, Any]:
        return {"temperature": 0.0, "max_tokens": max_tokens, **dict(self.settings.extra_body)}

    async def complete(
        self, messages: list[dict[str, str]], fresh: bool = False, max_tokens: int | None = None,
        usage: list[TokenUsage] | None = None, before_send: Callable[[], None] | None = None,
    ) -> str:
        """Greedy completion of ``messages``; served from the cache unless ``fresh``. The tokens the
        API reports for a call sent are added to the stats and appended to ``usage`` if given.
        ``before_send`` runs once a connection slot is free, just before the request goes out (a
        circuit breaker's check: calls queued behind the concurrency limit are not sent once the
        judge is down)."""
        decoding = self.decoding(max_tokens or self.settings.max_tokens)
        key = cache_key(self.settings.base_url, self.settings.model, messages, decoding)
        if self.cache is not None and not fresh:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return hit
        extra = {k: v for k, v in decoding.items() if k not in ("temperature", "max_tokens")}
        async with self._semaphore:
            if before_send is not None:
                before_send()
            self.stats.calls += 1
            self.stats.input_chars += sum(len(m["content"]) for m in messages)
            try:
                response = await self._client.chat.completions.create(
                    model=self.settings.model,
                    messages=messages,  # type: ignore[arg-type]
                    temperature=decoding["temperature"],
                    max_tokens=decoding["max_tokens"],
                    extra_body=extra or None,
                )
            except Exception:
                self.stats.errors += 1
                raise
        text = (response.choices[0].message.content or "") if response.choices else ""
        self.stats.output_chars += len(text)
        used = TokenUsage.from_openai(getattr(response, "usage", None))
        self.stats.prompt_tokens += used.prompt_tokens
        self.stats.cached_prompt_tokens += used.cached_prompt_tokens
        self.stats.completion_tokens += used.completion_tokens
        if usage is not None:
            usage.append(used)
        if self.cache is not None:
            self.cache.put(key, text)
        return text

    async def aclose(self) -> None:
        await self._client.close()


async def judge_documents(
    answers: Sequence[str], docs: Sequence[dict], settings: JudgeSettings, mode: str, max_attempts: int = MAX_ATTEMPTS,
    template: JudgeTemplate | None = None,
) -> tuple[list[GradedCase], dict[str, int]]:
    """Grade every (answer, doc) pair concurrently with the judge; return one :class:`GradedCase`
    per document and the call stats. A doc holds ``case_id``, ``question``, ``rubrics``
    (``criterion_id``, ``criterion``) and the case's labels.

    ``template`` is the per-criterion judge template (``None``: the project's prompt); each record
    names the prompt used and its sha256.

    Used by lm-eval's judge filters and by ``clinconsensus-eval rescore``.
    """
    from tqdm.auto import tqdm

    client = JudgeClient(settings)
    prompt_info = prompt_record(template, mode)
    breaker = CircuitBreaker(resume_hint=resume_hint(settings))
    try:
        progress = tqdm(total=len(docs), desc=f"Judging ({mode}, {settings.model})", file=sys.stderr)

        async def one(answer: str, doc: dict) -> GradedCase:
            rubrics = [(r["criterion_id"], r["criterion"]) for r in doc["rubrics"]]
            max_tokens = judge_max_tokens(mode, len(rubrics), settings.max_tokens)
            spent: list[TokenUsage] = []

            async def complete(messages: list[dict[str, str]], fresh: bool) -> str:
                return await client.complete(messages, fresh, max_tokens=max_tokens, usage=spent, before_send=breaker.check)

            record = await grade_case(str(doc["case_id"]), doc["question"], answer, rubrics, complete, settings.model,
                                      mode, max_attempts, slices_of(doc), template=template, judge_prompt=prompt_info, breaker=breaker)
            progress.update(1)
            return replace(record, judge_usage=total(spent).to_dict())  # tokens of the calls sent (cache hits: none)

        jobs = [asyncio.ensure_future(one(a, d)) for a, d in zip(answers, docs)]
        try:
            records = await asyncio.gather(*jobs)
        except BaseException:  # e.g. the judge is down: send nothing more
            for job in jobs:
                job.cancel()
            raise
        progress.close()
    finally:
        await client.aclose()
        if client.cache is not None:
            client.cache.close()
    stats = vars(client.stats).copy()
    return list(records), stats


def resume_hint(settings: JudgeSettings) -> str:
    """How to finish an lm-eval run stopped by the failure policy without paying twice."""
    if not settings.use_cache:
        return "The verdict cache is off (CLINCONSENSUS_JUDGE_CACHE=0): a re-run asks the judge for every verdict again."
    from clinconsensus_tasks.judge.cache import cache_file

    return (f"Every verdict obtained is in the verdict cache ({cache_file(settings.cache_dir)}): once the judge works, "
            "re-run the same command and only the missing verdicts are asked for (add lm-eval's --use_cache DIR to "
            "reuse the model's answers too).")


def enforce_failure_policy(records: Sequence[GradedCase], settings: JudgeSettings) -> None:
    """Raise ``JudgeFailureError`` when the run's failed judgments (both judges' in a dual run)
    exceed the threshold."""
    failure_tally(records).check(settings.failure_threshold, resume_hint(settings), ENV_FAILURE_THRESHOLD)
