"""Judge cost benchmark: calls, characters, prompt-cache share, CPU overhead and concurrency.

What a ClinConsensus run costs is judge calls and judge tokens; what the plugin controls is how many
calls it makes, how much text each carries, how much of each prompt a provider's prefix cache can
serve, how much CPU it adds per call, and whether it keeps the judge's concurrency full. This script
measures all of that for the Inspect path and the lm-eval path, in both judge modes, against the
project's OpenAI-compatible test server running in a separate process (so its CPU is not counted).

Figures, per framework and mode:
  calls_per_case          judge calls per case (a cached re-run is reported as cached_rerun_calls_per_case)
  input_chars_per_case    characters the judge reads per case (all messages)
  output_chars_per_case   characters the judge writes per case
  shared_prefix_share     per_criterion: share of each judge prompt identical across the case's 30 prompts
  cpu_ms_per_call         this process's CPU time per judge call, 0 ms judge
  overhead_vs_bare        that, divided by the same figure for the framework's bare call path
                          (Inspect: a scorer that only awaits the grader's generate per criterion,
                          with the same response-cache setting as the plugin's default;
                          lm-eval: the same OpenAI client issuing the same requests, nothing else).
                          Plugin and bare runs alternate, --repeats times each; the minimum counts,
                          as the run least disturbed by the server process on the other core.
  efficiency_1s           first 50 cases, 1 s judge, concurrency 32: (calls x 1 s / 32) / judging wall time

Usage: python bench/judge_cost.py [--cases 100] [--answer-chars 900]
The last line printed is one JSON object {"inspect": {...}, "lmeval": {...}}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from clinconsensus_tasks.clinconsensus.dataset import load_cases, sample_path
from clinconsensus_tasks.stand_in import candidate_answer
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED, PER_CRITERION, batched_messages, judge_max_tokens, per_criterion_messages

MODES = (PER_CRITERION, BATCHED)


# -- the server, in its own process -------------------------------------------------------------


class Server:
    def __init__(self, answer_chars: int, judge_template: str | None = None):
        cmd = [sys.executable, "-m", "clinconsensus_tasks.stand_in", "--port", "0", "--answer-chars", str(answer_chars)]
        cmd += ["--judge-template", judge_template] if judge_template else []
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.port = int(line.split()[1])
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    def attach(cls, port: int) -> "Server":
        """The stand-in another process started, at ``port`` (a child measuring itself)."""
        server = cls.__new__(cls)
        server.proc, server.port = None, port
        server.base_url = f"http://127.0.0.1:{port}/v1"
        return server

    def _post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(f"{self.base_url}/{path}", data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req) as resp:
            return json.load(resp)

    def reset(self, latency: float = 0.0) -> None:
        self._post("reset", {})
        self._post("config", {"latency": latency})

    def stats(self) -> dict:
        with urllib.request.urlopen(f"{self.base_url}/stats") as resp:
            return json.load(resp)

    def cpu_seconds(self) -> float:
        """CPU the stand-in's process has used (user + system, from /proc): where it nears the
        wall time the stand-in, not the client, set the pace."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# -- synthetic cases ------------------------------------------------------------------------------


def write_cases(n: int, path: Path) -> list[dict]:
    """``n`` cases made from the bundled sample: new ids and a distinct context line each."""
    base = [json.loads(line) for line in sample_path().read_text(encoding="utf-8").splitlines()]
    cases = []
    for i in range(n):
        case = json.loads(json.dumps(base[i % len(base)], ensure_ascii=False))
        cid = f"BENCH-{i + 1:04d}"
        case["case_id"] = cid
        case["clinical_context"] += f"（门诊流水号 {i + 1:04d}）"
        for j, r in enumerate(case["rubrics"]):
            r["criterion_id"] = f"{cid}-R{j + 1:02d}"
        cases.append(case)
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    return cases


def shared_prefix_share(path: Path, answer_chars: int) -> float:
    """Mean over cases of (longest prefix common to all 30 judge prompts) / (mean prompt length)."""
    shares = []
    for case in load_cases(str(path)).cases:
        answer = candidate_answer(case.question, answer_chars)
        prompts = ["\n".join(m["content"] for m in per_criterion_messages(case.question, answer, text)) for _, text in case.rubrics]
        prefix = os.path.commonprefix(prompts)
        shares.append(len(prefix) / (sum(map(len, prompts)) / len(prompts)))
    return sum(shares) / len(shares)


# -- Inspect ------------------------------------------------------------------------------------


