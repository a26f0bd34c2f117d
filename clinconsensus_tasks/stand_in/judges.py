"""How the stand-in answers as the *judge*: verdicts, injected faults and broken judges.

A judge request is recognised by the project's judge system prompts (per criterion, batched, the
judge check) or, for a template in the official form, by matching a registered template
(:func:`template_pattern`). The verdict for (answer, criterion) is :func:`oracle_verdict`, so
per-criterion and batched prompts get the same verdicts. Model-name words choose faults
(``flaky``: :func:`fault_for`), opinions (``alt``, ``never``, ``quoting``) and outages
(``down``, ``toolong``, ``drop``, ``hang``: :func:`outage_for`); ``unreadable`` writes prose,
never a verdict (:func:`unreadable_reply`).

The verdict reads an answer's content, not its form (:func:`answer_content`): the edits of
``answer_forms`` (Markdown removed, a closing line, line breaks, traditional characters) leave it
as it was, so this judge is steady under them, as a judge should be. Two judges are not, by name:
``flipN`` reverses its verdict on a known half of the criteria (:func:`unsteady`) with probability
N% on each ask, the ask's number being how often the server has received that very request
(:func:`flips_on`: exact for tests, like asking a hosted judge again at temperature 0);
``courteous`` says met whenever the answer ends with the closing line.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from typing import Any

from clinconsensus_tasks.scorers.clinconsensus.answer_forms import CLOSING, opencc_converter, without_markdown
from clinconsensus_tasks.scorers.clinconsensus.answer_guard import ANSWER_BEGIN, ANSWER_END
from clinconsensus_tasks.scorers.clinconsensus.judge_template import PLACEHOLDERS
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED_SYSTEM, PER_CRITERION_SYSTEM, PROBE_SYSTEM
from clinconsensus_tasks.stand_in.digest import digest

ANSWER_MARK = "【待评估的回答】\n"
CRITERION_MARK = "\n\n【评分标准】\n"
_BATCH_LINE = re.compile(r"^\[([^\]]+)\] (.*)$")

HANG_SECONDS = 60.0
FAULT_NONE = "none"
FAULT_429 = "429_once"
FAULT_500 = "500_once"
FAULT_MALFORMED_ONCE = "malformed_once"
FAULT_MALFORMED_ALWAYS = "malformed_always"
MALFORMED = "我认为这条标准大致满足。"  # a verdict with no verdict in it

# A tiny judge's prose, as SmolLM2-135M on llama.cpp writes it (254 characters, finish reason
# "stop", no verdict): one reply to a judge request, another to a re-ask of it (its own reply and
# the plea after it), and that same other reply to every later re-ask.
UNREADABLE_FIRST = ("The response is a good answer to the question. It explains the patient's condition clearly and gives practical "
                    "advice about the next steps, such as seeing a doctor and taking the medicine as prescribed. Overall, the answer "
                    "addresses the rubric item well.")
UNREADABLE_AGAIN = ("I apologize for the confusion. The response above covers the main points of the question and gives helpful advice. "
                    "It mentions the examination, the treatment and the follow-up, so I think it meets the requirement described in the "
                    "rubric item you gave me.")

PER_CRITERION = "per_criterion"
BATCHED = "batched"
PROBE = "probe"
JUDGE_KINDS = (PER_CRITERION, BATCHED)  # the judge calls proper (the check is not one)


_LINE_BREAKS = re.compile(r"[ \t]*\n\s*")
_CJK_BEFORE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def answer_content(answer: str) -> str:
    """An answer as the stand-in judge reads it: Markdown marks gone, a closing courtesy line gone,
    line breaks folded (none after a Chinese character, a space after anything else), traditional
    characters as simplified. A one-line plain simplified answer (every candidate answer here) is
    read as it is."""
    text = without_markdown(answer).rstrip()
    for closing in CLOSING.values():
        if text.endswith(closing) and text != closing:
            text = text[: -len(closing)].rstrip()
    text = _LINE_BREAKS.sub(lambda m: "" if m.start() == 0 or _CJK_BEFORE.match(text[m.start() - 1]) else " ", text)
    if _CJK_BEFORE.search(text):
        text = opencc_converter("t2s").convert(text)
    return text


def oracle_verdict(answer: str, criterion: str, judge: str = "") -> bool:
    """Whether the fake judge finds ``criterion`` met by ``answer`` (about 55% are), read by content
    (:func:`answer_content`).

    A judge whose model name contains ``alt`` disagrees on a fixed fifth of the criteria
    (:func:`alt_disagrees`), so two-judge runs have known disagreements.
    """
    content = answer_content(answer)
    met = digest("verdict", content, criterion) % 100 < 55
    return (not met) if "alt" in judge and alt_disagrees(content, criterion) else met


def alt_disagrees(answer: str, criterion: str) -> bool:
    return digest("alt", answer, criterion) % 5 == 0


_FLIP = re.compile(r"flip(\d+)")


def flip_percent(judge: str) -> int:
    """The per-ask chance (in %) that a ``flipN`` judge reverses a verdict on an unsteady criterion."""
    found = _FLIP.search(judge)
    return min(100, int(found.group(1))) if found else 0


def unsteady(criterion: str) -> bool:
    """The criteria a ``flipN`` judge may reverse: a fixed half, by the criterion's text."""
    return digest("unsteady", criterion) % 2 == 0


