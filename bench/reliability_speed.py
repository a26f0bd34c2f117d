"""How fast ``clinconsensus-eval reliability`` asks a run's judge again, against what its connections allow.

Issue 62: a check of an Inspect run made with ``--max-connections 32`` against a judge that answers
every request in 0.5 s took 113.7 s for 1,800 calls, where 32 connections allow 28.1 s. This script
makes the measurement: it starts the project's stand-in server in this process (its judge answers
every judge request in ``--latency`` seconds; the runs themselves are made at no latency), makes an
Inspect run of the cases (``inspect eval ... -T data=sample --max-connections N``) and an lm-eval run
(``CLINCONSENSUS_JUDGE_CONCURRENCY=N``), then runs ``clinconsensus-eval reliability RUN --output DIR
--repeat 2`` (all four edits; the stand-in's plain answers give Markdown nothing to remove, so three
are asked) on each as its own process, as a user does, and prints per framework:

  calls           the judge calls the check made (the judge check's one request aside)
  ideal           calls x latency / connections: what the connections allow
  judging         first judge request to last reply, as the stand-in saw them, and its ratio to the
                  ideal (issue 62's bar: under 1.2)
  command         the whole command, start to exit, and its ratio: the judging plus a fixed cost
                  (starting Python and the framework, reading the run, the judge check, the figures:
                  about 2.5 s for lm-eval and 5 s for Inspect on the 2-core machine)
  in flight       the most judge requests the stand-in held at once, and the mean over the judging
                  (the ideal keeps every connection busy from start to end)

and, for the floor of this machine and harness, a bare client: the OpenAI SDK on the project's HTTP
transport sending as many requests, ``connections`` at a time, to the same stand-in.

The stand-in's judge is wrapped by a script that sleeps ``--latency`` and records when each request
came and went (the verdicts are its own rule's). Its sockets send with TCP_NODELAY, as servers of
real judges do (uvicorn under vLLM, hosted APIs): Python's ``http.server`` writes a reply's headers
and its body in two sends, and Nagle's algorithm holds the body until the client's delayed ACK,
about 40 ms a call (the bare client: 1.13x the ideal as the stand-in is, 1.04x with TCP_NODELAY).
``--nagle`` leaves the stand-in as it is (issue 62 measured with it).

``--cases N`` (more than the sample's 12) grows the bundled cases to N (new ids, a distinct context
line each) for a bigger check; ``--connections`` sets both frameworks' judge connections;
``--package-dir TREE`` measures another tree's package (put first on the children's PYTHONPATH:
``git archive COMMIT`` extracted, with ``clinconsensus_tasks/scorers`` linked to its ``scorers/``),
for a before and an after; ``--timeline`` prints the requests in flight over each latency-long stretch.

Usage: python bench/reliability_speed.py [--latency 0.5] [--connections 32] [--cases 12] [--frameworks inspect,lmeval,bare]
                                         [--nagle] [--package-dir TREE] [--timeline]
The last line printed is one JSON object {framework: {...}}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BIN = Path(sys.executable).parent


class Timeline:
    """When each judge request came and went (``time.monotonic()``), kept by the stand-in's script."""

    def __init__(self, latency: float):
        self.latency = latency
        self.lock = threading.Lock()
        self.spans: list[tuple[float, float]] = []
        self.now = self.most = 0

    def reply(self, request):
        from clinconsensus_tasks.stand_in.judges import judge_reply

        start = time.monotonic()
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.latency)
            reply = judge_reply(request.model, request.system, request.user, request.attempt, None)
            return (reply.status, reply.content) if reply is not None else "the judge reads no verdict request here"
        finally:
            with self.lock:
                self.now -= 1
                self.spans.append((start, time.monotonic()))

    def reset(self, latency: float) -> None:
        with self.lock:
            self.spans, self.most, self.latency = [], 0, latency

    def figures(self) -> dict:
        with self.lock:
            spans = list(self.spans)
        if not spans:
            return {"span_s": 0.0, "max_in_flight": 0, "mean_in_flight": 0.0, "in_flight_by_bin": []}
        first, last = min(s for s, _ in spans), max(e for _, e in spans)
        busy = sum(e - s for s, e in spans)
        return {"span_s": last - first, "max_in_flight": self.most, "mean_in_flight": busy / max(last - first, 1e-9),
                "in_flight_by_bin": self.by_bin(spans, first, last)}

    def by_bin(self, spans: list[tuple[float, float]], first: float, last: float) -> list[float]:
        """The mean number of requests in flight in each ``latency``-long stretch of the span (where
        the connections stood idle)."""
        width = self.latency or 1.0
        bins = [0.0] * (int((last - first) / width) + 1)
        for start, end in spans:
            k = int((start - first) / width)
            while start < end and k < len(bins):
                edge = min(end, first + (k + 1) * width)
                if edge > start:
                    bins[k] += (edge - start) / width
                    start = edge
                k += 1
        return [round(b, 1) for b in bins]


