"""Inspect's CPU per judge call: this plugin's scorer against inspect_evals HealthBench's, on the same calls.

HealthBench (inspect_evals) is the Inspect eval closest to ClinConsensus: one judge call per
rubric criterion, JSON verdicts. Both scorers run here in the same Inspect version, in this
process, against the stand-in server in its own process (0 s judge, so the figure is the client's
work: building requests, the response cache, parsing, records), on the same synthetic cases and
candidate answers, and with the same judge prompt text: HealthBench's grader template, read from
the inspect_evals release named below (downloaded by pip at run time, never copied into the
project), is turned into a template file for this plugin (``judge_prompt=FILE``) with the same
conversation string (``user: ...`` then ``assistant: ...``) and rubric item (``[1] ...``), and
registered with the stand-in, which answers it with fenced JSON verdicts that both scorers read.
HealthBench is given no system message (the stand-in matches a template only without one) and
10 bootstrap samples (its metric's CPU is not a judge call's). Its template's three example
verdicts (a line ``"criteria_met": false``) are written ``"criteria_met": <true or false>`` for
both scorers: this plugin refuses a reply that repeats a line of its prompt (an echo is no
verdict), so with the examples as they are every "not met" reply would be refused and re-asked.

Each run is a process of its own (this file with ``--one``), so imports and start-up are not
counted: its CPU time is taken around ``inspect_ai.eval`` only. Runs alternate, ``--repeats`` times
each; the minimum counts (the run least disturbed by the server on the other core). Printed: judge
calls, CPU ms per judge call for each, and their ratio (plugin / HealthBench; 0.93-0.95 at commit
95f8b8d). ``plugin-direct`` is the plugin with ``-T judge_calls=direct`` (its judge calls through the
project's client, not Inspect's model API), measured beside the default. ``--plugin-python`` runs the plugin's side with another interpreter, for example a
virtual environment holding an earlier commit of the plugin (the stand-in, the data and
HealthBench's side stay this checkout's).

Usage: python bench/healthbench_cpu.py [--cases 50] [--repeats 3] [--concurrency 32] [--inspect-evals 0.28.0] [--scorer PATH]
                                       [--plugin-python PYTHON]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path


def healthbench_scorer_module(version: str, scorer: str | None, work: Path):
    """inspect_evals' ``healthbench/scorer.py`` loaded from its file (the package's ``__init__``s
    import datasets and the hub, which this bench does not need)."""
    if scorer is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", f"inspect-evals=={version}", "-d", str(work)],
                       check=True)
        wheel = next(work.glob("inspect_evals-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extract("inspect_evals/healthbench/scorer.py", work)
        scorer = str(work / "inspect_evals" / "healthbench" / "scorer.py")
    spec = importlib.util.spec_from_file_location("healthbench_scorer", scorer)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE_VERDICT = '"criteria_met": false'


def without_example_verdicts(grader_template: str) -> str:
    return grader_template.replace(EXAMPLE_VERDICT, '"criteria_met": <true or false>')


def template_for_plugin(grader_template: str) -> str:
    """HealthBench's grader template in this plugin's template form, filling to the same text."""
    text = grader_template.replace("{", "{{").replace("}", "}}")
    return (text.replace("<<conversation>>", "user: {user_message}\n\nassistant: {response}")
            .replace("<<rubric_item>>", "[1] {rubric_item}"))


def healthbench_task(data: str, module, grader):
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.solver import generate

    cases = [json.loads(line) for line in Path(data).read_text(encoding="utf-8").splitlines() if line.strip()]
    samples = [Sample(input=f"{c['clinical_context']}\n\n{c['user_request']}", id=c["case_id"],
                      metadata={"rubrics": [{"criterion": r["criterion"], "points": 1, "tags": []} for r in c["rubrics"]]})
               for c in cases]
    return Task(dataset=MemoryDataset(samples), solver=generate(),
                scorer=module.healthbench_scorer(judge_model=grader, judge_system_message=None, bootstrap_samples=10,
                                                 include_subset_scores=False))


def one_run(which: str, base_url: str, data: str, template: str, scorer: str, concurrency: int = 32) -> float:
    """One Inspect run in this process; its CPU seconds around ``inspect_ai.eval``."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    os.environ["INSPECT_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"bench-hb-{which}-cache-")
    for svc in ("CAND", "JUDGE"):
        os.environ[f"{svc}_BASE_URL"], os.environ[f"{svc}_API_KEY"] = base_url, "bench"
    grader = get_model("openai-api/judge/judge-model", config=GenerateConfig(max_connections=concurrency), memoize=False)
    if which.startswith("plugin"):
        from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

        os.environ["CLINCONSENSUS_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"bench-hb-{which}-verdicts-")
        calls = {"judge_calls": "direct"} if which == "plugin-direct" else {}  # the opt-in path, measured beside
        task = clinconsensus(data=data, judge_prompt=template, **calls)
    else:
        module = healthbench_scorer_module("", scorer, Path(tempfile.mkdtemp()))
        module.GRADER_TEMPLATE = without_example_verdicts(module.GRADER_TEMPLATE)  # read by its scorer at each call
        task = healthbench_task(data, module, grader)
    cpu = time.process_time()
    log = inspect_eval(task, model="openai-api/cand/cand-model", model_roles={"grader": grader}, max_connections=concurrency, max_samples=64,
                       log_dir=tempfile.mkdtemp(prefix=f"bench-hb-{which}-logs-"), display="none")[0]
    cpu = time.process_time() - cpu
    if log.status != "success":
        raise RuntimeError(f"{which} run failed: {log.error}")
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--answer-chars", type=int, default=900)
    parser.add_argument("--inspect-evals", default="0.28.0", help="the inspect_evals release whose HealthBench scorer is measured")
    parser.add_argument("--scorer", help="a healthbench/scorer.py already on disk (instead of downloading the release)")
    parser.add_argument("--plugin-python", default=sys.executable, help="the interpreter of the plugin's runs")
    parser.add_argument("--concurrency", type=int, default=32, help="the grader's connections in both runs")
    parser.add_argument("--one", choices=["plugin", "plugin-direct", "healthbench"], help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--template", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps({"cpu_s": one_run(args.one, args.base_url, args.data, args.template, args.scorer, args.concurrency)}))
        return

    from judge_cost import Server, write_cases

    work = Path(tempfile.mkdtemp(prefix="bench-hb-"))
    module = healthbench_scorer_module(args.inspect_evals, args.scorer, work)
    scorer = module.__file__
    assert module.GRADER_TEMPLATE.count(EXAMPLE_VERDICT) == 3, "the HealthBench template changed: check the bench's edit of it"
    template = work / "healthbench_template.txt"
    template.write_text(template_for_plugin(without_example_verdicts(module.GRADER_TEMPLATE)), encoding="utf-8")
    data = work / "cases.jsonl"
    write_cases(args.cases, data)
    server = Server(args.answer_chars, judge_template=str(template))
    runs: dict[str, list[dict]] = {"plugin": [], "plugin-direct": [], "healthbench": []}
    try:
        for _ in range(args.repeats):
            for which in runs:
                server.reset(0.0)
                python = args.plugin_python if which.startswith("plugin") else sys.executable
                done = subprocess.run([python, __file__, "--one", which, "--base-url", server.base_url, "--data", str(data),
                                       "--template", str(template), "--scorer", scorer, "--concurrency", str(args.concurrency)],
                                      capture_output=True, text=True, cwd=Path(__file__).parent)
                if done.returncode != 0:
                    raise RuntimeError(f"{which} run failed:\n{done.stderr[-3000:]}")
                runs[which].append({**json.loads(done.stdout.strip().splitlines()[-1]), "judge_calls": server.stats()["judge_calls"]})
    finally:
        server.stop()
    out = {"cases": args.cases, "repeats": args.repeats, "concurrency": args.concurrency, "inspect_evals": args.scorer or args.inspect_evals,
           "plugin_python": args.plugin_python}
    for which, done in runs.items():
        best = min(done, key=lambda r: r["cpu_s"])
        out[which] = {"judge_calls": best["judge_calls"], "cpu_ms_per_judge_call": round(1000 * best["cpu_s"] / best["judge_calls"], 3),
                      "cpu_s_runs": [round(r["cpu_s"], 2) for r in done]}
    out["plugin_over_healthbench"] = round(out["plugin"]["cpu_ms_per_judge_call"] / out["healthbench"]["cpu_ms_per_judge_call"], 3)
    out["plugin_direct_over_healthbench"] = round(out["plugin-direct"]["cpu_ms_per_judge_call"] / out["healthbench"]["cpu_ms_per_judge_call"], 3)
    print(f"{args.cases} cases x 30 criteria, 0 s judge, {args.concurrency} connections, same prompt text; inspect_evals {out['inspect_evals']}")
    for which in runs:
        print(f"  {which:12s} {out[which]['judge_calls']} judge calls, {out[which]['cpu_ms_per_judge_call']} ms CPU per call "
              f"(runs: {out[which]['cpu_s_runs']} s)")
    print(f"  plugin / HealthBench: {out['plugin_over_healthbench']}; with -T judge_calls=direct: {out['plugin_direct_over_healthbench']}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
