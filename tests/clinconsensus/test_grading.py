"""The judge protocol of the scoring core, driven by a scripted judge.

The scripted ``complete`` stands in for a judge endpoint so that every branch (re-ask after an
unparseable verdict, cache bypass on re-ask, transport failure, batched re-ask of the missing
criteria only) is checked exactly. End-to-end tests exercise the same code over real HTTP.
"""

import asyncio
import json

import pytest

from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import count_failures, count_met, grade_answer
from clinconsensus_tasks.scorers.clinconsensus.judge_template import parse_template
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import (
    BATCHED,
    BATCHED_SYSTEM,
    PER_CRITERION,
    PER_CRITERION_SYSTEM,
    REASK_NOTES,
    per_criterion_messages,
)

RUBRICS = [("C1", "是否建议完善心电图"), ("C2", "是否提醒胸痛加重时立即就医"), ("C3", "是否说明阿司匹林剂量为100 mg")]


class ScriptedJudge:
    def __init__(self, replies):
        self.replies = replies  # criterion text -> list of replies (str or Exception), one per attempt
        self.calls = []
        self.requests = []

    async def __call__(self, messages, fresh):
        user = messages[1]["content"]  # the judge prompt (a re-ask adds the refused reply and a note after it)
        criterion = user.rsplit("【评分标准】\n", 1)[1]
        self.calls.append((criterion, fresh))
        self.requests.append(messages)
        reply = self.replies[criterion].pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


def verdict(met):
    return json.dumps({"explanation": "理由", "criteria_met": met}, ensure_ascii=False)


def test_prompt_puts_the_criterion_last_after_a_shared_prefix():
    a = per_criterion_messages("问题", "回答", RUBRICS[0][1])
    b = per_criterion_messages("问题", "回答", RUBRICS[1][1])
    assert a[0] == b[0] == {"role": "system", "content": PER_CRITERION_SYSTEM}
    assert a[1]["content"].endswith(RUBRICS[0][1])
    assert a[1]["content"][: -len(RUBRICS[0][1])] == b[1]["content"][: -len(RUBRICS[1][1])]


def test_per_criterion_reasks_unparseable_once_then_fails():
    # The verdict rule: asked again once, whatever the re-ask's reply is (issue 41: a judge that
    # answered the re-ask with other prose was asked a third time).
    judge = ScriptedJudge({
        RUBRICS[0][1]: [verdict(True)],
        RUBRICS[1][1]: ["满足", verdict(False)],
        RUBRICS[2][1]: ["?", "??", "???"],
    })
    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge))
    assert [(j.criterion_id, j.met, j.attempts) for j in out] == [("C1", True, 1), ("C2", False, 2), ("C3", None, 2)]
    assert out[2].error == "unparseable verdict (criteria_met occurs 0 time(s), in 0 JSON object(s); exactly one of each is a verdict): '??'"
    assert count_met(out) == 1 and count_failures(out) == 1
    # First attempts may use a cache; every re-ask must bypass it.
    assert sorted(judge.calls) == sorted([
        (RUBRICS[0][1], False), (RUBRICS[1][1], False), (RUBRICS[1][1], True), (RUBRICS[2][1], False), (RUBRICS[2][1], True),
    ])


def test_per_criterion_with_three_attempts_asked_fails_after_three():
    judge = ScriptedJudge({RUBRICS[0][1]: [verdict(True)], RUBRICS[1][1]: ["满足", verdict(False)], RUBRICS[2][1]: ["?", "??", "???"]})
    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge, max_attempts=3))
    assert [(j.criterion_id, j.met, j.attempts) for j in out] == [("C1", True, 1), ("C2", False, 2), ("C3", None, 3)]
    assert out[2].error.endswith("'???'")
    assert sorted(judge.calls).count((RUBRICS[2][1], True)) == 2


def test_a_reask_carries_the_refused_reply_and_is_never_a_request_already_answered():
    # Issue 29: SmolLM2 at temperature 0 answered each identical re-ask with the identical reply
    # (48 of 79 judge calls for one case bought nothing). A re-ask is now the request, the reply
    # refused and a note; once the judge repeats a refused reply, the next re-ask would be a
    # request already sent, and it is not sent.
    judge = ScriptedJudge({
        RUBRICS[0][1]: ["不知道", verdict(True)],
        RUBRICS[1][1]: ["不知道", "不知道"],  # the same refused reply again: no third call
        RUBRICS[2][1]: [verdict(False)],
    })
    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge, max_attempts=3))  # a third attempt allowed, not needed
    assert [(j.met, j.attempts, j.error_kind) for j in out] == [(True, 2, None), (None, 2, "unparseable"), (False, 1, None)]
    assert out[1].error.endswith("'不知道'; not asked again: the re-ask would repeat a request already answered")
    first = per_criterion_messages("问题", "回答", RUBRICS[0][1])
    assert judge.requests[0] == first
    reask = next(r for r in judge.requests if len(r) > 2 and r[1] == first[1])
    assert reask == [*first, {"role": "assistant", "content": "不知道"}, {"role": "user", "content": REASK_NOTES[PER_CRITERION]}]
    assert len(judge.requests) == 5 and len({json.dumps(r, ensure_ascii=False) for r in judge.requests}) == 5


