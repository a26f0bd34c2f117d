"""Judges checked against physicians: sheets out, labels back, agreement (``clinconsensus-eval review``).

The runs here are graded-case records as both frameworks log them (``GradedCase``/``LoggedCase``),
built by hand so every figure is worked out below; the sheets are real XLSX and CSV files written by
``review export`` and filled as a physician fills them, through openpyxl (the library a spreadsheet
program's files are read with), cell by cell, Chinese labels and stray blanks included. The
end-to-end runs of both frameworks against the stand-in server are in ``test_review_runs.py``.

The planted labelling (4 cases x 10 criteria; the judge says met for criteria 0-4 of every case):

* physicians: met for criteria 0-3 and 9 of cases 1-3 (so per case 4 both met, 1 judge-only met,
  1 physician-only met, 4 both not met), and met for 0-4 of case 4 (agreeing on all 10);
* pooled: tp 17, tn 17, fp 3, fn 3 of 40: agreement 0.85, both sides say met on 20 of 40 so
  chance agreement 0.5 and kappa (0.85 - 0.5) / 0.5 = 0.7; F1 of met 34/40 = 0.85 and of not met
  0.85, macro F1 0.85; precision and recall of met 17/20 = 0.85.
* three physicians on every row: P1 and P2 as above, P3 the same but "not met" on criterion 0 of
  every case. Rows with criterion 0 get 2 of 3 met votes (agreement P_i = 1/3), the other 36 are
  unanimous: mean P = (36 + 4/3) / 40 = 14/15; met votes 20 + 20 + 16 = 56 of 120 = 7/15, chance
  (7/15)^2 + (8/15)^2 = 113/225; Fleiss' kappa (14/15 - 113/225) / (112/225) = 97/112. P1-P3:
  tp 16, fn 4, tn 20: agreement 0.9, met shares 0.5 and 0.4, chance 0.5, kappa 0.8.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import json
import shutil
from pathlib import Path

import pytest
import fsspec
from openpyxl import load_workbook

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.errors import StorageError
from clinconsensus_tasks.log_files import CLINCONSENSUS
from clinconsensus_tasks.gates.bar import ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts
from clinconsensus_tasks.gates.release import run_problems
from clinconsensus_tasks.run_records.review_export import KEY_FILE, ReviewRun, plan_review, write_review
from clinconsensus_tasks.run_records.review_intake import coverage, coverage_text, load_review
from clinconsensus_tasks.run_records.review_score import run_agreement, score_review
from clinconsensus_tasks.run_records.review_sheets import CELL_LIMIT, SHEET, read_sheet, shown_text
from clinconsensus_tasks.scorers.agreement import Confusion, case_draws, macro_f1, precision_recall_f1
from clinconsensus_tasks.scorers.clinconsensus.jury import panel_record
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment
from clinconsensus_tasks.scorers.physician_review import agreement, allocate, assign, read_label, reference, sample_cases

CASES = ("c1", "c2", "c3", "c4")
SUBJECT = {"c1": "内科", "c2": "内科", "c3": "外科", "c4": "外科"}
N = 10


def physician_met(case: str, i: int, physician: int = 1) -> bool:
    if physician == 3 and i == 0:
        return False
    return i < 5 if case == "c4" else (i < 4 or i == 9)


def judged(case: str, judge: str, rule) -> GradedCase:
    return GradedCase.of_judge(case, judge, "per_criterion", [CriterionJudgment(f"k{i}", rule(i), "理由", 1) for i in range(N)],
                               slices={"subject": (SUBJECT[case],), "difficulty": ("low",)})


def logged(graded: GradedCase, answer: str | None = None) -> LoggedCase:
    case = graded.case_id
    return LoggedCase(graded, f"患者，男，45岁，{case}。\n\n请问下一步怎么办？", answer or f"建议完善检查（{case}）。",
                      [(f"k{i}", f"回答是否提到第{i}项要点" + ("，如血常规、肝功能" if i == 2 else "")) for i in range(N)],
                      {"subject": SUBJECT[case]}, f"run.eval: {case}")


def run_of(name: str = "model-a (inspect)", judge: str = "judge-x", rule=lambda i: i < 5) -> ReviewRun:
    return ReviewRun(name, f"/runs/{name}.eval", "inspect", [logged(judged(c, judge, rule)) for c in CASES])


def export(tmp_path: Path, runs, reviewers: int = 1, overlap: float = 0.0, seed: int = 0, folder: str = "review", **kw) -> Path:
    plan = plan_review(runs, kw.pop("cases", 4), kw.pop("criteria_per_case", None), reviewers, overlap, seed)
    write_review(plan, tmp_path / folder, **kw)
    return tmp_path / folder


def key_of(folder: Path) -> dict:
    return json.loads((folder / KEY_FILE).read_text(encoding="utf-8"))


def item_of(folder: Path, rid: str) -> dict:
    key = key_of(folder)
    return key["items"][key["rows"][rid]]


LABEL_TEXT = {True: ["符合", " met", "Met ", "符合 "], False: ["不符合", "not met", " NOT  MET", "不符合\n"]}


def fill_xlsx(path: Path, labeller, comment: str = "") -> None:
    """Fill a sheet as a physician does: open it, type a label (and maybe a comment) per row, save."""
    folder = path.parent
    book = load_workbook(path)
    sheet = book[SHEET]
    for n, row in enumerate(sheet.iter_rows(min_row=2), start=0):
        rid = row[0].value
        if not rid:
            continue
        item = item_of(folder, rid)
        met = labeller(item["case_id"], int(item["criterion_id"][1:]))
        if met is not None:
            row[4].value = LABEL_TEXT[met][n % 4] if isinstance(met, bool) else met
        if comment:
            row[5].value = comment
    book.save(path)


def fill_csv(path: Path, labeller) -> None:
    folder = path.parent
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    for row in rows[1:]:
        item = item_of(folder, row[0])
        met = labeller(item["case_id"], int(item["criterion_id"][1:]))
        row[4] = ("符合" if met else "不符合") if isinstance(met, bool) else (met or "")
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        csv.writer(handle).writerows(rows)


# -- the rules --------------------------------------------------------------------------------------


def test_labels_are_a_strict_grammar_forgiving_blanks_and_case():
    for raw, label in [("符合", "met"), (" 不符合 ", "not met"), ("无法判断", "cannot tell"), ("MET", "met"), ("Not   Met", "not met"),
                       ("cannot tell", "cannot tell"), ("ｍｅｔ", "met"), ("不符合\n", "not met")]:
        assert read_label(raw) == (label, ""), raw
    assert read_label("") == (None, "no label") and read_label(None) == (None, "no label") and read_label("  ") == (None, "no label")
    for raw in ("yes", "true", "1", "met?", "符合。", "not_met", "部分符合"):
        label, why = read_label(raw)
        assert label is None and "is not one of met / not met / cannot tell, 符合 / 不符合 / 无法判断" in why, raw


def test_the_physicians_reference_is_a_strict_majority_never_a_guess():
    assert reference(["met"]) == (True, "") and reference(["not met", "met", "not met"]) == (False, "")
    assert reference(["met", "not met"]) == (None, "tie")
    assert reference(["met", "cannot tell", "not met"]) == (None, "tie")
    assert reference(["cannot tell", "cannot tell"]) == (None, "cannot tell")
    assert reference(["cannot tell", "met"]) == (True, "")


def test_the_sample_is_stratified_and_the_overlap_goes_to_everyone():
    assert allocate({"a": 10, "b": 5, "c": 1}, 5) == {"a": 3, "b": 2, "c": 0}  # quotas 3.125, 1.5625, 0.3125
    assert allocate({"a": 2, "b": 2}, 10) == {"a": 2, "b": 2}
    strata = {f"x{i}": "a" for i in range(10)} | {f"y{i}": "b" for i in range(5)}
    drawn = sample_cases(strata, 6, seed=3)
    assert sum(c.startswith("x") for c in drawn) == 4 and sum(c.startswith("y") for c in drawn) == 2
    assert drawn == sample_cases(dict(reversed(list(strata.items()))), 6, seed=3)  # the order of the runs does not matter
    who = assign({f"c{i}": 10 for i in range(10)}, 3, 0.2, seed=0)
    assert sum(1 for w in who.values() if w == (1, 2, 3)) == 2
    loads = [sum(10 for w in who.values() if p in w) for p in (1, 2, 3)]
    assert sorted(loads) == [40, 50, 50]  # 20 shared rows each, and the 8 single cases 3, 3, 2


def test_shown_text_fits_a_cell_and_names_the_cut():
    long = "甲" * (CELL_LIMIT + 500)
    shown = shown_text(long)
    assert len(shown) <= CELL_LIMIT and "cut here" in shown and shown.startswith("甲" * 1000)
    assert shown_text("a\x00b\r\nc") == "a\ufffdb\nc"


# -- the round trip ---------------------------------------------------------------------------------


def test_the_sheets_are_blind_and_read_on_a_laptop(tmp_path):
    folder = export(tmp_path, [run_of(judge="secret-judge-x")], reviewers=2, overlap=0.5)
    assert sorted(p.name for p in folder.iterdir()) == ["physician_1.csv", "physician_1.xlsx", "physician_2.csv", "physician_2.xlsx", KEY_FILE]
    raw = (folder / "physician_1.csv").read_text(encoding="utf-8-sig").lower()
    for leak in ("secret-judge-x", "model-a", "/runs/", "criteria_met", "true", "judge", "inspect"):
        assert leak not in raw, leak  # XLSX is zipped: its cells are checked below
    book = load_workbook(folder / "physician_1.xlsx")
    sheet = book[SHEET]
    header = [c.value for c in sheet[1]]
    assert header == ["编号 Row ID", "问题 Question", "回答 Answer", "评分标准 Criterion", "判定 Label", "备注 Comment"]
    cells = " ".join(str(c.value) for row in sheet.iter_rows() for c in row if c.value)
    assert "secret-judge-x" not in cells and "model-a" not in cells and "/runs/" not in cells
    assert sheet.freeze_panes == "B2" and sheet["C2"].alignment.wrap_text
    assert sheet.column_dimensions["C"].width == 72 and sheet.column_dimensions["B"].width == 48
    validation = sheet.data_validations.dataValidation[0]
    assert validation.type == "list" and "符合" in validation.formula1 and "cannot tell" in validation.formula1
    assert str(validation.sqref) == f"E2:E{sheet.max_row}"
    assert "说明 Instructions" in book.sheetnames
    key = key_of(folder)
    # 2 overlap cases of 4 go to both: physician 1 holds 20 + 10 rows, physician 2 20 + 10; each sheet shuffled on its own.
    assert [key["physicians"][p]["rows"] for p in ("1", "2")] == [30, 30] and len(key["overlap_cases"]) == 2
    order = [item_of(folder, sheet.cell(row=r, column=1).value)["criterion_id"] for r in range(2, 12)]
    assert order != sorted(order)


def test_round_trip_as_a_physician_fills_it_gives_the_hand_worked_figures(tmp_path):
    folder = export(tmp_path, [run_of()])
    before = (folder / KEY_FILE).read_bytes()
    fill_xlsx(folder / "physician_1.xlsx", physician_met, comment="已核对")
    result = score_review(load_review(folder), thresholds=(4, 5), n_criteria=N)
    assert (folder / KEY_FILE).read_bytes() == before  # scoring writes nothing
    (judge,) = result["judges"]
    overall = judge["overall"]
    assert (judge["rows"], judge["judge_failures"], overall["cases"]) == (40, 0, 4)
    assert {m: overall[m]["estimate"] for m in ("percent_agreement", "kappa", "macro_f1", "precision_met", "recall_met")} == pytest.approx(
        {"percent_agreement": 0.85, "kappa": 0.7, "macro_f1": 0.85, "precision_met": 0.85, "recall_met": 0.85})
    assert overall["kappa"]["low"] < 0.7 < overall["kappa"]["high"]  # three cases at kappa 0.6, one at 1: the cases vary
    assert score_review(load_review(folder), thresholds=(4, 5), n_criteria=N)["judges"][0]["overall"] == overall  # seeded
    # By subject: 内科 is cases 1-2 (tp 8, tn 8, fp 2, fn 2: kappa 0.6); 外科 cases 3-4 (tp 9, tn 9, fp 1, fn 1: kappa 0.8).
    assert judge["by_subject"]["内科"]["kappa"]["estimate"] == pytest.approx(0.6)
    assert judge["by_subject"]["外科"]["kappa"]["estimate"] == pytest.approx(0.8)
    assert list(judge["by_difficulty"]) == ["low"]
    # One case is no interval (every resample is that case again): the estimate alone.
    one = score_review(load_review(folder), thresholds=(4, 5), n_criteria=N, seed=0)
    assert one["judges"][0]["by_subject"]["内科"]["cases"] == 2
    single = agreement({"c1": [(True, True), (False, True), (False, False)]})["kappa"]
    assert single.estimate == pytest.approx(0.4) and single.low != single.low and single.high != single.high
    # The headline beside: both sides say met on 20 of 40 rows; every answer has 5 met of its 10 on both sides.
    head = judge["headline"]
    assert head["rubric_accuracy"] == {"physicians": 0.5, "judge": 0.5} and head["complete_answers"] == 4
    assert head["metrics"]["pass@5"] == {"physicians": 1.0, "judge": 1.0} and head["metrics"]["cacs@4"]["judge"] == pytest.approx(2 / 7)
    assert result["physicians"]["P1"] == {"assigned": 40, "labelled": 40, "cannot_tell": 0, "files": ["physician_1.xlsx"],
                                         "unlabelled": 0, "left_out": {}, "extra_lines": {}}
    assert result["notes"] == ["review/physician_1.csv: no labels; physician 1's physician_1.xlsx is read instead".replace(
        "review/", str(folder) + "/")] and result["problems"] == []


def test_three_physicians_give_the_hand_worked_ceiling_and_their_majority(tmp_path):
    folder = export(tmp_path, [run_of()], reviewers=3, overlap=1.0, formats=("xlsx",))
    for p in (1, 2, 3):
        fill_xlsx(folder / f"physician_{p}.xlsx", lambda c, i, p=p: physician_met(c, i, p))
    result = score_review(load_review(folder))
    ceiling = result["physician_agreement"]
    assert ceiling["fleiss_rows"] == 40 and ceiling["fleiss_kappa"]["estimate"] == pytest.approx(97 / 112)
    assert ceiling["pairwise"]["P1-P2"]["kappa"]["estimate"] == pytest.approx(1.0)
    assert ceiling["pairwise"]["P1-P3"]["kappa"]["estimate"] == pytest.approx(0.8)
    assert ceiling["pairwise"]["P2-P3"]["rows"] == 40
    # The majority (2 of 3 say met on criterion 0) is physician 1's labelling: the judge's figures are unchanged.
    assert result["judges"][0]["overall"]["kappa"]["estimate"] == pytest.approx(0.7)


def test_ties_and_cannot_tell_are_counted_not_guessed(tmp_path):
    folder = export(tmp_path, [run_of()], reviewers=2, overlap=1.0, formats=("csv",))
    fill_csv(folder / "physician_1.csv", physician_met)
    # Physician 2 agrees except: says the opposite on criterion 1 (a tie on 4 rows) and cannot tell on criterion 6 (4 rows).
    fill_csv(folder / "physician_2.csv", lambda c, i: "无法判断" if i == 6 else (not physician_met(c, i)) if i == 1 else physician_met(c, i))
    result = score_review(load_review(folder))
    assert result["rows"] | {} == {"exported": 80, "items": 40, "labelled_items": 40, "with_reference": 36, "ties": 4, "cannot_tell": 0,
                                   "cut_texts": 0}
    assert result["physicians"]["P2"]["cannot_tell"] == 4 and result["judges"][0]["rows"] == 36
    # Cannot tell is no vote: physician 1 alone decides criterion 6.
    assert result["physician_agreement"]["pairwise"]["P1-P2"]["rows"] == 36


def test_every_judge_of_a_jury_and_of_several_runs_is_compared_on_shared_answers(tmp_path):
    jurors = {"juror-a": lambda i: i < 5, "juror-b": lambda i: i < 4 or i == 9, "juror-c": lambda i: i % 2 == 0}
    jury = ReviewRun("model-a (jury)", "/runs/jury.eval", "inspect",
                     [logged(panel_record([judged(c, j, rule) for j, rule in jurors.items()])) for c in CASES])
    lmeval = ReviewRun("model-a (lm-eval)", "/runs/samples_clinconsensus_x.jsonl", "lm-eval",
                       [logged(judged(c, "judge-y", lambda i: i < 4 or i == 9)) for c in CASES])
    other_model = ReviewRun("model-b", "/runs/b.eval", "inspect",
                            [logged(judged(c, "judge-x", lambda i: i < 5), answer=f"另一个模型的回答 {c}") for c in CASES])
    folder = export(tmp_path, [jury, lmeval, other_model])
    key = key_of(folder)
    # Same answers share rows: 4 cases x 10 criteria x 2 distinct answers.
    assert len(key["items"]) == 80
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    judges = {f"{j['run']} · {j['title']}": j for j in score_review(load_review(folder))["judges"]}
    assert sorted(judges) == ["model-a (jury) · juror 1", "model-a (jury) · juror 2", "model-a (jury) · juror 3",
                              "model-a (jury) · jury majority", "model-a (lm-eval) · judge", "model-b · judge"]
    # juror b and the lm-eval judge say exactly what the physicians say on cases 1-3 (on case 4 they differ on criteria 4, 9).
    assert judges["model-a (lm-eval) · judge"]["overall"]["percent_agreement"]["estimate"] == pytest.approx(38 / 40)
    assert judges["model-a (jury) · juror 2"]["overall"] == judges["model-a (lm-eval) · judge"]["overall"]
    assert judges["model-a (jury) · juror 1"]["overall"]["kappa"]["estimate"] == pytest.approx(0.7)
    # The panel: a, b, c majority; every judge compared on its own run's 40 rows only.
    assert all(j["rows"] == 40 for j in judges.values())


def test_the_gate_reads_a_runs_own_verdicts_on_the_reviewed_answers(tmp_path):
    run = run_of()
    folder = export(tmp_path, [run])
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    review = load_review(folder)
    found = run_agreement(run.records, review)
    assert found["rows"] == 40 and found["overall"]["kappa"]["estimate"] == pytest.approx(0.7)
    elsewhere = [logged(judged(c, "judge-x", lambda i: True), answer="别的回答") for c in CASES]
    assert run_agreement(elsewhere, review)["rows"] == 0


# -- bad sheets -------------------------------------------------------------------------------------


def test_every_bad_sheet_is_named_and_the_good_rows_are_kept(tmp_path):
    folder = export(tmp_path, [run_of()], reviewers=2, overlap=0.5)
    other = export(tmp_path, [run_of()], reviewers=2, overlap=0.5, seed=9, folder="other")
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    fill_xlsx(folder / "physician_2.xlsx", physician_met)
    book = load_workbook(folder / "physician_1.xlsx")
    sheet = book[SHEET]
    rid = {r: sheet.cell(row=r, column=1).value for r in range(2, 32)}
    sheet.cell(row=3, column=2).value += "（已修改）"                # question edited
    sheet.cell(row=4, column=3).value = "不同的回答"                  # answer edited
    sheet.cell(row=5, column=5).value = "yes"                         # a label not accepted
    sheet.cell(row=6, column=5).value = None                          # an empty label
    sheet.cell(row=7, column=4).value += "并说明剂量"                  # criterion edited (a changed word is an edit; a blank is not)
    sheet.delete_rows(8)                                              # a row deleted: rows below move up by one
    sheet.append(["", "新问题", "新回答", "新标准", "符合", ""])          # a row added without an id
    sheet.append(["7cc1139946-P1-9999", "q", "a", "c", "符合", ""])     # a row added with a made-up id
    sheet.append([rid[9], *[sheet.cell(row=8, column=c).value for c in range(2, 7)]])  # row 9 (now 8) duplicated, same label
    book.save(folder / "physician_1.xlsx")
    shutil.copy(other / "physician_2.xlsx", folder / "from_another_export.xlsx")
    # Physician 2 sent the CSV too, filled, disagreeing on one row with the XLSX.
    fill_csv(folder / "physician_2.csv", physician_met)
    with (folder / "physician_2.csv").open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    rows[1][4] = "符合" if rows[1][4] == "不符合" else "不符合"
    with (folder / "physician_2.csv").open("w", encoding="utf-8-sig", newline="") as handle:
        csv.writer(handle).writerows(rows)
    shutil.copy(folder / "physician_2.xlsx", folder / "physician_2 (copy).xlsx")  # the same physician's sheet, twice
    run_files = sorted(p.read_bytes() for p in folder.glob("*.json"))

    result = score_review(load_review(folder))
    problems = "\n".join(result["problems"])
    where = f"{folder}/physician_1.xlsx: sheet '评审 Review'"
    assert f"{where}, row 3, column B (问题 Question): row {rid[3]}: the question text differs from the exported one" in problems
    assert f"{where}, row 4, column C (回答 Answer): row {rid[4]}: the answer text differs" in problems
    assert f"{where}, row 7, column D (评分标准 Criterion): row {rid[7]}: the criterion text differs" in problems
    assert f"{where}, row 5, column E (判定 Label): row {rid[5]}: label 'yes' is not one of met / not met / cannot tell" in problems
    assert f"{where}, row 6, column E (判定 Label): row {rid[6]}: no label; not labelled" in problems
    assert f"{where}: row {rid[8]} is missing (deleted from the sheet?)" in problems
    assert f"{where}, row 31, column A (编号 Row ID): a row without a row id (added to the sheet?)" in problems
    assert f"{where}, row 32, column A (编号 Row ID): row id '7cc1139946-P1-9999' is not one this export wrote" in problems
    assert f"{where}, row 33, column A (编号 Row ID): row {rid[9]} again (first at row 8): a duplicated row" in problems
    assert f"{folder}/from_another_export.xlsx: sheet '评审 Review': a sheet of another export ({key_of(other)['export_id']}" in problems
    assert "physician 2: 3 filled sheets (physician_2 (copy).xlsx, physician_2.csv, physician_2.xlsx)" in "\n".join(result["notes"])
    assert f"{folder}/physician_2.csv, row 2, column E (判定 Label)" in problems and "two sheets of physician 2 disagree" in problems
    tally = result["physicians"]
    # Physician 1: 30 rows; 3 edited, 1 label not accepted, 1 empty, 1 deleted left out: 24 kept, each
    # assigned row counted once; the lines that are no assigned row (two added, a copy) apart.
    assert tally["P1"]["labelled"] == 24 and tally["P1"]["left_out"] == {"edited": 3, "label not accepted": 1, "no label": 1,
                                                                          "deleted": 1}
    assert tally["P1"]["extra_lines"] == {"added": 2, "duplicated": 1}
    assert tally["P2"]["labelled"] == 29 and tally["P2"]["left_out"] == {"two sheets disagree": 1}
    for t in tally.values():
        assert t["labelled"] + sum(t["left_out"].values()) == t["assigned"]
    assert sorted(p.read_bytes() for p in folder.glob("*.json")) == run_files  # nothing rewritten


def test_a_folder_without_a_key_and_a_second_export_into_it_are_refused(tmp_path, capsys):
    assert cli_main(["review", "score", str(tmp_path)]) == 2
    assert f"{tmp_path}: no review_key.json" in capsys.readouterr().err
    folder = export(tmp_path, [run_of()])
    with pytest.raises(Exception, match="already holds a review"):
        export(tmp_path, [run_of()])
    (folder / "notes.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (folder / "broken.xlsx").write_bytes(b"not a zip")
    problems = "\n".join(load_review(folder).problems)
    assert f"{folder}/notes.csv: the header row is ['a', 'b']" in problems and f"{folder}/broken.xlsx: cannot be read as a review sheet" in problems


def test_texts_a_spreadsheet_would_mangle_survive_the_round_trip(tmp_path):
    answers = {"c1": "=SUM(A1:A2) 不是公式", "c2": "-3 mmol/L 以下", "c3": "控制字符\x07在这里", "c4": "长" * (CELL_LIMIT + 10)}
    run = ReviewRun("m", "/runs/m.eval", "inspect", [logged(judged(c, "j", lambda i: i < 5), answer=answers[c]) for c in CASES])
    folder = export(tmp_path, [run])
    assert all(row.cells["answer"] for row in read_sheet(folder / "physician_1.xlsx").rows)
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    fill_csv(folder / "physician_1.csv", physician_met)
    result = score_review(load_review(folder))
    # Both files read back to the exported texts and agree on every label: nothing left out, a note says two were filled.
    assert result["problems"] == []
    assert "physician 1: 2 filled sheets (physician_1.csv, physician_1.xlsx); the rows they agree on or that one of them labelled are kept" in result["notes"]
    assert result["rows"]["cut_texts"] == 10 and result["judges"][0]["rows"] == 40
    raw = (folder / "physician_1.csv").read_text(encoding="utf-8-sig")
    assert "'=SUM(A1:A2)" in raw and "'-3 mmol/L" in raw


def test_review_score_cli_prints_tables_and_json(tmp_path, capsys):
    folder = export(tmp_path, [run_of()])
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    assert cli_main(["review", "score", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "model-a (inspect) · judge judge-x" in out and "0.700 [" in out and "40 with a physicians' reference" in out
    assert cli_main(["review", "score", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["judges"][0]["overall"]["kappa"]["estimate"] == pytest.approx(0.7)


def test_the_export_depends_on_the_seed_only(tmp_path):
    a = key_of(export(tmp_path, [run_of()], reviewers=2, overlap=0.5, folder="a", cases=3))
    b = key_of(export(tmp_path, [run_of()], reviewers=2, overlap=0.5, folder="b", cases=3))
    c = key_of(export(tmp_path, [run_of()], reviewers=2, overlap=0.5, folder="c", cases=3, seed=1))
    assert a["rows"] == b["rows"] and a["export_id"] == b["export_id"] and a["export_id"] != c["export_id"]
    assert hashlib.sha256(json.dumps(a["items"], sort_keys=True).encode()).hexdigest() == \
        hashlib.sha256(json.dumps(b["items"], sort_keys=True).encode()).hexdigest()


# == a review a release can rest on (issue 45): the gate on the interval, nothing lost, undefined is n/a ==


def strict_json(text: str):
    """Parse as a strict parser does: NaN and Infinity are refused."""
    return json.loads(text, parse_constant=lambda word: pytest.fail(f"not JSON: {word}"))


def gate(records, review, min_kappa: float) -> list[str]:
    facts = RunFacts("run.eval", "inspect", CLINCONSENSUS, physicians=run_agreement(records, review))
    return [p for p in run_problems(facts, ReleaseBar(min_kappa=min_kappa)) if "kappa" in p or "review" in p or "labels" in p]


# -- the gate on what the review can show ----------------------------------------------------------


def test_a_review_of_one_case_cannot_pass_a_kappa_even_at_full_agreement(tmp_path):
    # The case: 1 case, 4 criteria, 1 physician who labels exactly what the judge said.
    run = run_of()
    folder = export(tmp_path, [run], cases=1, criteria_per_case=4)
    fill_xlsx(folder / "physician_1.xlsx", lambda case, i: i < 5)
    found = run_agreement(run.records, load_review(folder))
    assert found["rows"] == 4 and found["overall"]["cases"] == 1
    assert math.isnan(found["overall"]["kappa"]["low"])  # one case: no interval, whatever the estimate
    (problem,) = gate(run.records, load_review(folder), 0.7)
    assert "kappa 1.000 [no interval: 1 case]" in problem and "too small a review to show kappa >= 0.7" in problem
    assert "the gate reads an interval from at least 10 cases and 100 rows with a physicians' reference" in problem
    assert "about 27 cases" in problem


def twelve_cases(judge_rule, count: int = 12) -> ReviewRun:
    """``count`` cases of one subject, each its own answer, ``judge_rule(case, i)`` the judge's verdicts."""
    records = []
    for n in range(count):
        case = f"d{n:02d}"
        graded = GradedCase.of_judge(case, "judge-x", "per_criterion", [CriterionJudgment(f"k{i}", judge_rule(case, i), "理由", 1)
                                                                       for i in range(N)], slices={"subject": ("内科",), "difficulty": ("low",)})
        records.append(LoggedCase(graded, f"病例 {case}：请问下一步？", f"回答 {case}", [(f"k{i}", f"第{i}项要点") for i in range(N)],
                                  {"subject": "内科"}, f"run.eval: {case}"))
    return ReviewRun("m", "/runs/m.eval", "inspect", records)


