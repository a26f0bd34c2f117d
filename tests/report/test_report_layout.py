"""What a model builder sees in the report, without a server: records built by hand stand in for
the logs of real runs (the readers are tested against real runs in ``test_report.py``).

Each test pins one thing that used to mislead a reader: identical runs hiding each other, empty
answers missing from the leaderboard, provenance filling half the page, a test probe in the title.
"""

from __future__ import annotations

import re

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.report.html_report import render_html
from clinconsensus_tasks.report.runs import ClinRun, MedRun, Runs, _mark_identical
from clinconsensus_tasks.report.sections import Section, leaderboard, metadata_section
from clinconsensus_tasks.report.svg import line_chart, radar_chart
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment


def _case(case_id: str, met: int, empty: bool = False) -> LoggedCase:
    """A graded case of 30 criteria, ``met`` of them met (an empty answer: none, never judged)."""
    judgments = tuple(CriterionJudgment(str(i), (i < met) and not empty, "", attempts=0 if empty else 1) for i in range(30))
    return LoggedCase(GradedCase.of_judge(case_id, "judge-model", "per_criterion", judgments, answer_empty=empty), where=case_id)


def test_a_model_that_left_answers_empty_is_flagged_in_the_leaderboard():
    # Stands in for a model behind a failing endpoint: 2 of its 3 answers came back empty.
    weak = ClinRun.of("weak-model", "w.eval", [_case("a", 12), _case("b", 12), _case("c", 12)])
    empty = ClinRun.of("empty-model", "e.eval", [_case("a", 12), _case("b", 0, empty=True), _case("c", 0, empty=True)])
    table, notes = leaderboard([weak, empty], resamples=50, seed=0)
    column = table.header.index("empty answers")
    assert [row[column] for row in table.rows] == ["0", "2 of 3 ⚠"]
    assert [n for n in notes if n.startswith("⚠ empty-model: 2 of 3 answers were empty")]
    assert not [n for n in notes if "weak-model" in n]


def test_identical_runs_are_said_and_drawn_apart():
    # Stands in for one model's answers graded alike by Inspect and lm-eval.
    cases = [_case("a", 12), _case("b", 20)]
    runs = [ClinRun.of("m (inspect)", "x.eval", cases), ClinRun.of("m (lm-eval)", "x.jsonl", list(cases)), ClinRun.of("other", "o.eval", [_case("a", 3)])]
    _mark_identical(runs)
    assert [r.same_as for r in runs] == ["", "m (inspect)", ""]
    _, notes = leaderboard(runs, resamples=20, seed=0)
    assert "m (lm-eval) has exactly the same verdicts on every case as m (inspect); in the charts its line is dashed over the other's." in notes
    items = [ItemResult("1", "BKT", 1.0, True), ItemResult("2", "SSO", 0.5, True)]
    med = [MedRun("e (inspect)", "e.eval", items), MedRun("e (lm-eval)", "e.jsonl", list(items))]
    _mark_identical(med)
    assert med[1].same_as == "e (inspect)"

    svg = line_chart({r.name: r.curve() for r in runs}, list(range(1, 31)), "curve", "CACS@k")
    lines = re.findall(r"<polyline [^>]*>", svg)
    assert ["stroke-dasharray" in line for line in lines] == [False, True, False]
    assert ">m (lm-eval) = m (inspect)</text>" in svg
    radar = radar_chart(["a", "b", "c"], {"x": {"a": 0.1, "b": 0.2, "c": 0.3}, "y": {"a": 0.1, "b": 0.2, "c": 0.3}}, "r")
    polygons = re.findall(r'<polygon [^>]*fill-opacity[^>]*>', radar)
    assert ["stroke-dasharray" in p for p in polygons] == [False, True]


def test_provenance_is_compact_and_the_rest_is_collapsed():
    # Stands in for a CliMedBench run: 13 scenario files as the data source.
    sources = {code: f"/very/long/path/to/the/bundled/climedbench/data/{code}.jsonl" for code in
               ("ID1", "ID2", "ID3", "ID4", "BKT", "FIT", "FTT", "DS", "MC", "SSO", "CPR", "KE", "CS")}
    run = MedRun("m", "/logs/2026-01-01T00-00-00_climedbench_x.eval", [ItemResult("1", "BKT", 1.0, True)],
                 {"framework": "inspect", "task": "climedbench", "data_source": sources, "packages": {"inspect_ai": "0.3"}})
    section = metadata_section(Runs(med=[run]))
    glance = section.tables[0]
    assert glance.title == "Runs at a glance" and not glance.collapsed
    assert glance.rows == [["m", "inspect", "climedbench", "–", "13 scenario files in /very/long/path/to/the/bundled/climedbench/data",
                            "2026-01-01T00-00-00_climedbench_x.eval"]]
    full = section.tables[1]
    assert full.title == "Runs" and full.collapsed
    assert full.rows[0][7].splitlines()[0] == "ID1: /very/long/path/to/the/bundled/climedbench/data/ID1.jsonl"  # no JSON dump
    page = render_html([section], "t")
    assert page.count("<details>") == 2 and "<summary>Runs</summary>" in page and '"ID1"' not in page


def test_the_tab_shows_the_title_and_the_layout_probe_writes_to_the_body():
    page = render_html([Section("s")], "my report")
    assert "<title>my report</title>" in page
    assert "document.title" not in page and "data-rendered" in page


def test_compare_models_prints_fractions_and_says_what_the_gate_checks():
    # Stands in for a regression gate run in CI: the table a reader sees next to summarize's.
    from clinconsensus_tasks.gates.regression import Comparison, format_table
    from clinconsensus_tasks.scorers.paired import PairedResult

    comparison = Comparison("base.eval", "cand.eval", "clinconsensus", 12, [], [], [], {"baseline": ["j"], "candidate": ["j"]},
                            {"cacs@10": PairedResult(0.3611, 0.25, -0.1111, (-0.2, -0.03), 0.01, False, 12),
                             "rubric_accuracy": PairedResult(0.5528, 0.5528, 0.0, (0.0, 0.0), 1.0, True, 12)},
                            gates={"cacs@10": 0.0, "rubric_accuracy": 0.02}, failed=["cacs@10"])
    lines = format_table(comparison).splitlines()
    row = next(line for line in lines if line.startswith("cacs@10"))
    assert row.split()[1:6] == ["0.3611", "0.2500", "-0.1111", "[-0.2000,", "-0.0300]"]
    assert row.endswith("FAIL (fails if worse with the CI below 0)")
    assert next(line for line in lines if line.startswith("rubric_accuracy")).endswith(
        "pass (fails if worse by more than 0.0200 with the CI below 0)")
    assert "values are fractions, as the frameworks and summarize print them" in lines[-2]


def test_a_chart_of_one_bar_holds_its_whole_title():
    # The review chart of one judge was cut off: its width followed the one bar, not the title.
    from clinconsensus_tasks.report.svg import bar_chart, text_width

    title = "Judges against physicians: Cohen's kappa and macro F1"
    svg = bar_chart(["#1"], {"Cohen's kappa": [0.7], "macro F1": [0.8]}, title)
    width = float(re.search(r'<svg[^>]* width="(\d+)"', svg).group(1))
    x = float(re.search(r'<text x="([\d.]+)"[^>]*>' + re.escape(title.replace("'", "&#x27;")), svg).group(1))
    half = text_width(title, 14) / 2
    assert x - half >= 0 and x + half <= width, (x, half, width)
