"""How the Inspect adapter calls its judge models: call settings, retries, refused requests, and
the Inspect side of the judge failure policy (``scorers.clinconsensus.judge_failures``).

Why this exists: a judge bound with ``--model-role grader=...`` is not the eval's active model, so
Inspect gives it only part of the command line's generate config (not ``--attempt-timeout``), and
with no ``--max-retries``/``--timeout`` it retries a dead judge for ever. Inside each of Inspect's
attempts the OpenAI SDK of the ``openai``/``openai-api`` providers retries twice more on its own.
Here every judge call gets:

* ``max_retries``, ``timeout`` and ``attempt_timeout`` from the judge role's own config if it sets
  them, else from the command line (``--max-retries``, ``--timeout``, ``--attempt-timeout``),
  else finite defaults (:data:`JUDGE_CALL_DEFAULTS`);
* one HTTP attempt per Inspect attempt (the SDK's own retries are turned off on the judge's client);
* a refused request (Inspect turns an HTTP 400 "context length exceeded" or a content-filter
  refusal into an empty reply with a stop reason) raised as a ``request`` failure, not parsed as
  an unusable verdict and asked again.
"""

from __future__ import annotations

import asyncio
import atexit
import sys
from typing import Any, Callable

from inspect_ai.dataset import Sample
from inspect_ai.model import (
    CachePolicy,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
)
from inspect_ai.scorer import SampleScore
from inspect_ai.util import display_type

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.inspect_compat import PATCHED, active_generate_config, openai_providers, sdk_retries_off, use_http_client, wrap_generate
from clinconsensus_tasks.judge.inspect_server import judge_extra_body, role_base_url, served_model_name, server_now
from clinconsensus_tasks.judge.protocol import PROBE_MAX_TOKENS, PROBE_MESSAGES, async_http_client, check_failed, response_format
from clinconsensus_tasks.judge.server_info import LLAMA_CPP, ServerInfo, in_flight
from clinconsensus_tasks.judge.slots import JudgeSlots
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    ENV_FAILURE_THRESHOLD,
    ERROR_REQUEST,
    ERROR_TRANSPORT,
    CircuitBreaker,
    FailureTally,
    JudgeCallError,
    JudgeFailureError,
    classify,
    parse_failure_share,
    status_code_of,
)
from clinconsensus_tasks.scorers.clinconsensus.records import INSPECT_SCORER, GradedCase, failure_tally
from clinconsensus_tasks.scorers.redact import hold_secret, hold_url_secrets, held_secrets, redact_exception, redact_value
from clinconsensus_tasks.scorers.usage import TokenUsage

JUDGE_CALL_DEFAULTS: dict[str, int] = {"max_retries": 5, "timeout": 600, "attempt_timeout": 180}
"""Per judge call: 5 retries (Inspect backs off from 3 s), at most 600 s in all, 180 s per attempt."""
PROBE_LIMITS: dict[str, int] = {"max_retries": 1, "timeout": 20, "attempt_timeout": 10}
"""The judge check's one request: a wrong URL, key or model must fail in seconds, not after the
minutes of retries a real judgment deserves (a refused connection fails within Inspect's first
3 s back-off; a silent host after two 8 s attempts)."""

_REFUSED = ("model_length", "content_filter")


def judge_call_config(model: Model, **decoding: Any) -> GenerateConfig:
    """``decoding`` (temperature, max_tokens) plus the retry and time-out settings of a judge call."""
    active = active_generate_config()
    limits = {}
    for name, default in JUDGE_CALL_DEFAULTS.items():
        own, given = getattr(model.config, name, None), getattr(active, name, None)
        limits[name] = own if own is not None else given if given is not None else default
    return GenerateConfig(**decoding, **limits)


def judge_connections(model: Model) -> int:
    """How many calls the judge takes at once: its role's ``max_connections``, else the command
    line's, else the provider's default (what Inspect's own connection limit for it uses)."""
    own, given = getattr(model.config, "max_connections", None), getattr(active_generate_config(), "max_connections", None)
    return int(own or given or model.api.max_connections())


