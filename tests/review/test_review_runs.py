"""The physicians' review from real runs of both frameworks, as a clinical team runs it.

An Inspect run with two judges (the stand-in's ``judge-model`` as the grader and ``judge-alt``,
which disagrees with it on a fixed fifth of the criteria, as the second judge) and an lm-eval run
of the same model and grader, both against the project's stand-in server on 127.0.0.1 (it stands
in for the model's and the judges' endpoints: a vLLM server or a hosted API, over real HTTP). Then
the commands a team types: ``review export`` from the two output folders, the sheets filled with
openpyxl as physicians fill them, ``review score``, ``summarize --strict --review --min-kappa`` on
each framework's run, and ``report --review`` opened in headless Chromium.

The physicians' labels are planted: the stand-in's own rule for each (answer, criterion) pair
(``oracle_verdict``, what ``judge-model`` says), flipped on the criteria whose id ends in 3 or 7.
Every judge's figures are then worked out here from the labels and the rule, independently of the
review code.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from openpyxl import load_workbook

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.run_records.review_export import KEY_FILE
from clinconsensus_tasks.run_records.review_sheets import SHEET
from clinconsensus_tasks.scorers.agreement import Confusion, cohen_kappa, macro_f1
from clinconsensus_tasks.stand_in import oracle_verdict
from frameworks import run_lmeval

pytestmark = pytest.mark.slow


def flipped(criterion_id: str) -> bool:
    return criterion_id[-1] in "37"


def physician_label(answer: str, criterion: str, criterion_id: str) -> bool:
    return oracle_verdict(answer, criterion) != flipped(criterion_id)


@pytest.fixture
def campaign(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model",
                       model_roles={"grader": "openai-api/judge/judge-model", "local_grader": "openai-api/judge/judge-alt"},
                       log_dir=str(tmp_path / "inspect"), display="none")[0]
    assert log.status == "success", log.error
    # A jury of three (two say what judge-model says, judge-alt dissents on a fifth): its majority is judge-model's verdicts.
    jury = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/panel-model",
                        model_roles={"grader": [f"openai-api/judge/{j}" for j in ("judge-model", "judge-alt", "judge-other")]},
                        log_dir=str(tmp_path / "inspect-jury"), display="none")[0]
    assert jury.status == "success", jury.error
    run_lmeval(fake_server.base_url, tmp_path / "lmeval")
    runs = {p: p.read_bytes() for name in ("inspect", "inspect-jury", "lmeval") for p in (tmp_path / name).rglob("*.*")}
    return tmp_path, runs


def fill(folder: Path) -> dict[str, bool]:
    """Every sheet filled with the planted labels, as a physician types them (Chinese, a stray blank);
    returns the label of each row id."""
    key = json.loads((folder / KEY_FILE).read_text(encoding="utf-8"))
    labels = {}
    for path in sorted(folder.glob("physician_*.xlsx")):
        book = load_workbook(path)
        for row in book[SHEET].iter_rows(min_row=2):
            item = key["items"][key["rows"][row[0].value]]
            met = physician_label(row[2].value, row[3].value, item["criterion_id"])
            row[4].value = "符合 " if met else " 不符合"
            labels[row[0].value] = met
        book.save(path)
    return labels


def test_a_team_reviews_its_judges_from_both_frameworks_runs(campaign, capsys):
    root, runs = campaign
    folder = root / "review"
    assert cli_main(["review", "export", str(root / "inspect"), str(root / "inspect-jury"), str(root / "lmeval"), "--output", str(folder), "--cases", "12",
                     "--reviewers", "2", "--overlap", "0.5", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    # The three runs' answers are the same (the stand-in answers a question one way): they share their rows.
    assert "12 cases, 360 rows to label, 7 judge(s) of 3 run(s) to compare" in printed
    fill(folder)
    assert cli_main(["review", "score", str(folder), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    key = json.loads((folder / KEY_FILE).read_text(encoding="utf-8"))

    # Worked out here: each judge's verdict per row from the stand-in's rule, against the planted labels.
    texts = _texts(folder)
    row_of = {item: rid for rid, item in key["rows"].items()}  # one sheet row per item is enough (overlap rows are alike)

    def expected(judge: str) -> Confusion:
        pairs = []
        for item_id, item in key["items"].items():
            answer, criterion = texts[row_of[item_id]]
            pairs.append((physician_label(answer, criterion, item["criterion_id"]), oracle_verdict(answer, criterion, judge)))
        return Confusion.of(pairs)

    judges = {(j["run"], j["title"]): j for j in result["judges"]}
    assert set(judges) == {("cand-model (inspect)", "judge"), ("cand-model (inspect)", "second judge"), ("cand-model (lm-eval)", "judge"),
                           ("panel-model", "jury majority"), ("panel-model", "juror 1"), ("panel-model", "juror 2"), ("panel-model", "juror 3")}
    assert judges[("panel-model", "juror 2")]["judge"] == "openai-api/judge/judge-alt"
    for (framework, title), judge in judges.items():
        confusion = expected("judge-alt" if title in ("second judge", "juror 2") else "judge-model")
        assert judge["rows"] == 360 and judge["judge_failures"] == 0 and judge["no_verdict"] == 0, (framework, title)
        assert judge["overall"]["kappa"]["estimate"] == pytest.approx(cohen_kappa(confusion))
        assert judge["overall"]["macro_f1"]["estimate"] == pytest.approx(macro_f1(confusion))
        assert judge["overall"]["kappa"]["low"] <= judge["overall"]["kappa"]["estimate"] <= judge["overall"]["kappa"]["high"]
    # The same answers and verdicts give the same figures from both frameworks, intervals included.
    assert judges[("cand-model (inspect)", "judge")]["overall"] == judges[("cand-model (lm-eval)", "judge")]["overall"]
    assert judges[("panel-model", "jury majority")]["overall"] == judges[("cand-model (inspect)", "judge")]["overall"]
    assert result["physician_agreement"]["pairwise"]["P1-P2"]["kappa"]["estimate"] == pytest.approx(1.0)
    # 6 shared cases (180 rows) for both, the other 6 cases split 3 and 3 (the least loaded first, ties to the lower number).
    assert {p: t["labelled"] for p, t in result["physicians"].items()} == {"P1": 270, "P2": 270}
    assert result["coverage"] == {"rows_assigned": 540, "rows_labelled": 540, "rows_cannot_tell": 0, "left_out": {}, "extra_lines": {},
                                  "not_returned": [], "short": {}, "unreadable": []}
    assert result["problems"] == []
    kappa = judges[("cand-model (inspect)", "judge")]["overall"]["kappa"]

    # The gate: each framework's run, its judge against the physicians, held to the LOWER end of the kappa's interval.
    line = (f"judge-physician kappa {kappa['estimate']:.3f} [{kappa['low']:.3f}, {kappa['high']:.3f}], macro F1 "
            f"{judges[('cand-model (inspect)', 'judge')]['overall']['macro_f1']['estimate']:.3f} on 360 rows of 12 cases (0 failed "
            "judgments, 0 criteria the run lacks left out); review: 540 of 540 assigned rows labelled")
    between = round((kappa["low"] + kappa["estimate"]) / 2, 3)  # above the lower end, below the estimate: refused
    assert kappa["low"] < between < kappa["estimate"]
    for run in (str(root / "inspect"), str(root / "lmeval")):
        code = cli_main(["summarize", "--strict", run, "--review", str(folder), "--min-kappa", str(between)])
        out = capsys.readouterr().out
        assert code == 1
        assert f"{line}: the interval's lower end {kappa['low']:.3f} is below --min-kappa {between:g}" in out, out
        assert cli_main(["summarize", "--strict", run, "--review", str(folder), "--min-kappa", str(round(kappa["low"] - 0.01, 3))]) == 1
        out = capsys.readouterr().out  # the bundled sample still fails the release profile, but not for its judge
        assert "--min-kappa" not in out.replace("at its interval's lower end (--min-kappa)", "") and f"{line} (review {folder})" in out, out
        # --json: the same verdict, with the physicians' figures the run was read with (issue 58, item 8a)
        assert cli_main(["summarize", "--strict", run, "--review", str(folder), "--min-kappa", str(between), "--json"]) == 1
        (verdict,) = json.loads(capsys.readouterr().out)["runs"]
        assert verdict["verdict"] == "FAIL" and verdict["headline"] is None and verdict["physicians"]["rows"] == 360
        assert any(p.startswith(f"{line}: the interval's lower end {kappa['low']:.3f} is below --min-kappa {between:g}")
                   for p in verdict["problems"])  # the FAIL line's words

    # The report's section, in a real browser.
    page = root / "out" / "report.html"
    assert cli_main(["report", str(root / "inspect"), str(root / "inspect-jury"), str(root / "lmeval"), "--review", str(folder), "--output", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "Judges against physicians" in html and f"{kappa['estimate']:.3f} [{kappa['low']:.3f}, {kappa['high']:.3f}]" in html
    assert "Physicians with each other" in html
    _screenshot(page, root)
    assert {p: p.read_bytes() for p in runs} == runs  # nothing of the runs was rewritten


def _texts(folder: Path) -> dict[str, tuple[str, str]]:
    """Each row id's answer and criterion as the sheets show them."""
    out = {}
    for path in folder.glob("physician_*.xlsx"):
        for row in load_workbook(path, read_only=True)[SHEET].iter_rows(min_row=2, values_only=True):
            out[row[0]] = (row[2], row[3])
    return out


def _screenshot(page: Path, root: Path) -> None:
    chromium = "/usr/bin/chromium"
    if not Path(chromium).exists():
        pytest.fail("headless Chromium is missing: bash .ci/install_report_deps.sh")
    png = root / "review.png"
    shot = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={root / 'profile'}",
                           f"--screenshot={png}", "--window-size=1400,2600", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and png.stat().st_size > 10_000, shot.stderr[-2000:]
