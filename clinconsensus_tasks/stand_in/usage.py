"""What the stand-in counts and charges: the ``usage`` block of each reply and the totals that
``GET /stats`` returns (calls per model and kind, HTTP statuses, characters, judge tokens).

Judge traffic is counted apart from the candidate's, as a user pays for it apart.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from typing import Any

CHARS_PER_TOKEN = 1.5  # the fake tokenizer: about what cl100k/o200k give for Chinese clinical text


def fake_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_tokens(messages: list[str]) -> int:
    """Prompt tokens of messages: 4 per message plus the text."""
    return sum(4 + fake_tokens(m) for m in messages)


def usage_for(messages: list[str], completion: str, cached_prefix: list[str] | None) -> dict[str, Any]:
    """The ``usage`` block the server returns: prompt tokens (4 per message plus the text),
    cached tokens = the tokens of a judge prompt's prefix (the messages up to the rubric item,
    counted the same way) when a call with the same prefix has completed, as a provider's prompt
    cache would; completion tokens of the reply."""
    prompt = prompt_tokens(messages)
    cached = min(prompt, prompt_tokens(cached_prefix)) if cached_prefix else 0
    completion_tokens = fake_tokens(completion)
    return {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": prompt + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached}}


class Ledger:
    """The counters since the last reset, safe to update from the server's request threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.calls: Counter[str] = Counter()  # per model
            self.kinds: Counter[str] = Counter()  # candidate / per_criterion / batched / probe / rejected
            self.judge_request_keys: Counter[str] = Counter()  # top-level request fields, judge calls
            self.judge_temperatures: Counter[str] = Counter()
            self.statuses: Counter[int] = Counter()
            self.seen: Counter[str] = Counter()  # request body hash -> times seen (attempt number)
            self.climedbench_prompts: list[str] = []  # user messages of CliMedBench candidate requests
            self.input_chars = 0
            self.output_chars = 0
            self.judge_input_chars = 0
            self.judge_output_chars = 0
            self.judge_messages: list[list[dict[str, Any]]] = []  # template judge requests, when recorded
            # Prompt cache, as providers run it: a judge prompt's prefix (everything before the rubric
            # item) is served cached only to calls that arrive after a call with it has completed.
            self.prefixes_sent: set[str] = set()
            self.prefixes_done: set[str] = set()
            self.prefix_repeats = 0  # judge calls whose prefix an earlier call had sent
            self.prefix_repeats_after_return = 0  # ... and had completed before this call arrived
            self.judge_usage: Counter[str] = Counter()  # usage handed out on judge calls
            self.first_judge_arrival: float | None = None  # time.monotonic(): the judging span, as the judge saw it
            self.last_judge_reply: float | None = None

    def request(self, model: str, key: str, chars_in: int) -> int:
        """Count a chat request; returns its attempt number (times this exact body was received)."""
        with self.lock:
            self.calls[model] += 1
            self.seen[key] += 1
            self.input_chars += chars_in
            return self.seen[key]

    def keep_climedbench_prompt(self, user: str) -> None:
        with self.lock:
            self.climedbench_prompts.append(user)

    def keep_judge_messages(self, messages: list[dict[str, Any]]) -> None:
        with self.lock:
            self.judge_messages.append(messages)

    def kept(self) -> tuple[list[str], list[list[dict[str, Any]]]]:
        """Copies of the CliMedBench prompts and the recorded judge messages, in arrival order."""
        with self.lock:
            return list(self.climedbench_prompts), list(self.judge_messages)

    def judge_request(self, body: dict[str, Any], chars_in: int, prefix: str) -> bool:
        """Count a judge request as it arrives; returns whether its prompt prefix is cached (a call
        with it has completed before this one arrived)."""
        with self.lock:
            if self.first_judge_arrival is None:
                self.first_judge_arrival = time.monotonic()
            self.judge_input_chars += chars_in
            self.judge_request_keys.update(body.keys())
            self.judge_temperatures[str(body.get("temperature"))] += 1
            cached = prefix in self.prefixes_done
            self.prefix_repeats += prefix in self.prefixes_sent
            self.prefix_repeats_after_return += cached
            self.prefixes_sent.add(prefix)
            return cached

    def kind(self, kind: str) -> None:
        with self.lock:
            self.kinds[kind] += 1

    def status(self, status: int) -> None:
        with self.lock:
            self.statuses[status] += 1

    def output(self, content: str) -> None:
        with self.lock:
            self.output_chars += len(content)

    def judge_output(self, content: str, prefix: str) -> None:
        """Count a judge reply: from now on its prompt prefix is served cached."""
        with self.lock:
            self.output_chars += len(content)
            self.judge_output_chars += len(content)
            self.prefixes_done.add(prefix)
            self.last_judge_reply = time.monotonic()

    def judge_tokens(self, usage: dict[str, Any]) -> None:
        with self.lock:
            self.judge_usage.update(calls=1, prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
                                    cached_prompt_tokens=usage["prompt_tokens_details"]["cached_tokens"])

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {
                "calls": dict(self.calls),
                "kinds": dict(self.kinds),
                "statuses": {str(k): v for k, v in self.statuses.items()},
                "judge_calls": self.kinds["per_criterion"] + self.kinds["batched"],
                "max_repeats": max(self.seen.values(), default=0),  # most times one request body was sent
                "bodies_by_times_seen": {str(k): v for k, v in sorted(Counter(self.seen.values()).items())},
                "judge_request_keys": dict(self.judge_request_keys),
                "judge_temperatures": dict(self.judge_temperatures),
                "input_chars": self.input_chars,
                "output_chars": self.output_chars,
                "judge_input_chars": self.judge_input_chars,
                "judge_output_chars": self.judge_output_chars,
                "judge_usage": dict(self.judge_usage),
                "prefix_repeats": self.prefix_repeats,
                # From the first judge request's arrival to the last verdict's reply: the judging
                # as the judge saw it, whatever the client did before and after.
                "judge_span_s": (self.last_judge_reply - self.first_judge_arrival
                                 if self.first_judge_arrival is not None and self.last_judge_reply is not None else None),
                "prefix_repeats_after_return": self.prefix_repeats_after_return,
            }
