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
import json
import shutil
from pathlib import Path

import pytest
from openpyxl import load_workbook

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.run_records.review import KEY_FILE, ReviewRun, load_review, plan_review, run_agreement, score_review, write_review
from clinconsensus_tasks.run_records.review_sheets import CELL_LIMIT, SHEET, read_sheet, shown_text
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
                                         "unlabelled": 0, "left_out": {}}
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
    sheet.cell(row=7, column=4).value += " "                          # criterion edited (a trailing blank is an edit)
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
    assert "physician 2: 3 filled sheets (physician_2 (copy).xlsx, physician_2.csv, physician_2.xlsx)" in problems
    assert f"{folder}/physician_2.csv, row 2, column E (判定 Label)" in problems and "two sheets of physician 2 disagree" in problems
    tally = result["physicians"]
    # Physician 1: 30 rows; 3 edited, 1 label not accepted, 1 empty, 1 deleted left out: 24 kept.
    assert tally["P1"]["labelled"] == 24 and tally["P1"]["left_out"] == {"edited": 3, "label not accepted": 1, "no label": 1,
                                                                          "deleted": 1, "added": 2, "duplicated": 1}
    assert tally["P2"]["labelled"] == 29 and tally["P2"]["left_out"] == {"two sheets disagree": 1}
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
    # Both files read back to the exported texts and agree on every label: the one line says two were filled.
    assert result["problems"] == ["physician 1: 2 filled sheets (physician_1.csv, physician_1.xlsx); the rows they agree on or "
                                  "that one of them labelled are kept"]
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
