"""A physician review, step 1 (export): draw rows from the runs' records, write the sheets and the key.

``review export`` draws a stratified sample of (answer, criterion) rows from the runs' records
(:func:`plan_review`) and writes one sheet per physician and the review key beside them
(:func:`write_review`). Step 2 reads the sheets back (``review_intake``), step 3 compares every
judge with the physicians (``review_score``). The rules (labels, majority, sampling, statistics)
are the core's (``scorers.physician_review``); the sheet format is ``review_sheets``.

A row is an (answer, criterion) pair: runs that hold the same answer to a case (one model's answers
graded by two judges, in two frameworks, re-scored) share its rows, so a physician labels it once
and every judge that graded it is compared. A run of several epochs that gave the same answer twice
keeps each epoch's verdicts as a judge of its own (``judge (epoch 2)``), never one over the other.
A judge that holds no verdict for a criterion (its run lacks the criterion) has no verdict on that
row, which is not a failed judgment. The key (``review_key.json``) maps each row back: the case,
the criterion, the sha256 of each text the sheet showed (after Unicode NFKC and whitespace folding,
so a blank a spreadsheet adds is no edit), every judge's verdict, and for the physicians' estimate
of each run's headline every judge's met count on EVERY case of its run (``census``) and every
case's stratum. It stays in the folder; the sheets carry none of it. Nothing here writes to a run.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.run_records.review_sheets import CELL_LIMIT, fold_text, row_id, shown_text, text_sha256, write_csv, write_xlsx
from clinconsensus_tasks.scorers.clinconsensus.jury import JUROR_PREFIX, is_jury
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, SECOND_ROLE
from clinconsensus_tasks.scorers.physician_review import assign, sample_cases
from clinconsensus_tasks.storage import make_folder, output_location, storage_errors, write_text

KEY_FILE = "review_key.json"
KEY_FORMAT = "clinconsensus-review-key"
KEY_VERSION = 2  # 2: shown texts' sha256 after NFKC and whitespace folding; judges per epoch (1: exact texts, still read)
FORMATS = ("xlsx", "csv")
SLICES = ("subject", "difficulty")


class ReviewError(ClinConsensusError):
    """A review folder or export that cannot be used at all (no key, a key of another format ...)."""


@dataclass(frozen=True)
class ReviewRun:
    """A run to draw rows from: its name (never shown to physicians), where it was read, its records."""

    name: str
    path: str
    framework: str
    records: Sequence[LoggedCase]


def role_title(role: str, jury: bool, epoch: int | None = None) -> str:
    """How a judge role is named in the review's output (with its epoch in a run of several)."""
    if role == HEADLINE_ROLE:
        title = "jury majority" if jury else "judge"
    elif role == SECOND_ROLE:
        title = "second judge"
    elif role.startswith(JUROR_PREFIX):
        title = f"juror {role.removeprefix(JUROR_PREFIX)}"
    else:
        title = role
    return title if epoch is None else f"{title} (epoch {epoch})"


def judge_key(run_index: int, role: str, epoch: int | None = None) -> str:
    """A judge's id in the key: the run's number and the role, and the epoch in a run of several."""
    return f"r{run_index}:{role}" + ("" if epoch is None else f"@e{epoch}")


def stratum(case: LoggedCase) -> tuple[str, str]:
    subject, difficulty = ("|".join(case.graded.slices.get(dim, ())) or "-" for dim in SLICES)
    return subject, difficulty


# -- export ----------------------------------------------------------------------------------------


