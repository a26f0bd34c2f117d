"""The physicians' review sheet, both ways: written as XLSX (openpyxl) and CSV, read back from either.

A sheet is what a physician opens: one row per (answer, criterion) with the question, the answer
and the criterion, a label column with a drop-down, a comment column; headers in Chinese and
English, the header row frozen, text wrapped, widths that read on a laptop. It carries no judge's
verdict, no model name and no run: only a row id (``<export>-P<physician>-<row>``) that the
review key beside the sheets maps back.

What a cell shows is :func:`shown_text` of the text: characters XLSX cannot hold replaced, cut at
what a spreadsheet cell holds (with a note saying so). The key keeps the sha256 of what each cell
showed, so an edited text is found whichever format came back.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

SHEET = "评审 Review"
GUIDE_SHEET = "说明 Instructions"
# (field, header, width in characters): the order of the columns in both formats.
COLUMNS = (
    ("row_id", "编号 Row ID", 18),
    ("question", "问题 Question", 48),
    ("answer", "回答 Answer", 72),
    ("criterion", "评分标准 Criterion", 40),
    ("label", "判定 Label", 14),
    ("comment", "备注 Comment", 30),
)
FIELDS = tuple(name for name, _, _ in COLUMNS)
TEXT_FIELDS = ("question", "answer", "criterion")
LABEL_CHOICES = ("符合", "不符合", "无法判断", "met", "not met", "cannot tell")
CELL_LIMIT = 32_767  # the most characters a spreadsheet cell holds (Excel)
CUT_NOTE = "\n…[此处截断 / cut here: {n} more characters]"
ROW_ID = re.compile(r"^(?P<export>[0-9a-f]{10})-P(?P<physician>\d{1,3})-(?P<row>\d{4,6})$")
_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # control characters XLSX cannot store
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet would read as a formula in a CSV cell
GUIDE = [
    "请逐行阅读问题、回答和评分标准，在“判定”列选择：符合 / 不符合 / 无法判断。可在“备注”列写说明。",
    "Read each row's question, answer and criterion; in the Label column choose met / not met / cannot tell. Comments are optional.",
    "评分标准含多项要求时，全部满足才算符合；“如、例如、比如、包括”后列出的是举例，不必全部出现；涉及的医学事实、药物、剂量、指南必须正确；“是否”类标准从严判断。",
    "A criterion with several requirements is met only if all are; examples after 如/例如/比如/包括 need not all appear; named facts, "
    "drugs, doses and guidelines must be right; 'whether' (是否) criteria are judged strictly.",
    "请勿修改编号、问题、回答、评分标准各列，也不要增删行；修改过的行无法计分。",
    "Do not edit the Row ID, Question, Answer or Criterion columns, and do not add or delete rows: an edited row cannot be scored.",
]


def shown_text(text: str) -> str:
    """What a cell shows of ``text``: control characters replaced by U+FFFD, line ends as ``\\n``,
    cut to fit a cell with a note giving how much was cut."""
    text = _ILLEGAL.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))
    if len(text) <= CELL_LIMIT:
        return text
    keep = CELL_LIMIT - len(CUT_NOTE.format(n=len(text))) - 1
    return text[:keep] + CUT_NOTE.format(n=len(text) - keep)


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fold_text(text: str) -> str:
    """``text`` as an edit check compares it: Unicode NFKC (a full-width letter a spreadsheet or an
    input method wrote is its plain form), every run of white space one blank, none at either end.
    A changed word, digit or punctuation mark still differs."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def row_id(export_id: str, physician: int, row: int) -> str:
    return f"{export_id}-P{physician}-{row:04d}"


# -- writing ---------------------------------------------------------------------------------------


def write_xlsx(path: Path, rows: Sequence[dict[str, str]]) -> None:
    """One physician's sheet as XLSX at ``path`` (a local path or a URL)."""
    from clinconsensus_tasks.storage import write_bytes

    write_bytes(path, xlsx_bytes(rows))


