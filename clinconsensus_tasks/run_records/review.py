"""A physician review of the judges, from the runs' records to agreement figures.

``review export`` draws a stratified sample of (answer, criterion) rows from the runs' records
(:func:`plan_review`) and writes one sheet per physician and the review key beside them
(:func:`write_review`); ``review score``, the report and the release gate read the folder back
(:func:`load_review`) and compare every judge with the physicians (:func:`score_review`,
:func:`run_agreement`). The rules (labels, majority, sampling, statistics) are the core's
(``scorers.physician_review``); the sheet format is ``review_sheets``.

A row is an (answer, criterion) pair: runs that hold the same answer to a case (one model's answers
graded by two judges, in two frameworks, re-scored) share its rows, so a physician labels it once
and every judge that graded it is compared. The key (``review_key.json``) maps each row back: the
case, the criterion, the sha256 of each text the sheet showed, and every judge's verdict. It stays
in the folder; the sheets carry none of it. Nothing here writes to a run.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.run_records.review_sheets import (
    CELL_LIMIT, ROW_ID, TEXT_FIELDS, Sheet, is_sheet_file, read_sheet, row_id, shown_text, text_sha256, write_csv, write_xlsx,
)
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, summarize
from clinconsensus_tasks.scorers.clinconsensus.jury import JUROR_PREFIX, is_jury
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS, mean_names
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, SECOND_ROLE
from clinconsensus_tasks.storage import listing, location, make_folder, open_binary, output_location, remote_child, storage_errors, write_text
from clinconsensus_tasks.scorers.physician_review import (
    CANNOT_TELL, NO_LABEL, RESAMPLES, agreement, assign, rater_agreement, read_label, reference, sample_cases,
)

KEY_FILE = "review_key.json"
KEY_FORMAT = "clinconsensus-review-key"
KEY_VERSION = 1
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


def role_title(role: str, jury: bool) -> str:
    """How a judge role is named in the review's output."""
    if role == HEADLINE_ROLE:
        return "jury majority" if jury else "judge"
    if role == SECOND_ROLE:
        return "second judge"
    if role.startswith(JUROR_PREFIX):
        return f"juror {role.removeprefix(JUROR_PREFIX)}"
    return role


def _stratum(case: LoggedCase) -> tuple[str, str]:
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
        for case in run.records:
            g = case.graded
            strata.setdefault(g.case_id, _stratum(case))
            entry = answers.setdefault((g.case_id, text_sha256(case.answer)), {
                "case_id": g.case_id, "epoch": g.epoch, "question": case.question, "answer": case.answer,
                "rubrics": list(case.rubrics), "stratum": _stratum(case), "verdicts": {}})
            for role, verdicts in g.roles.items():
                judge_id = f"r{r}:{role}"
                judges.setdefault(judge_id, {"run": run.name, "path": run.path, "framework": run.framework, "role": role,
                                             "title": role_title(role, jury), "judge": verdicts.judge})
                entry["verdicts"][judge_id] = {j.criterion_id: j.met for j in verdicts.judgments}
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
                    "shown_sha256": {name: text_sha256(text) for name, text in shown.items()},
                    "cut": any(len(text) > CELL_LIMIT for text in (entry["question"], entry["answer"], criterion)),
                    "verdicts": {j: v.get(criterion_id) for j, v in entry["verdicts"].items()},
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
        "judges": judges, "items": items, "rows": rows,
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


# -- reading the sheets back -------------------------------------------------------------------------


@dataclass
class PhysicianTally:
    """What became of one physician's rows."""

    assigned: int = 0
    labelled: int = 0  # accepted labels (cannot tell included)
    cannot_tell: int = 0
    files: list[str] = field(default_factory=list)  # the sheets read (a physician's unfilled copy beside a filled one is not)
    left_out: Counter = field(default_factory=Counter)  # reason -> rows

    def to_dict(self) -> dict[str, Any]:
        return {"assigned": self.assigned, "labelled": self.labelled, "cannot_tell": self.cannot_tell, "files": self.files,
                "unlabelled": self.assigned - self.labelled, "left_out": dict(self.left_out)}


@dataclass
class Review:
    """A review folder read back: the key, the accepted labels per row, and every problem, named."""

    folder: Path
    key: dict[str, Any]
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # item -> physician -> label
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    physicians: dict[str, PhysicianTally] = field(default_factory=dict)

    @property
    def export_id(self) -> str:
        return str(self.key["export_id"])


def _folder_files(folder: Any) -> list[Any]:
    """Every file in a review folder (a local folder, or a URL prefix: one listing), sorted."""
    if isinstance(folder, Path):
        if not folder.is_dir():
            raise FileNotFoundError(f"no such review folder: {folder}")
        return sorted(p for p in folder.rglob("*") if p.is_file())
    found = listing(folder)
    if not found:
        raise FileNotFoundError(f"no such review folder: {folder} (nothing stored under that prefix)")
    return [remote_child(folder, url) for url in sorted(found)]


