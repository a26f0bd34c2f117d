"""What reading a release campaign costs: summarize, the release gate, the report and compare-models, each as a whole process.

Issue 47. A release campaign holds K runs: several models, both frameworks (Inspect ``.eval`` logs;
lm-eval ``results_*.json`` with ``samples_clinconsensus_*.jsonl``), 900 or 2,500 cases each. This
script times the commands that read such a campaign, each as a user runs it (a new process of
``clinconsensus-eval``: interpreter, imports, reading, computing, writing), and gives each one's
cost as a multiple of READING ITS RUNS ONCE: a small Python process that reads every run's records
once with the package's reader (``clinconsensus.logs.read_case_records``) and holds them all. The
goals (issue 47): each command within 1.5x that time and within 2x that memory; the report of
eleven models x 2,500 cases in both frameworks (22 runs) in under a minute on two cores.

* The runs: one real Inspect run and one real lm-eval run (``--output_path``, ``--log_samples``)
  of the bundled 12 cases against the project's stand-in server (answers padded to
  ``--answer-chars``), their samples repeated under new case ids (``SYN-0001-0``, ``SYN-0001-1``
  ...) to N cases, as ``bench/object_storage.py`` grows a run; the Inspect log written with
  Inspect's own writer. Each "model" is that grown run under its own name (Inspect: the header's
  model ``openai-api/cand/model-XX`` and task id, in a folder and file of its own; lm-eval: its
  output folder ``model-XX`` and the results file's ``model_name``), one criterion's verdict
  flipped in a quarter of its cases (a pattern of its own), so no two models' records are alike;
  each header's numbers (the headline metrics, ``n-samples``, the dataset's sample count) are
  recomputed from its records so the gates' checks of them pass. Header breakdown metrics are the
  small run's (no command checks them). The release gate still refuses every run (the bundled
  synthetic data, the stand-in judge): that costs nothing, every check reads every record.
  The campaign is cached under ``--cache`` (keyed by the recipe's version and ``--answer-chars``);
  a larger ``--models`` adds runs beside the ones already built.
* The commands (runs; what is named on the command line):
  ``summarize`` one Inspect log, and one lm-eval samples file (1 run);
  ``summarize --strict`` all runs of the campaign (each Inspect log, each lm-eval output folder);
  ``report`` the same runs ``--output DIR/report.html`` (its default 1,000 resamples);
  ``compare-models`` model-00 against model-01 in each framework (2 runs; its default 10,000
  resamples); and ``clinconsensus-eval --help`` as the floor (interpreter and CLI import).
* Read once: the child process above, over the same runs as the command (for Inspect the same
  ``.eval``, for lm-eval its samples file): its wall time and peak RSS; also printed, the seconds
  of the reads alone, the RSS they left (after a garbage collection and ``malloc_trim``, less the
  RSS before them) and the records' own size (a deep ``sys.getsizeof`` of 200 records per run,
  scaled to the run): the peak is the reader's transient, not the records.
* Each figure: wall seconds (median of ``--repeat``) and peak RSS of the process (the largest over
  repeats; GNU time's ``%M``, ``/usr/bin/time``), the command and its read-once process in alternation.

Issue 54 (a leaderboard's campaign): ``--models 2 11 25 50`` gives 4, 22, 50 and 100 runs (``--runs 11`` adds
a campaign of 11: 6 Inspect logs and 5 lm-eval folders), and the
report is measured twice at each size: cold (an empty ``--runs-cache`` folder: every run read) and
warm (the same runs plus one new run, the cache the cold report left: the new run read, the rest
served). Goals: the cold report of 100 runs x 2,500 cases under 2 minutes and 1 GB on two cores; the
warm one under 15 s; time and memory growing at most linearly with the runs. Past 22 runs the
read-once process reads each run and lets it go (holding a hundred runs' records takes about 9 GB):
its time is reading once, its memory is one run's.

Usage:
    .venv/bin/python bench/campaign_read.py
    .venv/bin/python bench/campaign_read.py --cases 2500 --models 2 11 25 50 --commands strict report compare
    .venv/bin/python bench/campaign_read.py --cases 900 2500 --models 2 11 --repeat 1 \\
        --commands summarize strict report compare
The defaults (900 and 2,500 cases, 2 models: 4 runs per campaign) took 9.5 minutes on two cores at
commit 143223f (before issue 47's fixes) and about 7 after its first (each log read once), the
campaign cached; building it the first time adds about 2 minutes. ``--models 2 11`` adds the
campaign commands (strict, report) on 22 runs per size: 22 minutes more at 143223f, and about 5
minutes of building the first time. ``--package-dir`` measures another tree's package against the
same campaign (a before and an after). At ec25fe2, ``--models 2 11`` took 5.5 minutes, the
campaign cached (docs/performance.md has the table).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD = "v1"  # the recipe's version: the cache is keyed by it
STAMP = "2026-01-01T00-00-00.000000"  # lm-eval's file timestamp (one per output folder)
INSPECT_STAMP = "2026-01-01T00-00-00-00-00"
SCORER = "rubric_scorer"
MET = "criteria_met"  # the case's met count in its score's value (scorers.clinconsensus.case_values)
COMMANDS = ("summarize", "strict", "report", "compare")
GOAL_TIME, GOAL_MEMORY, GOAL_REPORT_S = 1.5, 2.0, 60.0
GOAL_COLD_100_S, GOAL_WARM_S, GOAL_MB_100 = 120.0, 15.0, 1024.0  # issue 54: 100 runs x 2,500 cases
HOLD_AT_MOST = 22  # runs the read-once process holds at once; past it, it reads each run and lets it go
TIME = "/usr/bin/time"  # GNU time: the peak RSS of the process it runs

# The read-once process: the package's reader over each run's records file, all held to the end.
READ_ONCE = r"""
import ctypes, gc, json, resource, sys, time
t0 = time.perf_counter()
from clinconsensus_tasks.clinconsensus.logs import read_case_records
t1 = time.perf_counter()
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20
before = rss_mb()
hold = sys.argv[1] == "hold"
held = [read_case_records(p) for p in sys.argv[2:]] if hold else []
if not hold:
    for p in sys.argv[2:]:
        held = [read_case_records(p)]
