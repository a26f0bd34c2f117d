"""Do the judge calls of a case reach the provider after its prompt cache can serve them?

A provider caches a prompt prefix once a call carrying it has been processed; calls sent before
that pay the full input price. In per-criterion mode the 30 prompts of a case share everything
before the rubric item. This script runs both frameworks in per-criterion mode against the stand-in
server (separate process) with a judge latency, and prints, per framework, the share of calls 2-30
of a case that arrived after a call with the case's prefix had returned (the stand-in counts it:
``prefix_repeats_after_return / prefix_repeats``), the cached share of the judge's prompt tokens
and the judging wall time against the ideal (calls x latency / concurrency) with its ratio to it.

``--before`` sends every criterion of a case at once, as the graders did before (for comparison).

The levers of issue 35 (each off by default, each one's figure in docs/performance.md): the
judges' HTTP transport (``CLINCONSENSUS_JUDGE_HTTP=httpx`` for the SDK's default),
``--no-judge-cache`` and, for Inspect, ``--no-log-realtime``.

``--frameworks`` takes ``inspect`` (the judge's calls through Inspect's model API, the default),
``inspect-direct`` (``-T judge_calls=direct``: through the project's judge client) and ``lmeval``.
Each line also gives the judging span as the stand-in saw it (first judge request to last verdict)
and its ratio to the ideal: for Inspect the wall time is the whole eval (samples starting, answers),
for lm-eval the judge filter only. ``--max-samples`` is Inspect's (64, as issue 35 measured it).

``--concurrency`` sets the judge connections of both frameworks (Inspect's grader
``max_connections``, lm-eval's ``CLINCONSENSUS_JUDGE_CONCURRENCY``); each framework's line also
gives its CPU per judge call (Inspect: the whole eval's process CPU; lm-eval: the judge filter's)
and the calls a second one core sustains at that cost.

Usage: python bench/cache_order.py [--cases 50] [--latency 1.0] [--concurrency 32] [--frameworks inspect,inspect-direct,lmeval]
                                   [--before] [--no-judge-cache] [--no-log-realtime] [--max-samples 64] [--profile FILE]
The last line printed is one JSON object {framework: {...}}.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import pstats
import re
import sys
import tempfile
from pathlib import Path

from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION
from judge_cost import Server, run_inspect, run_lmeval, write_cases

CONCURRENCY = 32


def all_at_once() -> None:
    """Swap the prefix-first order for the old one: every criterion of a case at once."""
    import asyncio

    from clinconsensus_tasks.scorers.clinconsensus import rubric_grading

    async def gather_all(question, answer, rubrics, complete, max_attempts, template, breaker):
        return list(await asyncio.gather(*(rubric_grading._judge_one(question, answer, cid, text, complete, max_attempts, template, breaker)
                                           for cid, text in rubrics)))

    rubric_grading._judge_prefix_first = gather_all


def measure(framework: str, server: Server, data: str, work: Path, latency: float, concurrency: int = CONCURRENCY,
            judge_cache: bool = True, log_realtime: bool | None = None, max_samples: int = 64) -> dict:
    server.reset(latency)
    run = run_lmeval if framework == "lmeval" else run_inspect
    server_cpu = server.cpu_seconds()
    levers = {} if framework == "lmeval" else {"log_realtime": log_realtime, "judge_calls": framework.partition("-")[2] or "inspect",
                                                "max_samples": max_samples}
    result = run(server, data, PER_CRITERION, str(work / f"{framework}-cache"), concurrency=concurrency, judge_cache=judge_cache, **levers)
    server_cpu = server.cpu_seconds() - server_cpu
    usage = result["judge_usage"]
    calls = result["judge_calls"]
    ideal = calls * latency / concurrency
    cpu_ms = 1000 * result["cpu"] / max(1, calls)
    return {
        "judge_calls": calls,
        "share_after_first_returned": round(result["prefix_repeats_after_return"] / max(1, result["prefix_repeats"]), 4),
        "cached_share_of_prompt_tokens": round(usage.get("cached_prompt_tokens", 0) / max(1, usage.get("prompt_tokens", 0)), 4),
        "judging_wall_s": round(result["wall"], 2),
        "ideal_wall_s": round(ideal, 2),
        "ratio_to_ideal": round(result["wall"] / ideal, 3) if ideal else None,
        "judge_span_s": round(result["judge_span_s"], 2),
        "span_ratio_to_ideal": round(result["judge_span_s"] / ideal, 3) if ideal else None,
        "concurrency": concurrency,
        "cpu_ms_per_call": round(cpu_ms, 2),
        "calls_per_cpu_second": round(1000 / cpu_ms, 1) if cpu_ms else None,
        "stand_in_cpu_s": round(server_cpu, 2),
    }


def print_shares(path: str, rows: int = 15) -> None:
    """CPU (cProfile's own time) by package: where a framework's per-call cost lies."""
    stats, shares = pstats.Stats(path), collections.Counter()
    for (filename, _, name), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        if "poll" in name:  # the event loop waiting: idle, not work
            continue
        match = re.search(r"site-packages/([^/]+)|/(scorers|clinconsensus_tasks)/", filename)
        shares[(match.group(1) or "plugin: " + match.group(2)) if match else "python"] += own
    total = sum(shares.values())
    print(f"profile {path}: {total:.1f} s of CPU (profiler overhead included), by package:")
    for package, seconds in shares.most_common(rows):
        print(f"  {100 * seconds / total:5.1f}%  {package}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the stand-in judge takes per call")
    parser.add_argument("--answer-chars", type=int, default=1500)
    parser.add_argument("--frameworks", default="inspect,inspect-direct,lmeval")
    parser.add_argument("--max-samples", type=int, default=64, help="Inspect's max_samples")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="judge connections of each framework")
    parser.add_argument("--no-judge-cache", action="store_true", help="judge_cache off: no response cache for the judge's calls")
    parser.add_argument("--no-log-realtime", action="store_true", help="Inspect's log_realtime off (--no-log-realtime)")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the runs to FILE and print its shares by package")
    parser.add_argument("--before", action="store_true", help="send all 30 criteria of a case at once (the old behaviour)")
    args = parser.parse_args()
    if args.before:
        all_at_once()

    work = Path(tempfile.mkdtemp(prefix="cache-order-"))
    data = work / "cases.jsonl"
    write_cases(args.cases, data)
    server = Server(args.answer_chars)
    results = {}
    profile = cProfile.Profile() if args.profile else None
    try:
        if profile:
            profile.enable()
        for framework in args.frameworks.split(","):
            results[framework] = measure(framework, server, str(data), work, args.latency, args.concurrency,
                                         not args.no_judge_cache, False if args.no_log_realtime else None, args.max_samples)
            print(f"  {framework}: {json.dumps(results[framework])}", file=sys.stderr, flush=True)
    finally:
        server.stop()
        if profile:
            profile.disable()
            profile.dump_stats(args.profile)
            print_shares(args.profile)
    order = "all criteria at once (before)" if args.before else "first criterion, then the rest"
    print(f"{args.cases} cases x 30 criteria, per-criterion, {order}, {args.latency:g} s judge, concurrency {args.concurrency}")
    for framework, r in results.items():
        print(f"  {framework:14} calls 2-30 sent after the case's first call returned: {r['share_after_first_returned']:.3f}; "
              f"cached share of prompt tokens {r['cached_share_of_prompt_tokens']:.3f}; judging {r['judging_wall_s']} s (ideal {r['ideal_wall_s']} s, "
              f"{r['ratio_to_ideal']}x the ideal; judging span {r['judge_span_s']} s, {r['span_ratio_to_ideal']}x); "
              f"{r['cpu_ms_per_call']} ms CPU per judge call")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
