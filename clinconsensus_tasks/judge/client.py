"""An OpenAI-compatible judge client for the lm-eval path and the command line.

Inspect runs use Inspect's own model roles instead (see ``clinconsensus.inspect_task.rubric_scorer``). Here the judge is
any endpoint that speaks the OpenAI chat-completions API: a hosted API, or a vLLM server running
``skylenage/ClinConsensus-Judge-8B``. The ``openai`` SDK does the transport work, including retries
with exponential backoff on 429, 5xx, connection errors and timeouts; this module adds the
concurrency bound, greedy decoding, the on-disk cache and call accounting; ``judge_documents`` adds
what the judge's server takes (``judge.server_info``) and its input limit (``judge.input_limit``).
lm-eval's ``--metadata`` can stand in for the variables below (``clinconsensus.lmeval_judge``).

Settings: each judge role's ``judge_*`` settings in ``settings_table`` (the reference:
``docs/settings.md``), read by :meth:`JudgeSettings.from_env`.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.settings_table import GRADER, ROLE_ENV_PREFIX
from clinconsensus_tasks.judge.cache import JudgeCache, cache_key
from clinconsensus_tasks.judge.input_limit import JudgeInputLimits
from clinconsensus_tasks.judge.protocol import PROBE_MAX_TOKENS, PROBE_MESSAGES, check_failed, decoding, openai_client, request_fields, response_format
from clinconsensus_tasks.judge.official_template import prompt_record
from clinconsensus_tasks.judge.server_info import AUTO, ask_server, check_kind, in_flight
from clinconsensus_tasks.judge.slots import JudgeSlots
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    DEFAULT_FAILURE_THRESHOLD,
    ENV_FAILURE_THRESHOLD,
    ERROR_TRANSPORT,
    CircuitBreaker,
    FailureTally,
    classify,
    parse_failure_share,
    status_code_of,
)
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase, failure_tally
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION_MAX_TOKENS, judge_max_tokens
from clinconsensus_tasks.scorers.redact import held_secrets, hold_secret, hold_url_secrets, redact_value
from clinconsensus_tasks.scorers.usage import TokenUsage, total


@dataclass(frozen=True)
class JudgeSettings:
    base_url: str
    model: str
    api_key: str = field(default="EMPTY", repr=False)  # never in a repr, a traceback or a log
    concurrency: int = 32
    max_retries: int = 6
    timeout: float = 120.0
    max_tokens: int = PER_CRITERION_MAX_TOKENS
    use_cache: bool = True
    cache_dir: str | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    failure_threshold: float = DEFAULT_FAILURE_THRESHOLD
    batch: bool = False  # first attempts through the provider's batch API (judge.batch_api)
    structured_output: bool = False  # send response_format with the verdict's JSON schema
    server: str = AUTO  # judge/server_info.py: vllm, sglang, openai, or auto (ask GET /v1/models)

    def __post_init__(self) -> None:
        hold_secret(self.api_key)  # redacted from every message we raise or store (scorers.redact)
        hold_url_secrets(self.base_url)

    @classmethod
    def from_env(cls, role: str = GRADER, env: Mapping[str, str] | None = None) -> "JudgeSettings":
        """The judge settings of ``role`` (``settings_table``: ``CLINCONSENSUS_JUDGE_*`` for the
        grader, ``CLINCONSENSUS_LOCAL_JUDGE_*`` for the second judge); raise
        :class:`ConfigurationError` naming what is missing or wrong."""
        env = os.environ if env is None else env
        name = lambda key: settings_table.setting(key).env_name(role) or key  # noqa: E731
        missing = [name(key) for key in ("judge_base_url", "judge_model") if not settings_table.raw(key, env, role)]
        if missing:
            prefix = ROLE_ENV_PREFIX[role]
            raise ConfigurationError(
                f"The ClinConsensus judge is not configured: set {' and '.join(missing)} "
                f"(and {prefix}API_KEY if the endpoint needs one). The judge is any OpenAI-compatible "
                "endpoint, for example a hosted API or `vllm serve skylenage/ClinConsensus-Judge-8B` "
                f"with {prefix}BASE_URL=http://localhost:8000/v1."
            )
        model = settings_table.raw("judge_model", env, role) or ""
        if "," in model:
            raise ConfigurationError(f"{name('judge_model')}={model!r} is a list of models (a jury): only the "
                                     "ClinConsensus tasks grade with a jury; give this command one judge model")

        def number(key: str, kind: type) -> Any:
            raw = settings_table.raw(key, env, role)
            if raw is None:
                return kind(settings_table.setting(key).default)
            try:
                value = kind(raw)
            except ValueError:
                raise ConfigurationError(f"{name(key)}={raw!r} is not a valid {kind.__name__}") from None
            if value <= 0 and key != "judge_max_retries":
                raise ConfigurationError(f"{name(key)} must be positive, got {raw!r}")
            return value

        try:
            failure_threshold = parse_failure_share(settings_table.raw("judge_failure_threshold", env))
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        raw_extra = settings_table.raw("judge_extra_body", env, role) or "{}"
        try:
            extra_body = json.loads(raw_extra)
        except ValueError as exc:
            raise ConfigurationError(f"{name('judge_extra_body')} is not valid JSON: {exc}") from None
        if not isinstance(extra_body, dict):
            raise ConfigurationError(f"{name('judge_extra_body')} must be a JSON object, got {raw_extra!r}")

        return cls(
            base_url=settings_table.raw("judge_base_url", env, role) or "",
            model=model,
            api_key=settings_table.raw("judge_api_key", env, role) or "EMPTY",
            concurrency=number("judge_concurrency", int),
            max_retries=number("judge_max_retries", int),
            timeout=number("judge_timeout", float),
            max_tokens=number("judge_max_tokens", int),
            use_cache=settings_table.read_flag("judge_cache", env),
            cache_dir=settings_table.raw("cache_dir", env),
            extra_body=extra_body,
            failure_threshold=failure_threshold,
            batch=settings_table.read_flag("judge_batch", env, role),
            structured_output=settings_table.read_flag("judge_structured_output", env, role),
            server=check_kind(settings_table.raw("judge_server", env, role), name("judge_server")),
        )


def panel_from_env(role: str = GRADER, env: Mapping[str, str] | None = None) -> list[JudgeSettings]:
    """The grader role's judge(s): ``{prefix}MODEL`` names one model, or a comma-separated list
    of models, a jury (``scorers.clinconsensus.jury``), as Inspect's ``--model-role grader=a,b,c``
    does. Each juror is reached at ``{prefix}BASE_URL``, or, when that is a list as long, at the
    URL in the same position; every other setting (key, limits) is the role's."""
    env = os.environ if env is None else env
    prefix = ROLE_ENV_PREFIX[role]
    models = [m.strip() for m in (env.get(f"{prefix}MODEL") or "").split(",")]
    if len(models) < 2:
        return [JudgeSettings.from_env(role, env)]
    if "" in models or len(set(models)) < len(models) and "," not in (env.get(f"{prefix}BASE_URL") or ""):
        raise ConfigurationError(f"{prefix}MODEL={env[f'{prefix}MODEL']!r}: a jury names each juror once, with no empty name "
                                 "(the same model twice is one juror asked twice, not two votes)")
    urls = [u.strip() for u in (env.get(f"{prefix}BASE_URL") or "").split(",")]
    if len(urls) not in (1, len(models)):
        raise ConfigurationError(f"{prefix}BASE_URL has {len(urls)} URLs for {len(models)} jurors: give one URL for all, "
                                 "or one per juror in the order of the models")
    return [JudgeSettings.from_env(role, {**env, f"{prefix}MODEL": model, f"{prefix}BASE_URL": urls[i % len(urls)]})
            for i, model in enumerate(models)]


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