def test_a_reask_too_long_for_the_judge_leaves_the_verdict_unusable_with_both_reasons():
    # A re-ask carries the refused reply and a note: near the judge's input limit it may not fit
    # (judge/input_limit.py refuses it unsent; a server answers 400). The criterion fails for the
    # reply it could not read, not as a refused request.
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ERROR_REQUEST, JudgeCallError

    too_long = JudgeCallError(ERROR_REQUEST, "judge input of about 1251 tokens exceeds the judge's limit of 1120 (...); not sent")
    judge = ScriptedJudge({RUBRICS[0][1]: ["满足", too_long], RUBRICS[1][1]: [verdict(True)], RUBRICS[2][1]: [too_long]})
    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge))
    assert [(j.met, j.attempts, j.error_kind) for j in out] == [(None, 2, "unparseable"), (True, 1, None), (None, 1, "request")]
    assert out[0].error == ("unparseable verdict (criteria_met occurs 0 time(s), in 0 JSON object(s); exactly one of each is a verdict): "
                            "'满足'; re-ask refused: judge input of about 1251 tokens exceeds the judge's limit of 1120 (...); not sent")
    assert out[2].error == str(too_long)  # a first request refused is a refused request


def test_transport_error_fails_only_that_criterion():
    judge = ScriptedJudge({
        RUBRICS[0][1]: [verdict(True)],
        RUBRICS[1][1]: [ConnectionError("judge unreachable")],
        RUBRICS[2][1]: [verdict(True)],
    })
    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge))
    assert [j.met for j in out] == [True, None, True]
    assert out[1].error == "ConnectionError: judge unreachable" and out[1].attempts == 1


def test_a_batched_reply_is_all_or_nothing_and_asked_again_whole():
    # Issue 26.1: a reply giving some criteria a verdict and garbling others is no verdict at all
    # (a partial list cannot be told from a forged one); the whole case is asked again.
    asked = []

    async def judge(messages, fresh):
        assert messages[0]["content"] == BATCHED_SYSTEM
        listing = messages[1]["content"].rsplit("【评分标准】\n", 1)[1].splitlines()
        asked.append(([line.split("]")[0].strip("[") for line in listing], fresh))
        if len(asked) == 1:  # verdicts for 1 and 3 only, one of them garbled
            return json.dumps([{"criterion_id": "1", "criteria_met": True}, {"criterion_id": "3", "criteria_met": "x"}])
        return "```json\n" + json.dumps([{"criterion_id": c, "criteria_met": c != "2"} for c in ("1", "2", "3")]) + "\n```"

    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge, mode=BATCHED))
    assert asked == [(["1", "2", "3"], False), (["1", "2", "3"], True)]  # the re-ask: the same list, the reply refused, a note
    assert [(j.criterion_id, j.met, j.attempts) for j in out] == [("C1", True, 2), ("C2", False, 2), ("C3", True, 2)]


@pytest.mark.parametrize("max_attempts", [None, 3])
def test_a_batched_judge_that_never_gives_a_whole_list_fails_every_criterion(max_attempts):
    replies = iter(["无法判断", "不能判断", "无法判断"])  # never the same reply twice in a row
    calls = []

    async def judge(messages, fresh):
        calls.append(messages)
        return next(replies)

    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge, mode=BATCHED, **({"max_attempts": max_attempts} if max_attempts else {})))
    attempts = max_attempts or 2  # by default the request and one re-ask, whatever the re-ask's reply
    assert [(j.met, j.attempts) for j in out] == [(None, attempts)] * 3 and len(calls) == attempts
    assert out[2].error == ("no usable verdict for these criteria (criteria_met occurs 0 time(s); a batched verdict is one list "
                            f"with it once per item): '{'无法判断' if attempts == 3 else '不能判断'}'")


def test_a_batched_judge_repeating_a_refused_reply_is_not_asked_the_same_again():
    calls = []

    async def judge(messages, fresh):
        calls.append(messages)
        return "无法判断"

    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge, mode=BATCHED, max_attempts=3))
    assert [(j.met, j.attempts) for j in out] == [(None, 2)] * 3 and len(calls) == 2
    assert out[0].error.endswith("'无法判断'; not asked again: the re-ask would repeat a request already answered")


# -- failure kinds, the circuit breaker and the failure threshold (issue 12) ------------------------

from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (  # noqa: E402
    BREAKER_LIMIT,
    CircuitBreaker,
    FailureTally,
    JudgeFailureError,
    JudgeUnavailableError,
    UNJUDGED,
    classify,
    parse_failure_share,
)


class HTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status_code = status


class Response:
    status_code = 503


class WrappedError(Exception):
    response = Response()