t2 = time.perf_counter()
gc.collect()
ctypes.CDLL("libc.so.6").malloc_trim(0)  # what the reads freed back to the system
def deep(o, seen):
    if id(o) in seen:
        return 0
    seen.add(id(o))
    n = sys.getsizeof(o)
    if isinstance(o, dict):
        n += sum(deep(k, seen) + deep(v, seen) for k, v in o.items())
    elif isinstance(o, (list, tuple, set, frozenset)):
        n += sum(deep(x, seen) for x in o)
    elif hasattr(o, "__dict__"):
        n += deep(vars(o), seen)
    return n
SAMPLE = 200  # records measured per run, the rest scaled (a campaign's records are alike)
records = sum(deep(r[:SAMPLE], set()) * len(r) / max(1, len(r[:SAMPLE])) for r in held)
print(json.dumps({"cases": sum(map(len, held)), "import_s": t1 - t0, "read_s": t2 - t1, "held_mb": rss_mb() - before,
                  "records_mb": records / 2**20}))
"""


# -- the campaign ------------------------------------------------------------------------------------


def small_runs(cache: Path, answer_chars: int) -> dict[str, str]:
    """A real Inspect run and a real lm-eval run of the bundled 12 cases against the stand-in server; cached."""
    root = cache / f"small-a{answer_chars}"
    done = root / "done.json"
    if done.exists():
        return json.loads(done.read_text())
    shutil.rmtree(root, ignore_errors=True)
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.lmeval_glue import simple_evaluate
    from clinconsensus_tasks.stand_in import FakeOpenAIServer
    from lm_eval.loggers import EvaluationTracker

    saved = dict(os.environ)
    try:
        with FakeOpenAIServer(answer_chars=answer_chars) as server:
            for svc in ("CAND", "JUDGE", "CLINCONSENSUS_JUDGE"):
                os.environ[f"{svc}_BASE_URL"] = server.base_url
                os.environ[f"{svc}_API_KEY"] = "bench-key"
            os.environ.update(INSPECT_CACHE_DIR=str(root / "cache"), CLINCONSENSUS_CACHE_DIR=str(root / "judge-cache"),
                              CLINCONSENSUS_JUDGE_PROMPT="project", CLINCONSENSUS_JUDGE_MODEL="judge-model",
                              CLINCONSENSUS_DATA="sample", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
            log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model",
                               model_roles={"grader": "openai-api/judge/judge-model"}, log_dir=str(root / "inspect"), display="none")[0]
            assert log.status == "success", log.error
            tracker = EvaluationTracker(output_path=str(root / "lmeval"))
            results = simple_evaluate(model="local-chat-completions", apply_chat_template=True, log_samples=True, bootstrap_iters=0,
                                      model_args={"model": "cand-model", "base_url": f"{server.base_url}/chat/completions",
                                                  "num_concurrent": 4}, evaluation_tracker=tracker)
            tracker.save_results_aggregated(results=results, samples=results["samples"])
            tracker.save_results_samples(task_name="clinconsensus", samples=results["samples"]["clinconsensus"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    out = {"inspect": log.location, "results": str(next((root / "lmeval").rglob("results_*.json"))),
           "samples": str(next((root / "lmeval").rglob("samples_clinconsensus_*.jsonl")))}
    done.write_text(json.dumps(out))
    return out


def flips(case: int, model: int, n: int) -> int | None:
    """The criterion whose verdict model ``model`` flips in case ``case`` (a quarter of its cases), or None."""
    return (case * 7 + model) % n if (case + 3 * model) % 4 == 0 else None


def headline(records: list[dict]) -> dict[str, float]:
    """The header's numbers recomputed from the records, as the gates recompute them."""
    from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize
    from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase

    return summarize([GradedCase.from_dict(r).result() for r in records])