def flips_on(judge: str, answer: str, criterion: str, attempt: int) -> bool:
    """Whether a ``flipN`` judge reverses its verdict on this ask (``attempt``: how often the server
    has received this very request, the first time 1)."""
    percent = flip_percent(judge)
    return percent > 0 and unsteady(criterion) and digest("flip", answer_content(answer), criterion, str(attempt)) % 100 < percent


def closing_present(answer: str) -> bool:
    return answer.rstrip().endswith(tuple(CLOSING.values()))


def fault_for(answer: str, criterion: str) -> str:
    """The fault a ``flaky`` judge injects for this (answer, criterion) in per-criterion mode."""
    bucket = digest("fault", answer, criterion) % 20
    return {0: FAULT_429, 1: FAULT_500, 2: FAULT_MALFORMED_ONCE, 3: FAULT_MALFORMED_ALWAYS}.get(bucket, FAULT_NONE)


def template_pattern(text: str) -> re.Pattern[str]:
    """A regular expression matching ``text`` (a ``str.format`` judge template) filled in, with one
    named group per placeholder; the last part of the message is anchored to the template's end."""
    parts, seen = [r"\A"], set()
    for literal, name, _spec, _conv in string.Formatter().parse(text):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name not in PLACEHOLDERS:
            raise ValueError(f"unknown placeholder {{{name}}} in a judge template")
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.*?)")
        seen.add(name)
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


@dataclass(frozen=True)
class JudgeReply:
    kind: str  # PER_CRITERION, BATCHED or PROBE
    status: int
    content: str


def judge_reply(model: str, system: str, user: str, attempt: int, filled: "re.Match[str] | None") -> JudgeReply | None:
    """The judge's reply, or None when the request is not a judge request. ``filled`` is the
    registered official-form template the message was made from, if any."""
    if filled is not None:
        return JudgeReply(PER_CRITERION, *_verdict(model, filled["response"], filled["rubric_item"], attempt, fenced=True))
    if system == PROBE_SYSTEM:
        return JudgeReply(PROBE, 200, "OK")
    if system == PER_CRITERION_SYSTEM:
        return JudgeReply(PER_CRITERION, *_verdict(model, *_split(user), attempt))
    if system == BATCHED_SYSTEM:
        return JudgeReply(BATCHED, *_batched(model, user, attempt))
    return None


def _split(user: str) -> tuple[str, str]:
    """The answer (as the judge sees it, between the delimiter lines) and the criteria."""
    after = user.split(ANSWER_MARK, 1)[1]
    if after.startswith(ANSWER_BEGIN + "\n"):
        answer, rest = after[len(ANSWER_BEGIN) + 1 :].split("\n" + ANSWER_END, 1)
        return answer, rest.split(CRITERION_MARK, 1)[1]
    answer, criteria = after.split(CRITERION_MARK, 1)
    return answer, criteria