def test_the_gate_passes_on_the_lower_end_of_the_interval_not_the_estimate(tmp_path):
    # The judge says met for criteria 0-4; the physicians agree except on criterion 9 of every third case.
    run = twelve_cases(lambda c, i: i < 5)
    folder = export(tmp_path, [run], cases=12)
    fill_xlsx(folder / "physician_1.xlsx", lambda case, i: (i < 5) != (i == 9 and int(case[1:]) % 3 == 0))
    review = load_review(folder)
    kappa = run_agreement(run.records, review)["overall"]["kappa"]
    # 120 rows: tp 60, tn 56, fn 4 (physicians met, judge not); p_o 116/120; met shares 64/120 and 60/120.
    p_o, p_e = 116 / 120, (64 / 120) * (60 / 120) + (56 / 120) * (60 / 120)
    assert kappa["estimate"] == pytest.approx((p_o - p_e) / (1 - p_e)) and kappa["cases"] == 12
    assert kappa["low"] < kappa["estimate"]
    assert gate(run.records, review, round(kappa["low"] - 0.005, 3)) == []
    between = round((kappa["low"] + kappa["estimate"]) / 2, 3)
    (problem,) = gate(run.records, review, between)
    assert f"the interval's lower end {kappa['low']:.3f} is below --min-kappa {between:g}" in problem and "more) would bring" in problem