def retry_delay(attempt: int) -> float:
    """Seconds before retry ``attempt + 1``: the SDK's own schedule (0.5 s doubling, at most 8 s), with jitter."""
    return min(8.0, 0.5 * 2 ** attempt) * random.uniform(0.75, 1.0)


def probe_judge(settings: JudgeSettings, skip_hint: str = "") -> None:
    """Send the judge one tiny request now, before anything is paid for; a judge that does not
    answer raises :class:`ConfigurationError` (one line, no key: the SDK's error is quoted redacted,
    not chained, since its text may repeat what the server was sent). It carries the fields every
    request to this judge carries (``protocol.request_fields``: thinking off where the server takes it)."""
    client = openai_client(settings, asynchronous=False)
    try:
        server = ask_server(settings.base_url, settings.api_key, settings.model, settings.server)  # once per process
        client.chat.completions.create(model=settings.model, messages=PROBE_MESSAGES, max_tokens=PROBE_MAX_TOKENS,  # type: ignore[arg-type]
                                       extra_body=request_fields(server, settings.extra_body) or None)
    except Exception as exc:
        raise check_failed(repr(settings.model), settings.base_url, classify(exc)[1],
                           f"Check CLINCONSENSUS_JUDGE_BASE_URL, _MODEL and _API_KEY{skip_hint}.") from None
    finally:
        client.close()