def _flip(record: dict, j: int | None) -> int:
    if j is None:
        return 0
    judgment = record["judgments"][j]
    judgment["met"] = not judgment["met"]
    step = 1 if judgment["met"] else -1
    record["met"] = int(record.get("met") or 0) + step
    return step


def build_inspect(small: str, cases: int, models: range, folder: Path) -> list[Path]:
    """The Inspect log of each model, grown to ``cases`` (written unless already there)."""
    paths = [folder / f"model-{m:02d}" / f"{INSPECT_STAMP}_clinconsensus_c{cases}m{m:02d}.eval" for m in models]
    if all(p.exists() for p in paths):
        return paths
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(small)
    base = list(log.samples or [])
    samples = []
    for i in range(cases):
        sample = base[i % len(base)].model_copy(deep=True)
        sample.id = f"{sample.id}-{i // len(base)}"
        score = sample.scores[SCORER]
        score.metadata = {**(score.metadata or {}), "case_id": str(sample.id)}
        samples.append(sample)
    log.samples = samples
    log.results.total_samples = log.results.completed_samples = cases
    log.eval.dataset.samples = cases
    log.eval.dataset.sample_ids = [s.id for s in samples]
    metrics = next(s for s in log.results.scores if s.scorer == SCORER).metrics
    for m, path in zip(models, paths):
        if path.exists():
            continue
        flipped = [(s, flips(i, m, len(s.scores[SCORER].metadata["judgments"]))) for i, s in enumerate(samples)]
        for s, j in flipped:
            step = _flip(s.scores[SCORER].metadata, j)
            if step and isinstance(s.scores[SCORER].value, dict):
                s.scores[SCORER].value[MET] += step
        ours = headline([s.scores[SCORER].metadata for s in samples])
        for name, metric in metrics.items():
            plain = name.removesuffix("(judgments=complete)")  # no failed judgment: the same value
            if plain in ours:
                metric.value = ours[plain]
        log.eval.model = f"openai-api/cand/model-{m:02d}"
        log.eval.task_id = f"c{cases}m{m:02d}"
        log.eval.run_id = log.eval.eval_id = f"bench-c{cases}-m{m:02d}"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.eval")
        write_eval_log(log, str(tmp))
        tmp.rename(path)
        for s, j in flipped:  # back to the grown run, for the next model
            step = _flip(s.scores[SCORER].metadata, j)
            if step and isinstance(s.scores[SCORER].value, dict):
                s.scores[SCORER].value[MET] += step
    return paths