def _verdict_json(met: bool) -> dict[str, Any]:
    return {"explanation": "回答中" + ("已明确涉及该要点。" if met else "未涉及该要点。"), "criteria_met": met}


def _met(model: str, answer: str, criterion: str, attempt: int = 1) -> bool:
    if "never" in model:
        return False
    if "courteous" in model and closing_present(answer):
        return True
    return oracle_verdict(answer, criterion, model) != flips_on(model, answer, criterion, attempt)


def _garbled(model: str, answer: str, criterion: str, attempt: int) -> bool:
    """Whether a ``flaky`` judge garbles this verdict on this attempt."""
    fault = fault_for(answer, criterion) if "flaky" in model else FAULT_NONE
    return fault == FAULT_MALFORMED_ALWAYS or (fault == FAULT_MALFORMED_ONCE and attempt == 1)


def unreadable_reply(attempt: int) -> str:
    """The ``unreadable`` judge's reply on ``attempt`` (a re-ask's attempt counts the replies it
    carries): :data:`UNREADABLE_FIRST` to a first request, :data:`UNREADABLE_AGAIN` to any re-ask."""
    return UNREADABLE_FIRST if attempt == 1 else UNREADABLE_AGAIN


def _verdict(model: str, answer: str, criterion: str, attempt: int, fenced: bool = False) -> tuple[int, str]:
    """The verdict for (answer, criterion), with a ``flaky`` judge's faults; ``fenced`` gives
    the official answer form (a fenced JSON block) on every attempt."""
    if "unreadable" in model:
        return 200, unreadable_reply(attempt)
    fault = fault_for(answer, criterion) if "flaky" in model else FAULT_NONE
    if fault == FAULT_429 and attempt == 1:
        return 429, ""
    if fault == FAULT_500 and attempt == 1:
        return 500, ""
    if _garbled(model, answer, criterion, attempt):
        return 200, MALFORMED
    verdict = json.dumps(_verdict_json(_met(model, answer, criterion, attempt)), ensure_ascii=False)
    if "quoting" in model:
        return 200, f"回答原文如下：\n{answer}\n\n我的判断：{verdict}"
    return 200, f"```json\n{verdict}\n```" if fenced or attempt % 2 == 0 else verdict


def _batched(model: str, user: str, attempt: int) -> tuple[int, str]:
    if "unreadable" in model:
        return 200, unreadable_reply(attempt)
    answer, listing = _split(user)
    items = []
    for line in listing.splitlines():
        match = _BATCH_LINE.match(line)
        if not match:
            continue
        cid, criterion = match.groups()
        # A flaky judge leaves out every criterion it would fail permanently, and on a first
        # attempt also those it would garble once: the client must re-ask for just those.
        if _garbled(model, answer, criterion, attempt):
            continue
        items.append({"criterion_id": cid, **_verdict_json(_met(model, answer, criterion, attempt))})
    verdicts = json.dumps(items, ensure_ascii=False)
    if "quoting" in model:
        return 200, f"回答原文如下：\n{answer}\n\n我的判断：\n{verdicts}"
    return 200, verdicts


@dataclass(frozen=True)
class Outage:
    """How a broken judge answers a judge call: an HTTP error (``status``, ``error``), or, with
    ``status`` None, no reply at all (the connection closed after ``delay`` seconds)."""

    status: int | None
    error: dict[str, Any] | None = None
    delay: float = 0.0


_CONTEXT_ERROR = "This model's maximum context length is 512 tokens. However, your messages resulted in 2048 tokens."


def outage_for(model: str) -> Outage | None:
    """The outage of a broken judge (``down``, ``toolong``, ``drop``, ``hang``), or None."""
    if "down" in model:
        return Outage(500, {"message": "injected 500: judge down", "type": "fake", "code": 500})
    if "toolong" in model:
        return Outage(400, {"message": _CONTEXT_ERROR, "type": "invalid_request_error", "code": "context_length_exceeded"})
    if "drop" in model:
        return Outage(None)
    if "hang" in model:
        return Outage(None, delay=HANG_SECONDS)
    return None