def test_a_physician_who_returned_nothing_and_an_unreadable_sheet_hold_the_gate(tmp_path):
    run = twelve_cases(lambda c, i: i < 5)
    folder = export(tmp_path, [run], cases=12, reviewers=2, overlap=0.0)
    fill_xlsx(folder / "physician_1.xlsx", lambda case, i: i < 5)
    (folder / "physician_9.xlsx").write_bytes(b"PK\x03\x04 torn in transfer")
    review = load_review(folder)
    assert review.not_returned == ["2"] and review.unreadable == [str(folder / "physician_9.xlsx")]
    problems = gate(run.records, review, 0.1)
    assert any("no usable labels back from P2 (no sheet, none filled, only 'cannot tell', or every row left out): the review's "
               "sample is not whole" in p for p in problems), problems
    assert any("1 sheet file(s) of the review could not be read as sheets" in p for p in problems), problems
    cov = score_review(review)["coverage"]
    assert cov["rows_assigned"] == 120 and cov["rows_labelled"] == 60 and cov["not_returned"] == ["P2"]


# -- nothing lost in silence -------------------------------------------------------------------------


def memory_review(tmp_path, url: str):
    run = run_of()
    write_review(plan_review([run], 4, None, 1, 0.0, 0), url)
    fs = fsspec.filesystem("memory")
    path = url.split("://", 1)[1].lstrip("/") + "/physician_1.xlsx"
    book = load_workbook(io.BytesIO(fs.cat_file(path)))
    key = json.loads(fs.cat_file(url.split("://", 1)[1].lstrip("/") + "/review_key.json"))
    for row in book[SHEET].iter_rows(min_row=2):
        item = key["items"][key["rows"][row[0].value]]
        row[4].value = "符合" if physician_met(item["case_id"], int(item["criterion_id"][1:])) else "不符合"
    out = io.BytesIO()
    book.save(out)
    fs.pipe_file(path, out.getvalue())
    return run


