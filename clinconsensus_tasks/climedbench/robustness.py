"""``clinconsensus-eval robustness CLEAN_RUN VARIANT_RUN``: the paired score drop of a variant run.

A run is an Inspect log (``.eval``/``.json``), an lm-eval ``samples_climedbench_*.jsonl`` file, or
a folder holding one run's files (searched recursively, an lm-eval ``--output_path``; the same
rules as every command that reads runs: ``clinconsensus_tasks.log_files.run_files``). Items are paired by
scenario and item id, which the variants keep; the drops and their paired bootstrap intervals come
from :mod:`clinconsensus_tasks.scorers.climedbench.robustness`. Items only one run holds (NOTA's
left-out items, a ``--limit``) are counted, never silently dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clinconsensus_tasks.climedbench.logs import read_item_log
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.log_files import run_files
from clinconsensus_tasks.scorers.climedbench.robustness import paired_drops


def item_scores(path: str | Path) -> dict[tuple[str, str], float]:
    """``(scenario code, item id) -> score`` of one run; a run must hold one model's results once.

    Files are read by the shared reader (:func:`~clinconsensus_tasks.climedbench.logs.read_item_log`);
    an unscored sample is an error, as a drop over fewer items than were asked is not the run's.
    """
    scores: dict[tuple[str, str], float] = {}
    problems = []
    for file in run_files(path):
        log = read_item_log(file)
        problems += [str(entry) for entry in log.unscored]
        for result in log.results:
            if (result.scenario, result.item_id) in scores:
                problems.append(f"{file}: item {result.key}: scored twice in this run (results of several models or runs?)")
            else:
                scores[(result.scenario, result.item_id)] = result.value
    if problems:
        raise DataValidationError(problems)
    return scores


def robustness(clean_run: str, variant_run: str, iterations: int = 2000, seed: int = 0) -> dict[str, Any]:
    """The drop per scenario and overall (clean minus variant) with paired 95% bootstrap intervals."""
    drops, unpaired = paired_drops(item_scores(clean_run), item_scores(variant_run), iterations, seed)
    return {
        "clean_run": str(clean_run),
        "variant_run": str(variant_run),
        "bootstrap": {"iterations": iterations, "seed": seed, "level": 0.95},
        "unpaired": unpaired,
        "drops": [d.__dict__ for d in drops],
    }


def format_robustness(report: dict[str, Any]) -> str:
    lines = [
        f"clean:   {report['clean_run']}",
        f"variant: {report['variant_run']}",
        f"{'scope':<9}{'items':>7}{'clean':>9}{'variant':>9}{'drop':>9}   95% interval (paired bootstrap)",
    ]
    for d in report["drops"]:
        lines.append(f"{d['scope']:<9}{d['items']:>7}{d['clean']:>9.4f}{d['variant']:>9.4f}{d['drop']:>9.4f}   [{d['low']:.4f}, {d['high']:.4f}]")
    u = report["unpaired"]
    lines.append(f"unpaired items: {u['only_clean']} only in the clean run, {u['only_variant']} only in the variant run")
    return "\n".join(lines)