def _read_key(folder: Any, files: Sequence[Any]) -> dict[str, Any]:
    path = folder / KEY_FILE
    if str(path) not in {str(f) for f in files}:
        raise ReviewError(f"{folder}: no {KEY_FILE} (the folder `review export` wrote, with the sheets beside it)")
    try:
        with open_binary(path) as handle:
            key = json.loads(handle.read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReviewError(f"{path}: not a review key ({type(exc).__name__}: {exc})") from None
    if not isinstance(key, dict) or key.get("format") != KEY_FORMAT or key.get("version") != KEY_VERSION:
        raise ReviewError(f"{path}: not a review key of version {KEY_VERSION} (field 'format'/'version')")
    return key


@dataclass
class _Returned:
    """One sheet file as checked: its accepted labels and its rows without one."""

    sheet: Sheet
    labels: dict[str, tuple[int, str]] = field(default_factory=dict)  # row id -> (row number, label)
    unlabelled: list[tuple[int, str, str]] = field(default_factory=list)  # (row number, row id, why)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (message, reason): rows left out

    def leave_out(self, message: str, reason: str) -> None:
        self.problems.append((message, reason))


def load_review(folder: str | Path) -> Review:
    """Every sheet in ``folder`` read against its key. A row is kept when its id is this export's and
    its physician's, its texts are the exported ones and its label is accepted; everything else is
    named (file, sheet, row, column) in ``problems`` and left out. A physician's second file with no
    label (the CSV beside a filled XLSX) is passed over with a note; two filled files of one physician
    keep the rows they agree on or that only one labelled."""
    folder = location(folder)  # a local folder, or a URL prefix
    files = _folder_files(folder)
    review = Review(folder, _read_key(folder, files))
    review.physicians = {p: PhysicianTally(assigned=info["rows"]) for p, info in review.key["physicians"].items()}
    returned: dict[str, list[_Returned]] = defaultdict(list)
    for path in (p for p in files if is_sheet_file(p)):
        sheet = read_sheet(path)
        if sheet.problem:
            review.problems.append(f"{sheet.where()}: {sheet.problem}; the file is left out")
            continue
        physician, checked = _check_sheet(sheet, review)
        if physician is not None:
            returned[physician].append(checked)
    for physician, tally in review.physicians.items():
        if returned.get(physician):
            _merge(physician, returned[physician], review)
        else:
            review.notes.append(f"physician {physician}: no sheet returned ({tally.assigned} rows)")
    return review


def _check_sheet(sheet: Sheet, review: Review) -> tuple[str | None, _Returned]:
    """The physician a sheet belongs to and what it holds; every bad row is named in ``review.problems``."""
    checked = _Returned(sheet)
    ids = [ROW_ID.match(r.cells["row_id"].strip()) for r in sheet.rows]
    exports = Counter(m.group("export") for m in ids if m)
    if exports and review.export_id not in exports:
        review.problems.append(f"{sheet.where()}: a sheet of another export ({exports.most_common(1)[0][0]}; this folder's "
                               f"review key is export {review.export_id}); the file is left out")
        return None, checked
    physicians = Counter(m.group("physician") for m in ids if m)
    physician = physicians.most_common(1)[0][0] if physicians else None
    if physician not in review.physicians:
        review.problems.append(f"{sheet.where()}: " + (f"physician {physician} is not in this export" if physician else
                               f"no row carries a row id of export {review.export_id}") + "; the file is left out")
        return None, checked
    seen: dict[str, int] = {}
    present: set[str] = set()
    for row, match in zip(sheet.rows, ids):
        rid = row.cells["row_id"].strip()
        present.add(rid)
        why = _row_problem(row.cells, rid, match, physician, review)
        if why:
            column, text, reason = why
            checked.leave_out(f"{sheet.where(row.number, column)}: {text}; the row is left out", reason)
            continue
        label, reason = read_label(row.cells["label"])
        if rid in seen:
            checked.leave_out(f"{sheet.where(row.number, 'row_id')}: row {rid} again (first at row {seen[rid]}): a duplicated row; "
                              "this copy is left out", "duplicated")
            if rid in checked.labels and checked.labels[rid][1] != label:
                del checked.labels[rid]
                checked.leave_out(f"{sheet.where(seen[rid], 'label')}: row {rid} has another label in its copy at row {row.number}; "
                                  "the row is left out", "duplicated")
            continue
        seen[rid] = row.number
        if label is None:
            checked.unlabelled.append((row.number, rid, reason))
        else:
            checked.labels[rid] = (row.number, label)
    for rid in review.key["rows"]:
        if ROW_ID.match(rid).group("physician") == physician and rid not in present:
            checked.leave_out(f"{sheet.where()}: row {rid} is missing (deleted from the sheet?); not labelled", "deleted")
    return physician, checked


def _row_problem(cells: Mapping[str, str], rid: str, match: Any, physician: str, review: Review) -> tuple[str, str, str] | None:
    """(column, message, reason) when a row cannot be used, else ``None``."""
    if not rid:
        return "row_id", "a row without a row id (added to the sheet?)", "added"
    if match is None or rid not in review.key["rows"]:
        return "row_id", f"row id {rid[:40]!r} is not one this export wrote (added to the sheet?)", "added"
    if match.group("physician") != physician:
        return "row_id", f"row {rid} belongs to physician {match.group('physician')}'s sheet, not physician {physician}'s", "moved"
    item = review.key["items"][review.key["rows"][rid]]
    for name in TEXT_FIELDS:
        if text_sha256(cells[name]) != item["shown_sha256"][name]:
            return name, f"row {rid}: the {name} text differs from the exported one (edited?)", "edited"
    return None


def _merge(physician: str, returned: list[_Returned], review: Review) -> None:
    """One physician's labels from the file(s) that came back: the files holding labels are read (an
    unfilled copy beside them is passed over with a note); where two disagree the row is left out."""
    tally = review.physicians[physician]
    used = [r for r in returned if r.labels]
    tally.files = [str(r.sheet.path.relative_to(review.folder)) for r in used or returned]
    if not used:  # nothing filled in yet: one line, not a line per row
        review.notes.append(f"physician {physician}: no labels yet in {', '.join(r.sheet.path.name for r in returned)} "
                            f"({tally.assigned} rows)")
        return
    for r in returned:
        if r not in used:
            review.notes.append(f"{r.sheet.where()}: no labels; physician {physician}'s "
                                f"{', '.join(u.sheet.path.name for u in used)} is read instead")
    for r in used:
        for message, reason in r.problems:
            review.problems.append(message)
            tally.left_out[reason] += 1
    if len(used) > 1:
        review.problems.append(f"physician {physician}: {len(used)} filled sheets ({', '.join(u.sheet.path.name for u in used)}); "
                               "the rows they agree on or that one of them labelled are kept")
    labels: dict[str, tuple[str, str]] = {}  # row id -> (label, where); "" once two files disagree
    for r in used:
        for rid, (number, label) in r.labels.items():
            if rid in labels and labels[rid][0] not in (label, ""):
                review.problems.append(f"{r.sheet.where(number, 'label')}: row {rid} says {label!r} where {labels[rid][1]} says "
                                       f"{labels[rid][0]!r}: two sheets of physician {physician} disagree; the row is left out")
                tally.left_out["two sheets disagree"] += 1
                labels[rid] = ("", labels[rid][1])
            labels.setdefault(rid, (label, r.sheet.where(number)))
    for r in used:
        for number, rid, why in r.unlabelled:
            if rid not in labels:
                review.problems.append(f"{r.sheet.where(number, 'label')}: row {rid}: {why}; not labelled")
                tally.left_out["no label" if why == NO_LABEL else "label not accepted"] += 1
                labels[rid] = ("", "")
    for rid, (label, _) in labels.items():
        if label:
            review.labels.setdefault(review.key["rows"][rid], {})[physician] = label
            tally.labelled += 1
            tally.cannot_tell += label == CANNOT_TELL


# -- scoring ---------------------------------------------------------------------------------------


def references(review: Review) -> tuple[dict[str, bool], Counter]:
    """The physicians' reference on each labelled row (:func:`physician_review.reference`) and how
    many rows had none, by why (``tie``, ``cannot tell``)."""
    out: dict[str, bool] = {}
    missing: Counter = Counter()
    for item, labels in review.labels.items():
        ref, why = reference(list(labels.values()))
        if ref is None:
            missing[why] += 1
        else:
            out[item] = ref
    return out, missing


def _judge_rows(items: Mapping[str, Mapping[str, Any]], refs: Mapping[str, bool], verdict_of: Mapping[str, bool | None],
                resamples: int, seed: int) -> dict[str, Any]:
    """One judge against the physicians on the rows both have: agreement with case-bootstrap
    intervals, overall and per subject and difficulty, and the judge's failures among those rows."""
    rows = [i for i in refs if i in verdict_of]
    failures = sum(1 for i in rows if verdict_of[i] is None)
    decided = [i for i in rows if verdict_of[i] is not None]

    def stats(chosen: Sequence[str]) -> dict[str, Any]:
        by_case: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for i in chosen:
            by_case[items[i]["case_id"]].append((refs[i], bool(verdict_of[i])))
        figures = agreement(by_case, resamples, seed)
        return {"rows": len(chosen), "cases": len(by_case), **{m: v.to_dict() for m, v in figures.items()}}

    out = {"rows": len(decided), "judge_failures": failures, "overall": stats(decided)}
    for dim in SLICES:
        labels = sorted({items[i][dim] for i in decided})
        out[f"by_{dim}"] = {label: stats([i for i in decided if items[i][dim] == label]) for label in labels}
    return out


def _headline(items: Mapping[str, Mapping[str, Any]], refs: Mapping[str, bool], verdict_of: Mapping[str, bool | None],
              thresholds: Sequence[int], n_criteria: int) -> dict[str, Any]:
    """The headline metrics on the sampled answers, the physicians' labels beside the judge's: rubric
    accuracy on every row both have (a failed judgment counts as not met, as in the headline), and
    every metric on the answers whose ``n_criteria`` criteria all have a physicians' reference."""
    rows = [i for i in refs if i in verdict_of]
    out: dict[str, Any] = {"rows": len(rows)}
    if rows:
        out["rubric_accuracy"] = {"physicians": sum(refs[i] for i in rows) / len(rows),
                                  "judge": sum(verdict_of[i] is True for i in rows) / len(rows)}
    answers: dict[tuple[str, str], list[str]] = defaultdict(list)
    for i in rows:
        answers[(items[i]["case_id"], items[i]["answer_sha256"])].append(i)
    complete = [ids for ids in answers.values() if len(ids) == n_criteria]
    out["complete_answers"] = len(complete)
    if complete:
        phys = [CaseResult(sum(refs[i] for i in ids), len(ids), 0, {}, items[ids[0]]["case_id"]) for ids in complete]
        judge = [CaseResult(sum(verdict_of[i] is True for i in ids), len(ids), sum(verdict_of[i] is None for i in ids), {},
                            items[ids[0]]["case_id"]) for ids in complete]
        names = mean_names(thresholds)
        p, j = summarize(phys, thresholds, n_criteria), summarize(judge, thresholds, n_criteria)
        out["metrics"] = {n: {"physicians": p[n], "judge": j[n]} for n in names}
    return out


def score_review(review: Review, resamples: int = RESAMPLES, seed: int = 0, thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
                 n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, Any]:
    """Every judge of the exported runs against the physicians, the physicians with each other, the
    headline metrics beside each other, and what became of every row (JSON-ready)."""
    key, items = review.key, review.key["items"]
    refs, missing = references(review)
    judges = []
    for judge_id, info in key["judges"].items():
        verdict_of = {i: item["verdicts"][judge_id] for i, item in items.items() if judge_id in item["verdicts"]}
        judges.append({"id": judge_id, **info, **_judge_rows(items, refs, verdict_of, resamples, seed),
                       "headline": _headline(items, refs, verdict_of, thresholds, n_criteria)})
    overlap = set(key.get("overlap_cases") or ())
    raters = sorted(review.physicians, key=int)
    by_case: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for item, labels in review.labels.items():
        if items[item]["case_id"] in overlap:
            decided = {f"P{p}": label == "met" for p, label in labels.items() if label != CANNOT_TELL}
            if len(decided) >= 2:
                by_case[items[item]["case_id"]].append(decided)
    physicians = rater_agreement(by_case, [f"P{p}" for p in raters], resamples, seed) if len(raters) > 1 else None
    return {
        "folder": str(review.folder), "export_id": review.export_id, "settings": key["settings"],
        "rows": {"exported": len(key["rows"]), "items": len(items), "labelled_items": len(review.labels),
                 "with_reference": len(refs), "ties": missing["tie"], "cannot_tell": missing["cannot tell"],
                 "cut_texts": sum(1 for i in items.values() if i.get("cut"))},
        "physicians": {f"P{p}": review.physicians[p].to_dict() for p in raters},
        "physician_agreement": physicians,
        "judges": judges,
        "problems": list(review.problems),
        "notes": list(review.notes),
        "resamples": resamples, "seed": seed,
    }


def run_agreement(records: Sequence[LoggedCase], review: Review, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """A run's own headline judge against the physicians, on the review's rows whose answer is this
    run's (matched by case, criterion and the answer's sha256): what the release gate adds to a run's
    facts. ``rows`` is 0 when the review holds none of the run's answers."""
    items = review.key["items"]
    refs, _ = references(review)
    by_answer = {(r.graded.case_id, text_sha256(r.answer)): r.graded for r in records}
    verdict_of: dict[str, bool | None] = {}
    for item_id, item in items.items():
        graded = by_answer.get((item["case_id"], item["answer_sha256"]))
        if graded is not None:
            verdict_of[item_id] = next((j.met for j in graded.judgments if j.criterion_id == item["criterion_id"]), None)
    return _judge_rows(items, refs, verdict_of, resamples, seed)