@pytest.mark.parametrize("typed", ["memory://rev-a/2026", "memory:///rev-a/2026"])
def test_a_review_folder_is_found_however_fsspec_spells_its_url(tmp_path, typed):
    fsspec.filesystem("memory").rm("/rev-a", recursive=True) if fsspec.filesystem("memory").exists("/rev-a") else None
    memory_review(tmp_path, "memory://rev-a/2026")
    result = score_review(load_review(typed))
    assert result["judges"][0]["overall"]["kappa"]["estimate"] == pytest.approx(0.7) and result["problems"] == []
    assert result["physicians"]["P1"]["files"] == ["physician_1.xlsx"]


def test_a_sheet_the_store_would_not_hand_over_is_an_error_naming_it(tmp_path, monkeypatch, capsys):
    # Stands in for a store refusing one object (s3fs raises PermissionError for AccessDenied) or timing out.
    fsspec.filesystem("memory").rm("/rev-b", recursive=True) if fsspec.filesystem("memory").exists("/rev-b") else None
    memory_review(tmp_path, "memory://rev-b/x")
    real = fsspec.implementations.memory.MemoryFileSystem.cat_file

    def refusing(self, path, *args, **kwargs):
        if str(path).endswith("physician_1.xlsx"):
            raise PermissionError("Access Denied")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(fsspec.implementations.memory.MemoryFileSystem, "cat_file", refusing)
    with pytest.raises(StorageError, match="physician_1.xlsx: the store refused access"):
        load_review("memory://rev-b/x")
    assert cli_main(["review", "score", "memory://rev-b/x"]) == 2
    assert "physician_1.xlsx: the store refused access (Access Denied)" in capsys.readouterr().err


