"""Judge token usage and its price: one record shape for both frameworks.

Why: a release checklist needs what a run cost. The APIs report tokens in two conventions: the
OpenAI chat API's ``prompt_tokens`` *includes* the cached part (``prompt_tokens_details.cached_tokens``),
Inspect's ``ModelUsage.input_tokens`` *excludes* it (``input_tokens_cache_read`` and
``input_tokens_cache_write`` are apart). :class:`TokenUsage` holds the OpenAI convention:
``prompt_tokens`` all input tokens, ``cached_prompt_tokens`` the part served from the provider's
prompt cache (billed at the cached rate), ``completion_tokens`` the output.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class TokenUsage:
    calls: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "TokenUsage":
        data = data or {}
        return cls(*(int(data.get(f.name) or 0) for f in fields(cls)))

    @classmethod
    def from_openai(cls, usage: Any) -> "TokenUsage":
        """From an OpenAI chat-completions ``usage`` (object or dict); no usage counts the call only."""
        if usage is None:
            return cls(calls=1)
        get = usage.get if isinstance(usage, Mapping) else (lambda k, d=None: getattr(usage, k, d))
        details = get("prompt_tokens_details")
        cached = (details.get("cached_tokens") if isinstance(details, Mapping) else getattr(details, "cached_tokens", None)) if details else None
        return cls(1, int(get("prompt_tokens") or 0), int(cached or 0), int(get("completion_tokens") or 0))

    @classmethod
    def from_inspect(cls, input_tokens: int, output_tokens: int, cache_read: int | None, cache_write: int | None, calls: int = 1) -> "TokenUsage":
        """From Inspect's ``ModelUsage`` fields (its ``input_tokens`` leaves the cached part out)."""
        read, write = int(cache_read or 0), int(cache_write or 0)
        return cls(calls, int(input_tokens) + read + write, read, int(output_tokens))


def judge_name(judge: str) -> str:
    """A judge's name without the provider path: Inspect's ``openai-api/judge/gpt-4.1`` and the
    lm-eval judge client's ``gpt-4.1`` are the same judge."""
    return judge.rsplit("/", 1)[-1]


def total(usages: Sequence[TokenUsage]) -> TokenUsage:
    out = TokenUsage()
    for u in usages:
        out = out + u
    return out


@dataclass(frozen=True)
class Prices:
    """Money per million tokens: full-rate input, cached input, output."""

    input: float
    cached_input: float
    output: float

    def cost(self, usage: TokenUsage) -> float:
        uncached = usage.prompt_tokens - usage.cached_prompt_tokens
        return (uncached * self.input + usage.cached_prompt_tokens * self.cached_input + usage.completion_tokens * self.output) / 1e6


ANY_JUDGE = "*"


def parse_prices(specs: Sequence[str]) -> dict[str, Prices]:
    """``["gpt-4.1=2,0.5,8", "1,0.25,4"]`` -> prices per judge name; a spec without ``NAME=``
    applies to every judge not named (key ``*``)."""
    out: dict[str, Prices] = {}
    for spec in specs:
        name, _, numbers = spec.rpartition("=")
        parts = numbers.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 3 or any(v < 0 for v in values):
            raise ValueError(f"--prices {spec!r}: expected [JUDGE=]INPUT,CACHED_INPUT,OUTPUT per million tokens, e.g. gpt-4.1=2,0.5,8")
        out[name.strip() or ANY_JUDGE] = Prices(*values)
    return out


def price_for(judge: str, prices: Mapping[str, Prices]) -> Prices | None:
    """The prices of ``judge``: by full name, by its last path part (``openai-api/x/gpt-4.1`` ->
    ``gpt-4.1``), else the catch-all; ``None`` when there is none."""
    for key in (judge, judge_name(judge), ANY_JUDGE):
        if key in prices:
            return prices[key]
    return None
