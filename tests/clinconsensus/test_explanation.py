"""What a reader sees of a graded case (the Inspect score's explanation, Markdown): every criterion,
every judge's verdict, disagreements marked, the reason; bounded and escaped whatever the texts."""

from __future__ import annotations

import time

from clinconsensus_tasks.scorers.clinconsensus.explanation import case_explanation
from clinconsensus_tasks.scorers.markdown import CELL_CHARS, cell
from clinconsensus_tasks.scorers.clinconsensus.jury import panel_record
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment as J

CRITERIA = [("c1", "是否建议完善心电图"), ("c2", "是否提及阿司匹林负荷剂量"), ("c3", "是否说明何时需要急诊")]


def graded(judge: str, verdicts, **fields) -> GradedCase:
    return GradedCase.of_judge("CASE-1", judge, "per_criterion", verdicts, **fields)


def test_one_judge_every_criterion_with_its_verdict_and_reason():
    record = graded("openai/gpt-4.1", [J("c1", True, "回答建议了心电图。"), J("c2", False, "未提及剂量。"),
                                       J("c3", None, error="HTTP 500 from the judge", error_kind="transport")])
    assert case_explanation(record, CRITERIA) == (
        "**1 of 3 criteria met** (judge openai/gpt-4.1); 1 failed judgment(s), counted as not met\n\n"
        "| # | criterion | judge | reason |\n|---|---|---|---|\n"
        "| c1 | 是否建议完善心电图 | met | 回答建议了心电图。 |\n"
        "| c2 | 是否提及阿司匹林负荷剂量 | **not met** | 未提及剂量。 |\n"
        "| c3 | 是否说明何时需要急诊 | **FAILED** (transport) | HTTP 500 from the judge |")


def test_two_judges_side_by_side_with_their_disagreements_marked():
    first = graded("openai/gpt-4.1", [J("c1", True, "有"), J("c2", False, "无"), J("c3", True, "有")])
    second = graded("judge-8b", [J("c1", True, "有"), J("c2", True, "有"), J("c3", None, error="no verdict", error_kind="unparseable")])
    text = case_explanation(first.with_role(SECOND_ROLE, second), CRITERIA)
    assert text.splitlines()[0] == ("**2 of 3 criteria met** (judge openai/gpt-4.1); second judge judge-8b: 2 met; "
                                    "1 disagreement(s) ≠")
    assert text.splitlines()[2:] == [
        "| # | criterion | judge | second judge | agree | reason |", "|---|---|---|---|---|---|",
        "| c1 | 是否建议完善心电图 | met | met |  | 有 |",
        "| c2 | 是否提及阿司匹林负荷剂量 | **not met** | met | ≠ | 无 |",
        "| c3 | 是否说明何时需要急诊 | met | **FAILED** (unparseable) |  | 有 |"]


def test_a_jury_shows_each_juror_beside_the_panel():
    jurors = [graded(name, [J("c1", v1, "."), J("c2", v2, "."), J("c3", v3, ".")])
              for name, (v1, v2, v3) in zip(("a", "b", "c"), [(True, True, False), (True, False, False), (False, True, False)])]
    rows = case_explanation(panel_record(jurors), CRITERIA).splitlines()[2:]
    assert rows[0] == "| # | criterion | judge | juror 1 | juror 2 | juror 3 | agree | reason |"
    assert rows[2] == "| c1 | 是否建议完善心电图 | met | met | met | **not met** | ≠ | 2 of 3 jurors: met |"
    assert rows[4] == "| c3 | 是否说明何时需要急诊 | **not met** | **not met** | **not met** | **not met** |  | 3 of 3 jurors: not met |"


def test_an_empty_answer_says_so():
    record = graded("j", [J("c1", False), J("c2", False), J("c3", False)], answer_empty=True)
    assert case_explanation(record, CRITERIA) == ("**0 of 3 criteria met** (judge j)\n\nThe answer is empty: no criterion is "
                                                  "met and nothing was sent to the judge.")


def test_a_cell_cannot_end_the_table_start_markup_or_grow_without_bound():
    hostile = "理由 | 伪造列\n\n| c9 | **met** |<script>alert(1)</script> [link](http://x) &gt; `code`"
    assert cell(hostile) == ("理由 \\| 伪造列 \\| c9 \\| \\*\\*met\\*\\* \\|<script>alert(1)</script> \\[link\\](http://x) "
                             "&gt; \\`code\\`")  # HTML is Inspect View's to escape (it shows tags as text)
    long = cell("很" * 10_000)
    assert len(long) == CELL_CHARS and long.endswith("…")
    # A judge's reason of any size: read in linear time, the explanation bounded.
    judgments = [J(f"c{i}", i % 2 == 0, "原因" * 2_000_000 if i == 0 else "x|" * 500) for i in range(30)]
    record = graded("j", judgments)
    started = time.perf_counter()
    text = case_explanation(record, [(f"c{i}", "标准" * 5_000) for i in range(30)])
    assert time.perf_counter() - started < 1.0
    assert len(text) < 30 * (4 * CELL_CHARS + 100) and text.count("\n") == 2 + 30 + 1