class JudgeClient:
    """Async judge client. Create it inside the event loop that will use it, then ``aclose()``."""

    def __init__(self, settings: JudgeSettings, cache: JudgeCache | None = None, paid: dict[str, TokenUsage] | None = None,
                 sdk: Callable[[], Any] | None = None):
        """``sdk``: where to get the OpenAI SDK client to send with (Inspect's ``judge_calls=direct``:
        the judge role's own, which Inspect owns and closes); default a client of ``settings``'
        own, closed by :meth:`aclose`."""
        self.settings = settings
        self.cache = cache if cache is not None else (JudgeCache(settings.cache_dir) if settings.use_cache else None)
        self.paid = dict(paid or {})  # cache keys the batch API answered for this run, with their tokens
        self.stats = CallStats()
        self._semaphore = JudgeSlots(settings.concurrency)  # a case's first call ahead of queued ones (judge.slots)
        self._own = openai_client(settings, retries=0) if sdk is None else None  # complete() retries, attempt by attempt
        self._sdk = sdk if sdk is not None else (lambda: self._own)
        from openai.types.chat import ChatCompletion  # the SDK is imported where a client is made, as openai_client does

        self._reply_type = ChatCompletion
        # Per request: this client's time-out, and no SDK retry (whoever made the SDK client).
        self._options: dict[str, Any] = {"timeout": settings.timeout, "max_retries": 0}

    def decoding(self, max_tokens: int) -> dict[str, Any]:
        return decoding(max_tokens, self.settings.extra_body)

    async def complete(
        self, messages: list[dict[str, str]], fresh: bool = False, max_tokens: int | None = None,
        usage: list[TokenUsage] | None = None, breaker: CircuitBreaker | None = None,
    ) -> str:
        """Greedy completion of ``messages``; served from the cache unless ``fresh``. The tokens the
        API reports for a call sent are added to the stats and appended to ``usage`` if given.

        Transient failures (5xx, 429, time-outs, dropped connections) are retried here, up to
        ``settings.max_retries`` times with the SDK's back-off, and the ``breaker`` (the run's) is
        told of every attempt, asked before each one is sent (once a connection slot is free and
        after the cache: calls queued while the judge died are never sent, cached verdicts are
        served), so a dead judge is known within seconds. A 429 says the judge is alive: retried,
        not counted."""
        decoding = self.decoding(max_tokens or self.settings.max_tokens)
        key = cache_key(self.settings.base_url, self.settings.model, messages, decoding)
        if self.cache is not None and not fresh:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                paid = self.paid.pop(key, None)  # a reply the batch API answered for this run: its tokens
                if paid is not None and usage is not None:
                    usage.append(paid)
                return hit
        # The SDK's documented low-level post: what chat.completions.create sends, built here. Why:
        # create() first walks the messages against the SDK's typed parameters (its "transform"),
        # the largest single cost of a judge call in a profile of Inspect's direct calls
        # (bench/cache_order.py --profile; lm-eval 1.42 -> 1.10 ms a call without it), to return
        # the same plain JSON this already is. Status errors, retries and time-outs are the
        # SDK's as with create(). The fields in create()'s order, extra_body last, as create() and
        # Inspect's OpenAI provider lay them out: the same request, byte for byte, from every path.
        extra = {k: v for k, v in decoding.items() if k not in ("temperature", "max_tokens")}
        body = {"model": self.settings.model, "messages": messages, "max_tokens": decoding["max_tokens"],
                "temperature": decoding["temperature"], **extra}
        async with self._semaphore:
            self.stats.calls += 1
            self.stats.input_chars += sum(len(m["content"]) for m in messages)
            for attempt in range(self.settings.max_retries + 1):
                if breaker is not None:
                    breaker.check()
                try:
                    response = await self._sdk().post("/chat/completions", body=body, cast_to=self._reply_type, options=self._options)
                except Exception as exc:
                    kind, reason = classify(exc)
                    if breaker is not None and kind == ERROR_TRANSPORT and status_code_of(exc) != 429:
                        breaker.failure(kind, reason)  # every attempt sent, the last too: the one place the breaker counts
                    if kind != ERROR_TRANSPORT or attempt == self.settings.max_retries:
                        self.stats.errors += 1
                        raise
                    await asyncio.sleep(retry_delay(attempt))
                    continue
                if breaker is not None:
                    breaker.success()
                break
        text = (response.choices[0].message.content or "") if response.choices else ""
        secrets = held_secrets()
        if secrets:  # a gateway may answer 200 with the key in its text: not in the cache, nor in a record
            text = redact_value(text, secrets, by_form=False)  # held keys only: a verdict's JSON stays as it was
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
        if self._own is not None:
            await self._own.close()


