"""Peak memory of lm-eval's judge step as runs grow: bounded cases in flight against all at once.

``judge_documents`` (the lm-eval judge filter's engine) grades the cases of a run. Holding every
case's pending calls at once costs about 9 KB per call, so memory grows with the run; grading
``cases_in_flight(concurrency)`` cases at a time keeps it flat. Each measurement runs in a fresh
process against the stand-in server (separate process, 0 ms judge, per-criterion mode, the
project's prompt, verdict cache off): peak RSS during the judge step minus RSS before it.

Usage: python bench/judge_memory.py [--cases 100,900]
The last line printed is one JSON object {"bounded": {cases: MB}, "all_at_once": {cases: MB}}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from judge_cost import Server, write_cases


def child(data: str, base_url: str, all_at_once: bool) -> float:
    """MB added to the peak RSS by grading every case of ``data`` once."""
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION

    from clinconsensus_tasks.clinconsensus.dataset import load_cases
    from clinconsensus_tasks.stand_in import candidate_answer
    from clinconsensus_tasks.judge import client

    if all_at_once:  # the behaviour before the bound: every case's calls created up front
        client.cases_in_flight = lambda concurrency: 1 << 30
    docs = [case.to_record() for case in load_cases(data).cases]
    answers = [candidate_answer(doc["question"], 1500) for doc in docs]
    settings = client.JudgeSettings(base_url=base_url, model="judge-model", use_cache=False)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    records, _ = asyncio.run(client.judge_documents(answers, docs, settings, PER_CRITERION))
    assert len(records) == len(docs)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="100,900")
    parser.add_argument("--child", nargs=3, metavar=("DATA", "BASE_URL", "ALL_AT_ONCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(child(args.child[0], args.child[1], args.child[2] == "1"))
        return
    work = Path(tempfile.mkdtemp(prefix="judge-memory-"))
    server = Server(0)
    results: dict = {"bounded": {}, "all_at_once": {}}
    try:
        for n in map(int, args.cases.split(",")):
            data = work / f"cases-{n}.jsonl"
            write_cases(n, data)
            for name, flag in (("bounded", "0"), ("all_at_once", "1")):
                server.reset(0.0)
                out = subprocess.run([sys.executable, __file__, "--child", str(data), server.base_url, flag],
                                     capture_output=True, text=True, check=True)
                results[name][n] = round(float(out.stdout.split()[-1]), 1)
                print(f"  {n} cases, {name}: {results[name][n]} MB", file=sys.stderr, flush=True)
    finally:
        server.stop()
    print("peak RSS added by the judge step (MB), per-criterion, 0 ms judge, concurrency 32")
    for name, row in results.items():
        print(f"  {name:12}" + "  ".join(f"{n} cases: {mb:7.1f}" for n, mb in row.items()))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