def xlsx_bytes(rows: Sequence[dict[str, str]]) -> bytes:
    """One physician's sheet as XLSX: ``rows`` hold :data:`FIELDS` (label and comment empty)."""
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Font, PatternFill
    from openpyxl.utils import get_column_letter
    from openpyxl.worksheet.datavalidation import DataValidation

    book = Workbook()
    sheet = book.active
    sheet.title = SHEET
    wrap = Alignment(wrap_text=True, vertical="top")
    for col, (_, header, width) in enumerate(COLUMNS, start=1):
        cell = sheet.cell(row=1, column=col, value=header)
        cell.font, cell.alignment = Font(bold=True), Alignment(wrap_text=True, vertical="center")
        cell.fill = PatternFill("solid", fgColor="DDEBF7")
        sheet.column_dimensions[get_column_letter(col)].width = width
    for r, row in enumerate(rows, start=2):
        for col, name in enumerate(FIELDS, start=1):
            cell = sheet.cell(row=r, column=col)
            cell.value = row.get(name, "")
            cell.data_type = "s"  # text, always: an answer starting with '=' is not a formula
            cell.alignment = wrap
        sheet.row_dimensions[r].height = _row_height(row)
    label = get_column_letter(FIELDS.index("label") + 1)
    choices = DataValidation(type="list", formula1='"' + ",".join(LABEL_CHOICES) + '"', allow_blank=True, showErrorMessage=True,
                             errorTitle="判定 Label", error="请选择：符合 / 不符合 / 无法判断 (met / not met / cannot tell)")
    sheet.add_data_validation(choices)
    if rows:
        choices.add(f"{label}2:{label}{len(rows) + 1}")
    sheet.freeze_panes = "B2"
    sheet.row_dimensions[1].height = 30
    guide = book.create_sheet(GUIDE_SHEET)
    guide.column_dimensions["A"].width = 120
    for r, line in enumerate(GUIDE, start=1):
        guide.cell(row=r, column=1, value=line).alignment = wrap
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _row_height(row: dict[str, str]) -> float:
    """Points enough for the longest wrapped text of the row (about 15 points a line, Excel's 409 at most)."""
    lines = 1
    for name, _, width in COLUMNS:
        text = row.get(name, "")
        lines = max(lines, sum(max(1, -(-_display_width(part) // max(1, width - 2))) for part in text.split("\n")))
    return min(409.0, 15.0 * lines + 4)


def _display_width(text: str) -> int:
    """Columns ``text`` takes: a CJK character two, others one."""
    return sum(2 if ord(ch) >= 0x2E80 else 1 for ch in text)


def write_csv(path: Path, rows: Sequence[dict[str, str]]) -> None:
    """One physician's sheet as CSV (UTF-8 with a BOM, so spreadsheets read the Chinese) at ``path``
    (a local path or a URL): the same columns; a cell a spreadsheet would take for a formula starts
    with an apostrophe."""
    from clinconsensus_tasks.storage import write_bytes

    handle = io.StringIO(newline="")
    writer = csv.writer(handle)
    writer.writerow([header for _, header, _ in COLUMNS])
    for row in rows:
        writer.writerow([_csv_cell(row.get(name, "")) for name in FIELDS])
    write_bytes(path, handle.getvalue().encode("utf-8-sig"))


def _csv_cell(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


# -- reading ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SheetRow:
    """One row as it came back: its number in the sheet (the header is row 1) and its cells by field."""

    number: int
    cells: dict[str, str]


@dataclass(frozen=True)
class Sheet:
    """A sheet file read back: its rows, or why it could not be read at all (``problem``)."""

    path: Path
    sheet: str
    rows: tuple[SheetRow, ...] = ()
    problem: str = ""

    def where(self, number: int | None = None, field: str | None = None) -> str:
        """File, sheet, row and column, for messages."""
        out = f"{self.path}: sheet {self.sheet!r}" if self.sheet else str(self.path)
        if number is not None:
            out += f", row {number}"
        if field is not None:
            col = FIELDS.index(field)
            out += f", column {chr(ord('A') + col)} ({COLUMNS[col][1]})"
        return out


def is_sheet_file(path: Path) -> bool:
    """A review sheet: ``.xlsx`` or ``.csv``, not a spreadsheet's lock file (``~$...``) or a hidden file."""
    return path.suffix.lower() in (".xlsx", ".csv") and not path.name.startswith(("~$", "."))


def read_sheet(path: Path) -> Sheet:
    """The rows of a returned sheet. A file whose bytes are no sheet is named (``problem``), never
    raised; a file that could not be READ (storage refused, timed out, the object went away, a local
    permission) raises :class:`~clinconsensus_tasks.errors.StorageError` naming it: labels a store
    did not hand over are not a bad file, and the review must not be scored without them."""
    raw = _read_bytes(path)
    try:
        if path.suffix.lower() == ".xlsx":
            return _read_xlsx(path, raw)
        return _read_csv(path, raw)
    except Exception as exc:  # a file that is not a sheet at all: say so, keep the others
        return Sheet(path, "", problem=f"cannot be read as a review sheet ({type(exc).__name__}: {str(exc)[:200]})")


def _header_problem(found: Sequence[str]) -> str:
    expected = [header for _, header, _ in COLUMNS]
    got = [" ".join(str(x or "").split()) for x in found[: len(expected)]]
    if got != expected:
        return f"the header row is {got!r}, expected {expected!r} (columns added, removed or moved)"
    return ""


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).replace("\r\n", "\n").replace("\r", "\n")


def _read_bytes(path: Path) -> bytes:
    """The file's bytes: a local file, or the object a URL names (one GET); a failure to read is a
    :class:`~clinconsensus_tasks.errors.StorageError` naming the file."""
    from clinconsensus_tasks.errors import StorageError
    from clinconsensus_tasks.storage import open_binary

    try:
        with open_binary(path) as handle:
            return handle.read()
    except OSError as exc:  # a local file (a URL's errors are StorageErrors already)
        raise StorageError(f"{path}: the review sheet could not be read ({type(exc).__name__}: {exc}); "
                           "nothing was scored without it") from exc


def _read_xlsx(path: Path, raw: bytes) -> Sheet:
    from openpyxl import load_workbook

    book = load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    try:
        if SHEET not in book.sheetnames:
            return Sheet(path, "", problem=f"no worksheet named {SHEET!r} (found {book.sheetnames!r})")
        values = book[SHEET].iter_rows(values_only=True)
        header = next(values, ())
        problem = _header_problem(list(header))
        if problem:
            return Sheet(path, SHEET, problem=problem)
        rows = tuple(_sheet_rows(values))
    finally:
        book.close()
    return Sheet(path, SHEET, rows)


def _decoded(raw: bytes) -> str:
    """A CSV's text: UTF-8 (with or without a BOM), else GB18030 (a spreadsheet on a Chinese system saves that)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("gb18030")


def _read_csv(path: Path, raw: bytes) -> Sheet:
    reader = csv.reader(io.StringIO(_decoded(raw), newline=""))
    header = next(reader, [])
    problem = _header_problem(header)
    if problem:
        return Sheet(path, "", problem=problem)
    rows = []
    for row in _sheet_rows(reader):
        cells = dict(row.cells)
        for name in TEXT_FIELDS:
            text = cells[name]
            if text.startswith("'") and text[1:].startswith(_FORMULA_START):
                cells[name] = text[1:]
        rows.append(SheetRow(row.number, cells))
    return Sheet(path, "", tuple(rows))


def _sheet_rows(values: Iterator[Sequence[object]]) -> Iterator[SheetRow]:
    """Rows after the header, numbered as the spreadsheet numbers them; wholly empty rows are skipped
    (spreadsheets keep formatted empty rows at the end)."""
    for number, raw in enumerate(values, start=2):
        cells = [_cell_text(v) for v in raw]
        if not any(c.strip() for c in cells):
            continue
        cells += [""] * (len(FIELDS) - len(cells))
        yield SheetRow(number, dict(zip(FIELDS, cells)))
