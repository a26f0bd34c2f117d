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

import os
from typing import Any, Sequence

from inspect_ai.model import GenerateConfig, Model, ModelOutput
from inspect_ai.model._generate_config import active_generate_config

from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    ENV_FAILURE_THRESHOLD,
    ERROR_REQUEST,
    JudgeCallError,
    parse_failure_share,
)
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase, failure_tally
from clinconsensus_tasks.scorers.redact import hold_secret, hold_url_secrets, redacting_errors

JUDGE_CALL_DEFAULTS: dict[str, int] = {"max_retries": 5, "timeout": 600, "attempt_timeout": 180}
"""Per judge call: 5 retries (Inspect backs off from 3 s), at most 600 s in all, 180 s per attempt."""

_REFUSED = ("model_length", "content_filter")


def judge_call_config(model: Model, **decoding: Any) -> GenerateConfig:
    """``decoding`` (temperature, max_tokens) plus the retry and time-out settings of a judge call."""
    active = active_generate_config()
    limits = {}
    for name, default in JUDGE_CALL_DEFAULTS.items():
        own, given = getattr(model.config, name, None), getattr(active, name, None)
        limits[name] = own if own is not None else given if given is not None else default
    return GenerateConfig(**decoding, **limits)


def single_client_attempt(model: Model) -> None:
    """Turn off the retries of the judge's own SDK client, if it has one: Inspect retries. Also
    keep the judge's key out of the log: Inspect stores a failed call's error text (a 401 body
    may repeat the key) in the sample's events, so the judge API's errors are redacted as they
    are raised (``scorers.redact``), and its key is held as a secret."""
    api = getattr(model, "api", None)
    if api is not None:
        hold_secret(getattr(api, "api_key", None))
        hold_url_secrets(getattr(api, "base_url", None))
        api.generate = redacting_errors(api.generate)
    client = getattr(api, "client", None)
    if client is not None and getattr(client, "max_retries", 0):
        client.max_retries = 0
    model_args = getattr(api, "model_args", None)
    if isinstance(model_args, dict) and client is not None:
        model_args.setdefault("max_retries", 0)  # kept when Inspect re-creates the client


def judge_text(output: ModelOutput) -> str:
    """The judge's reply; a request the judge refused raises a ``request`` :class:`JudgeCallError`."""
    if output.stop_reason in _REFUSED and output.usage is None:
        raise JudgeCallError(ERROR_REQUEST, f"judge refused the request ({output.stop_reason}): {output.completion[:300]}")
    return output.completion


RESUME_HINT = (
    "Every verdict obtained is in Inspect's response cache (judge_cache=true) and is not paid for again: "
    "once the judge works, finish with `inspect eval-retry LOG_FILE` (re-runs the samples that stopped) "
    "or re-grade the logged answers with `inspect score LOG_FILE --overwrite`."
)
THRESHOLD_SETTING = f"-T judge_failure_threshold (or {ENV_FAILURE_THRESHOLD})"


def failure_threshold(value: float | str | None) -> float:
    """``-T judge_failure_threshold``, else ``CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD``, else 1%."""
    raw, source = (value, "judge_failure_threshold") if value is not None else (os.environ.get(ENV_FAILURE_THRESHOLD), ENV_FAILURE_THRESHOLD)
    try:
        return parse_failure_share(raw, source)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def check_failures(records: Sequence[GradedCase], threshold: float) -> None:
    """End the run (an error, so the log is not a success) when failed judgments exceed ``threshold``."""
    failure_tally(records).check(threshold, RESUME_HINT, THRESHOLD_SETTING)