def test_failures_are_told_apart_by_status_code():
    assert classify(HTTPError(400, "prompt too long")) == ("request", "HTTPError (HTTP 400): prompt too long")
    assert classify(HTTPError(429, "slow down"))[0] == "transport"
    assert classify(HTTPError(500, "boom"))[0] == "transport"
    assert classify(WrappedError("unavailable")) == ("transport", "WrappedError (HTTP 503): unavailable")
    assert classify(TimeoutError()) == ("transport", "TimeoutError")


def test_a_refused_request_is_asked_once_and_recorded_as_such():
    judge = ScriptedJudge({
        RUBRICS[0][1]: [HTTPError(400, "maximum context length exceeded")],
        RUBRICS[1][1]: ["无法判断", "无法判断"],
        RUBRICS[2][1]: [verdict(False)],
    })
    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge))
    assert [(j.met, j.error_kind, j.attempts) for j in out] == [(None, "request", 1), (None, "unparseable", 2), (False, None, 1)]
    assert out[0].error == "HTTPError (HTTP 400): maximum context length exceeded"


def test_the_breaker_opens_after_a_run_of_transport_failures_only():
    breaker = CircuitBreaker(limit=3)
    breaker.failure("transport", "ConnectionError: x")
    breaker.success()  # a reply resets the run
    breaker.failure("transport", "ConnectionError: x")
    breaker.failure("transport", "ConnectionError: x")
    breaker.check()
    breaker.failure("transport", "ConnectionError: x")  # opens it: the call that did is a transport failure
    with pytest.raises(JudgeUnavailableError, match=r"failed 3 calls in a row \(transport: ConnectionError x3\)"):
        breaker.check()

    rubrics = [(f"C{i}", f"标准{i}") for i in range(BREAKER_LIMIT + 5)]
    sent = []
    shared = CircuitBreaker()

    async def dead(messages, fresh):
        shared.check()  # as a transport does, when a request would really be sent (after its cache)
        sent.append(1)
        shared.failure("transport", "HTTPError: 500")  # the transport counts each failed attempt: the one place
        raise HTTPError(500, "down")

    # A dead judge never raises out of grading: the calls after the breaker opened fail at once,
    # unsent, as judge_unavailable; the case keeps its answer and the run's policy decides.
    out = asyncio.run(grade_answer("问题", "回答", rubrics, dead))
    assert len(sent) == BREAKER_LIMIT
    kinds = [j.error_kind for j in out]
    assert kinds == ["transport"] * BREAKER_LIMIT + ["judge_unavailable"] * 5
    assert out[-1].attempts == 1 and "failed 20 calls in a row" in out[-1].error

    async def refusing(messages, fresh):
        raise HTTPError(400, "too long")

    out = asyncio.run(grade_answer("问题", "回答", rubrics, refusing))
    assert {j.error_kind for j in out} == {"request"}  # refused requests: failed judgments, the judge not down


def test_failure_threshold():
    assert parse_failure_share(None) == 0.01 and parse_failure_share("2%") == 0.02 and parse_failure_share("0") == 0.0
    with pytest.raises(ValueError, match="between 0 and 1"):
        parse_failure_share("5")
    tally = FailureTally.of_cases([(30, 1, {"unparseable verdict": 1}), (30, 0, {})])
    assert not tally.exceeds(0.02) and tally.exceeds(0.01) and not tally.exceeds(0)
    assert not tally.exceeds(0.01, planned=300)  # mid-run, against the judgments planned
    # Judgments planned but never made (errored samples) count as failed, with their own reason.
    whole = tally.with_unjudged(120)
    assert (whole.judged, whole.failed) == (120, 61) and whole.reasons[UNJUDGED] == 60
    assert tally.with_unjudged(60) is tally
    with pytest.raises(JudgeFailureError, match=r"^1 of 60 judge verdicts failed \(1\.7%, above the 1\.0% allowed by X\); main reasons: unparseable verdict x1\. .* resume here\. To accept"):
        tally.check(0.01, "resume here.", "X")


def test_a_retry_libraries_give_up_error_is_classified_by_its_last_attempt():
    class Attempt:
        def exception(self):
            return HTTPError(400, "too long")

    class RetryError(Exception):
        last_attempt = Attempt()

    assert classify(RetryError()) == ("request", "HTTPError (HTTP 400): too long")


@pytest.mark.parametrize("prompt", ["project", "batched", "template"])
@pytest.mark.parametrize("part", ["whole", "system", "user"])
def test_every_prompt_of_ours_sent_back_is_a_failed_judgment(prompt, part):
    # A judge that echoes its prompt (or the part of it that holds the format example) judges nothing.
    from clinconsensus.test_judge_prompt import TEMPLATE

    template = parse_template(TEMPLATE, "t.txt") if prompt == "template" else None
    mode = BATCHED if prompt == "batched" else PER_CRITERION

    async def echo(messages, fresh):
        chosen = [m for m in messages if part == "whole" or m["role"] == part] or messages
        return "\n\n".join(m["content"] for m in chosen)

    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, echo, mode, template=template))
    assert [(j.met, j.error_kind) for j in out] == [(None, "unparseable")] * len(RUBRICS)
    assert all("echoes the judge prompt" in j.error for j in out)
