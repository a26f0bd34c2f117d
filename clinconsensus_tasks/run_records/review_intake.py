"""A physician review, step 2 (intake): the filled sheets read back against the review key.

:func:`load_review` reads every sheet in a review folder (a local folder or a URL prefix). A row
is kept when its id is this export's and its physician's, its texts are the exported ones (compared
after NFKC and whitespace folding, ``review_sheets.fold_text``) and its label is accepted;
everything else is named (file, sheet, row, column) in ``problems`` and left out, and counted by
reason in each physician's tally. A sheet whose bytes are no sheet, or of another export, is
named in ``problems`` and in ``unreadable``; a sheet storage could not read raises a
:class:`~clinconsensus_tasks.errors.StorageError` naming it (nothing is scored without it). A
physician with no usable label back (no sheet, none filled, only "cannot tell", every row left
out) is in ``not_returned``; one who labelled less than :data:`MIN_LABELLED_SHARE` of their rows is
``short`` in the coverage. :func:`coverage` sums
it up for the gate and the report.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.run_records.review_export import KEY_FILE, KEY_FORMAT, ReviewError
from clinconsensus_tasks.run_records.review_sheets import ROW_ID, TEXT_FIELDS, Sheet, fold_text, is_sheet_file, read_sheet, text_sha256
from clinconsensus_tasks.scorers.physician_review import CANNOT_TELL, NO_LABEL, read_label
from clinconsensus_tasks.storage import listing, location, open_binary, remote_child, same_file

KEY_VERSIONS = (1, 2)  # the key versions read: 1 compares texts exactly, 2 after folding
MIN_LABELLED_SHARE = 0.9  # a physician who labelled less of their rows has not returned the sample drawn


@dataclass
class PhysicianTally:
    """What became of one physician's rows."""

    assigned: int = 0
    labelled: int = 0  # accepted labels (cannot tell included)
    cannot_tell: int = 0
    files: list[str] = field(default_factory=list)  # the sheets read (a physician's unfilled copy beside a filled one is not)
    left_out: Counter = field(default_factory=Counter)  # reason -> assigned rows not labelled for it (each row once)
    extra_lines: Counter = field(default_factory=Counter)  # reason -> sheet lines that are no assigned row (added, moved, a copy)

    def to_dict(self) -> dict[str, Any]:
        return {"assigned": self.assigned, "labelled": self.labelled, "cannot_tell": self.cannot_tell, "files": self.files,
                "unlabelled": self.assigned - self.labelled, "left_out": dict(self.left_out), "extra_lines": dict(self.extra_lines)}


@dataclass
class Review:
    """A review folder read back: the key, the accepted labels per row, and every problem, named."""

    folder: Path
    key: dict[str, Any]
    labels: dict[str, dict[str, str]] = field(default_factory=dict)  # item -> physician -> label
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    physicians: dict[str, PhysicianTally] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # sheet files left out whole (no sheet, another export ...)
    not_returned: list[str] = field(default_factory=list)  # physicians with no sheet, or none holding a label

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


def _inside(path: Any, folder: Any) -> str:
    """``path``'s name inside the review folder (a URL's by its filesystem's path)."""
    if isinstance(path, Path):
        return str(path.relative_to(folder))
    return path.path.rstrip("/")[len(folder.path.rstrip("/")):].lstrip("/")