def check_judges_now(judges: list[Model]) -> list[Model]:
    """Send the judge check to every judge whose client is the plain OpenAI SDK (the ``openai``
    and ``openai-api`` providers: hosted APIs, vLLM, SGLang) before the task exists, with the sync
    SDK and :data:`PROBE_LIMITS`; returns the judges checked. Why here: a task that fails while it
    is being built stops ``inspect eval`` with one line (a ``PrerequisiteError``), where a failure
    inside a sample draws Inspect's traceback panel; model roles are bound before tasks are built.
    Other providers (``hf/``, ``vllm/`` in process, other SDKs) are checked by the solver instead.
    Raises :class:`ConfigurationError` naming the judge, its URL and the cause, redacted."""
    from openai import AsyncOpenAI, OpenAI

    checked = []
    for judge in judges:
        client = getattr(judge.api, "client", None)
        if type(client) is not AsyncOpenAI:
            continue
        single_client_attempt(judge)  # holds the key as a secret for redaction
        sync = OpenAI(base_url=str(client.base_url), api_key=client.api_key, max_retries=PROBE_LIMITS["max_retries"],
                      timeout=PROBE_LIMITS["attempt_timeout"])
        try:  # the fields every request to this judge carries (thinking off where its server takes it)
            extra_body = judge_extra_body(judge, server_now(judge)) or None
            sync.chat.completions.create(model=served_model_name(judge), messages=PROBE_MESSAGES, max_tokens=PROBE_MAX_TOKENS,  # type: ignore[arg-type]
                                         extra_body=extra_body)
        except Exception as exc:
            raise check_failed(str(judge), str(client.base_url), classify(exc)[1], CHECK_HINT) from None
        finally:
            sync.close()
        checked.append(judge)
    return checked


def probe_call_config(extra_body: dict[str, Any] | None = None) -> GenerateConfig:
    """The judge check's call settings: 8 tokens, :data:`PROBE_LIMITS` whatever the command line
    says, and the judge's ``extra_body`` as its judgments have it (:func:`judge_extra_body`)."""
    return GenerateConfig(max_tokens=PROBE_MAX_TOKENS, extra_body=extra_body, **PROBE_LIMITS)


BREAKER_ATTRIBUTE = "_clinconsensus_breaker"


def single_client_attempt(model: Model, breaker: CircuitBreaker | None = None) -> None:
    """Turn off the retries of the judge's own SDK client, if it has one: Inspect retries. Also
    keep the judge's key out of the log: Inspect stores a failed call's error text (a 401 body
    may repeat the key) in the sample's events, so the judge API's errors are redacted as they
    are raised (``scorers.redact``), and its key is held as a secret; so are its replies, as they
    are received (:func:`redacted_reply`: a gateway may answer 200 with the key in its text).

    With a ``breaker`` (the scorer's), every HTTP attempt Inspect makes goes through it
    (:func:`_guarded`): a dead judge opens it after ``judge_failures.BREAKER_LIMIT`` failed attempts in a row,
    within seconds rather than after each call's minutes of back-off, and the breaker is asked
    only when a request is really sent, after Inspect's response cache had its say."""
    api = model.api
    # The HTTP transport the project's own judge client uses (``protocol.async_http_client``: the
    # OpenAI SDK's aiohttp transport unless told or a proxy is set), for the OpenAI-compatible
    # providers; everything above the HTTP layer stays Inspect's: retries, the response cache, the
    # batch API, the transcript of each call (inspect_compat.use_http_client).
    if isinstance(api, openai_providers()) and not getattr(api, PATCHED, False):
        use_http_client(model, async_http_client())
    hold_secret(getattr(api, "api_key", None))
    hold_url_secrets(getattr(api, "base_url", None))
    if breaker is not None:
        setattr(api, BREAKER_ATTRIBUTE, breaker)
    wrap_generate(model, lambda generate: _guarded(api, generate))
    sdk_retries_off(model)