def build_lmeval(small: dict[str, str], cases: int, models: range, folder: Path) -> list[Path]:
    """The lm-eval output folder of each model (results and samples file), grown to ``cases``."""
    dirs = [folder / f"model-{m:02d}" for m in models]
    lines = [json.loads(line) for line in Path(small["samples"]).read_text(encoding="utf-8").splitlines() if line.strip()]
    raw = [json.dumps(line, ensure_ascii=False) for line in lines]
    template = json.loads(Path(small["results"]).read_text(encoding="utf-8"))
    for m, out in zip(models, dirs):
        samples_path, results_path = out / f"samples_clinconsensus_{STAMP}.jsonl", out / f"results_{STAMP}.json"
        if samples_path.exists() and results_path.exists():
            continue
        out.mkdir(parents=True, exist_ok=True)
        records, text = [], []
        for i in range(cases):
            sample = json.loads(raw[i % len(raw)])  # a fresh copy
            case_id = f"{sample['doc']['case_id']}-{i // len(raw)}"
            record = json.loads(sample["filtered_resps"][0])
            record["case_id"] = sample["doc"]["case_id"] = case_id
            _flip(record, flips(i, m, len(record["judgments"])))
            records.append(record)
            sample["doc_id"] = i
            sample["filtered_resps"] = [json.dumps(record, ensure_ascii=False)]
            text.append(json.dumps(sample, ensure_ascii=False) + "\n")
        ours = headline(records)
        results = json.loads(json.dumps(template))
        name = f"model-{m:02d}"
        results.update(model_name=name, model_name_sanitized=name)
        results["config"]["model_args"]["model"] = name
        results["n-samples"]["clinconsensus"] = {"original": cases, "effective": cases}
        task = results["results"]["clinconsensus"]
        task["sample_len"] = cases
        for key in list(task):
            plain = key.split(",", 1)[0].removesuffix("(judgments=complete)")
            if "_stderr" not in key and plain in ours:
                task[key] = ours[plain]
        samples_path.with_suffix(".tmp").write_text("".join(text), encoding="utf-8")
        samples_path.with_suffix(".tmp").rename(samples_path)
        results_path.write_text(json.dumps(results, ensure_ascii=False, indent=2), encoding="utf-8")
    return dirs


def campaign(cache: Path, answer_chars: int, cases: int, models: int) -> dict[str, list[Path]]:
    """Inspect logs, lm-eval output folders and their samples files of ``models`` models at ``cases``
    cases, and one more model's Inspect log (``extra``: the run that joins a campaign)."""
    small = small_runs(cache, answer_chars)
    root = cache / f"{BUILD}-a{answer_chars}" / f"c{cases}"
    inspect = build_inspect(small["inspect"], cases, range(models + 1), root / "inspect")
    lmeval = build_lmeval(small, cases, range(models), root / "lmeval")
    return {"inspect": inspect[:models], "lmeval": lmeval, "samples": [d / f"samples_clinconsensus_{STAMP}.jsonl" for d in lmeval],
            "extra": inspect[models:]}


# -- measuring -----------------------------------------------------------------------------------------