def plan_review(runs: Sequence[ReviewRun], cases: int, criteria_per_case: int | None, reviewers: int, overlap: float,
                seed: int) -> dict[str, Any]:
    """The review key of a new export (sheets' rows included, under ``sheets``): ``cases`` cases drawn
    per subject x difficulty stratum from every case the runs hold, ``criteria_per_case`` criteria of
    each (``None``: all), every distinct answer of a drawn case, shared among ``reviewers`` physicians
    with ``overlap`` of the cases given to all of them; each sheet shuffled on its own."""
    if cases < 1:
        raise ValueError(f"--cases must be at least 1, got {cases}")
    if criteria_per_case is not None and criteria_per_case < 1:
        raise ValueError(f"--criteria-per-case must be at least 1 (or 'all'), got {criteria_per_case}")
    judges: dict[str, dict[str, str]] = {}
    answers: dict[tuple[str, str], dict[str, Any]] = {}  # (case, answer sha) -> texts, strata, verdicts by judge
    strata: dict[str, tuple[str, str]] = {}
    for r, run in enumerate(runs, start=1):
        jury = any(is_jury(c.graded) for c in run.records)
        several = len({c.graded.epoch for c in run.records}) > 1
        for case in run.records:
            g = case.graded
            strata.setdefault(g.case_id, stratum(case))
            entry = answers.setdefault((g.case_id, text_sha256(case.answer)), {
                "case_id": g.case_id, "epoch": g.epoch, "question": case.question, "answer": case.answer,
                "rubrics": list(case.rubrics), "stratum": stratum(case), "verdicts": {}})
            epoch = g.epoch if several else None
            for role, verdicts in g.roles.items():
                judge_id = judge_key(r, role, epoch)
                judges.setdefault(judge_id, {"run": run.name, "path": run.path, "framework": run.framework, "role": role,
                                             "epoch": epoch, "title": role_title(role, jury, epoch), "judge": verdicts.judge,
                                             "census": {}})
                entry["verdicts"][judge_id] = {j.criterion_id: j.met for j in verdicts.judgments}
                result = g.role_result(role)
                judges[judge_id]["census"][g.case_id] = [result.met, result.judged]  # every case: the physicians' estimate
    if not answers:
        raise ReviewError("the runs hold no graded case to review")
    rng = random.Random(seed)
    answers_of: dict[str, list[tuple[str, str]]] = defaultdict(list)  # case -> its answers' keys, once
    for key in sorted(answers, key=lambda k: k[1]):
        answers_of[key[0]].append(key)
    drawn = sample_cases(strata, cases, seed)
    items: dict[str, dict[str, Any]] = {}
    rows_of_case: dict[str, list[str]] = defaultdict(list)
    for case_id in drawn:
        case_answers = answers_of[case_id]
        rubrics = answers[case_answers[0]]["rubrics"]
        chosen = rubrics if criteria_per_case is None or criteria_per_case >= len(rubrics) else \
            sorted(rng.sample(rubrics, criteria_per_case), key=rubrics.index)
        for key in case_answers:
            entry = answers[key]
            for criterion_id, criterion in chosen:
                item = f"i{len(items) + 1:05d}"
                shown = {"question": shown_text(entry["question"]), "answer": shown_text(entry["answer"]), "criterion": shown_text(criterion)}
                items[item] = {
                    "case_id": case_id, "epoch": entry["epoch"], "criterion_id": criterion_id,
                    **dict(zip(SLICES, entry["stratum"])), "answer_sha256": key[1],
                    "shown_sha256": {name: text_sha256(fold_text(text)) for name, text in shown.items()},
                    "cut": any(len(text) > CELL_LIMIT for text in (entry["question"], entry["answer"], criterion)),
                    "verdicts": {j: v[criterion_id] for j, v in entry["verdicts"].items() if criterion_id in v},
                    "_shown": shown,
                }
                rows_of_case[case_id].append(item)
    assignment = assign({c: len(rows) for c, rows in rows_of_case.items()}, reviewers, overlap, seed)
    export_id = hashlib.sha256(json.dumps([seed, cases, criteria_per_case, reviewers, overlap, sorted(judges),
                                           [(i["case_id"], i["criterion_id"], i["answer_sha256"]) for i in items.values()]],
                                          ensure_ascii=False).encode("utf-8")).hexdigest()[:10]
    sheets: dict[str, list[str]] = {}
    for physician in range(1, reviewers + 1):
        mine = [item for case, rows in rows_of_case.items() if physician in assignment[case] for item in rows]
        random.Random(f"{seed}:{physician}").shuffle(mine)
        sheets[str(physician)] = mine
    rows = {row_id(export_id, int(p), n): item for p, mine in sheets.items() for n, item in enumerate(mine, start=1)}
    return {
        "format": KEY_FORMAT, "version": KEY_VERSION, "export_id": export_id,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "settings": {"cases": cases, "criteria_per_case": criteria_per_case or "all", "reviewers": reviewers, "overlap": overlap,
                     "seed": seed, "strata": " x ".join(SLICES)},
        "drawn_cases": len(drawn), "overlap_cases": sorted(c for c, who in assignment.items() if len(who) > 1 and reviewers > 1),
        "runs": [{"name": run.name, "path": run.path, "framework": run.framework, "cases": len(run.records)} for run in runs],
        "judges": judges, "items": items, "rows": rows, "strata": {case: list(where) for case, where in sorted(strata.items())},
        "physicians": {p: {"rows": len(mine)} for p, mine in sheets.items()},
    }


def write_review(plan: dict[str, Any], folder: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write each physician's sheet (``physician_<n>.xlsx`` / ``.csv``) and the key into ``folder``;
    a folder that already holds a review key is refused (its sheets may be filled)."""
    folder = output_location(folder)  # a local folder, or a URL prefix
    with storage_errors(folder):
        held = (folder / KEY_FILE).exists()
    if held:
        raise ReviewError(f"{folder / KEY_FILE} exists: {folder} already holds a review (its sheets may be filled); export into a new folder")
    make_folder(folder)
    by_physician: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for rid, item in plan["rows"].items():
        by_physician[rid.split("-P")[1].split("-")[0]].append((rid, item))
    written = []
    for physician, rows in sorted(by_physician.items(), key=lambda kv: int(kv[0])):
        table = [{"row_id": rid, **plan["items"][item]["_shown"], "label": "", "comment": ""} for rid, item in rows]
        for fmt in formats:
            path = folder / f"physician_{physician}.{fmt}"
            (write_xlsx if fmt == "xlsx" else write_csv)(path, table)
            written.append(path)
        plan["physicians"][physician]["files"] = [f"physician_{physician}.{fmt}" for fmt in formats]
    key = {**plan, "items": {k: {f: v for f, v in item.items() if not f.startswith("_")} for k, item in plan["items"].items()}}
    write_text(folder / KEY_FILE, json.dumps(key, ensure_ascii=False, indent=1))
    return [*written, folder / KEY_FILE]
