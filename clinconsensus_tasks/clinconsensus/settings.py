"""Settings a ClinConsensus run takes from its user, each checked once, here.

Inspect's ``-T`` parameters, lm-eval's environment variables and ``--metadata``, and the command
line all pass through these functions, so a wrong value gets the same message whichever way it came
in. The rules themselves live in the scoring core; this module turns their ``ValueError`` into a
:class:`ConfigurationError` naming where the value came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.scorers.clinconsensus.cacs import parse_thresholds
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, check_judge_mode



def judge_mode(value: str | None, source: str = "judge_mode") -> str:
    """A judge mode (``per_criterion`` when empty)."""
    try:
        return check_judge_mode((value or "").strip() or PER_CRITERION, source)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def thresholds(value: Any, n_criteria: int = DEFAULT_N_CRITERIA, source: str = "thresholds") -> tuple[int, ...]:
    """The k of Pass@k and CACS@k: distinct integers in 1..N."""
    try:
        return parse_thresholds(value, n_criteria, source)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None


def n_criteria_from_env(env: Mapping[str, str] | None = None) -> int:
    """``n_criteria`` (``settings_table``) from ``env`` (default: the process environment)."""
    raw = settings_table.raw("n_criteria", env)
    source = settings_table.setting("n_criteria").env
    try:
        value = int(raw) if raw else DEFAULT_N_CRITERIA
    except ValueError:
        raise ConfigurationError(f"{source}={raw!r} is not an integer") from None
    if value < 1:
        raise ConfigurationError(f"{source}={raw!r}: expected a positive number of criteria")
    return value


def verdict_reading(value: str | None, mode: str = PER_CRITERION, source: str = "judge_verdict_reading",
                    env: Mapping[str, str] | None = None) -> str:
    """How the judges' replies are read: ``strict`` or ``official``. ``value`` ``None``: the
    setting from ``env`` (default: the process environment; lm-eval: ``--metadata`` over it), else
    ``strict``. The official runner judges one criterion a reply, so ``official`` with batched
    mode is refused."""
    from clinconsensus_tasks.scorers.clinconsensus.verdicts import OFFICIAL, STRICT, check_verdict_reading

    if value is None:
        value, source = settings_table.raw("judge_verdict_reading", env), settings_table.setting("judge_verdict_reading").env or source
    try:
        reading = check_verdict_reading((value or "").strip() or STRICT, source)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    if reading == OFFICIAL and mode != PER_CRITERION:
        raise ConfigurationError(f"{source}={OFFICIAL} reads one verdict a reply, as the official runner does; judge_mode={mode} "
                                 f"has no official reading: use judge_mode={PER_CRITERION}, or {source}={STRICT}")
    return reading