def run(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> dict:
    """One process: wall seconds, its peak RSS (MB) and its output. The peak is GNU time's ``%M``
    (this script's own ``wait4`` would report at least its own size: Linux keeps a child's peak
    across the fork and exec, and this process holds the campaign builder's imports)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r", encoding="utf-8") as peak:
        start = time.perf_counter()
        proc = subprocess.run([TIME, "-f", "%M", "-o", peak.name, *argv], stdout=out, stderr=err, env=env)
        seconds = time.perf_counter() - start
        out.seek(0), err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
        kb = peak.read().strip().splitlines()
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {proc.returncode}:\n{stdout[-2000:]}\n{stderr[-2000:]}")
    return {"seconds": seconds, "peak_mb": int(kb[-1]) / 1024, "rc": proc.returncode, "stdout": stdout, "stderr": stderr}


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        if args.package_dir:  # the package as another tree holds it (the commands and the read-once process alike)
            self.env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(args.package_dir).resolve()), os.environ.get("PYTHONPATH")]))
        exe = Path(sys.executable).with_name("clinconsensus-eval")
        self.cli = [str(exe)] if exe.exists() else [sys.executable, "-m", "clinconsensus_tasks.cli"]
        self.once_cache: dict[tuple[str, ...], dict] = {}
        self.out = Path(args.cache) / "out"
        self.out.mkdir(parents=True, exist_ok=True)

    def read_once(self, files: list[Path]) -> dict:
        key = tuple(map(str, files))
        if key not in self.once_cache:
            mode = "hold" if len(files) <= HOLD_AT_MOST else "stream"
            runs = [run([sys.executable, "-c", READ_ONCE, mode, *key], self.env) for _ in range(self.args.repeat)]
            inner = json.loads(runs[-1]["stdout"].strip().splitlines()[-1])
            self.once_cache[key] = {"seconds": statistics.median(r["seconds"] for r in runs),
                                    "peak_mb": max(r["peak_mb"] for r in runs), **inner}
        return self.once_cache[key]

    def command(self, argv: list[str], ok: tuple[int, ...] = (0,), check=None, before=None) -> dict:
        runs = []
        for _ in range(self.args.repeat):
            if before:  # each repeat from the same state (the report's cache folder)
                before()
            runs.append(run([*self.cli, *argv], self.env, ok))
            if check:
                check(runs[-1])
        return {"seconds": statistics.median(r["seconds"] for r in runs), "peak_mb": max(r["peak_mb"] for r in runs),
                "rc": runs[-1]["rc"]}


def measurements(bench: Bench, cases: int, runs: int, camp: dict[str, list[Path]], first: bool) -> list[dict]:
    """Every command asked for, on this campaign; the single-run commands only on the first model count."""
    wanted = bench.args.commands
    rows = []
    runs_all = [*map(str, camp["inspect"]), *map(str, camp["lmeval"])]
    files_all = [*camp["inspect"], *camp["samples"]]

    def add(name: str, framework: str, argv: list[str], files: list[Path], ok=(0,), check=None, before=None) -> None:
        once = bench.read_once(files)
        got = bench.command(argv, ok, check, before)
        row = {"command": name, "framework": framework, "runs": len(files), "cases": cases, **got,
               "read_once_s": once["seconds"], "read_once_mb": once["peak_mb"], "read_s": once["read_s"], "held_mb": once["held_mb"], "records_mb": once["records_mb"],
               "x_time": got["seconds"] / once["seconds"], "x_memory": got["peak_mb"] / once["peak_mb"]}
        rows.append(row)
        print(f"  {name:<22} {framework:<7} {row['runs']:>3} runs x {cases}: {got['seconds']:7.2f} s {got['peak_mb']:7.0f} MB "
              f"(read once {once['seconds']:.2f} s {once['peak_mb']:.0f} MB)", flush=True)

    def verdicts(result: dict) -> None:  # the gate checked every run (it refuses them: stand-in judge, synthetic data)
        lines = [ln for ln in result["stdout"].splitlines() if ln.startswith(("ok ", "FAIL "))]
        checked = {ln.split(":", 1)[0].split(None, 1)[1] for ln in lines}
        assert len(checked) == len(runs_all), (len(checked), result["stdout"][-1000:])

    def report_check(result: dict) -> None:
        info = json.loads(result["stdout"])
        assert len(info["clinconsensus_runs"]) == len(runs_all) and not info["skipped"], info

    if first and "summarize" in wanted:
        add("summarize", "inspect", ["summarize", str(camp["inspect"][0])], camp["inspect"][:1])
        add("summarize", "lm-eval", ["summarize", str(camp["samples"][0])], camp["samples"][:1])
    if "strict" in wanted:
        add("summarize --strict", "both", ["summarize", "--strict", *runs_all], files_all, ok=(0, 1), check=verdicts)
    if "report" in wanted:
        out = bench.out / f"c{cases}-r{runs}"
        cache, kept = out / "runs-cache", out / "runs-cache-cold"

        def cold_check(result: dict) -> None:
            report_check(result)
            assert json.loads(result["stdout"])["runs_cache"]["served"] == 0  # every run read

        add("report", "both", ["report", *runs_all, "--output", str(out / "report.html"), "--runs-cache", str(cache)], files_all,
            check=cold_check, before=lambda: shutil.rmtree(cache, ignore_errors=True))
        if camp.get("extra"):  # warm: the same runs and one new one, the cache the cold report left
            extra = [str(p) for p in camp["extra"]]
            shutil.rmtree(kept, ignore_errors=True)
            shutil.copytree(cache, kept)

            def restore() -> None:
                shutil.rmtree(cache, ignore_errors=True)
                shutil.copytree(kept, cache)

            def warm_check(result: dict) -> None:
                info = json.loads(result["stdout"])
                assert len(info["clinconsensus_runs"]) == len(runs_all) + len(extra) and not info["skipped"], info
                assert info["runs_cache"]["read"] == len(extra), info["runs_cache"]  # the new run alone read

            add("report (+1 run, warm)", "both", ["report", *runs_all, *extra, "--output", str(out / "warm.html"), "--runs-cache", str(cache)],
                [*files_all, *camp["extra"]], check=warm_check, before=restore)
    if first and "compare" in wanted and len(camp["inspect"]) >= 2 and len(camp["lmeval"]) >= 2:
        add("compare-models", "inspect", ["compare-models", *map(str, camp["inspect"][:2])], camp["inspect"][:2])
        add("compare-models", "lm-eval", ["compare-models", *map(str, camp["lmeval"][:2])], camp["samples"][:2])
    return rows


def growth(rows: list[dict]) -> list[str]:
    """How each command's time and memory grow with cases (same runs) and with runs (same cases)."""
    lines = []
    keys = sorted({(r["command"], r["framework"]) for r in rows}, key=lambda k: [r["command"] for r in rows].index(k[0]))
    for command, framework in keys:
        mine = [r for r in rows if (r["command"], r["framework"]) == (command, framework)]
        for a in mine:
            for b in mine:
                if a["runs"] == b["runs"] and b["cases"] > a["cases"] and b["cases"] == max(r["cases"] for r in mine if r["runs"] == a["runs"]) \
                        and a["cases"] == min(r["cases"] for r in mine if r["runs"] == a["runs"]):
                    lines.append(f"{command} ({framework}), {a['runs']} runs, cases {a['cases']} -> {b['cases']} (x{b['cases'] / a['cases']:.2f}): "
                                 f"time x{b['seconds'] / a['seconds']:.2f} (read once x{b['read_once_s'] / a['read_once_s']:.2f}), "
                                 f"peak MB x{b['peak_mb'] / a['peak_mb']:.2f} (read once x{b['read_once_mb'] / a['read_once_mb']:.2f}); "
                                 f"above the floor: {1000 * (b['seconds'] - a['seconds']) / (b['runs'] * (b['cases'] - a['cases'])):.2f} ms "
                                 f"and {1024 * (b['peak_mb'] - a['peak_mb']) / (b['runs'] * (b['cases'] - a['cases'])):.0f} KB per case-run")
                if a["cases"] == b["cases"] and b["runs"] > a["runs"]:
                    lines.append(f"{command} ({framework}), {a['cases']} cases, runs {a['runs']} -> {b['runs']} (x{b['runs'] / a['runs']:.2f}): "
                                 f"time x{b['seconds'] / a['seconds']:.2f} (read once x{b['read_once_s'] / a['read_once_s']:.2f}), "
                                 f"peak MB x{b['peak_mb'] / a['peak_mb']:.2f} (read once x{b['read_once_mb'] / a['read_once_mb']:.2f})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[900, 2500], help="cases per run")
    parser.add_argument("--models", type=int, nargs="+", default=[2],
                        help="models per campaign (each in both frameworks: 2 x models runs); the single-run commands run at the first")
    parser.add_argument("--runs", type=int, nargs="+", default=[],
                        help="campaigns of this many runs besides --models (an odd count has one Inspect run more than "
                             "lm-eval runs: 11 runs are 6 Inspect logs and 5 lm-eval folders)")
    parser.add_argument("--commands", nargs="+", choices=COMMANDS, default=list(COMMANDS))
    parser.add_argument("--repeat", type=int, default=1, help="processes per figure (median seconds, largest peak RSS)")
    parser.add_argument("--answer-chars", type=int, default=1500, help="the candidate's answer length, in characters")
    parser.add_argument("--cache", default="/tmp/campaign-bench", help="where the campaign is built and kept")
    parser.add_argument("--package-dir", help="measure the package of this tree (put first on the children's PYTHONPATH; e.g. "
                                              "`git archive COMMIT` extracted, with clinconsensus_tasks/scorers linked to its "
                                              "scorers/), not the installed one; the campaign is built by the installed one")
    args = parser.parse_args()
    started = time.perf_counter()
    cache = Path(args.cache)
    bench = Bench(args)

    def git(*cmd: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), *cmd], capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""

    commit, dirty = git("log", "--oneline", "-1"), git("status", "--short")
    print(f"commit {commit[:80]}{' (+ uncommitted changes)' if dirty else ''}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
          + (f"; the package measured is {args.package_dir}'s" if args.package_dir else ""))

    # each campaign as (Inspect runs, lm-eval runs), smallest first
    shapes = sorted({(m, m) for m in args.models} | {((n + 1) // 2, n // 2) for n in args.runs}, key=lambda s: (sum(s), s))
    most = max(i for i, _ in shapes)
    built = time.perf_counter()
    camps = {}
    for cases in args.cases:
        camps[cases] = campaign(cache, args.answer_chars, cases, most)
        camps[cases]["inspect"] = camps[cases]["inspect"] + camps[cases]["extra"]
    built = time.perf_counter() - built
    sizes = {c: sum(p.stat().st_size for p in (*camp["inspect"][:most], *camp["samples"])) / most / 2 / 1e6 for c, camp in camps.items()}
    print(f"campaign ready in {built:.0f} s under {cache}: per run about " +
          ", ".join(f"{c} cases {mb:.1f} MB" for c, mb in sizes.items()))

    floor = bench.command(["--help"])
    print(f"floor: clinconsensus-eval --help {floor['seconds']:.2f} s, {floor['peak_mb']:.0f} MB")
    rows = []
    for n_inspect, n_lmeval in shapes:
        for cases in args.cases:
            label = f"{n_inspect} models" if n_inspect == n_lmeval else f"{n_inspect} Inspect + {n_lmeval} lm-eval"
            print(f"{label} x {cases} cases ({n_inspect + n_lmeval} runs):", flush=True)
            full = camps[cases]
            camp = {"inspect": full["inspect"][:n_inspect], "lmeval": full["lmeval"][:n_lmeval], "samples": full["samples"][:n_lmeval],
                    "extra": [full["inspect"][n_inspect]]}
            rows += measurements(bench, cases, n_inspect + n_lmeval, camp, (n_inspect, n_lmeval) == shapes[0])

    header = "| command | framework | runs | cases per run | seconds | peak MB | x read-once time | x read-once memory | read once: s, peak MB (reads alone s; RSS left, records MB) |"
    print("\n" + header)
    print("|" + "---|" * header.count(" | ") + "---|")
    for r in rows:
        flag_t = "" if r["x_time"] <= GOAL_TIME else " !"
        flag_m = "" if r["x_memory"] <= GOAL_MEMORY else " !"
        print(f"| {r['command']} | {r['framework']} | {r['runs']} | {r['cases']:,} | {r['seconds']:.2f} | {r['peak_mb']:.0f} | "
              f"{r['x_time']:.2f}{flag_t} | {r['x_memory']:.2f}{flag_m} | {r['read_once_s']:.2f}, {r['read_once_mb']:.0f} "
              f"({r['read_s']:.2f}; {r['held_mb']:.0f}, {r['records_mb']:.0f}) |")
    print(f"(! over the goal: {GOAL_TIME}x read-once time, {GOAL_MEMORY}x read-once memory; floor {floor['seconds']:.2f} s, "
          f"{floor['peak_mb']:.0f} MB; median of {args.repeat})")
    print("\nGrowth:")
    for line in growth(rows):
        print(line)
    big = [r for r in rows if r["command"] == "report" and r["runs"] == 22 and r["cases"] >= 2500]  # issue 47's goal
    print("\nGoals:")
    for r in rows:
        if r["command"] == "report" and r["runs"] >= 100 and r["cases"] >= 2500:
            print(f"cold report of {r['runs']} runs x {r['cases']:,} cases: {r['seconds']:.1f} s, {r['peak_mb']:.0f} MB "
                  f"({'under' if r['seconds'] < GOAL_COLD_100_S and r['peak_mb'] < GOAL_MB_100 else 'OVER'} {GOAL_COLD_100_S:.0f} s and "
                  f"{GOAL_MB_100:.0f} MB)")
        if r["command"].startswith("report (+1") and r["cases"] >= 2500:
            print(f"warm report of {r['runs']} runs x {r['cases']:,} cases: {r['seconds']:.1f} s, {r['peak_mb']:.0f} MB "
                  f"({'under' if r['seconds'] < GOAL_WARM_S else 'OVER'} {GOAL_WARM_S:.0f} s)")
    over = [r for r in rows if r["x_time"] > GOAL_TIME or r["x_memory"] > GOAL_MEMORY]
    print(f"within {GOAL_TIME}x time and {GOAL_MEMORY}x memory of reading once: {len(rows) - len(over)} of {len(rows)} rows")
    for r in big:
        print(f"report of {r['runs']} runs x {r['cases']:,} cases: {r['seconds']:.1f} s "
              f"({'under' if r['seconds'] < GOAL_REPORT_S else 'OVER'} {GOAL_REPORT_S:.0f} s on {os.cpu_count()} CPUs)")
    if not big:
        print("report of 22 runs x 2,500 cases: not measured (--models 11 --cases 2500)")
    elapsed = time.perf_counter() - started
    print(f"\nelapsed {elapsed:.0f} s (building {built:.0f} s)")
    keep = ("command", "framework", "runs", "cases", "seconds", "peak_mb", "x_time", "x_memory", "read_once_s", "read_once_mb", "read_s", "held_mb", "records_mb")
    print(json.dumps({"commit": commit, "dirty": bool(dirty), "package_dir": args.package_dir, "cpus": os.cpu_count(), "repeat": args.repeat, "answer_chars": args.answer_chars,
                      "floor": {k: round(v, 3) for k, v in floor.items() if k != "rc"},
                      "rows": [{k: (round(r[k], 3) if isinstance(r[k], float) else r[k]) for k in keep} for r in rows],
                      "report_22x2500_s": round(big[0]["seconds"], 2) if big else None, "elapsed_s": round(elapsed, 1)}))


if __name__ == "__main__":
    main()
