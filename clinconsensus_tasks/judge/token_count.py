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


@dataclass(frozen=True)
class Counter:
    """How tokens are counted, and a sentence that says so in the output."""

    count: Callable[[str], int]
    description: str


def make_counter(tokenizer: str | None = None, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> Counter:
    """The best token counter available for ``tokenizer``: a Hugging Face tokenizer from a local folder,
    an OpenAI encoding (tiktoken, else bpe-openai, which works offline), else characters per token."""
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
            problems.append(f"tiktoken: {type(exc).__name__}")
        try:
            import bpe_openai

            encoding = bpe_openai.get_encoding(tokenizer)
            return Counter(lambda text: len(encoding.encode(text)), f"bpe-openai {tokenizer}")
        except Exception as exc:
            problems.append(f"bpe-openai: {type(exc).__name__}")
        raise ValueError(f"--tokenizer {tokenizer!r}: no local folder of that name and no encoding loaded ({'; '.join(problems)}); "
                         "install tiktoken (with network) or bpe-openai, or leave --tokenizer out to use a characters-per-token ratio")
    if chars_per_token <= 0:
        raise ValueError(f"--chars-per-token must be positive, got {chars_per_token}")
    return Counter(lambda text: math.ceil(len(text) / chars_per_token), f"characters / {chars_per_token:g} (no tokenizer given)")


def prompt_tokens(messages: list[dict[str, str]], counter: Counter) -> int:
    """A request's prompt tokens: each message's content and its chat formatting."""
    return sum(MESSAGE_OVERHEAD + counter.count(m["content"]) for m in messages)
