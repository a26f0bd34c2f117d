"""The judges' connection slots (``judge.slots``): at most n calls in flight; a case's first call
(``rubric_grading.LEADING_CALL``) is served before calls already queued; a cancelled waiter never
keeps a slot. No framework and no server: the slots are plain asyncio."""

from __future__ import annotations

import asyncio

import pytest

from clinconsensus_tasks.judge.slots import JudgeSlots
from clinconsensus_tasks.scorers.clinconsensus import rubric_grading
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import LEADING_CALL, grade_answer
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION

MET = '{"explanation": "ok", "criteria_met": true}'


def run(coro):
    return asyncio.run(coro)


def test_queued_calls_are_served_leading_first_then_in_arrival_order():
    async def scenario() -> list[str]:
        slots, served, release = JudgeSlots(1), [], asyncio.Event()

        async def call(name: str, leading: bool = False) -> None:
            if leading:
                LEADING_CALL.set(True)  # this task's own context
            async with slots:
                served.append(name)
                if name == "holder":
                    await release.wait()

        tasks = [asyncio.create_task(call("holder"))]
        await asyncio.sleep(0)
        for name, leading in (("rest-1", False), ("rest-2", False), ("first-1", True), ("rest-3", False), ("first-2", True)):
            tasks.append(asyncio.create_task(call(name, leading)))
            await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*tasks)
        assert slots.free == 1
        return served

    assert run(scenario()) == ["holder", "first-1", "first-2", "rest-1", "rest-2", "rest-3"]


def test_never_more_than_n_in_flight_and_all_slots_back_at_the_end():
    async def scenario() -> tuple[int, int]:
        slots, busy, peak = JudgeSlots(3), 0, 0

        async def call(i: int) -> None:
            nonlocal busy, peak
            LEADING_CALL.set(i % 4 == 0)
            async with slots:
                busy += 1
                peak = max(peak, busy)
                await asyncio.sleep(0.001 * (i % 3))
                busy -= 1

        await asyncio.gather(*(call(i) for i in range(60)))
        return peak, slots.free

    assert run(scenario()) == (3, 3)


def test_a_cancelled_waiter_is_skipped_and_a_cancelled_holder_hands_its_slot_on():
    async def scenario() -> list[str]:
        slots, served, release = JudgeSlots(1), [], asyncio.Event()

        async def call(name: str) -> None:
            async with slots:
                served.append(name)
                if name == "holder":
                    await release.wait()

        holder = asyncio.create_task(call("holder"))
        await asyncio.sleep(0)
        gone, after = asyncio.create_task(call("gone")), asyncio.create_task(call("after"))
        await asyncio.sleep(0)
        gone.cancel()  # cancelled while waiting: never served
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(holder, after)
        with pytest.raises(asyncio.CancelledError):
            await gone
        # handed a slot, then cancelled before it ran: the slot goes to the next waiter
        blocker_release = asyncio.Event()

        async def blocker() -> None:
            async with slots:
                served.append("blocker")
                await blocker_release.wait()

        first = asyncio.create_task(blocker())
        await asyncio.sleep(0)
        handed, last = asyncio.create_task(call("handed")), asyncio.create_task(call("last"))
        await asyncio.sleep(0)
        blocker_release.set()
        await asyncio.sleep(0)  # the blocker leaves: "handed" is given the slot ...
        assert first.done() and slots.free == 0
        handed.cancel()  # ... and cancelled before it resumes
        await asyncio.gather(first, last, return_exceptions=True)
        assert slots.free == 1
        return served

    assert run(scenario()) == ["holder", "after", "blocker", "last"]


def test_only_a_cases_first_call_and_its_reasks_are_leading():
    seen: list[tuple[str, bool, bool]] = []
    replies = iter(["no verdict here", MET] + [MET] * 10)

    async def complete(messages, fresh):
        seen.append((messages[-1]["content"][-12:], fresh, LEADING_CALL.get()))
        return next(replies)

    rubrics = [(f"c{i}", f"标准 {i}") for i in range(4)]
    verdicts = run(grade_answer("问题", "回答", rubrics, complete, PER_CRITERION))
    assert [v.met for v in verdicts] == [True] * 4
    assert [leading for _, _, leading in seen] == [True, True, False, False, False]  # the first, asked again, then the rest
    assert seen[1][1] is True  # the re-ask asks fresh
    assert LEADING_CALL.get() is False  # set for the first call only, then reset
    assert rubric_grading.LEADING_CALL is LEADING_CALL
