"""Peak memory of an Inspect ClinConsensus eval as runs grow, with the judge's calls through
Inspect's model API (the default) and through the project's client (``-T judge_calls=direct``).

Each measurement runs in a fresh process against the stand-in server (separate process, 0 ms
judge, per-criterion mode, the project's prompt, 256 judge connections, ``max_samples`` 64): the
peak RSS during ``inspect_ai.eval`` minus the RSS before it, once Inspect and the task are
imported. The eval holds the dataset and each finished sample's summary, so some growth with the
cases is Inspect's own; the judge step holds per case in flight only.

Usage: python bench/inspect_memory.py [--cases 100,2500] [--calls inspect,direct]
The last line printed is one JSON object {calls: {cases: MB}}.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from judge_cost import Server, write_cases

CONCURRENCY = 256


def child(data: str, port: int, calls: str, work: str) -> float:
    """MB added to the peak RSS by one eval of every case of ``data``."""
    import inspect_ai  # noqa: F401  (imported before the baseline: not the eval's memory)

    import clinconsensus_tasks.clinconsensus.inspect_task  # noqa: F401
    from judge_cost import run_inspect
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION

    server = Server.attach(port)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run_inspect(server, data, PER_CRITERION, work, concurrency=CONCURRENCY, judge_cache=False, judge_calls=calls)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="100,2500")
    parser.add_argument("--calls", default="inspect,direct")
    parser.add_argument("--child", nargs=4, metavar=("DATA", "PORT", "CALLS", "WORK"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(child(args.child[0], int(args.child[1]), args.child[2], args.child[3]))
        return
    work = Path(tempfile.mkdtemp(prefix="inspect-memory-"))
    server = Server(0)
    results: dict = {calls: {} for calls in args.calls.split(",")}
    try:
        for n in map(int, args.cases.split(",")):
            data = work / f"cases-{n}.jsonl"
            write_cases(n, data)
            for calls in results:
                server.reset(0.0)
                out = subprocess.run([sys.executable, __file__, "--child", str(data), str(server.port), calls, str(work / f"{calls}-{n}")],
                                     capture_output=True, text=True, check=True)
                results[calls][n] = round(float(out.stdout.split()[-1]), 1)
                print(f"  {n} cases, judge_calls={calls}: {results[calls][n]} MB", file=sys.stderr, flush=True)
    finally:
        server.stop()
    print(f"peak RSS added by an Inspect eval (MB), per-criterion, 0 ms judge, {CONCURRENCY} judge connections")
    for calls, row in results.items():
        print(f"  judge_calls={calls:8}" + "  ".join(f"{n} cases: {mb:7.1f}" for n, mb in row.items()))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