def write_cases(n: int, path: Path) -> None:
    """``n`` cases made from the bundled sample: new ids and a distinct context line each."""
    from clinconsensus_tasks.clinconsensus.dataset import sample_path

    base = [json.loads(line) for line in sample_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    out = []
    for i in range(n):
        case = json.loads(json.dumps(base[i % len(base)], ensure_ascii=False))
        cid = f"SPEED-{i + 1:04d}"
        case["case_id"] = cid
        case["clinical_context"] += f"（门诊流水号 {i + 1:04d}）"
        for j, r in enumerate(case["rubrics"]):
            r["criterion_id"] = f"{cid}-R{j + 1:02d}"
        out.append(json.dumps(case, ensure_ascii=False))
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def run(cmd: list[str], env: dict[str, str], what: str) -> float:
    """Run ``cmd``; its wall seconds. A failure prints its output and stops the bench."""
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}")
    return seconds


def make_run(framework: str, base_url: str, data: str, connections: int, work: Path, env: dict[str, str]) -> str:
    """A run of ``data`` in ``framework`` against the stand-in (no latency); the path the check reads."""
    if framework == "inspect":
        logs = work / "inspect-logs"
        run([str(BIN / "inspect"), "eval", "clinconsensus_tasks/clinconsensus", "-T", f"data={data}", "-T", "judge_prompt=project",
             "--model", "openai-api/cand/cand-model", "--model-role", "grader=openai-api/judge/judge-model",
             "--max-connections", str(connections), "--log-dir", str(logs), "--display", "none"], env, "the Inspect run")
        (log,) = logs.glob("*.eval")
        return str(log)
    include = subprocess.run([str(BIN / "clinconsensus-eval"), "include-path"], env=env, capture_output=True, text=True, check=True).stdout.strip()
    out = work / "lmeval-out"
    run([str(BIN / "lm_eval"), "--model", "local-chat-completions", "--model_args",
         f"model=cand-model,base_url={base_url}/chat/completions,num_concurrent=8", "--tasks", "clinconsensus",
         "--include_path", include, "--apply_chat_template", "--log_samples", "--output_path", str(out)],
        {**env, "CLINCONSENSUS_DATA": data, "CLINCONSENSUS_JUDGE_PROMPT": "project"}, "the lm-eval run")
    return str(next(out.rglob("samples_clinconsensus_*.jsonl")))


def figures(calls: int, seconds: float | None, timeline: Timeline, latency: float, connections: int) -> dict:
    ideal = calls * latency / connections
    seen = timeline.figures()
    out = {"calls": calls, "ideal_s": round(ideal, 2), "judging_s": round(seen["span_s"], 2),
           "judging_ratio": round(seen["span_s"] / ideal, 3) if ideal else None}
    if seconds is not None:
        out.update(command_s=round(seconds, 2), command_ratio=round(seconds / ideal, 3) if ideal else None)
    return {**out, "max_in_flight": seen["max_in_flight"], "mean_in_flight": round(seen["mean_in_flight"], 1), "connections": connections,
            "in_flight_by_bin": seen["in_flight_by_bin"]}


def measure(framework: str, server, timeline: Timeline, data: str, cases: int, latency: float, connections: int, work: Path,
            env: dict[str, str]) -> dict:
    timeline.reset(0.0)
    path = make_run(framework, server.base_url, data, connections, work, env)
    timeline.reset(latency)
    before = server.stats()["calls"].get("judge-model", 0)
    out = work / f"check-{framework}"
    seconds = run([str(BIN / "clinconsensus-eval"), "reliability", path, "--output", str(out), "--repeat", "2", "--cases", str(cases)],
                  env, f"the {framework} check")
    calls = server.stats()["calls"].get("judge-model", 0) - before - 1  # the judge check's one request aside
    return figures(calls, seconds, timeline, latency, connections)


def bare(server, timeline: Timeline, calls: int, latency: float, connections: int, env: dict[str, str]) -> dict:
    """The floor: a bare client (its own process) sending ``calls`` judge requests, ``connections`` at a time."""
    timeline.reset(latency)
    run([sys.executable, __file__, "--bare-client", server.base_url, str(calls), str(connections)], env, "the bare client")
    return figures(calls, None, timeline, latency, connections)