def _guarded(api: Any, call: Callable[..., Any]) -> Callable[..., Any]:
    """``api.generate`` (one HTTP attempt; Inspect retries around it) with errors redacted and the
    attached breaker told of each attempt: checked before sending (open: :class:`JudgeUnavailableError`,
    which Inspect does not retry), a transport failure counted (not a 429: a judge that says it
    is busy is alive), a reply resetting it."""
    async def guarded(*args: Any, **kwargs: Any) -> Any:
        breaker: CircuitBreaker | None = getattr(api, BREAKER_ATTRIBUTE, None)
        if breaker is not None:
            breaker.check()
        try:
            output = await call(*args, **kwargs)
        except Exception as exc:
            redact_exception(exc)
            kind, reason = classify(exc)
            if breaker is not None and kind == ERROR_TRANSPORT and status_code_of(exc) != 429:
                breaker.failure(kind, reason)
            raise
        if breaker is not None:
            breaker.success()
        return redacted_reply(output)

    return guarded


def redacted_reply(result: Any) -> Any:
    """A judge API's result (``ModelOutput``, or ``(ModelOutput | Exception, ModelCall)``) with the
    project's redaction (``scorers.redact.redact``) in the reply's text and in the raw response.

    Why here, in the wrapped ``api.generate`` (read in inspect-ai 0.3.285, ``model/_model.py``):
    ``Model._generate`` records what ``api.generate`` returns in the call's ``ModelEvent``
    (``complete(output, call)``: ``event.output`` and ``event.call``, then
    ``transcript()._event_updated``, which writes the event to the sample's realtime buffer and may
    move it out of memory) and in the response cache (``cache_store``), and only then returns it
    to the scorer. No public API rewrites a recorded event (hooks only observe; ``GenerateFilter``
    belongs to the agent bridge), and changing the event after ``generate`` returns would need
    Inspect's private ``_event_updated`` and still leave the first snapshot in the buffer. Cleaned
    here, the event, the cache and the scorer all see the same redacted reply, whether fresh or
    cached. The reply, still to be parsed for a verdict, loses the secrets we hold only
    (``by_form=False``: masking a value named as a credential can break the reply's JSON); the raw
    response, which nothing parses, gets the whole redaction. The raw request is not touched: it is
    the project's prompt, recorded before the call."""
    output, call = result if isinstance(result, tuple) else (result, None)
    secrets = held_secrets()
    if isinstance(output, ModelOutput):
        data = output.model_dump()
        clean = redact_value(data, secrets, by_form=False)
        if clean != data:
            output = ModelOutput.model_validate(clean)
    elif isinstance(output, BaseException):
        redact_exception(output)
    response = getattr(call, "response", None)
    if response is not None:
        call.response = redact_value(response, secrets)  # type: ignore[union-attr]
    return (output, call) if isinstance(result, tuple) else output


def judge_text(output: ModelOutput) -> str:
    """The judge's reply; a request the judge refused raises a ``request`` :class:`JudgeCallError`."""
    if output.stop_reason in _REFUSED and output.usage is None:
        raise JudgeCallError(ERROR_REQUEST, f"judge refused the request ({output.stop_reason}): {output.completion[:300]}")
    return output.completion


RESUME_HINT = (
    "No model answer is lost: every case is in the log with its answer and the verdicts obtained (also in "
    "Inspect's response cache, judge_cache=true). Once the judge works, finish the run by asking only the "
    "judge: `inspect score LOG_FILE --overwrite --action overwrite` (not `inspect eval-retry`, which keeps every "
    "sample as it is, failed verdicts included), then check it with `clinconsensus-eval summarize --strict LOG_FILE`."
)
CHECK_HINT = "Check the grader role's model name, base URL and API key (-T judge_check=false skips this check)."
THRESHOLD_SETTING = f"-T judge_failure_threshold (or {ENV_FAILURE_THRESHOLD})"
POLICY_NAME = "clinconsensus judge failure policy"


def failure_threshold(value: float | str | None) -> float:
    """``-T judge_failure_threshold``, else ``CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD``, else 1%."""
    raw, source = (value, "judge_failure_threshold") if value is not None else (settings_table.raw("judge_failure_threshold"), ENV_FAILURE_THRESHOLD)
    try:
        return parse_failure_share(raw, source)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


_SAID: list[str] = []


