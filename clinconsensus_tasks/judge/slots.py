"""The connection slots of a judge: at most ``n`` calls in flight, the waiting ones served leading
calls first (a case's first per-criterion call, ``rubric_grading.LEADING_CALL``), then in the
order they came.

Why not ``asyncio.Semaphore``: it serves waiters in arrival order. With per-criterion judging a
case sends its first call alone and its other 29 once it returns (for the judge's prompt cache).
When a batch of cases has queued its 29 calls each, a case that starts next waits behind all of
them for its first call, then waits one call more, and meanwhile the connections the batch frees
as it drains stand idle: at 256 connections and 64 cases in flight, Inspect's judging ran in waves
with a one-call gap between them (``bench/cache_order.py``). Served first, a new case's first call
goes out as soon as a connection frees, and its 29 calls join the queue while the others drain.

A freed slot is handed straight to the next waiter, so no caller arriving later can take it first.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import LEADING_CALL


class JudgeSlots:
    """``async with slots:`` holds one of ``n`` connection slots for the block."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"a judge needs at least one connection, got {n}")
        self.free = n
        self._leading: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    async def __aenter__(self) -> None:
        if self.free > 0:  # a slot is free only while no one waits for it (_release hands it over)
            self.free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        (self._leading if LEADING_CALL.get() else self._others).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # handed a slot, then cancelled: pass it on
                self._release()
            raise

    async def __aexit__(self, *exc: Any) -> None:
        self._release()

    def _release(self) -> None:
        for queue in (self._leading, self._others):
            while queue:
                turn = queue.popleft()
                if not turn.done():  # a waiter cancelled meanwhile is skipped
                    turn.set_result(None)  # the slot goes to it, not back to the pool
                    return
        self.free += 1