def bare_client(base_url: str, calls: int, connections: int) -> None:
    """The OpenAI SDK on the project's HTTP transport, a semaphore, nothing else: a judge prompt of
    the sample's, ``calls`` times, ``connections`` at a time."""
    import asyncio

    from openai import AsyncOpenAI

    from clinconsensus_tasks.clinconsensus.dataset import load_cases
    from clinconsensus_tasks.judge.protocol import async_http_client
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import per_criterion_messages
    from clinconsensus_tasks.stand_in import candidate_answer

    cases = load_cases("sample").cases
    prompts = [per_criterion_messages(c.question, candidate_answer(c.question), text) for c in cases for _, text in c.rubrics]

    async def send() -> None:
        client = AsyncOpenAI(base_url=base_url, api_key="bench", http_client=async_http_client(), max_retries=0)
        gate = asyncio.Semaphore(connections)

        async def one(i: int) -> None:
            async with gate:
                await client.chat.completions.create(model="judge-model", messages=prompts[i % len(prompts)], temperature=0.0, max_tokens=64)

        await asyncio.gather(*(one(i) for i in range(calls)))
        await client.close()

    asyncio.run(send())


def run_all(args: argparse.Namespace, work: Path, server_class) -> dict:
    """Every framework's run and check (and the bare client) against one stand-in, in ``work``."""
    data = "sample"
    if args.cases != 12:
        data = str(work / "cases.jsonl")
        write_cases(args.cases, Path(data))
    timeline = Timeline(args.latency)
    results: dict = {}
    with server_class() as server:
        server.script("judge-model", timeline.reply)
        env = {**os.environ, "CAND_BASE_URL": server.base_url, "CAND_API_KEY": "bench", "JUDGE_BASE_URL": server.base_url,
               "JUDGE_API_KEY": "bench", "CLINCONSENSUS_JUDGE_BASE_URL": server.base_url, "CLINCONSENSUS_JUDGE_MODEL": "judge-model",
               "CLINCONSENSUS_JUDGE_API_KEY": "bench", "CLINCONSENSUS_JUDGE_CONCURRENCY": str(args.connections),
               "CLINCONSENSUS_CACHE_DIR": str(work / "cache"), "INSPECT_CACHE_DIR": str(work / "inspect-cache"),
               "INSPECT_LOG_DIR": str(work / "inspect-logs")}
        if args.package_dir:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(args.package_dir).resolve()), os.environ.get("PYTHONPATH")]))
        for framework in args.frameworks.split(","):
            if framework == "bare":
                calls = next((r["calls"] for r in results.values()), args.cases * 30 * 5)
                results[framework] = bare(server, timeline, calls, args.latency, args.connections, env)
            else:
                results[framework] = measure(framework, server, timeline, data, args.cases, args.latency, args.connections, work, env)
            print(f"  {framework}: {json.dumps({k: v for k, v in results[framework].items() if k != 'in_flight_by_bin'})}",
                  file=sys.stderr, flush=True)
    return results


def main() -> None:
    if sys.argv[1:2] == ["--bare-client"]:
        bare_client(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    from clinconsensus_tasks.stand_in import FakeOpenAIServer, server as stand_in

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the stand-in judge takes per call during the check")
    parser.add_argument("--connections", type=int, default=32, help="the judge's connections in both frameworks")
    parser.add_argument("--cases", type=int, default=12, help="cases of the runs, all asked again (12: the bundled sample)")
    parser.add_argument("--frameworks", default="inspect,lmeval,bare", help="inspect, lmeval and the bare client (bare), comma-separated")
    parser.add_argument("--nagle", action="store_true", help="leave the stand-in's sockets as they are (about 40 ms more a call)")
    parser.add_argument("--package-dir", help="measure the package of this tree (first on the children's PYTHONPATH), not the installed one")
    parser.add_argument("--timeline", action="store_true", help="also print the requests in flight over each latency-long stretch")
    args = parser.parse_args()

    if not args.nagle:
        stand_in._Handler.disable_nagle_algorithm = True  # TCP_NODELAY on each connection, as real servers send
    with tempfile.TemporaryDirectory(prefix="reliability-speed-") as tmp:
        results = run_all(args, Path(tmp), FakeOpenAIServer)
    print(f"clinconsensus-eval reliability RUN --output DIR --repeat 2 (four edits) of {args.cases} cases x 30 criteria, "
          f"a {args.latency:g} s judge, {args.connections} connections"
          + (", the stand-in's sockets as they are (Nagle)" if args.nagle else "")
          + (f"; the package measured is {args.package_dir}'s" if args.package_dir else ""))
    for framework, r in results.items():
        command = f"; the command {r['command_s']} s, {r['command_ratio']}x" if "command_s" in r else ""
        print(f"  {framework:7} {r['calls']} calls; calls x latency / connections {r['ideal_s']} s; judging {r['judging_s']} s, "
              f"{r['judging_ratio']}x{command}; in flight at most {r['max_in_flight']}, {r['mean_in_flight']} on average")
        if args.timeline:
            print(f"    in flight, each {args.latency:g} s: {' '.join(f'{b:g}' for b in r['in_flight_by_bin'])}")
    for r in results.values():
        r.pop("in_flight_by_bin")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