def inspect_bare_task(data: str, mode: str):
    """The same dataset and solver, with a scorer that only awaits the grader's generate."""
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset
    from inspect_ai.model import GenerateConfig, get_model
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate

    from clinconsensus_tasks.clinconsensus.inspect_task import case_to_sample
    from clinconsensus_tasks.judge.inspect_calls import to_chat

    config = GenerateConfig(temperature=0.0, max_tokens=judge_max_tokens(mode, 30))

    @scorer(metrics=[mean()])
    def bare_scorer():
        async def score(state, target):
            grader = get_model(role="grader")
            answer = state.output.completion
            rubrics = [(r["criterion_id"], r["criterion"]) for r in state.metadata["rubrics"]]
            if mode == PER_CRITERION:
                prompts = [per_criterion_messages(state.input_text, answer, text) for _, text in rubrics]
            else:
                prompts = [batched_messages(state.input_text, answer, [(str(i + 1), t) for i, (_, t) in enumerate(rubrics)])]
            await asyncio.gather(*(grader.generate(to_chat(p), config=config, cache=True) for p in prompts))
            return Score(value=0)

        return score

    samples = [case_to_sample(c) for c in load_cases(data).cases]
    return Task(dataset=MemoryDataset(samples), solver=generate(), scorer=bare_scorer())


def run_inspect(server: Server, data: str, mode: str, cache_dir: str, bare: bool = False, concurrency: int = 32,
                judge_cache: bool = True, log_realtime: bool | None = None, judge_calls: str = "inspect", max_samples: int = 64) -> dict:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    os.environ["INSPECT_CACHE_DIR"] = cache_dir
    os.environ["CLINCONSENSUS_CACHE_DIR"] = cache_dir  # the verdict cache of judge_calls=direct
    for svc in ("CAND", "JUDGE"):
        os.environ[f"{svc}_BASE_URL"] = server.base_url
        os.environ[f"{svc}_API_KEY"] = "bench"
    task = inspect_bare_task(data, mode) if bare else clinconsensus(data=data, judge_mode=mode, judge_prompt="project", judge_cache=judge_cache,
                                                                      judge_calls=judge_calls)
    grader = get_model("openai-api/judge/judge-model", config=GenerateConfig(max_connections=concurrency), memoize=False)
    cpu, wall = time.process_time(), time.perf_counter()
    log = inspect_eval(
        task,
        model="openai-api/cand/cand-model",
        model_roles={"grader": grader},
        max_connections=concurrency,
        max_samples=max_samples,
        log_dir=tempfile.mkdtemp(prefix="bench-inspect-logs-"),
        display="none",
        log_realtime=log_realtime,
    )[0]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    if log.status != "success":
        raise RuntimeError(f"Inspect run failed: {log.error}")
    return {"cpu": cpu, "wall": wall, **server.stats()}


# -- lm-eval ------------------------------------------------------------------------------------


def run_lmeval(server: Server, data: str, mode: str, cache_dir: str, concurrency: int = 32, judge_prompt: str = "project",
               judge_cache: bool = True) -> dict:
    """A real lm-eval run; CPU and wall time are taken around the plugin's judge filter only."""
    import clinconsensus_tasks.clinconsensus.lmeval_task as glue
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ.update(
        CLINCONSENSUS_DATA=data,
        CLINCONSENSUS_JUDGE_BASE_URL=server.base_url,
        CLINCONSENSUS_JUDGE_MODEL="judge-model",
        CLINCONSENSUS_JUDGE_MODE=mode,
        CLINCONSENSUS_JUDGE_PROMPT=judge_prompt,  # the project's prompt unless told (the stand-in knows it)
        CLINCONSENSUS_JUDGE_CONCURRENCY=str(concurrency),
        CLINCONSENSUS_CACHE_DIR=cache_dir,
        CLINCONSENSUS_JUDGE_CACHE="1" if judge_cache else "0",
    )
    timing = {}
    real_filter = glue.judge_filter

    def timed_filter(resps, docs):
        cpu, wall = time.process_time(), time.perf_counter()
        out = real_filter(resps, docs)
        timing.update(cpu=time.process_time() - cpu, wall=time.perf_counter() - wall)
        return out

    glue.judge_filter = timed_filter  # picked up when the task YAML's !function is resolved
    try:
        simple_evaluate(
            model="local-chat-completions",
            model_args={"model": "cand-model", "base_url": f"{server.base_url}/chat/completions", "num_concurrent": 32},
            apply_chat_template=True,
            bootstrap_iters=0,
            verbosity="ERROR",
        )
    finally:
        glue.judge_filter = real_filter
    return {**timing, **server.stats()}