def _say_last(message: str) -> None:
    """Print ``message`` once more when the process ends, after Inspect's own summary, where a
    screen shows the run (Inspect's public ``display_type()``: anything but ``none``): Inspect closes
    a failed task's panel with "Resume task with: inspect eval-retry", the command that keeps every
    failed verdict as it is, and the last words a user reads must say how to finish the run instead.
    A run with no display (a program calling ``eval(display="none")``) reads the log's error.
    Not an Inspect hook: a registered hook makes Inspect print a banner on stdout at every start."""
    if display_type() == "none":
        return
    if not _SAID:
        atexit.register(lambda: [print(f"\nClinConsensus: {said}", file=sys.stderr) for said in _SAID[-1:]])
    _SAID.append(message)


class JudgeFailurePolicy:
    """The judge failure policy of an Inspect task, applied once, to the whole run.

    Why Inspect's early-stopping protocol (``Task(early_stopping=...)``, public in
    ``inspect_ai.util.EarlyStopping``) and not the metric, the scorer or a hook (read in
    inspect-ai 0.3.285, ``_eval/task/run.py``):

    * a metric is also called on partial score lists for the live display, so it cannot tell
      the end of the run from its first few samples; it must never raise;
    * a scorer that raises errors its sample only, and ``--fail-on-error 0.8`` or
      ``--no-fail-on-error`` then turn the run into a success; it sees neither ``--limit`` nor
      ``--epochs``, nor samples that errored before scoring;
    * hooks (``inspect_ai.hooks``) are global to the process and their exceptions are swallowed;
    * an early-stopping manager belongs to the task, is told the samples and epochs actually run
      (``start_task``: the judgments planned), every sample scored (``complete_sample``, reused
      ones on retry too), and is called once when all samples are done (``complete_task``), inside
      the task's error handling: raising there ends the task with status ``error`` and this
      message, whatever ``--fail-on-error`` says. It never stops a sample (``schedule_sample``
      returns ``None``).

    Judgments planned but not made (samples that errored) count as failed. The outcome (planned,
    judged, failed, threshold) is returned as the manager's metadata, so the log records it in
    ``results.early_stopping``.
    """

    def __init__(self, threshold: float, judges: Callable[[], int] = lambda: 1):
        self.threshold = threshold
        self.judges = judges
        self.planned = 0
        self.tally = FailureTally()

    async def start_task(self, task: Any, samples: list[Sample], epochs: int) -> str:
        criteria = sum(len((s.metadata or {}).get("rubrics") or ()) for s in samples)
        self.planned = criteria * epochs * self.judges()
        self.tally = FailureTally()
        return POLICY_NAME

    async def schedule_sample(self, id: str | int, epoch: int) -> None:
        return None

    async def complete_sample(self, id: str | int, epoch: int, scores: dict[str, SampleScore]) -> None:
        score = scores.get(INSPECT_SCORER)
        if score is not None and score.score.metadata:
            record = GradedCase.from_dict(score.score.metadata, f"sample {id!r} (epoch {epoch})")
            self.tally.add_tally(failure_tally([record]))

    async def complete_task(self) -> dict[str, Any]:
        run = self.tally.with_unjudged(self.planned)
        if run.exceeds(self.threshold, self.planned):
            reasons = "; ".join(f"{label} x{n}" for label, n in run.reasons.most_common(2))
            _say_last(f"{run.failed} of {run.judged} judge verdicts failed ({reasons}); every answer is kept in the "
                      "log. Once the judge works, finish the run by asking only the judge: inspect score LOG_FILE "
                      "--overwrite --action overwrite. Not inspect eval-retry: it keeps every sample as it is, failed verdicts included.")
            raise JudgeFailureError(run.message(self.threshold, RESUME_HINT, THRESHOLD_SETTING)) from None
        return {"planned_judgments": self.planned, "judged": self.tally.judged, "failed_judgments": run.failed,
                "unjudged": run.judged - self.tally.judged, "threshold": self.threshold}


# -- the Inspect transport of the judge protocol --------------------------------------------------

def inspect_usage(usage: Any) -> TokenUsage:
    """One judge call's tokens from Inspect's ``ModelUsage`` (none reported: the call alone)."""
    if usage is None:
        return TokenUsage(calls=1)
    return TokenUsage.from_inspect(usage.input_tokens, usage.output_tokens, usage.input_tokens_cache_read, usage.input_tokens_cache_write)

