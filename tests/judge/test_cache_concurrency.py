"""Several processes open one new verdict cache at the same instant, and none of them fails.

The processes stand in for the ranks of a data-parallel lm-eval run (``accelerate launch``: every
rank grades its share of the answers), or for two runs started together on one machine, all
sharing the default cache folder. They used to crash with ``sqlite3.OperationalError: database is
locked`` at ``PRAGMA journal_mode=WAL`` when they opened a new folder together: with the code
before the fix, about one round in four of this test failed that way (4 processes, 2 cores), so
30 rounds miss it with a chance below one in a thousand.
"""

from __future__ import annotations

import multiprocessing
import queue
import sqlite3
import traceback

import pytest

from clinconsensus_tasks.judge.cache import CACHE_FILE, JudgeCache

PROCESSES = 4
VERDICTS = 50  # written by each process, under keys of its own
ROUNDS = 30  # each a new folder: the race is in the first opening of a cache file
WAIT_SECONDS = 60.0  # for a barrier or a report; above the cache's 30 s busy timeout

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="the workers are forked (a spawned child cannot import this test module)")


def _verdict(rank: int, index: int) -> tuple[str, str]:
    return f"rank{rank}-verdict{index}", f'{{"criteria_met": true, "explanation": "{rank}/{index}"}}'


def _worker(folder, rank, opened, written, reports) -> None:
    """Open the cache when every process is ready, write this rank's verdicts, then read everyone's.
    Reports ``(rank, None)`` or ``(rank, traceback)``, exactly once."""
    try:
        opened.wait(WAIT_SECONDS)
        cache = JudgeCache(folder)
        for index in range(VERDICTS):
            cache.put(*_verdict(rank, index))
        written.wait(WAIT_SECONDS)
        everyone = [_verdict(r, index) for r in range(PROCESSES) for index in range(VERDICTS)]
        wrong = [key for key, output in everyone if cache.get(key) != output]
        cache.close()
        assert not wrong, f"rank {rank} read {len(wrong)} verdicts wrong or missing, first {wrong[:3]}"
    except BaseException:
        opened.abort()  # the others stop waiting (BrokenBarrierError) rather than hang
        written.abort()
        reports.put((rank, traceback.format_exc()))
        raise SystemExit(1) from None
    reports.put((rank, None))


def _one_round(folder) -> tuple[list[str], list[int | None]]:
    """Tracebacks of the processes that failed, and every process's exit code."""
    ctx = multiprocessing.get_context("fork")
    opened, written, reports = ctx.Barrier(PROCESSES), ctx.Barrier(PROCESSES), ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(folder, rank, opened, written, reports)) for rank in range(PROCESSES)]
    for worker in workers:
        worker.start()
    try:
        failures = []
        for _ in workers:  # read before join: a child exits only once what it put is in the pipe
            try:
                rank, failure = reports.get(timeout=WAIT_SECONDS)
            except queue.Empty:
                failures.append(f"a process sent no report within {WAIT_SECONDS:.0f} s")
                break
            if failure is not None:
                failures.append(f"rank {rank}:\n{failure}")
        for worker in workers:
            worker.join(WAIT_SECONDS)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
                worker.join()
    return failures, [worker.exitcode for worker in workers]


def test_processes_opening_one_new_cache_together_all_succeed_and_keep_every_verdict(tmp_path):
    """4 processes released by one barrier open ``JudgeCache`` on the same new folder, each writes
    50 verdicts, and after a second barrier each reads all 200 back; 30 rounds, a new folder each.
    Every process exits 0 with no exception, the file holds exactly 200 entries and is in WAL mode."""
    for round_ in range(ROUNDS):
        folder = tmp_path / f"round{round_}" / "cache"  # made by the processes themselves, as in a run
        failures, exit_codes = _one_round(folder)
        assert not failures, f"round {round_}: " + "\n".join(failures)
        assert exit_codes == [0] * PROCESSES, f"round {round_}: exit codes {exit_codes}"
        cache = JudgeCache(folder)
        try:
            assert len(cache) == PROCESSES * VERDICTS, f"round {round_}"
        finally:
            cache.close()
        db = sqlite3.connect(folder / CACHE_FILE)
        try:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal", f"round {round_}"
        finally:
            db.close()