# -- undefined is n/a ----------------------------------------------------------------------------------


def test_statistics_of_an_empty_class_are_undefined_not_zero():
    all_met = Confusion(tp=10)
    assert precision_recall_f1(all_met, True) == (1.0, 1.0, 1.0)
    assert all(math.isnan(x) for x in precision_recall_f1(all_met, False)) and math.isnan(macro_f1(all_met))
    assert precision_recall_f1(Confusion(tp=3, fn=2), False)[2] == 0.0  # "not met" said by one side only: F1 0, defined


def test_a_slice_where_everyone_says_met_prints_n_a_and_writes_null(tmp_path, capsys):
    run = run_of(rule=lambda i: True)
    folder = export(tmp_path, [run])
    fill_xlsx(folder / "physician_1.xlsx", lambda case, i: True)
    assert cli_main(["review", "score", str(folder), "--json"]) == 0
    judge = strict_json(capsys.readouterr().out)["judges"][0]["overall"]
    assert judge["kappa"]["estimate"] is None and judge["macro_f1"]["estimate"] is None and judge["percent_agreement"]["estimate"] == 1.0
    assert cli_main(["review", "score", str(folder)]) == 0
    assert "n/a" in capsys.readouterr().out


def test_the_case_draws_are_the_reports_index_draws_counted():
    draws = case_draws(5, resamples=3, seed=4)
    import numpy as np

    index = np.random.default_rng(4).integers(0, 5, size=(3, 5))
    assert draws.tolist() == [np.bincount(row, minlength=5).tolist() for row in index]


# -- the edges -----------------------------------------------------------------------------------------


def test_a_blank_copy_of_a_row_keeps_its_label_and_a_labelled_copy_fills_a_blank(tmp_path):
    folder = export(tmp_path, [run_of()])
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    book = load_workbook(folder / "physician_1.xlsx")
    sheet = book[SHEET]
    first, second = [c.value for c in sheet[2]], [c.value for c in sheet[3]]
    sheet.append([first[0], *first[1:4], None, None])  # a blank copy of a labelled row
    sheet.cell(row=3, column=5).value = None           # row 3 left blank ...
    sheet.append([second[0], *second[1:4], second[4], None])  # ... and labelled in its copy
    book.save(folder / "physician_1.xlsx")
    review = load_review(folder)
    assert review.physicians["1"].labelled == 40 and review.physicians["1"].left_out == {}
    assert review.physicians["1"].extra_lines == {"duplicated": 2}
    assert score_review(review)["judges"][0]["overall"]["kappa"]["estimate"] == pytest.approx(0.7)


def test_blanks_and_full_width_forms_are_no_edit(tmp_path):
    folder = export(tmp_path, [run_of()])
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    book = load_workbook(folder / "physician_1.xlsx")
    sheet = book[SHEET]
    sheet.cell(row=2, column=4).value += "  "                               # a trailing blank
    sheet.cell(row=3, column=2).value = " " + sheet.cell(row=3, column=2).value.replace("\n\n", "\n \n")
    sheet.cell(row=4, column=3).value = sheet.cell(row=4, column=3).value.replace("（", "(").replace("）", ")")  # NFKC forms
    book.save(folder / "physician_1.xlsx")
    review = load_review(folder)
    assert review.problems == [] and review.physicians["1"].labelled == 40


def test_a_criterion_the_run_lacks_is_no_verdict_not_a_failure(tmp_path):
    run = run_of()
    short = [logged(GradedCase.of_judge(r.graded.case_id, "judge-y", "per_criterion",
                                        [j for j in r.graded.judgments if j.criterion_id != "k9"], slices=r.graded.slices))
             for r in run.records]
    other = ReviewRun("model-a (lm-eval)", "/runs/a.jsonl", "lm-eval", short)
    folder = export(tmp_path, [run, other])
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    judges = {j["run"]: j for j in score_review(load_review(folder))["judges"]}
    lacking = judges["model-a (lm-eval)"]
    assert lacking["rows"] == 36 and lacking["judge_failures"] == 0 and lacking["no_verdict"] == 4
    assert judges["model-a (inspect)"]["rows"] == 40 and judges["model-a (inspect)"]["no_verdict"] == 0
    found = run_agreement(short, load_review(folder))
    assert found["rows"] == 36 and found["judge_failures"] == 0 and found["no_verdict"] == 4


def test_two_epochs_of_one_answer_are_each_a_judge_and_each_a_row(tmp_path):
    first = [logged(judged(c, "judge-x", lambda i: i < 5)) for c in ("c1", "c2")]
    again = []
    for c in ("c1", "c2"):
        g = judged(c, "judge-x", lambda i: i < 4)  # the second epoch's judging differs on criterion 4
        again.append(logged(GradedCase(**{**g.__dict__, "epoch": 2})))
    run = ReviewRun("m", "/runs/m.eval", "inspect", first + again)
    folder = export(tmp_path, [run], cases=2)
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    judges = {j["title"]: j for j in score_review(load_review(folder))["judges"]}
    assert set(judges) == {"judge (epoch 1)", "judge (epoch 2)"}
    assert judges["judge (epoch 1)"]["rows"] == judges["judge (epoch 2)"]["rows"] == 20
    assert run_agreement(run.records, load_review(folder))["rows"] == 40