# Not per epoch (Inspect's default keys the cache by the epoch too, and `inspect score` runs outside
# any epoch, so it found none of the verdicts the run obtained): a judge's greedy verdict on the
# same prompt is the same verdict in every epoch and when re-scoring.
JUDGE_CACHE = CachePolicy(per_epoch=False)


def judge_cache_policy(model: Model) -> CachePolicy:
    """:data:`JUDGE_CACHE`, scoped by the judge's endpoint where Inspect's cache key holds none: an
    ``openai/`` judge sent elsewhere by ``OPENAI_BASE_URL`` (``inspect_server.role_base_url``) is
    otherwise keyed as OpenAI's own model of that name, and would be served its verdicts (or they
    its)."""
    url = role_base_url(model)
    if url and not model.api.base_url:
        return CachePolicy(per_epoch=False, scopes={"judge_endpoint": url})
    return JUDGE_CACHE


_KINDS = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
_SYSTEM_MESSAGES: dict[str, ChatMessage] = {}


def to_chat(messages: list[dict[str, str]]) -> list[ChatMessage]:
    """Inspect chat messages; the few distinct system prompts are built once and shared."""
    out: list[ChatMessage] = []
    for m in messages:
        if m["role"] == "system":
            cached = _SYSTEM_MESSAGES.get(m["content"])
            if cached is None:
                cached = _SYSTEM_MESSAGES.setdefault(m["content"], ChatMessageSystem(content=m["content"]))
            out.append(cached)
        else:
            out.append(_KINDS[m["role"]](content=m["content"]))
    return out


INSPECT_CALLS, DIRECT_CALLS = "inspect", "direct"
JUDGE_CALLS = (INSPECT_CALLS, DIRECT_CALLS)


