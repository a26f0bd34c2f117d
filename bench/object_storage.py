"""Runs in a bucket against runs on local disk: reading a 900-case run, and finding 1,000 logs.

Issue 40 item 5 sets two bars: finding the runs under a prefix of 1,000 log objects takes one
listing, not a request per object; reading a 900-case run from the bucket costs at most 1.5x
reading it from local disk. This script measures both against a real S3-protocol server, moto's
``ThreadedMotoServer`` on 127.0.0.1 (``tests/s3_server.py``; it stands in for S3 or an
S3-compatible store reached through ``AWS_ENDPOINT_URL``, with none of a real store's network
latency: on a real bucket the listing's one round trip and each object's one GET cost more).

* The runs: a real Inspect run of the bundled 12 cases against the project's stand-in server
  (answers padded to ``--answer-chars``), its samples repeated under new ids to 900 cases and
  written with Inspect's own writer (``.eval``); and an lm-eval ``samples_clinconsensus_*.jsonl``
  of the same 900 cases, written from those samples' records.
* Reading: ``read_case_records`` (what ``summarize``, the report and the gates read each run
  through) on the local file and on its ``s3://`` URL, ``--repeats`` times each after one warm-up
  read, in alternation; the medians and their ratio. The URL is read twice per round: with the
  process's S3 client already made (as for every run after a command's first), and with a new one
  (a command's first read: the client's first request sets up its session). Nothing is cached
  between reads: s3fs keeps listings, not objects.
* The command: ``clinconsensus-eval summarize --json`` on the lm-eval file, local and at its
  URL, a new process each time (what a user waits for: imports, the S3 client, the read).
* Finding: 1,000 log objects under one prefix (20 other objects beside it); ``find_logs`` on the
  prefix; the requests moto saw (counted at its WSGI entry), and the time.

Usage: python bench/object_storage.py [--repeats 5] [--answer-chars 1500]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import s3_server  # noqa: E402

CASES = 900
SAMPLES = "samples_clinconsensus_2026-01-01T00-00-00.000000.jsonl"


def real_run(root: Path, answer_chars: int) -> Path:
    """One real Inspect run of the bundled cases against the stand-in server; its log file."""
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.stand_in import FakeOpenAIServer

    with FakeOpenAIServer(answer_chars=answer_chars) as server:
        for svc in ("CAND", "JUDGE"):
            os.environ[f"{svc}_BASE_URL"] = server.base_url
            os.environ[f"{svc}_API_KEY"] = "bench-key"
        os.environ.update(INSPECT_CACHE_DIR=str(root / "cache"), CLINCONSENSUS_JUDGE_PROMPT="project", HF_HUB_OFFLINE="1")
        log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model",
                           model_roles={"grader": "openai-api/judge/judge-model"}, log_dir=str(root / "small"), display="none")[0]
    assert log.status == "success", log.error
    return Path(log.location)


def grow(small: Path, root: Path) -> tuple[Path, Path]:
    """The run's samples repeated under new ids to :data:`CASES`: an Inspect log and an lm-eval samples file."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(small))
    base = list(log.samples or [])
    samples = []
    for i in range(CASES):
        sample = base[i % len(base)].model_copy(deep=True)
        sample.id = f"{sample.id}-{i // len(base)}"
        score = sample.scores["rubric_scorer"]
        score.metadata = {**(score.metadata or {}), "case_id": str(sample.id)}
        samples.append(sample)
    log.samples = samples
    if log.results:
        log.results.total_samples = log.results.completed_samples = CASES
    eval_path = root / "run" / "2026-01-01T00-00-00-00-00_clinconsensus_bench900.eval"
    eval_path.parent.mkdir(parents=True)
    write_eval_log(log, str(eval_path))
    lines = []
    for sample in samples:
        score = sample.scores["rubric_scorer"]
        doc = {**(sample.metadata or {}), "case_id": str(sample.id), "question": sample.input}
        lines.append(json.dumps({"doc_id": 0, "doc": doc, "resps": [[sample.output.completion]],
                                 "filtered_resps": [json.dumps({**score.metadata, "judged_answer": score.answer}, ensure_ascii=False)]},
                                ensure_ascii=False))
    jsonl = root / "lmeval" / "cand-model" / SAMPLES
    jsonl.parent.mkdir(parents=True)
    jsonl.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return eval_path, jsonl