def test_with_two_physicians_the_judge_is_also_measured_against_each(tmp_path):
    # Two physicians on every row; P2 differs from P1 on criterion 9: those rows are ties for the majority.
    folder = export(tmp_path, [run_of()], reviewers=2, overlap=1.0)
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    fill_xlsx(folder / "physician_2.xlsx", lambda case, i: physician_met(case, i) if i != 9 else not physician_met(case, i))
    (judge,) = score_review(load_review(folder))["judges"]
    assert judge["rows"] == 36  # 4 ties left out of the majority
    each = judge["by_physician_on_overlap"]
    assert each["P1"]["rows"] == 40 and each["P2"]["rows"] == 40
    assert each["P1"]["kappa"]["estimate"] == pytest.approx(0.7)  # P1 is the hand-worked labelling
    # P2: judge met on 0-4; P2 met on 0-3 of c1-c3 and on 0-4 and 9 of c4: tp 17, fn 1, fp 3, tn 19 of 40.
    p_o, p_e = 36 / 40, (18 / 40) * (20 / 40) + (22 / 40) * (20 / 40)
    assert each["P2"]["kappa"]["estimate"] == pytest.approx((p_o - p_e) / (1 - p_e))


# == the physicians' headline (issue 46): the run's metrics over every case as the physicians would give them ==


def physicians_of_twelve(case: str, i: int) -> bool:
    """Met on 0-4, but not on 0 in every third case, and also on 9 in even cases (per case 0.4 to 0.6)."""
    n = int(case[1:])
    return (i < 5 and not (n % 3 == 0 and i == 0)) or (i == 9 and n % 2 == 0)


def test_the_physicians_estimate_of_a_run_worked_by_hand(tmp_path):
    # The judge says met on criteria 0-4 of all 12 cases: its rubric accuracy is 0.5 over the run.
    # Four cases reviewed (all 10 criteria): each case's difference d = physicians' share - 0.5.
    # One stratum with 4 reviewed cases: estimate 0.5 + mean(d); variance (1 - 4/12) * s^2(d) / 4;
    # the interval's multiplier Student's t with 4 - 1 = 3 degrees of freedom (3.18245), not 1.96.
    run = twelve_cases(lambda c, i: i < 5)
    folder = export(tmp_path, [run], cases=4)
    fill_xlsx(folder / "physician_1.xlsx", physicians_of_twelve)
    drawn = sorted({item["case_id"] for item in key_of(folder)["items"].values()})
    d = [sum(physicians_of_twelve(c, i) for i in range(N)) / N - 0.5 for c in drawn]
    mean = sum(d) / 4
    se = math.sqrt((1 - 4 / 12) * sum((x - mean) ** 2 for x in d) / 3 / 4)
    assert se > 0  # the drawn cases differ
    (judge,) = score_review(load_review(folder), n_criteria=N)["judges"]
    est = judge["physicians_estimate"]
    ra = est["metrics"]["rubric_accuracy"]
    assert ra["judge"] == 0.5 and ra["cases"] == 12 and ra["reviewed_cases"] == 4 and ra["design"] == "subject x difficulty"
    assert ra["physicians"]["estimate"] == pytest.approx(0.5 + mean) and ra["physicians"]["stderr"] == pytest.approx(se)
    assert ra["physicians"]["low"] == pytest.approx(0.5 + mean - 3.182446305284263 * se)
    assert ra["bias"]["estimate"] == pytest.approx(-mean) and ra["bias"]["stderr"] == pytest.approx(se)
    assert ra["bias"]["high"] == pytest.approx(-mean + 3.182446305284263 * se)
    # Every criterion labelled: Pass@k and CACS@k too. With N = 10, k = 10: nobody meets all 10 (terms 0).
    assert est["complete_cases"] == 4 and set(est["metrics"]) == {"rubric_accuracy", "pass@10", "pass@7", "cacs@10", "cacs@7"}
    assert est["metrics"]["cacs@10"]["physicians"]["estimate"] == 0.0 and est["metrics"]["cacs@10"]["judge"] == 0.0
    # The gate reads the run's own records: the same figures.
    found = run_agreement(run.records, load_review(folder), n_criteria=N)
    assert found["physicians_estimate"]["metrics"]["rubric_accuracy"] == ra


def test_criteria_drawn_per_case_give_rubric_accuracy_only_and_say_why(tmp_path):
    run = twelve_cases(lambda c, i: i < 5)
    folder = export(tmp_path, [run], cases=4, criteria_per_case=3)
    fill_xlsx(folder / "physician_1.xlsx", physicians_of_twelve)
    (judge,) = score_review(load_review(folder), n_criteria=N)["judges"]
    est = judge["physicians_estimate"]
    assert list(est["metrics"]) == ["rubric_accuracy"] and "criteria were drawn per case" in est["why"]
    # The difference is taken on the drawn rows: judge and physicians on the same three criteria.
    key = key_of(folder)
    rows: dict[str, list[int]] = {}
    for item in key["items"].values():
        rows.setdefault(item["case_id"], []).append(int(item["criterion_id"][1:]))
    d = [sum(physicians_of_twelve(c, i) - (i < 5) for i in ids) / len(ids) for c, ids in rows.items()]
    assert est["metrics"]["rubric_accuracy"]["physicians"]["estimate"] == pytest.approx(0.5 + sum(d) / len(d))


def test_the_gate_holds_the_judges_bias_to_its_interval(tmp_path):
    # 24 cases, 12 reviewed (the gate reads an interval from at least 10).
    run = twelve_cases(lambda c, i: i < 5, count=24)
    folder = export(tmp_path, [run], cases=12)
    fill_xlsx(folder / "physician_1.xlsx", physicians_of_twelve)
    review = load_review(folder)
    facts = RunFacts("run.eval", "inspect", CLINCONSENSUS, physicians=run_agreement(run.records, review, n_criteria=N))
    est = facts.physicians["physicians_estimate"]["metrics"]["rubric_accuracy"]
    bias = est["bias"]
    assert est["reviewed_cases"] == 12 and est["cases"] == 24 and bias["low"] < bias["estimate"] < bias["high"]
    wide = math.ceil(100 * max(abs(bias["low"]), abs(bias["high"]))) + 1
    assert [p for p in run_problems(facts, ReleaseBar(max_judge_bias=wide)) if "bias" in p] == []
    (problem,) = [p for p in run_problems(facts, ReleaseBar(max_judge_bias=0.5)) if "bias" in p]
    assert f"the bias interval [{round(100 * bias['low'], 1):+.1f}, {round(100 * bias['high'], 1):+.1f}] is not within +-0.5 points" in problem
    assert "physicians' estimate" in problem and "from 12 of 24 cases reviewed" in problem
    # Four reviewed cases: an interval, but fewer cases than the gate reads; one: none at all.
    for cases in (4, 1):
        small = export(tmp_path, [run], cases=cases, folder=f"small-{cases}")
        fill_xlsx(small / "physician_1.xlsx", physicians_of_twelve)
        facts = RunFacts("run.eval", "inspect", CLINCONSENSUS, physicians=run_agreement(run.records, load_review(small), n_criteria=N))
        (problem,) = [p for p in run_problems(facts, ReleaseBar(max_judge_bias=50)) if "bias" in p]
        assert "too small a review to show the judge's bias within +-50 points" in problem, problem