class InspectJudges:
    """The judge calls of one scorer through Inspect's model roles: for each judge model a
    connection slot (calls wait there, before the breaker, not inside Inspect) and a breaker (per
    model, as lm-eval's client has: a dead juror fails its own calls only); ``decoding`` from
    ``judge.protocol``; Inspect's response cache unless ``cache`` is off or a re-ask asks fresh.

    With ``calls="direct"`` (``-T judge_calls=direct``) an OpenAI-compatible judge role's calls go
    instead through the project's own judge client (``judge.client.JudgeClient``, lm-eval's path):
    the role's endpoint, key, model name, connections, retries and time-out, the same requests,
    breaker and verdict rule, at a third of Inspect's CPU per call, without what Inspect's model
    API adds to each call (a ``ModelEvent`` in the transcript, Inspect's response cache, its batch
    mode): see :func:`check_direct_judges` and docs/performance.md."""

    def __init__(self, decoding: dict[str, Any], cache: bool = True, mode: str = "", calls: str = INSPECT_CALLS):
        self.decoding, self.cache, self.mode, self.calls = decoding, cache, mode, calls
        self.breakers: dict[str, CircuitBreaker] = {}
        self.slots: dict[str, JudgeSlots] = {}
        self.clients: dict[str, Any] = {}

    def breaker_of(self, model: Model) -> CircuitBreaker:
        return self.breakers.setdefault(str(model), CircuitBreaker(resume_hint=RESUME_HINT))

    def completer(self, model: Model, spent: list[TokenUsage], server: ServerInfo) -> Callable[[list[dict[str, str]], bool], Any]:
        """``complete(messages, fresh) -> text`` of ``model`` (``rubric_grading``'s judge call);
        each call's tokens are appended to ``spent``."""
        if self.calls == DIRECT_CALLS:
            return self._direct_completer(model, spent, server)
        single_client_attempt(model, self.breaker_of(model))  # the breaker sees every HTTP attempt, after the cache
        extra_body = judge_extra_body(model, server) or None  # thinking off where the server takes it
        slot = self.slots.get(str(model))
        if slot is None:  # the role's connections, no more than its server works on at once
            slot = self.slots[str(model)] = JudgeSlots(in_flight(judge_connections(model), server, str(model)))
        decoding = dict(self.decoding)
        if "response_schema" in decoding and server.kind == LLAMA_CPP:  # its server's own form (judge.protocol)
            del decoding["response_schema"]
            extra_body = {**(extra_body or {}), "response_format": response_format(server.kind, self.mode)}

        config = judge_call_config(model, **decoding, extra_body=extra_body)  # the same for every call of the case
        cache = judge_cache_policy(model) if self.cache else False

        async def complete(messages: list[dict[str, str]], fresh: bool) -> str:
            # Wait for a connection first: the breaker is asked when a request is really sent
            # (_guarded), so a call queued while the judge died is never sent, and a verdict in
            # Inspect's response cache is served whatever the breaker says.
            async with slot:
                output = await model.generate(to_chat(messages), config=config, cache=cache if not fresh else False)
            spent.append(inspect_usage(output.usage))
            return judge_text(output)

        return complete

    def _direct_completer(self, model: Model, spent: list[TokenUsage], server: ServerInfo) -> Callable[[list[dict[str, str]], bool], Any]:
        """The judge call of ``calls="direct"``: the project's judge client, one per judge model,
        sending through the role's own OpenAI SDK client: its endpoint, key and served name; its
        connections (:func:`judge_connections`, bounded by what its server works on at once); per
        attempt its ``attempt_timeout`` and in all ``max_retries`` (:func:`judge_call_config`);
        its ``extra_body`` with thinking off where the server takes it; the verdict cache
        (``judge.cache``) unless ``cache`` is off."""
        from clinconsensus_tasks.judge.client import JudgeClient, JudgeSettings

        client = self.clients.get(str(model))
        if client is None:
            check_direct_judges([model])
            single_client_attempt(model, self.breaker_of(model))  # the transport, no SDK retries, the key held for redaction
            api = model.api
            limits = judge_call_config(model)
            extra_body = judge_extra_body(model, server)
            if "response_schema" in self.decoding:  # the verdict's schema, in the form its server takes (judge.protocol)
                extra_body = {**extra_body, "response_format": response_format(server.kind, self.mode)}
            sdk = api.client  # type: ignore[attr-defined]
            settings = JudgeSettings(base_url=str(sdk.base_url), model=served_model_name(model), api_key=str(sdk.api_key or "EMPTY"),
                                     concurrency=in_flight(judge_connections(model), server, str(model)),
                                     max_retries=int(limits.max_retries or 0), timeout=float(limits.attempt_timeout or limits.timeout or 120),
                                     max_tokens=self.decoding["max_tokens"], use_cache=self.cache, extra_body=extra_body)
            # The role's own SDK client (Inspect made it, with the role's URL, key and headers, and
            # closes it), looked up at each call: Inspect may make it anew (initialize()).
            client = self.clients[str(model)] = JudgeClient(settings, sdk=lambda: api.client)  # type: ignore[attr-defined]
        breaker, max_tokens = self.breaker_of(model), self.decoding["max_tokens"]

        async def complete(messages: list[dict[str, str]], fresh: bool) -> str:
            return await client.complete(messages, fresh, max_tokens=max_tokens, usage=spent, breaker=breaker)  # redacted there

        return complete


def check_direct_judges(judges: list[Model]) -> None:
    """``judge_calls=direct`` sends a judge's calls with the project's OpenAI SDK client, built from
    the judge's own: a judge whose provider's client is not the plain OpenAI SDK (``openai``,
    ``openai-api``, and Inspect's ``vllm``/``sglang`` servers have it; Azure, Anthropic, ``hf/`` and
    the like do not) raises :class:`ConfigurationError` naming it; so does a judge whose role asks
    for Inspect's batch mode, which the direct calls do not have."""
    from openai import AsyncOpenAI

    others = [str(j) for j in judges if type(getattr(j.api, "client", None)) is not AsyncOpenAI]
    if others:
        raise ConfigurationError(
            f"-T judge_calls=direct sends judge calls with an OpenAI-compatible client, and {', '.join(others)} "
            f"{'is' if len(others) == 1 else 'are'} not reached through one (openai/, openai-api/, vllm/ and sglang/ judges are). "
            "Leave judge_calls at its default (inspect), which sends them through Inspect's model API, any provider.")
    batched = [str(j) for j in judges if getattr(j.config, "batch", None)]
    if batched:
        raise ConfigurationError(
            f"-T judge_calls=direct sends each judge call at once, and {', '.join(batched)} asks for Inspect's batch mode "
            "(batch in the role's config), which only Inspect's own calls have. Use one or the other.")