async def judge_documents(
    answers: Sequence[str], docs: Sequence[dict], settings: JudgeSettings, mode: str, max_attempts: int = MAX_ATTEMPTS,
    template: JudgeTemplate | None = None, limits: JudgeInputLimits | None = None, verdict_reading: str = "strict",
) -> tuple[list[GradedCase], dict[str, int]]:
    """Grade every (answer, doc) pair with the judge, :func:`cases_in_flight` cases at a time;
    return one :class:`GradedCase` per document and the call stats. A doc holds ``case_id``, ``question``, ``rubrics``
    (``criterion_id``, ``criterion``) and the case's labels.

    ``template`` is the per-criterion judge template (``None``: the project's prompt); each record
    names the prompt used and its sha256. ``limits``: the judge's input limits as learned so far (a
    caller asking in rounds passes one, so a refusal is learned once). ``verdict_reading``: how the
    replies are read (``scorers.clinconsensus.verdicts``: ``strict``, or the official runner's ``official``).

    Used by lm-eval's judge filters and by ``clinconsensus-eval rescore``.
    """
    from tqdm.auto import tqdm

    from clinconsensus_tasks.judge.batch_api import prefill_by_batch

    # judge/server_info.py, judge/input_limit.py: thinking off where the server takes the switch; the input limit
    server = await asyncio.to_thread(ask_server, settings.base_url, settings.api_key, settings.model, settings.server)
    settings = replace(settings, concurrency=in_flight(settings.concurrency, server, settings.model))
    settings = replace(settings, extra_body=request_fields(server, settings.extra_body))  # as the judge check's
    if settings.structured_output:  # the verdict rule reads these replies like any other
        settings = replace(settings, extra_body={**settings.extra_body, "response_format": response_format(server.kind, mode)})
    batch, paid = await prefill_by_batch(answers, docs, settings, mode, template) if settings.batch else ({}, {})
    client = JudgeClient(settings, paid=paid)
    prompt_info = prompt_record(template, mode)
    breaker = CircuitBreaker(resume_hint=resume_hint(settings))
    limits = JudgeInputLimits() if limits is None else limits  # judge/input_limit.py: graded within the judge's input limit, learned from refusals
    try:
        progress = tqdm(total=len(docs), desc=f"Judging ({mode}, {settings.model})", file=sys.stderr)

        async def one(answer: str, doc: dict) -> GradedCase:
            rubrics = [(r["criterion_id"], r["criterion"]) for r in doc["rubrics"]]
            max_tokens = judge_max_tokens(mode, len(rubrics), settings.max_tokens)
            spent: list[TokenUsage] = []

            async def complete(messages: list[dict[str, str]], fresh: bool) -> str:
                return await client.complete(messages, fresh, max_tokens=max_tokens, usage=spent, breaker=breaker)

            record = await limits.grade(settings.model, server, max_tokens, str(doc["case_id"]), doc["question"], answer, rubrics, complete,
                                        mode, max_attempts, template, slices=slices_of(doc), judge_prompt=prompt_info,
                                        verdict_reading=verdict_reading)
            progress.update(1)
            return record.with_usage(total(spent).to_dict())  # tokens of the calls sent (cache hits: none)

        records = await _bounded_map(one, list(zip(answers, docs)), cases_in_flight(settings.concurrency))
        progress.close()
    finally:
        await client.aclose()
        if client.cache is not None:
            client.cache.close()
    stats = {**vars(client.stats), **batch}
    return list(records), stats