def test_an_estimate_from_drawn_criteria_or_without_spread_is_not_exact(tmp_path):
    # Every case reviewed, two criteria of each: the cases' differences are themselves samples, so
    # the finite-population factor is dropped (the estimate is not exact for having every case).
    run = twelve_cases(lambda c, i: i < 5)
    folder = export(tmp_path, [run], cases=12, criteria_per_case=2)
    fill_xlsx(folder / "physician_1.xlsx", physicians_of_twelve)
    est = score_review(load_review(folder), n_criteria=N)["judges"][0]["physicians_estimate"]["metrics"]["rubric_accuracy"]
    key = key_of(folder)
    rows: dict[str, list[int]] = {}
    for item in key["items"].values():
        rows.setdefault(item["case_id"], []).append(int(item["criterion_id"][1:]))
    d = [sum(physicians_of_twelve(c, i) - (i < 5) for i in ids) / len(ids) for c, ids in rows.items()]
    mean = sum(d) / 12
    assert est["physicians"]["stderr"] == pytest.approx(math.sqrt(sum((x - mean) ** 2 for x in d) / 11 / 12))
    # The physicians label exactly what the judge said: no spread in any case, no interval (a sample, not a census).
    same = export(tmp_path, [run], cases=4, folder="same")
    fill_xlsx(same / "physician_1.xlsx", lambda c, i: i < 5)
    est = score_review(load_review(same), n_criteria=N)["judges"][0]["physicians_estimate"]["metrics"]["rubric_accuracy"]
    assert est["physicians"]["estimate"] == 0.5 and math.isnan(est["physicians"]["low"]) and "show no spread" in est["why"]


# -- no interval from a review without spread (issue 58, item 6) -----------------------------------------

SHARES = (3, 7, 1, 9, 6, 7)  # the judge's met criteria of 10, case by case: rubric accuracy 0.3 to 0.9, 0.55 over the run


def judge_of_shares(case: str, i: int) -> bool:
    return i < SHARES[int(case[1:]) % len(SHARES)]


NO_SPREAD_WHY = ("the 12 reviewed cases show no spread in the judge's error (within each stratum every case's difference is the same): "
                 "a sample without spread gives no interval; review more cases")


def test_a_review_agreeing_on_every_row_gives_no_bias_interval_and_the_gate_refuses_it(tmp_path, capsys):
    # 24 cases, 12 reviewed on 3 drawn criteria each, the physicians labelling exactly what the judge
    # said: every reviewed case's difference is 0. The estimator is given each case's reference as the
    # judge's census value plus the case's difference, (c + p) - p, and takes the difference back: a
    # case at 0.7 with 2 of its 3 drawn criteria met gives 1.1e-16, not 0. The formula's standard error
    # came out about 2e-17, not 0, and the gate passed a zero-width interval: "physicians' estimate
    # 0.550 [0.550, 0.550], judge's bias +0.0 points [+0.0, +0.0]" within +-2 points.
    run = twelve_cases(judge_of_shares, count=24)
    folder = export(tmp_path, [run], cases=12, criteria_per_case=3)
    fill_xlsx(folder / "physician_1.xlsx", judge_of_shares)
    rows: dict[str, list[int]] = {}
    for item in key_of(folder)["items"].values():
        rows.setdefault(item["case_id"], []).append(int(item["criterion_id"][1:]))
    census = {f"d{n:02d}": SHARES[n % len(SHARES)] / N for n in range(24)}
    shares = {c: sum(judge_of_shares(c, i) for i in ids) / len(ids) for c, ids in rows.items()}
    d = [(census[c] + shares[c] - shares[c]) - census[c] for c in rows]
    assert len(d) == 12 and 0 < math.sqrt(sum((x - sum(d) / 12) ** 2 for x in d) / 11 / 12) < 1e-16  # the rounding, reproduced
    found = run_agreement(run.records, load_review(folder), n_criteria=N)
    est = found["physicians_estimate"]["metrics"]["rubric_accuracy"]
    assert est["judge"] == est["physicians"]["estimate"] == pytest.approx(0.55) and est["bias"]["estimate"] == 0.0
    assert all(math.isnan(est[side][k]) for side in ("physicians", "bias") for k in ("stderr", "low", "high"))
    assert est["no_spread"] is True and est["why"] == NO_SPREAD_WHY and est["reviewed_cases"] == 12
    facts = RunFacts("run.eval", "inspect", CLINCONSENSUS, physicians=found)
    assert [p for p in run_problems(facts, ReleaseBar(max_judge_bias=2)) if "bias" in p] == [
        f"rubric accuracy: judge 0.550, physicians' estimate 0.550 [no interval: {NO_SPREAD_WHY}]: the review shows no spread, so "
        "there is no interval of the judge's bias for --max-judge-bias 2 to pass; more reviewed cases give one once their "
        "differences differ, and a review of every case of the run with every criterion (a census) gives the exact figure"]
    # review score: n/a in the table with the reason beside it, null in --json
    assert cli_main(["review", "score", str(folder), "--json"]) == 0
    (judge,) = strict_json(capsys.readouterr().out)["judges"]
    ra = judge["physicians_estimate"]["metrics"]["rubric_accuracy"]
    assert ra["physicians"]["low"] is None and ra["bias"]["low"] is None and ra["bias"]["stderr"] is None and ra["no_spread"] is True
    assert cli_main(["review", "score", str(folder)]) == 0
    (line,) = [t for t in capsys.readouterr().out.splitlines() if "rubric_accuracy" in t]
    assert "0.550 [no interval]" in line and "+0.0 [no interval]" in line and f"subject x difficulty: {NO_SPREAD_WHY}" in line


def test_a_review_with_spread_still_gives_its_bias_interval_and_the_gate_reads_it(tmp_path):
    # The same review, the physicians differing from the judge on one drawn row: that case's difference
    # is -1/3 (the judge met, the physicians not), the other eleven 0. Drawn criteria: no finite-population
    # factor. Mean -1/36; s^2 = ((1/3 - 1/36)^2 + 11 (1/36)^2) / 11 = 1/108; variance 1/108 / 12 = 1/1296,
    # standard error 1/36; Student's t with 12 - 1 = 11 degrees of freedom, 2.20099.
    run = twelve_cases(judge_of_shares, count=24)
    folder = export(tmp_path, [run], cases=12, criteria_per_case=3)
    items = sorted((item["case_id"], int(item["criterion_id"][1:])) for item in key_of(folder)["items"].values())
    flipped = next((c, i) for c, i in items if judge_of_shares(c, i))
    fill_xlsx(folder / "physician_1.xlsx", lambda c, i: judge_of_shares(c, i) != ((c, i) == flipped))
    found = run_agreement(run.records, load_review(folder), n_criteria=N)
    est = found["physicians_estimate"]["metrics"]["rubric_accuracy"]
    t_11 = 2.200985160082949
    assert est["no_spread"] is False and est["why"] == ""
    assert est["physicians"]["estimate"] == pytest.approx(0.55 - 1 / 36) and est["physicians"]["stderr"] == pytest.approx(1 / 36)
    assert (est["bias"]["low"], est["bias"]["high"]) == pytest.approx((1 / 36 - t_11 / 36, 1 / 36 + t_11 / 36))
    facts = RunFacts("run.eval", "inspect", CLINCONSENSUS, physicians=found)
    assert [p for p in run_problems(facts, ReleaseBar(max_judge_bias=9)) if "bias" in p] == []  # [-3.3, +8.9] within +-9
    assert [p for p in run_problems(facts, ReleaseBar(max_judge_bias=2)) if "bias" in p] == [
        "rubric accuracy: judge 0.550, physicians' estimate 0.522 [0.461, 0.583], judge's bias +2.8 points [-3.3, +8.9] from 12 of "
        "24 cases reviewed (subject x difficulty): the bias interval [-3.3, +8.9] is not within +-2 points (--max-judge-bias)"]


# -- a review agreeing on every row: the exact bound for no disagreement in n cases (issue 58, item 6) -------