def judge_calls_setting(value: str) -> str:
    """``-T judge_calls``: ``inspect`` or ``direct``, else :class:`ConfigurationError`."""
    if value not in JUDGE_CALLS:
        raise ConfigurationError(f"-T judge_calls={value!r}: use {' or '.join(JUDGE_CALLS)}")
    return value


def judge_decoding(mode: str, n_criteria: int, max_tokens: int | None = None, structured: bool = False) -> dict[str, Any]:
    """The decoding of every judge call of a run (``judge.protocol``): greedy, the verdict's length
    (``max_tokens``, else the mode's for ``n_criteria``), and with ``structured`` the verdict's JSON
    schema as Inspect's ``response_schema`` (the verdict rule still reads the reply)."""
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    from clinconsensus_tasks.judge import protocol
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import VERDICT_SCHEMA_DESCRIPTION, VERDICT_SCHEMA_NAME, judge_max_tokens, verdict_schema

    decoding = protocol.decoding(max_tokens or judge_max_tokens(mode, n_criteria))
    if structured:
        decoding["response_schema"] = ResponseSchema(name=VERDICT_SCHEMA_NAME, json_schema=JSONSchema.model_validate(verdict_schema(mode)),
                                                     description=VERDICT_SCHEMA_DESCRIPTION, strict=True)
    return decoding


async def grade_by(model: Model, judges: "InspectJudges", limits: Any, decoding: dict[str, Any], mode: str, max_attempts: int,
                   template: Any, prompt_info: dict[str, str], case_id: str, question: str, answer: str,
                   rubrics: list[tuple[str, str]], **record: Any) -> GradedCase:
    """One case graded by ``model`` through :class:`InspectJudges`, within the judge's input limit
    (``limits``: a ``judge.input_limit.JudgeInputLimits``), with the tokens the calls spent."""
    from clinconsensus_tasks.judge.inspect_server import server_of
    from clinconsensus_tasks.scorers.usage import total

    spent: list[TokenUsage] = []
    server = await server_of(model)
    graded = await limits.grade(str(model), server, decoding["max_tokens"], case_id, question, answer, rubrics,
                                judges.completer(model, spent, server), mode, max_attempts, template, judge_prompt=prompt_info, **record)
    return graded.with_usage(total(spent).to_dict())


async def judge_documents_inspect(model: Model, answers: list[str], docs: list[dict[str, Any]], mode: str, template: Any,
                                  decoding: dict[str, Any], calls: str = INSPECT_CALLS, limits: Any = None) -> list[GradedCase]:
    """``judge.client.judge_documents``' twin for a judge reached through Inspect's model API (a
    run's role bound again from its log's header, any provider): every (answer, doc) graded, each
    call a fresh request (Inspect's response cache passed by). The caller checks the judge first
    (:func:`check_judges_now`, once for every round it asks) and passes one ``limits``
    (``JudgeInputLimits``) for every round, so a refusal is learned once."""
    from clinconsensus_tasks.judge.input_limit import JudgeInputLimits
    from clinconsensus_tasks.judge.official_template import prompt_record
    from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of
    from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS

    judges, limits, prompt_info = InspectJudges(decoding, cache=False, mode=mode, calls=calls), JudgeInputLimits() if limits is None else limits, prompt_record(template, mode)
    semaphore = asyncio.Semaphore(2 * judge_connections(model))

    async def one(answer: str, doc: dict[str, Any]) -> GradedCase:
        async with semaphore:
            rubrics = [(r["criterion_id"], r["criterion"]) for r in doc["rubrics"]]
            return await grade_by(model, judges, limits, decoding, mode, MAX_ATTEMPTS, template, prompt_info, str(doc["case_id"]),
                                  doc["question"], answer, rubrics, slices=slices_of(doc))

    return list(await asyncio.gather(*(one(a, d) for a, d in zip(answers, docs))))