def timed(read, target) -> float:
    start = time.perf_counter()
    records = read(target)
    elapsed = time.perf_counter() - start
    assert len(records) == CASES, len(records)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--answer-chars", type=int, default=1500, help="the candidate's answer length, in characters")
    args = parser.parse_args()

    server, stop = s3_server.start()
    os.environ.update(s3_server.ENVIRONMENT, AWS_ENDPOINT_URL=server.endpoint)
    import s3fs

    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.log_files import find_logs

    out: dict[str, object] = {"cases": CASES, "repeats": args.repeats}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        eval_path, jsonl = grow(real_run(root, args.answer_chars), root)
        fs = s3fs.S3FileSystem()
        fs.mkdir("bench")
        fs.put(str(eval_path), f"bench/run/{eval_path.name}")
        fs.put(str(jsonl), f"bench/lmeval/cand-model/{SAMPLES}")
        for name, local, url in (("inspect .eval", eval_path, f"s3://bench/run/{eval_path.name}"),
                                 ("lm-eval samples", jsonl, f"s3://bench/lmeval/cand-model/{SAMPLES}")):
            timed(read_case_records, str(local))
            timed(read_case_records, url)  # warm-up: imports, the first client
            here, warm, cold = [], [], []
            for _ in range(args.repeats):
                here.append(timed(read_case_records, str(local)))
                warm.append(timed(read_case_records, url))  # the process's S3 client made already (a command's second run)
                s3_server.clear_client_caches()
                cold.append(timed(read_case_records, url))  # a new client: its first request pays for the session
            local_s, warm_s, cold_s = (statistics.median(t) for t in (here, warm, cold))
            size = local.stat().st_size
            print(f"read {CASES} cases, {name} ({size / 1e6:.1f} MB): local {local_s:.3f} s; s3 {warm_s:.3f} s "
                  f"(ratio {warm_s / local_s:.2f}), with a new S3 client {cold_s:.3f} s (ratio {cold_s / local_s:.2f}); "
                  f"medians of {args.repeats}")
            out[name] = {"bytes": size, "local_s": round(local_s, 4), "s3_s": round(warm_s, 4), "s3_new_client_s": round(cold_s, 4),
                         "ratio": round(warm_s / local_s, 3), "ratio_new_client": round(cold_s / local_s, 3)}

        # The whole command, as a user runs it: a new process (imports, the S3 client) per call.
        command = [sys.executable, "-m", "clinconsensus_tasks.cli", "summarize", "--json"]
        cli_local, cli_s3 = [], []
        for _ in range(args.repeats):
            for target, times in ((str(jsonl), cli_local), (f"s3://bench/lmeval/cand-model/{SAMPLES}", cli_s3)):
                start = time.perf_counter()
                subprocess.run([*command, target], check=True, stdout=subprocess.DEVNULL)
                times.append(time.perf_counter() - start)
        local_s, remote_s = statistics.median(cli_local), statistics.median(cli_s3)
        print(f"clinconsensus-eval summarize --json on the lm-eval file, a new process each: local {local_s:.2f} s, "
              f"s3 {remote_s:.2f} s (ratio {remote_s / local_s:.2f}); medians of {args.repeats}")
        out["summarize_command"] = {"local_s": round(local_s, 3), "s3_s": round(remote_s, 3), "ratio": round(remote_s / local_s, 3)}

        keys = {f"bench/many/model-{i:04d}/{SAMPLES}": b"{}" for i in range(1000)}
        keys.update({f"bench/notes/notes-{i:02d}.txt": b"" for i in range(20)})  # beside the prefix, not under it
        fs.pipe(keys)
        s3_server.clear_client_caches()
        server.reset()
        start = time.perf_counter()
        found = find_logs(["s3://bench/many"])
        elapsed = time.perf_counter() - start
        seen = server.seen()
        assert len(found) == 1000, len(found)
        print(f"find 1,000 log objects under one prefix: {len(seen)} request(s) "
              f"({len(s3_server.listings(seen))} ListObjectsV2 page(s)), {elapsed:.3f} s")
        out["find_1000"] = {"requests": len(seen), "listings": len(s3_server.listings(seen)), "seconds": round(elapsed, 4)}
    stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