CASES_PER_CONNECTION = 2


def cases_in_flight(concurrency: int) -> int:
    """Cases graded at once: enough that while some wait for their first verdict (see
    ``rubric_grading``) the others keep every connection busy, few enough that memory stays flat
    however many cases a run has (every case in flight holds its prompts and pending calls)."""
    return CASES_PER_CONNECTION * concurrency


async def _bounded_map(fn: Callable[..., Any], items: Sequence[tuple], limit: int) -> list:
    """``[await fn(*item) for item in items]`` with at most ``limit`` running at once, in order.
    A failure (e.g. the judge is down) cancels the rest: nothing more is sent."""
    results: list = [None] * len(items)
    queue = iter(enumerate(items))

    async def worker() -> None:
        for index, item in queue:
            results[index] = await fn(*item)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(limit, len(items)))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for job in workers:
            job.cancel()
        raise
    return results


def resume_hint(settings: JudgeSettings) -> str:
    """How to finish a run (lm-eval, or ``clinconsensus-eval rescore``) stopped by the failure
    policy without paying twice."""
    if not settings.use_cache:
        return "The verdict cache is off (CLINCONSENSUS_JUDGE_CACHE=0): a re-run asks the judge for every verdict again."
    from clinconsensus_tasks.judge.cache import cache_file

    return (f"Every verdict obtained is in the verdict cache ({cache_file(settings.cache_dir)}): once the judge works, "
            "re-run the same command and only the missing verdicts are asked for.")


def enforce_failure_policy(records: Sequence[GradedCase], settings: JudgeSettings, tally: FailureTally | None = None) -> None:
    """Raise ``JudgeFailureError`` when the run's failed judgments (both judges' in a dual run)
    exceed the threshold. ``tally``: the whole run's, where ``records`` are one share of it (one
    rank's in an lm-eval data-parallel run); by default the tally of ``records``."""
    (tally or failure_tally(records)).check(settings.failure_threshold, resume_hint(settings), ENV_FAILURE_THRESHOLD)
