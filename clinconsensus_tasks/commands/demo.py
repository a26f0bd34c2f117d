"""``clinconsensus-eval demo``: the whole job end to end on this machine, with no endpoint.

Why this exists: a first run should show what the plugin does before the user has a model server
and a judge at hand. The demo starts the project's deterministic stand-in server
(:mod:`clinconsensus_tasks.stand_in`) on a free port of 127.0.0.1, where it plays both
the model under test and the judge; runs ClinConsensus and CliMedBench on the bundled synthetic
samples, asked for by name (``data=sample``, ``data_dir=sample``: CliMedBench's data is not public,
and without a data folder it refuses to run), through every installed framework (Inspect, lm-eval), with the frameworks' own machinery
(Inspect's ``eval``, lm-eval's ``simple_evaluate`` and ``EvaluationTracker``: the same log files
their command lines write); writes the HTML and Markdown report; prints where everything is and
the same commands for a real model and judge; and stops the server.

CliMedBench's WTD scenario is scored by embedding similarity, which needs a sentence-transformers
model: without one (``--similarity-model``, ``CLIMEDBENCH_SIMILARITY_MODEL``) the demo leaves WTD
out and says why. The numbers are the stand-in's and mean nothing about any real model.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Iterator

from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.scorers.clinconsensus.metric_table import format_value, headline_names
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY

FRAMEWORKS = {"inspect": "inspect_ai", "lmeval": "lm_eval"}
STAND_IN_MODEL = "demo-model"
STAND_IN_JUDGE = "demo-judge"
# The stand-in server recognises the project's own judge prompt only. Where ClinConsensus offers a
# choice of judge template, the demo asks for that one: here, and only here.
JUDGE_PROMPT = "project"
INSPECT_PROVIDER = "demo"  # openai-api/demo/<model> reads DEMO_BASE_URL and DEMO_API_KEY
SAMPLE_DATA = "sample"  # CliMedBench's data setting for its bundled synthetic sample


@dataclass
class DemoPlan:
    """What the demo will run: frameworks, CliMedBench scenarios, the WTD model, and why WTD is out."""

    frameworks: list[str]
    scenarios: list[str]
    similarity_model: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def lmeval_climedbench_tasks(self) -> list[str]:
        if len(self.scenarios) == len(SCENARIOS):
            return ["climedbench"]
        return [SCENARIOS[code].task_name for code in self.scenarios]


def installed_frameworks() -> list[str]:
    return [name for name, module in FRAMEWORKS.items() if find_spec(module) is not None]


def plan_demo(frameworks: list[str] | None, similarity_model: str | None) -> DemoPlan:
    """Choose what to run; checks the WTD similarity model now (with the hub switched off)."""
    from clinconsensus_tasks.climedbench.similarity import ENV_SIMILARITY_MODEL, SimilarityModelUnavailable, check_model

    available = installed_frameworks()
    chosen = frameworks or available
    missing = [f for f in chosen if f not in available]
    if missing or not chosen:
        raise ConfigurationError(
            f"framework(s) not installed: {', '.join(missing) or 'inspect, lmeval'}; "
            "pip install 'clinconsensus-tasks[inspect,lmeval]' (or only the one you use)"
        )
    name = similarity_model or os.environ.get(ENV_SIMILARITY_MODEL)
    codes = list(SCENARIOS)
    notes = []
    if not name:
        codes = [c for c in codes if SCENARIOS[c].kind != SIMILARITY]
        notes.append("CliMedBench WTD left out: it is scored by embedding similarity and no similarity model was given "
                     "(demo --similarity-model DIR, a sentence-transformers model folder; needs the [similarity] extra).")
    else:
        with _environment({"HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE") or "1"}):
            try:
                name = check_model(name)
            except SimilarityModelUnavailable as exc:
                codes = [c for c in codes if SCENARIOS[c].kind != SIMILARITY]
                notes.append(f"CliMedBench WTD left out: similarity model {exc.model!r} cannot be used: {exc.reason}.")
                name = None
    return DemoPlan(chosen, codes, name, notes)


@contextlib.contextmanager
def _environment(updates: dict[str, str]) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore the previous values."""
    saved = {key: os.environ.get(key) for key in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def demo_environment(base_url: str, output: Path, plan: DemoPlan) -> dict[str, str]:
    """Everything both frameworks read from the environment, pointed at the stand-in and the samples."""
    return {
        f"{INSPECT_PROVIDER.upper()}_BASE_URL": base_url,
        f"{INSPECT_PROVIDER.upper()}_API_KEY": "stand-in-key",
        "CLINCONSENSUS_DATA": "sample",
        "CLINCONSENSUS_JUDGE_BASE_URL": base_url,
        "CLINCONSENSUS_JUDGE_MODEL": STAND_IN_JUDGE,
        "CLINCONSENSUS_JUDGE_API_KEY": "stand-in-key",
        "CLINCONSENSUS_JUDGE_MODE": "per_criterion",
        "CLINCONSENSUS_JUDGE_PROMPT": JUDGE_PROMPT,
        "CLINCONSENSUS_CACHE_DIR": str(output / "judge-cache"),
        "CLIMEDBENCH_DATA_DIR": SAMPLE_DATA,  # the bundled sample, asked for by name (unset, a run refuses)
        "CLIMEDBENCH_SIMILARITY_MODEL": plan.similarity_model or "",
        "INSPECT_CACHE_DIR": str(output / "inspect-cache"),
        "HF_HUB_OFFLINE": "1",  # the demo needs nothing from the hub: never wait for it
        "HF_DATASETS_OFFLINE": "1",
    }


def clinconsensus_task_args() -> dict[str, Any]:
    """``-T`` arguments of the Inspect ClinConsensus task for the stand-in judge."""
    return {"data": "sample", "judge_prompt": JUDGE_PROMPT}


def climedbench_task_args(plan: DemoPlan) -> dict[str, Any]:
    """``-T`` arguments of the Inspect CliMedBench task: the bundled sample, by name (its data is not public)."""
    return {"data_dir": SAMPLE_DATA, "scenarios": ",".join(plan.scenarios), "similarity_model": plan.similarity_model}


def run_inspect(plan: DemoPlan, log_dir: Path) -> list[Path]:
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    model = f"openai-api/{INSPECT_PROVIDER}/{STAND_IN_MODEL}"
    grader = f"openai-api/{INSPECT_PROVIDER}/{STAND_IN_JUDGE}"
    tasks = [clinconsensus(**clinconsensus_task_args()),
             climedbench(**climedbench_task_args(plan))]
    logs = inspect_eval(tasks, model=model, model_roles={"grader": grader}, log_dir=str(log_dir), display="none")
    failed = [log for log in logs if log.status != "success"]
    if failed:
        raise RuntimeError(f"Inspect run failed: {failed[0].error.message if failed[0].error else failed[0].status} (log {failed[0].location})")
    return [Path(log.location) for log in logs]


def run_lmeval(plan: DemoPlan, base_url: str, output_path: Path) -> list[Path]:
    from lm_eval.loggers import EvaluationTracker

    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    tracker = EvaluationTracker(output_path=str(output_path))
    results = simple_evaluate(
        tasks=["clinconsensus", *plan.lmeval_climedbench_tasks],
        model="local-chat-completions",
        model_args=f"model={STAND_IN_MODEL},base_url={base_url}/chat/completions,num_concurrent=8",
        apply_chat_template=True,
        log_samples=True,
        evaluation_tracker=tracker,
    )
    samples = results.pop("samples")
    tracker.save_results_aggregated(results=results, samples=samples)
    for task_name in results["configs"]:
        tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
    return sorted(output_path.rglob("samples_*.jsonl")) + sorted(output_path.rglob("results_*.json"))


def headline_rows(report_logs: list[Path]) -> list[tuple[str, dict[str, float], float | None]]:
    """Per framework: ClinConsensus headline metrics and the CliMedBench overall score, read back
    from the logs by the report's readers (the scoring core), so they are what the report shows."""
    from clinconsensus_tasks.report.runs import read_runs
    from clinconsensus_tasks.scorers.climedbench.scenarios import summarize as summarize_climedbench

    runs = read_runs(report_logs)
    rows = []
    for framework in ("inspect", "lm-eval"):
        clin = [r for r in runs.clin if r.meta.get("framework") == framework]
        med_rows = [row for r in runs.med if r.meta.get("framework") == framework for row in r.rows]
        if clin or med_rows:
            rows.append((framework, clin[0].summary() if clin else {}, summarize_climedbench(med_rows)["score"] if med_rows else None))
    return rows


def real_model_commands() -> str:
    """The same runs against a real model and judge: what to type instead of the demo. A raw
    string: the shell's line continuations (a backslash at the end of a line) must reach the user."""
    return r"""# The model under test and the judge: any OpenAI-compatible endpoint (an API, or `vllm serve ...`);
# Inspect's openai-api/model/NAME reads MODEL_BASE_URL and MODEL_API_KEY. WTD needs a similarity model.
export MODEL_BASE_URL=http://127.0.0.1:8000/v1 MODEL_API_KEY=EMPTY OPENAI_API_KEY=sk-...
# 1. Check the endpoints on one case first, in a folder of its own (a --limit run beside the release
#    run fails the release gate): the judge gets a test request before anything is generated.
inspect eval clinconsensus_tasks/clinconsensus -T data=sample --limit 1 --log-dir logs-smoke \
  --model openai-api/model/MY-MODEL --model-role grader=openai/gpt-4.1
# 2. The full runs (without -T data=sample: the 900 public cases from the hub, pinned at this commit;
#    or -T data=FILE). CliMedBench's data is not public (its authors give it on request): /data/climedbench is your copy.
export CLINCONSENSUS_DATA_REVISION=$(python -c "from huggingface_hub import HfApi; print(HfApi().dataset_info('skylenage/ClinConsensus').sha)")
inspect eval clinconsensus_tasks/clinconsensus --model openai-api/model/MY-MODEL --model-role grader=openai/gpt-4.1
inspect eval clinconsensus_tasks/climedbench -T data_dir=/data/climedbench -T similarity_model=/models/simcse \
  --model openai-api/model/MY-MODEL
export CLINCONSENSUS_JUDGE_BASE_URL=https://api.openai.com/v1 CLINCONSENSUS_JUDGE_MODEL=gpt-4.1 \
  CLINCONSENSUS_JUDGE_API_KEY=sk-... CLIMEDBENCH_DATA_DIR=/data/climedbench CLIMEDBENCH_SIMILARITY_MODEL=/models/simcse
lm_eval --model local-chat-completions \
  --model_args model=MY-MODEL,base_url=http://127.0.0.1:8000/v1/chat/completions,num_concurrent=8 \
  --tasks clinconsensus,climedbench --apply_chat_template --log_samples --output_path results/   # first: --limit 1 --output_path results-smoke/
# 3. The release gate (docs/release-checklist.md), then the report.
clinconsensus-eval summarize --strict logs/ results/
clinconsensus-eval report logs/ results/ --output report.html"""


def run_demo(output: Path, frameworks: list[str] | None = None, similarity_model: str | None = None, resamples: int = 1000) -> dict[str, Any]:
    """Run the demo into ``output``; returns the paths written and the headline numbers."""
    from clinconsensus_tasks.stand_in import FakeOpenAIServer
    from clinconsensus_tasks.report.html_report import build_report

    started = time.monotonic()
    output.mkdir(parents=True, exist_ok=True)
    plan = plan_demo(frameworks, similarity_model)
    for note in plan.notes:
        print(f"[demo] {note}", flush=True)
    logs: list[Path] = []
    calls: Counter[str] = Counter()
    with FakeOpenAIServer() as server:
        print(f"[demo] stand-in server for the model and the judge on {server.base_url}", flush=True)
        with _environment(demo_environment(server.base_url, output, plan)):
            if "inspect" in plan.frameworks:
                print(f"[demo] Inspect: ClinConsensus (12 sample cases x 30 criteria) and CliMedBench ({len(plan.scenarios)} scenarios) ...", flush=True)
                logs += run_inspect(plan, output / "inspect-logs")
            if "lmeval" in plan.frameworks:
                # Each framework meets the stand-in as it was at the start: the stand-in, like a
                # provider, remembers prompt prefixes (cached tokens) and answers a repeated
                # request in another form (other completion tokens), which the second framework
                # would otherwise meet and the first not.
                calls.update(server.stats()["calls"])
                server.reset()
                print("[demo] lm-eval: the same tasks ...", flush=True)
                logs += run_lmeval(plan, server.base_url, output / "lmeval-output")
        calls.update(server.stats()["calls"])
    print("[demo] stand-in server stopped", flush=True)
    report = build_report(logs, output / "report.html", resamples=resamples, title="clinconsensus-eval demo (stand-in model and judge)")
    return {"output": str(output), "plan": plan, "logs": [str(p) for p in logs], "report": report,
            "headline": headline_rows(logs), "server_calls": calls, "seconds": time.monotonic() - started}


def print_summary(result: dict[str, Any]) -> None:
    out, plan = Path(result["output"]), result["plan"]
    print(f"\nDemo finished in {result['seconds']:.0f} s; the stand-in answered {sum(result['server_calls'].values())} requests.")
    print(f"Everything is in {out}/:")
    if "inspect" in plan.frameworks:
        print(f"  Inspect logs     {out / 'inspect-logs'}/   (browse: inspect view --log-dir {out / 'inspect-logs'})")
    if "lmeval" in plan.frameworks:
        print(f"  lm-eval output   {out / 'lmeval-output'}/   (results_*.json, samples_*.jsonl)")
    print(f"  report           {result['report']['html']} and {result['report']['markdown']}")
    print("\nHeadline numbers (the same answers in both frameworks give the same numbers; they are the stand-in's, not a model's):")
    names = headline_names()
    print(f"  {'framework':<10}" + "".join(f"{n:>{len(n) + 2}}" for n in names) + "   CliMedBench score")
    for framework, clin, med in result["headline"]:
        cells = "".join(f"{format_value(n, clin.get(n)):>{len(n) + 2}}" for n in names)
        print(f"  {framework:<10}{cells}   {format_value('score', med)}")
    for note in plan.notes:
        print(f"Note: {note}")
    print("\nTo evaluate a real model with a real judge, the same runs with your endpoints:\n")
    print(real_model_commands())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", default="clinconsensus-demo", help="folder for the logs, the lm-eval output and the report")
    parser.add_argument("--frameworks", type=lambda s: [f.strip() for f in s.split(",") if f.strip()], default=None,
                        help="comma-separated: inspect, lmeval (default: every one installed)")
    parser.add_argument("--similarity-model", default=None,
                        help="sentence-transformers model folder for CliMedBench WTD "
                             "(default: $CLIMEDBENCH_SIMILARITY_MODEL; without one WTD is left out)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the report's intervals")


def main(args: argparse.Namespace) -> int:
    print_summary(run_demo(Path(args.output), args.frameworks, args.similarity_model, args.resamples))
    return 0
