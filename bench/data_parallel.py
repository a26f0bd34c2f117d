"""How often a two-rank lm-eval data-parallel ClinConsensus run fails, and whether it gives one process's numbers.

Issue 48. lm-eval's data-parallel evaluation (``accelerate launch`` on several GPUs) is emulated on
CPU: ``tests/clinconsensus/data_parallel_lmeval.py`` is one rank, launched by
``torch.distributed.run`` over gloo, its model class taking rank, world size and collectives from
torch.distributed as HFLM does; the project's stand-in server (started here, on 127.0.0.1) plays the
candidate and the judge. Each run: 2 ranks, the 12 bundled cases (6 per rank), the two ranks sharing
one verdict cache folder that is new to the run (both open it at the same moment: the race of issue
48's item 3), the default failure threshold. Before the runs, one single-process run gives the
reference results file.

Printed: for each run its exit code, wall seconds, and whether its results equal the one-process
run's, every metric to the last bit; then the failures of N runs and the judge calls per run.

Usage: .venv/bin/python bench/data_parallel.py [--runs 20] [--judge judge-model]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RANK_SCRIPT = ROOT / "tests" / "clinconsensus" / "data_parallel_lmeval.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(ranks: int, out: Path, cache: Path, base_url: str, judge: str) -> tuple[int, float, str]:
    env = {**os.environ, "CLINCONSENSUS_JUDGE_MODEL": judge, "CLINCONSENSUS_JUDGE_BASE_URL": base_url,
           "CLINCONSENSUS_JUDGE_API_KEY": "bench", "CLINCONSENSUS_DATA": "sample", "CLINCONSENSUS_JUDGE_PROMPT": "project",
           "CLINCONSENSUS_CACHE_DIR": str(cache), "OPENAI_API_KEY": "bench", "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD", None)
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks), "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), str(RANK_SCRIPT), str(out), base_url]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, time.perf_counter() - start, done.stderr


def metrics(out: Path) -> dict | None:
    found = list(out.rglob("results_*.json"))
    return json.loads(found[0].read_text(encoding="utf-8"))["results"]["clinconsensus"] if found else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--judge", default="judge-model", help="the stand-in judge's model name (judge-flaky: some verdicts unreadable)")
    args = parser.parse_args()
    from clinconsensus_tasks.stand_in import FakeOpenAIServer

    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        code, seconds, err = launch(1, root / "one", root / "cache-one", server.base_url, args.judge)
        if code != 0:
            sys.exit(f"the one-process run failed (exit {code}):\n{err[-3000:]}")
        reference, reference_calls = metrics(root / "one"), server.stats()["kinds"]
        print(f"one process: {seconds:.1f} s, judge calls {reference_calls}")
        failed = differ = 0
        times = []
        for i in range(args.runs):
            server.reset()
            code, seconds, err = launch(2, root / f"two-{i}", root / f"cache-{i}", server.base_url, args.judge)
            times.append(seconds)
            got = metrics(root / f"two-{i}")
            same = got == reference
            calls = server.stats()["kinds"]
            failed += code != 0
            differ += code == 0 and not same
            note = "" if code == 0 else "  " + (err.strip().splitlines() or ["?"])[-1][:200]
            print(f"run {i + 1:2d}: exit {code}, {seconds:.1f} s, metrics {'equal' if same else 'DIFFER'}, judge calls {calls}{note}", flush=True)
        times.sort()
        print(f"\n{args.runs} two-rank runs: {failed} failed, {differ} finished with other metrics than one process; "
              f"median {times[len(times) // 2]:.1f} s per run")


if __name__ == "__main__":
    main()