def bound(n: int) -> float:
    return 1 - 0.05 ** (1 / n)  # the exact one-sided 95% bound for 0 of n cases


def agreeing_review(tmp_path, cases: int):
    """``cases`` of 30 cases reviewed (10 criteria each), the physicians labelling exactly what the judge
    said (met on criteria 0-4 of every case): no disagreement, chance agreement 0.5."""
    run = twelve_cases(lambda c, i: i < 5, count=30)
    folder = export(tmp_path, [run], cases=cases, folder=f"agree-{cases}")
    fill_xlsx(folder / "physician_1.xlsx", lambda c, i: i < 5)
    return run, folder


def test_a_review_agreeing_on_every_row_gives_the_exact_bound_not_a_zero_width_kappa(tmp_path, capsys):
    # The case bootstrap gives 1.000 [1.000, 1.000] from these 12 cases, and --min-kappa passed it at
    # any bar. The lower end is kappa at p_o = 1 - B(12) = 1 - 0.2209 with p_e = 0.5: 1 - 0.2209 / 0.5 = 0.558.
    run, folder = agreeing_review(tmp_path, 12)
    found = run_agreement(run.records, load_review(folder))
    kappa = found["overall"]["kappa"]
    assert found["rows"] == 120 and found["overall"]["cases"] == 12
    assert (kappa["estimate"], kappa["low"], kappa["high"]) == (1.0, pytest.approx(1 - bound(12) / 0.5), 1.0)
    assert kappa["low"] == pytest.approx(0.5581556161088883) and math.isnan(kappa["stderr"])
    assert kappa["zero_events"] == {"event": "disagreement", "cases": 12, "bound": pytest.approx(bound(12)), "chance": 0.5}
    for name in ("percent_agreement", "macro_f1", "precision_met", "recall_met"):
        assert (found["overall"][name]["low"], found["overall"][name]["high"]) == (pytest.approx(1 - bound(12)), 1.0), name
    # review score: the table prints the interval used and says so; --json writes it (null standard error)
    assert cli_main(["review", "score", str(folder), "--json"]) == 0
    overall = strict_json(capsys.readouterr().out)["judges"][0]["overall"]
    assert overall["kappa"]["stderr"] is None and overall["kappa"]["zero_events"]["cases"] == 12
    assert cli_main(["review", "score", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "1.000 [0.558, 1.000] (no disagreement in 12 cases: exact bound)" in out
    assert "1.000 [0.779, 1.000] (no disagreement in 12 cases: exact bound)" in out  # agreement, macro F1, precision, recall
    assert "[1.000, 1.000]" not in out
    # the report's section: the same
    from clinconsensus_tasks.report.review_section import review_section

    (table,) = [t for t in review_section(score_review(load_review(folder))).tables if t.title == "Each judge against the physicians' labels"]
    assert "1.000 [0.558, 1.000] (no disagreement in 12 cases: exact bound)" in table.rows[0]


@pytest.mark.parametrize("cases, min_kappa, passes", [(12, 0.55, True), (12, 0.7, False), (18, 0.7, False), (19, 0.7, True),
                                                      (28, 0.8, False), (29, 0.8, True)])
def test_the_gate_passes_a_review_without_disagreement_by_its_cases(tmp_path, cases, min_kappa, passes):
    # p_e = 0.5: the lower end is 1 - 2 B(n): 0.558 at 12 cases, 0.693 at 18, 0.708 at 19, 0.797 at 28,
    # 0.803 at 29. The cases that pass X: B <= (1 - X) / 2, 19 for 0.7 and 29 for 0.8.
    run, folder = agreeing_review(tmp_path, cases)
    found = run_agreement(run.records, load_review(folder))
    low = 1 - 2 * bound(cases)
    assert found["overall"]["kappa"]["low"] == pytest.approx(low) and found["rows"] == 10 * cases
    problems = gate(run.records, load_review(folder), min_kappa)
    if passes:
        assert problems == []
        return
    from clinconsensus_tasks.gates.physicians import physicians_text

    needed = {0.7: 19, 0.8: 29}[min_kappa]
    assert problems == [
        f"{physicians_text(found)}: the interval's lower end {low:.3f} is below --min-kappa {min_kappa:g} (with no disagreement, "
        f"{needed} cases ({needed - cases} more) would bring the exact bound's lower end to {min_kappa:g} at this chance agreement "
        "(0.500))"]
    assert problems[0].startswith(f"judge-physician kappa 1.000 [{low:.3f}, 1.000] (no disagreement in {cases} cases: exact bound), "
                                  f"macro F1 1.000 on {10 * cases} rows of {cases} cases")


def test_a_small_review_without_disagreement_is_refused_with_the_cases_it_needs(tmp_path):
    run, folder = agreeing_review(tmp_path, 8)
    (problem,) = gate(run.records, load_review(folder), 0.7)
    assert "kappa 1.000 [0.375, 1.000] (no disagreement in 8 cases: exact bound)" in problem
    assert problem.endswith("too small a review to show kappa >= 0.7 (the gate reads an interval from at least 10 cases and 100 rows "
                            "with a physicians' reference; with no disagreement, 19 cases (11 more) would bring the exact bound's "
                            "lower end to 0.7 at this chance agreement (0.500))")
    # --min-kappa 1: no sample shows it
    run, folder = agreeing_review(tmp_path, 20)
    (problem,) = gate(run.records, load_review(folder), 1.0)
    assert problem.endswith("the interval's lower end 0.722 is below --min-kappa 1 (no review of any size shows kappa >= 1 at its "
                            "interval's lower end: a sample leaves room for a disagreement)")


def test_every_case_has_the_same_chance_of_being_reviewed():
    # 30 cases from 36 uneven subjects: proportional quotas are mostly below one. Largest remainders
    # would give the same subjects the spare draws every time (some cases never reviewed, the
    # estimate biased where subjects differ); the export draws them at random by their fractions.
    import collections
    import random

    rng = random.Random(5)
    strata: dict[str, str] = {}
    for s in range(36):
        for _ in range(rng.randint(5, 45)):
            strata[f"c{len(strata)}"] = f"s{s}"
    n, draws = 30, 2000
    p = n / len(strata)
    counts = collections.Counter(case for seed in range(draws) for case in sample_cases(strata, n, seed))
    assert all(counts[c] > 0 for c in strata)
    z2 = [((counts[c] / draws - p) / math.sqrt(p * (1 - p) / draws)) ** 2 for c in strata]
    assert sum(z2) / len(z2) < 1.3  # about 1 when every case is drawn with probability n / N
    fixed = allocate({s: sum(1 for v in strata.values() if v == s) for s in set(strata.values())}, n)
    assert sum(1 for k in fixed.values() if k == 0) > 0  # the deterministic rule leaves subjects out of every draw


def test_a_row_id_pasted_over_another_row_counts_each_assigned_row_once(tmp_path):
    # Row A's id pasted over row B's: B's line now claims to be A (its texts are B's: edited), and B
    # is missing. A stays labelled, B is left out once (deleted), and the stray line is no row of its own:
    # labelled plus left out is the rows assigned, never more.
    folder = export(tmp_path, [run_of()])
    fill_xlsx(folder / "physician_1.xlsx", physician_met)
    book = load_workbook(folder / "physician_1.xlsx")
    sheet = book[SHEET]
    a = sheet.cell(row=2, column=1).value
    sheet.cell(row=3, column=1).value = a
    book.save(folder / "physician_1.xlsx")
    review = load_review(folder)
    tally = review.physicians["1"]
    assert tally.left_out == {"deleted": 1} and tally.extra_lines == {"edited": 1}
    assert tally.labelled + sum(tally.left_out.values()) == tally.assigned
    assert "sheet lines that are no assigned row: edited 1" in coverage_text(coverage(review))
