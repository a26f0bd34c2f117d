"""lm-eval's data-parallel path (issue 48, item 2): two ranks through torch.distributed on CPU give
what one process gives.

``data_parallel_lmeval.py`` is one rank of a run launched as ``accelerate launch`` launches one on
GPUs (torch.distributed.run, here over gloo); the stand-in server plays the candidate and the judge
over real HTTP, and counts what each was asked. The judge is the flaky one (some verdicts are never
readable), so the failure policy has a run-wide decision to make: 17 of the 360 verdicts fail, 10 in
rank 0's share (5.6%) and 7 in rank 1's (3.9%). At a threshold of 5% one process goes on, and so
must two ranks (rank 0 alone is above it); at 4.5% one process stops, and so must both ranks (rank 1
alone is below it), with one exit code and no rank left waiting for the other.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RANK_SCRIPT = Path(__file__).with_name("data_parallel_lmeval.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(ranks: int, out: Path, server, threshold: str, cache: Path) -> subprocess.CompletedProcess:
    """A fresh ``torch.distributed.run`` of ``ranks`` processes, the verdict cache folder shared by
    them (as every rank of a multi-GPU run shares the default one) and new to this run."""
    server.reset()
    env = {**os.environ, "CLINCONSENSUS_JUDGE_MODEL": "judge-flaky", "CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD": threshold,
           "CLINCONSENSUS_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(ranks), "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), str(RANK_SCRIPT), str(out), server.base_url]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def written(out: Path) -> tuple[dict, list[dict]]:
    results = json.loads(next(out.rglob("results_*.json")).read_text(encoding="utf-8"))
    samples = [json.loads(line) for line in next(out.rglob("samples_clinconsensus_*.jsonl")).read_text(encoding="utf-8").splitlines()]
    return results["results"]["clinconsensus"], sorted(samples, key=lambda s: s["doc_id"])


def test_two_ranks_give_the_samples_metrics_and_judge_calls_of_one_process(fake_server, tmp_path):
    one = launch(1, tmp_path / "one", fake_server, "0.05", tmp_path / "cache-one")
    assert one.returncode == 0, one.stderr[-3000:]
    one_calls = fake_server.stats()["kinds"]
    two = launch(2, tmp_path / "two", fake_server, "0.05", tmp_path / "cache-two")
    assert two.returncode == 0, two.stderr[-3000:]
    two_calls = fake_server.stats()["kinds"]

    # Each case answered and judged once: the same questions to the candidate, the same verdicts
    # asked of the judge (re-asks of the unreadable ones included); each rank checks the judge once.
    assert one_calls["candidate"] == two_calls["candidate"] == 12
    assert one_calls["per_criterion"] == two_calls["per_criterion"] > 360
    assert (one_calls["probe"], two_calls["probe"]) == (1, 2)

    one_metrics, one_samples = written(tmp_path / "one")
    two_metrics, two_samples = written(tmp_path / "two")
    # Every metric, to the last bit (the audience slices too, which a plain sum in gathered order
    # changed), with its standard error; counts are the whole run's.
    assert two_metrics == one_metrics
    assert one_metrics["judge_failures,judge"] == 17.0 and one_metrics["rubric_accuracy_stderr,judge"] > 0
    assert [s["doc_id"] for s in two_samples] == list(range(12))
    for a, b in zip(one_samples, two_samples):
        assert (a["doc"]["case_id"], a["resps"], a["filtered_resps"]) == (b["doc"]["case_id"], b["resps"], b["filtered_resps"])
        assert {k: a[k] for k in a["metrics"]} == {k: b[k] for k in b["metrics"]}


def test_a_failing_judge_ends_both_ranks_as_it_ends_one_process(fake_server, tmp_path):
    one = launch(1, tmp_path / "one", fake_server, "0.045", tmp_path / "cache-one")
    two = launch(2, tmp_path / "two", fake_server, "0.045", tmp_path / "cache-two")
    assert one.returncode == two.returncode == 1
    # The whole run's tally decides, on each rank: both ranks say so (rank 1's own share is under
    # the threshold), and neither writes results.
    line = "17 of 360 judge verdicts failed (4.7%, above the 4.5% allowed by CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD)"
    assert line in one.stderr
    assert two.stderr.count(line) == 2, two.stderr[-3000:]
    assert not list((tmp_path / "two").rglob("results_*.json")) and not list((tmp_path / "one").rglob("results_*.json"))
