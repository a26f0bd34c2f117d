"""Finding runs' log files, for every command that reads runs (of either benchmark).

Why one module: the report, ``compare-models`` and ``robustness`` each searched folders for
Inspect logs and lm-eval output with their own rules, so a file one of them found another missed.
What a log file is, and which files make one run, is decided here; reading a file's cases or
items is the benchmark's reader (``clinconsensus.logs``, ``climedbench.logs``).

The files: Inspect logs (``.eval``, or ``.json`` named ``<timestamp>_...`` as Inspect names them;
a ``.json`` named on the command line is taken as an Inspect log whatever its name), lm-eval
``samples_<task>_<timestamp>.jsonl`` (``--log_samples``) and ``results_<timestamp>.json``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from clinconsensus_tasks.errors import ClinConsensusError

CLINCONSENSUS, CLIMEDBENCH = "clinconsensus", "climedbench"
BENCHMARKS = (CLINCONSENSUS, CLIMEDBENCH)
LMEVAL_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d.-]+)\.jsonl$")
INSPECT_JSON = re.compile(r"^\d{4}-\d{2}-\d{2}T")


class SeveralRuns(ClinConsensusError):
    """A folder given as one run holds the logs of several runs."""


def is_lmeval_samples(path: Path, benchmark: str | None = None) -> bool:
    """An lm-eval samples file (of ``benchmark``'s tasks, when given)."""
    return path.suffix == ".jsonl" and path.name.startswith(f"samples_{benchmark or ''}")


def is_lmeval_results(path: Path) -> bool:
    return path.suffix == ".json" and path.name.startswith("results_")


def is_inspect_log(path: Path, named: bool = False) -> bool:
    """An Inspect log: ``.eval``, or ``.json`` named as Inspect names logs (any ``.json`` that is
    not an lm-eval results file when the user ``named`` it)."""
    if path.suffix == ".eval":
        return True
    return path.suffix == ".json" and not is_lmeval_results(path) and (named or bool(INSPECT_JSON.match(path.name)))


def is_log(path: Path) -> bool:
    """A file of a run of either benchmark, in either framework (what a folder search keeps)."""
    return (not path.name.startswith(".")) and (
        is_inspect_log(path) or is_lmeval_results(path) or any(is_lmeval_samples(path, b) for b in BENCHMARKS))


def lmeval_task(path: Path) -> str:
    """The task a samples file holds (``samples_climedbench_sso_<time>.jsonl`` -> ``climedbench_sso``)."""
    match = LMEVAL_SAMPLES.match(path.name)
    return match.group("task") if match else path.stem.removeprefix("samples_")


def lmeval_run_key(path: Path) -> tuple[Path, str]:
    """Samples files of one lm-eval call share their folder and timestamp."""
    match = LMEVAL_SAMPLES.match(path.name)
    return path.parent, match.group("stamp") if match else path.name


def find_logs(paths: Sequence[str | Path]) -> list[Path]:
    """Files named, and in folders the log files they hold (recursively, sorted); anything else in
    a folder is left alone. A folder without any is an error, as is a path that does not exist."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and is_log(p))
            if not found:
                raise FileNotFoundError(f"no Inspect logs or lm-eval samples/results files in the folder {path}")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"no such log file or folder: {path}")
    return out


def inspect_task(path: Path) -> str:
    """The task name an Inspect log records, without the package (``clinconsensus``)."""
    from inspect_ai.log import read_eval_log

    return read_eval_log(str(path), header_only=True).eval.task.rsplit("/", 1)[-1]


def benchmark_of(path: Path) -> str:
    """``clinconsensus`` or ``climedbench``, from the file's name or the task its log records."""
    task = lmeval_task(path) if path.suffix == ".jsonl" else inspect_task(path)
    for benchmark in BENCHMARKS:
        if task.startswith(benchmark):
            return benchmark
    raise ClinConsensusError(f"{path}: task {task!r} is neither ClinConsensus nor CliMedBench")


def run_files(path: str | Path) -> list[Path]:
    """The log file(s) of ONE run: the file itself, or the one Inspect log or the lm-eval samples
    files of one call in a folder (an lm-eval CliMedBench run writes one file per scenario).
    :class:`SeveralRuns` when the folder holds more than one run."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no such log file or folder: {path}")
    logs = find_logs([path]) if any(p.is_file() and is_log(p) for p in path.rglob("*")) else []
    inspect_logs = [p for p in logs if is_inspect_log(p)]
    samples = [p for p in logs if p.suffix == ".jsonl"]
    if not inspect_logs and not samples:
        raise FileNotFoundError(f"{path}: no Inspect log (.eval/.json) and no lm-eval samples_clinconsensus*/samples_climedbench_*.jsonl inside")
    if (inspect_logs and samples) or len(inspect_logs) > 1:
        raise SeveralRuns(f"{path}: holds several runs ({', '.join(map(str, [*inspect_logs, *samples][:6]))}); name the log file of one run")
    if inspect_logs:
        return inspect_logs
    tasks = [lmeval_task(p) for p in samples]
    clin_tasks = {t for t in tasks if t.startswith(CLINCONSENSUS)}
    if len(set(tasks)) < len(tasks) or len({t.split("_")[0] for t in tasks}) > 1 or len(clin_tasks) > 1:
        raise SeveralRuns(f"{path}: holds samples files of several runs ({', '.join(map(str, samples[:6]))}); name the samples file of one run")
    return samples