def _read_key(folder: Any, files: Sequence[Any]) -> dict[str, Any]:
    path = folder / KEY_FILE
    if not any(same_file(path, f) for f in files):
        raise ReviewError(f"{folder}: no {KEY_FILE} (the folder `review export` wrote, with the sheets beside it)")
    try:
        with open_binary(path) as handle:
            key = json.loads(handle.read().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReviewError(f"{path}: not a review key ({type(exc).__name__}: {exc})") from None
    if not isinstance(key, dict) or key.get("format") != KEY_FORMAT or key.get("version") not in KEY_VERSIONS:
        raise ReviewError(f"{path}: not a review key of version {' or '.join(map(str, KEY_VERSIONS))} (field 'format'/'version')")
    return key


@dataclass
class _Returned:
    """One sheet file as checked: its accepted labels and its rows without one."""

    sheet: Sheet
    labels: dict[str, tuple[int, str]] = field(default_factory=dict)  # row id -> (row number, label)
    unlabelled: list[tuple[int, str, str]] = field(default_factory=list)  # (row number, row id, why)
    problems: list[tuple[str, str, str | None]] = field(default_factory=list)  # (message, reason, the assigned row or None)

    def leave_out(self, message: str, reason: str, rid: str | None = None) -> None:
        """A line left out: ``rid`` the assigned row it stood for (``None``: a line that is no assigned
        row of this sheet's physician: added, moved in, a copy)."""
        self.problems.append((message, reason, rid))


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
        sheet = read_sheet(path)  # a file storage could not read raises, naming it
        if sheet.problem:
            review.problems.append(f"{sheet.where()}: {sheet.problem}; the file is left out")
            review.unreadable.append(str(path))
            continue
        physician, checked = _check_sheet(sheet, review)
        if physician is not None:
            returned[physician].append(checked)
        else:
            review.unreadable.append(str(path))
    for physician, tally in review.physicians.items():
        if returned.get(physician):
            _merge(physician, returned[physician], review)
        else:
            review.notes.append(f"physician {physician}: no sheet returned ({tally.assigned} rows)")
        if tally.labelled - tally.cannot_tell == 0:  # nothing usable back: no sheet, none filled, only "cannot tell", all left out
            review.not_returned.append(physician)
    return review


def coverage(review: Review) -> dict[str, Any]:
    """What the review's figures rest on: rows assigned and labelled, rows left out by reason, the
    physicians who returned nothing, the sheet files left out whole (JSON-ready)."""
    left_out: Counter = Counter()
    extra: Counter = Counter()
    for tally in review.physicians.values():
        left_out.update(tally.left_out)
        extra.update(tally.extra_lines)
    return {"rows_assigned": sum(t.assigned for t in review.physicians.values()),
            "rows_labelled": sum(t.labelled for t in review.physicians.values()),
            "rows_cannot_tell": sum(t.cannot_tell for t in review.physicians.values()),
            "left_out": dict(sorted(left_out.items())), "extra_lines": dict(sorted(extra.items())), "not_returned": [f"P{p}" for p in review.not_returned],
            "short": {f"P{p}": round(t.labelled / t.assigned, 4) for p, t in review.physicians.items()
                      if p not in review.not_returned and t.assigned and t.labelled < MIN_LABELLED_SHARE * t.assigned},
            "unreadable": list(review.unreadable)}


def coverage_text(cov: Mapping[str, Any]) -> str:
    """:func:`coverage` in one line."""
    text = f"{cov['rows_labelled']} of {cov['rows_assigned']} assigned rows labelled"
    if cov.get("rows_cannot_tell"):
        text += f" ({cov['rows_cannot_tell']} of them 'cannot tell')"
    if cov["left_out"]:
        text += "; left out: " + ", ".join(f"{why} {n}" for why, n in cov["left_out"].items())
    if cov.get("extra_lines"):
        text += "; sheet lines that are no assigned row: " + ", ".join(f"{why} {n}" for why, n in cov["extra_lines"].items())
    if cov["not_returned"]:
        text += f"; no usable labels back from {', '.join(cov['not_returned'])}"
    if cov.get("short"):
        text += "; " + ", ".join(f"{p} labelled {share:.0%} of their rows" for p, share in cov["short"].items())
    if cov["unreadable"]:
        text += f"; {len(cov['unreadable'])} sheet file(s) unreadable"
    return text


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
    conflicted: set[str] = set()  # rows whose copies carry different labels
    present: set[str] = set()
    for row, match in zip(sheet.rows, ids):
        rid = row.cells["row_id"].strip()
        present.add(rid)
        why = _row_problem(row.cells, rid, match, physician, review)
        if why:
            column, text, reason = why
            checked.leave_out(f"{sheet.where(row.number, column)}: {text}; the row is left out", reason, rid if reason == "edited" else None)
            continue
        label, reason = read_label(row.cells["label"])
        if rid in seen:
            _copy(checked, sheet, row.number, rid, seen[rid], label, reason, conflicted)
            continue
        seen[rid] = row.number
        if label is None:
            checked.unlabelled.append((row.number, rid, reason))
        else:
            checked.labels[rid] = (row.number, label)
    for rid in review.key["rows"]:
        if ROW_ID.match(rid).group("physician") == physician and rid not in present:
            checked.leave_out(f"{sheet.where()}: row {rid} is missing (deleted from the sheet?); not labelled", "deleted", rid)
    return physician, checked


def _copy(checked: _Returned, sheet: Sheet, number: int, rid: str, first: int, label: str | None, reason: str,
          conflicted: set[str]) -> None:
    """A second copy of a row in one sheet. Named as a duplicate; a blank copy takes nothing away
    (the labelled one stands), a labelled copy of a blank row gives the row its label, two copies with
    different labels leave the row out."""
    checked.leave_out(f"{sheet.where(number, 'row_id')}: row {rid} again (first at row {first}): a duplicated row; "
                      "this copy is left out", "duplicated")
    if label is None or rid in conflicted:
        return
    held = checked.labels.get(rid)
    if held is None:
        checked.unlabelled = [u for u in checked.unlabelled if u[1] != rid]
        checked.labels[rid] = (number, label)
    elif held[1] != label:
        del checked.labels[rid]
        conflicted.add(rid)
        checked.leave_out(f"{sheet.where(held[0], 'label')}: row {rid} has another label in its copy at row {number}; "
                          "the row is left out", "duplicated", rid)


def _row_problem(cells: Mapping[str, str], rid: str, match: Any, physician: str, review: Review) -> tuple[str, str, str] | None:
    """(column, message, reason) when a row cannot be used, else ``None``."""
    if not rid:
        return "row_id", "a row without a row id (added to the sheet?)", "added"
    if match is None or rid not in review.key["rows"]:
        return "row_id", f"row id {rid[:40]!r} is not one this export wrote (added to the sheet?)", "added"
    if match.group("physician") != physician:
        return "row_id", f"row {rid} belongs to physician {match.group('physician')}'s sheet, not physician {physician}'s", "moved"
    item = review.key["items"][review.key["rows"][rid]]
    folded = review.key["version"] >= 2
    for name in TEXT_FIELDS:
        if text_sha256(fold_text(cells[name]) if folded else cells[name]) != item["shown_sha256"][name]:
            return name, f"row {rid}: the {name} text differs from the exported one (edited?)", "edited"
    return None


def _merge(physician: str, returned: list[_Returned], review: Review) -> None:
    """One physician's labels from the file(s) that came back: the files holding labels are read (an
    unfilled copy beside them is passed over with a note); where two disagree the row is left out."""
    tally = review.physicians[physician]
    used = [r for r in returned if r.labels]
    tally.files = [_inside(r.sheet.path, review.folder) for r in used or returned]
    if not used:  # nothing filled in yet: one line, not a line per row
        review.notes.append(f"physician {physician}: no labels yet in {', '.join(r.sheet.path.name for r in returned)} "
                            f"({tally.assigned} rows)")
        return
    for r in returned:
        if r not in used:
            review.notes.append(f"{r.sheet.where()}: no labels; physician {physician}'s "
                                f"{', '.join(u.sheet.path.name for u in used)} is read instead")
    why_not: dict[str, str] = {}  # assigned row -> the first reason it was left out (counted once, per row)
    for r in used:
        for message, reason, rid in r.problems:
            review.problems.append(message)
            if rid is None:
                tally.extra_lines[reason] += 1
            else:
                why_not.setdefault(rid, reason)
    if len(used) > 1:  # a note: where the sheets disagree, each such row is named in the problems
        review.notes.append(f"physician {physician}: {len(used)} filled sheets ({', '.join(u.sheet.path.name for u in used)}); "
                            "the rows they agree on or that one of them labelled are kept")
    labels: dict[str, tuple[str, str]] = {}  # row id -> (label, where); "" once two files disagree
    for r in used:
        for rid, (number, label) in r.labels.items():
            if rid in labels and labels[rid][0] not in (label, ""):
                review.problems.append(f"{r.sheet.where(number, 'label')}: row {rid} says {label!r} where {labels[rid][1]} says "
                                       f"{labels[rid][0]!r}: two sheets of physician {physician} disagree; the row is left out")
                why_not.setdefault(rid, "two sheets disagree")
                labels[rid] = ("", labels[rid][1])
            labels.setdefault(rid, (label, r.sheet.where(number)))
    for r in used:
        for number, rid, why in r.unlabelled:
            if rid not in labels:
                review.problems.append(f"{r.sheet.where(number, 'label')}: row {rid}: {why}; not labelled")
                why_not.setdefault(rid, "no label" if why == NO_LABEL else "label not accepted")
                labels[rid] = ("", "")
    for rid, (label, _) in labels.items():
        if label:
            review.labels.setdefault(review.key["rows"][rid], {})[physician] = label
            tally.labelled += 1
            tally.cannot_tell += label == CANNOT_TELL
    for rid, reason in why_not.items():  # a row labelled after all (the line left out was a stray copy of it) is no row left out
        if labels.get(rid, ("",))[0]:
            tally.extra_lines[reason] += 1
        else:
            tally.left_out[reason] += 1