def run_lmeval_bare(server: Server, data: str, mode: str, concurrency: int = 32) -> dict:
    """The same OpenAI client sending the same judge requests, with nothing of the plugin around it."""
    from openai import AsyncOpenAI

    cases = load_cases(data).cases
    requests = []
    for case in cases:
        answer = candidate_answer(case.question, ANSWER_CHARS)
        if mode == PER_CRITERION:
            requests += [per_criterion_messages(case.question, answer, t) for _, t in case.rubrics]
        else:
            requests.append(batched_messages(case.question, answer, [(str(i + 1), t) for i, (_, t) in enumerate(case.rubrics)]))

    async def send_all():
        client = AsyncOpenAI(base_url=server.base_url, api_key="bench", max_retries=6)
        gate = asyncio.Semaphore(concurrency)

        async def one(messages):
            async with gate:
                r = await client.chat.completions.create(model="judge-model", messages=messages, temperature=0.0,
                                                         max_tokens=judge_max_tokens(mode, 30))
                return r.choices[0].message.content

        await asyncio.gather(*(one(m) for m in requests))
        await client.close()

    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(send_all())
    return {"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, **server.stats()}


# -- main -----------------------------------------------------------------------------------------

ANSWER_CHARS = 900


def measure(framework: str, server: Server, data: str, small: str, n: int, n_small: int, work: Path, repeats: int) -> dict:
    out = {}
    for mode in MODES:
        run = run_inspect if framework == "inspect" else run_lmeval
        plugin_runs, bare_runs = [], []
        for rep in range(repeats):
            # Alternate which goes first, so neither side always runs on a warmer process.
            for which in (("plugin", "bare") if rep % 2 == 0 else ("bare", "plugin")):
                server.reset(0.0)
                if which == "plugin":
                    cache = str(work / f"{framework}-{mode}-cache-{rep}")
                    first = run(server, data, mode, cache)
                    plugin_runs.append(1000 * first["cpu"] / first["judge_calls"])
                elif framework == "inspect":
                    bare = run_inspect(server, data, mode, str(work / f"bare-{mode}-cache-{rep}"), bare=True)
                    bare_runs.append(1000 * bare["cpu"] / bare["judge_calls"])
                else:
                    bare = run_lmeval_bare(server, data, mode)
                    bare_runs.append(1000 * bare["cpu"] / bare["judge_calls"])
        server.reset(0.0)
        again = run(server, data, mode, cache)
        server.reset(1.0)
        slow = run(server, small, mode, str(work / f"{framework}-{mode}-slow-cache"))
        calls = first["judge_calls"]
        cpu_ms, bare_ms = min(plugin_runs), min(bare_runs)
        out[mode] = {
            "calls_per_case": calls / n,
            "cached_rerun_calls_per_case": again["judge_calls"] / n,
            "input_chars_per_case": first["judge_input_chars"] / n,
            "output_chars_per_case": first["judge_output_chars"] / n,
            "cpu_ms_per_call": round(cpu_ms, 3),
            "bare_cpu_ms_per_call": round(bare_ms, 3),
            "cpu_ms_per_call_runs": [round(x, 3) for x in plugin_runs],
            "bare_cpu_ms_per_call_runs": [round(x, 3) for x in bare_runs],
            "overhead_vs_bare": round(cpu_ms / bare_ms, 3),
            "efficiency_1s": round((slow["judge_calls"] * 1.0 / 32) / slow["wall"], 3),
            "judging_wall_s_1s": round(slow["wall"], 2),
        }
        print(f"  {framework:8} {mode:13} done: {json.dumps(out[mode])}", file=sys.stderr, flush=True)
    return out


def main() -> None:
    global ANSWER_CHARS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--efficiency-cases", type=int, default=50)
    parser.add_argument("--answer-chars", type=int, default=900, help="length of the candidate's answers")
    parser.add_argument("--frameworks", default="inspect,lmeval")
    parser.add_argument("--repeats", type=int, default=3, help="plugin/bare CPU runs to take the minimum of")
    args = parser.parse_args()
    ANSWER_CHARS = args.answer_chars

    work = Path(tempfile.mkdtemp(prefix="judge-cost-"))
    data, small = work / "cases.jsonl", work / "cases_small.jsonl"
    write_cases(args.cases, data)
    write_cases(args.efficiency_cases, small)
    server = Server(args.answer_chars)
    results: dict = {}
    try:
        prefix_share = shared_prefix_share(data, args.answer_chars)
        # Warm up imports and provider clients so the first measured run is not charged for them.
        server.reset(0.0)
        warm = work / "warm.jsonl"
        write_cases(2, warm)
        for framework in args.frameworks.split(","):
            (run_inspect if framework == "inspect" else run_lmeval)(server, str(warm), PER_CRITERION, str(work / "warm-cache"))
            results[framework] = measure(framework, server, str(data), str(small), args.cases, args.efficiency_cases, work, args.repeats)
            results[framework][PER_CRITERION]["shared_prefix_share"] = round(prefix_share, 4)
            per, bat = results[framework][PER_CRITERION], results[framework][BATCHED]
            bat["input_chars_vs_per_criterion"] = round(bat["input_chars_per_case"] / per["input_chars_per_case"], 4)
    finally:
        server.stop()

    cols = ["calls_per_case", "cached_rerun_calls_per_case", "input_chars_per_case", "output_chars_per_case",
            "shared_prefix_share", "cpu_ms_per_call", "overhead_vs_bare", "efficiency_1s"]
    print(f"judge cost: {args.cases} cases x 30 criteria, answers of {args.answer_chars} characters, "
          f"efficiency on {args.efficiency_cases} cases with a 1 s judge at concurrency 32")
    print(f"{'framework':10}{'mode':14}" + "".join(f"{c:>30}" for c in cols))
    for framework, modes in results.items():
        for mode, figures in modes.items():
            print(f"{framework:10}{mode:14}" + "".join(f"{figures.get(c, '-'):>30}" for c in cols))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
