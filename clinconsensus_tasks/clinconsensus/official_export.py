"""Verdicts in the official scorer's input format (``clinconsensus-eval export-official``).

The official repository scores judgements with ``scripts/eval_cacs.py --data FILE
--judgements-dir DIR --threshold K``: every ``<model>_judge.json`` in DIR is one model, a JSON list
with exactly one entry per case of FILE, in FILE's order, each holding ``case_id`` and
``criteria_results`` (objects with ``criteria_met``). Writing our runs in that form lets anyone
check our numbers with the official script. A failed judgment is written as ``criteria_met: null``
(the official script counts it as not met, as we do), so nothing is hidden.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_logs
from clinconsensus_tasks.storage import location, make_folder, output_location, write_text

JUDGE_FILE_SUFFIX = "_judge.json"


def run_name(path: Path) -> str:
    """The model name of a run, for its file name: the Inspect log's model, or for an lm-eval
    samples file the folder lm-eval wrote it in (named after the model)."""
    if path.suffix in (".eval", ".json"):
        from clinconsensus_tasks.log_files import read_inspect_log

        name = read_inspect_log(path, header_only=True).eval.model
    else:
        name = path.parent.name or path.stem
    return re.sub(r"[^\w.-]+", "_", name).strip("_") or path.stem


def official_entries(path: str | Path, epoch: int = 1, case_order: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """One entry per case of ``case_order`` (default: the run's own order) from the run's ``epoch``."""
    records = [r for r in read_case_records(path) if r.graded.epoch == epoch]
    if not records:
        raise DataValidationError([f"{path}: no case records for epoch {epoch}"])
    by_case: dict[str, Any] = {}
    for record in records:
        case_id = record.graded.case_id
        if case_id in by_case:
            raise DataValidationError([f"{record.where}: case_id {case_id!r}: second record for epoch {epoch}"])
        by_case[case_id] = record
    order = list(case_order) if case_order is not None else list(by_case)
    missing = [cid for cid in order if cid not in by_case]
    extra = [cid for cid in by_case if cid not in set(order)]
    problems = []
    if missing:
        problems.append(f"{path}: no verdicts for {len(missing)} case(s) of the data, e.g. {missing[:5]} "
                        "(the official scorer needs exactly one entry per case)")
    if extra:
        problems.append(f"{path}: {len(extra)} case(s) not in the data, e.g. {extra[:5]}")
    if problems:
        raise DataValidationError(problems)
    out = []
    for cid in order:
        out.append({
            "case_id": cid,
            "criteria_results": [
                {"criterion_id": j.criterion_id, "criteria_met": j.met, "explanation": j.explanation or j.error or ""}
                for j in by_case[cid].graded.judgments
            ],
        })
    return out


def export_official(
    paths: Sequence[str | Path], output: str | Path, data: str | None = None, epoch: int = 1, n_criteria: int = 30
) -> list[dict[str, Any]]:
    """Write ``<model>_judge.json`` for each run into ``output``; return what was written.

    With ``data`` (the file to give ``eval_cacs.py --data``), entries follow its case order and
    every one of its cases must have verdicts; without it, the run's own order is kept.
    """
    order = [c.case_id for c in load_cases(data, n_criteria).cases] if data else None
    output = output_location(output)  # a local folder or a URL prefix
    planned: dict[Path, Path] = {}
    for path in map(location, benchmark_logs(paths, CLINCONSENSUS)):
        target = output / f"{run_name(path)}{JUDGE_FILE_SUFFIX}"
        if target in planned:
            raise DataValidationError([f"{path} and {planned[target]} would both be written to {target}: "
                                       "export them to different folders"])
        planned[target] = path
    exports = {target: official_entries(path, epoch, order) for target, path in planned.items()}  # all checked first
    make_folder(output)
    written = []
    for target, entries in exports.items():
        path = planned[target]
        write_text(target, json.dumps(entries, ensure_ascii=False, indent=1) + "\n")
        failed = sum(1 for e in entries for c in e["criteria_results"] if c["criteria_met"] is None)
        written.append({"run": str(path), "file": str(target), "cases": len(entries), "failed_judgments": failed})
    return written
