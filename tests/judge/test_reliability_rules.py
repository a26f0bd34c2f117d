"""The judge asked again, its rules on values worked by hand: repeatability, invariance, the
headline's noise split, the answer-irrelevant edits, the stand-in judges with known behaviour, and
the release gate's flip-rate check (``scorers.reliability``, ``answer_forms``, ``gates.reliability``)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from clinconsensus_tasks.gates.bar import ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts
from clinconsensus_tasks.gates.reliability import flip_text, max_flip_rate
from clinconsensus_tasks.scorers.agreement import Interval, case_draws, fleiss_kappa
from clinconsensus_tasks.scorers.clinconsensus.answer_forms import CLOSING, TRANSFORMS, language, transform
from clinconsensus_tasks.scorers.reliability import AskedRow, headline_noise, invariance, repeatability
from clinconsensus_tasks.stand_in import candidate_answer
from clinconsensus_tasks.stand_in.judges import answer_content, flips_on, unsteady

T, F = True, False


def row(case, criterion, *asks, subject="心内", difficulty="low"):
    return AskedRow(case, f"{case}@0", criterion, subject, difficulty, tuple(asks))


def test_repeatability_worked_by_hand():
    # Case a: 3 rows, one flips (T, F); case b: 2 rows, none flips; one row of b failed an ask (left out).
    rows = [row("a", "1", T, F), row("a", "2", T, T), row("a", "3", F, F),
            row("b", "1", T, T, subject="儿科"), row("b", "2", F, F, subject="儿科"), row("b", "3", T, None, subject="儿科")]
    found = repeatability(rows, 2, resamples=200, seed=1)
    assert found["rows"] == 6 and found["rows_counted"] == 5 and found["rows_left_out"] == 1 and found["failed_asks"] == 1
    assert found["flip_rate"]["estimate"] == pytest.approx(1 / 5)
    assert found["pairwise_disagreement"]["estimate"] == pytest.approx(1 / 5)  # two asks: one pair a row
    # Fleiss' kappa over the rows both asks decided, each ask a rater: met votes 1, 2, 0, 2, 0.
    assert found["self_kappa"]["estimate"] == pytest.approx(fleiss_kappa([1, 2, 0, 2, 0], 2)) and found["self_kappa_rows"] == 5
    assert found["by"]["subject"]["心内"]["estimate"] == pytest.approx(1 / 3) and found["by"]["subject"]["儿科"]["estimate"] == 0.0
    assert found["flipped"] == [{"case_id": "a", "record": "a@0", "criterion_id": "1", "subject": "心内", "difficulty": "low",
                                 "asks": [True, False]}]
    # The interval resamples cases: per case (rows counted, flipped) = a (3, 1), b (2, 0).
    draws = case_draws(2, 200, 1)
    parts = draws @ np.array([[3.0, 1.0], [2.0, 0.0]])
    rates = parts[:, 1] / parts[:, 0]
    assert found["flip_rate"]["low"] == pytest.approx(np.percentile(rates, 2.5))
    assert found["flip_rate"]["high"] == pytest.approx(np.percentile(rates, 97.5)) and "zero_events" not in found["flip_rate"]


def test_a_flip_rate_grows_with_the_asks_and_the_pairwise_rate_does_not():
    # Three asks (T, T, F): the row flipped; 2 of its 3 pairs disagree; (T, T, T): none of 3.
    found = repeatability([row("a", "1", T, T, F), row("b", "1", T, T, T)], 3, resamples=50)
    assert found["flip_rate"]["estimate"] == pytest.approx(1 / 2)
    assert found["pairwise_disagreement"]["estimate"] == pytest.approx(2 / 6)


def test_undefined_is_nan_never_zero():
    # No row with two usable asks: no flip rate; one case: no interval; a judge that always says met: kappa undefined.
    assert math.isnan(repeatability([row("a", "1", T, None)], 2)["flip_rate"]["estimate"])
    one = repeatability([row("a", "1", T, F), row("a", "2", T, T)], 2)
    assert one["flip_rate"]["estimate"] == 0.5 and math.isnan(one["flip_rate"]["low"])
    steady = repeatability([row(c, "1", T, T) for c in "abc"], 2)
    assert steady["flip_rate"]["estimate"] == 0.0 and math.isnan(steady["self_kappa"]["estimate"])


def test_invariance_counts_each_direction():
    pairs = {"a": [(F, T), (F, T), (T, T)], "b": [(T, F), (F, F)]}
    found = invariance(pairs, resamples=100)
    assert found["rows"] == 5 and found["cases"] == 2
    assert found["flip_rate"]["estimate"] == pytest.approx(3 / 5)
    assert (found["up"]["estimate"], found["down"]["estimate"], found["net"]["estimate"]) == pytest.approx((2 / 5, 1 / 5, 1 / 5))


def test_headline_noise_worked_by_hand():
    # Three records with met counts 2, 4, 4 (N = 4, rubric accuracy m / 4); record r1 asked again
    # three times: 2, 3, 2. Pairs of asks: differences +1, 0, -1 (each taken both ways). The part
    # is the mean over differences and over the census of (f(m) - f(m + d))^2 / 2:
    #   d = 0: 0; d = +-1: f moves by 1/4 unless clipped: m = 4 + 1 stays 4 (0), so for d = +1 the
    #   records give (1/16, 0, 0) / 2, mean 1/96; for d = -1 every record moves: 1/32.
    #   Differences (both signs): +1, -1, 0, 0, -1, +1 -> mean of g = (2/96 + 2/32) / 6 = 1/72.
    census = {"r1": 2, "r2": 4, "r3": 4}
    asked = {"r1": [2, 3, 2]}
    boot = Interval(10 / 12, 0.1, 0.6, 1.0, 3)
    found = headline_noise(census, asked, {"r1": "c1", "r2": "c2", "r3": "c3"}, lambda m: m / 4, boot, n_criteria=4, resamples=50)
    assert found["estimate"] == pytest.approx(10 / 12)
    assert found["variance"]["total"] == pytest.approx(np.var([0.5, 1.0, 1.0], ddof=1))
    # one asked case: the part has no interval, so neither has the judge alone (an interval from one case is none)
    assert found["variance"]["judge"]["estimate"] == pytest.approx(1 / 72) and math.isnan(found["variance"]["judge"]["low"])
    assert found["judge_share"] == pytest.approx((1 / 72) / np.var([0.5, 1.0, 1.0], ddof=1))
    assert found["judge_alone"]["estimate"] == pytest.approx(10 / 12) and math.isnan(found["judge_alone"]["low"])
    assert found["cases_and_judge"] == boot.to_dict()
    # a second asked case, r2 asked 4, 4: no difference; the part is the mean over all the differences
    # (1/72 * 6 + 0 * 2) / 8, and the judge-alone interval reads the upper end of its interval
    two = headline_noise(census, {**asked, "r2": [4, 4]}, {"r1": "c1", "r2": "c2", "r3": "c3"}, lambda m: m / 4, boot, n_criteria=4,
                         resamples=50)
    part = two["variance"]["judge"]
    assert part["estimate"] == pytest.approx(1 / 72 * 6 / 8) and part["high"] > part["estimate"]
    assert two["judge_alone"]["low"] == pytest.approx(10 / 12 - 1.959963984540054 * math.sqrt(part["high"] / 3))
    assert two["judge_alone"]["high"] == pytest.approx(10 / 12 + 1.959963984540054 * math.sqrt(part["high"] / 3))
    # a mean of shares stays within them: every case met all four, one asked case once met three
    every = Interval(1.0, 0.0, 1.0, 1.0, 3)  # the run's interval when every case met all four
    full = headline_noise({"r1": 4, "r2": 4, "r3": 4}, {"r1": [4, 3], "r2": [4, 4]}, {"r1": "c1", "r2": "c2", "r3": "c3"},
                          lambda m: m / 4, every, n_criteria=4, resamples=50)
    assert full["variance"]["judge"]["estimate"] > 0 and full["judge_alone"]["high"] == 1.0 and full["judge_alone"]["low"] < 1.0
    # no variance among the cases: the judge's share of it is undefined (n/a), whatever the judge's part, 0 included
    assert full["variance"]["total"] == 0.0 and math.isnan(full["judge_share"])
    steady = headline_noise({"r1": 4, "r2": 4, "r3": 4}, {"r1": [4, 4], "r2": [4, 4]}, {"r1": "c1", "r2": "c2", "r3": "c3"},
                            lambda m: m / 4, every, n_criteria=4, resamples=50)
    assert steady["variance"]["judge"]["estimate"] == 0.0 and math.isnan(steady["judge_share"])
    # the headline is the run's as the report has it (the interval's estimate: each case's own judged
    # count, its epochs averaged), not the census's mean where the two differ
    other = headline_noise(census, asked, {"r1": "c1", "r2": "c2", "r3": "c3"}, lambda m: m / 4, Interval(0.8, 0.1, 0.6, 1.0, 3),
                           n_criteria=4, resamples=50)
    assert other["estimate"] == 0.8 and other["judge_alone"]["estimate"] == 0.8


def test_a_judge_that_never_changes_has_no_noise():
    census = {f"r{i}": m for i, m in enumerate([3, 10, 17, 25])}
    found = headline_noise(census, {"r0": [3, 3], "r1": [10, 10]}, {k: k for k in census}, lambda m: float(m >= 10),
                           Interval(0.75, 0.2, 0.25, 1.0, 4), resamples=50)
    assert found["variance"]["judge"]["estimate"] == 0.0 and found["judge_share"] == 0.0
    assert (found["judge_alone"]["low"], found["judge_alone"]["high"]) == (0.75, 0.75)


def test_equal_values_have_no_variance_to_share_however_numpy_rounds_it():
    # Seven records that each met 3 of 30 criteria: every value 0.1, whose variance numpy gives as
    # 2.2e-34. The judge's part is positive (one asked record moved 3 to 4): its share of a total
    # variance of 0 is undefined, not min(1, part / 2.2e-34) = 1.0; with a steady judge, not 0 / 2.2e-34 = 0.0.
    census = {f"r{i}": 3 for i in range(7)}
    case_of = {k: k for k in census}
    assert np.full(7, 0.1).var(ddof=1) > 0
    moved = headline_noise(census, {"r0": [3, 3], "r1": [3, 4], "r2": [3, 3]}, case_of, lambda m: m / 30, Interval.undefined(),
                           resamples=50)
    assert moved["variance"]["judge"]["estimate"] > 0 and moved["variance"]["total"] == 0.0 and moved["variance"]["cases"] == 0.0
    assert math.isnan(moved["judge_share"])
    steady = headline_noise(census, {"r0": [3, 3], "r1": [3, 3]}, case_of, lambda m: m / 30, Interval.undefined(), resamples=50)
    assert steady["variance"]["total"] == 0.0 and steady["variance"]["cases"] == 0.0 and math.isnan(steady["judge_share"])


# -- the edits ------------------------------------------------------------------------------------


def test_each_edit_changes_form_only():
    answer = "## 诊断\n\n- **高血压**可能性大\n- 建议复查血压。\n\n> 注意休息\n---\n1. 低盐饮食"
    assert transform("markdown", answer) == "诊断\n\n高血压可能性大\n建议复查血压。\n\n注意休息\n1. 低盐饮食"
    assert transform("closing", answer) == answer + "\n\n" + CLOSING["zh"]
    assert transform("line_breaks", answer) == "## 诊断\n- **高血压**可能性大\n- 建议复查血压。\n> 注意休息\n---\n1. 低盐饮食"
    assert transform("line_breaks", "第一段\n第二段") == "第一段\n\n第二段"
    assert transform("line_breaks", "您好。建议就医！") == "您好。\n建议就医！"
    assert transform("traditional", "建议复查血压") == "建議複查血壓"
    assert transform("closing", "Rest and drink water.") == "Rest and drink water.\n\n" + CLOSING["en"]
    assert language("建议每日服用阿司匹林 aspirin") == "zh" and language("aspirin 100 mg 每日") == "en"
    # nothing to remove, nothing to convert: the answer as it was (such a row is no test of the edit)
    assert transform("markdown", "plain text") == "plain text" and transform("traditional", "aspirin") == "aspirin"
    with pytest.raises(ValueError, match="unknown answer transform 'shout'"):
        transform("shout", "x")


def test_edits_read_any_text_in_linear_time_and_never_raise():
    for text in ("", "\n\n\n", "*" * 50_000, "**" + "a" * 50_000, "#" * 10_000 + " x", "。" * 20_000, "- " * 30_000, "\x00\ud7ff"):
        for name in TRANSFORMS:
            transform(name, text)
    big = ("**要点** 建议复查。\n- 注意\n\n" * 20_000)
    started = time.perf_counter()
    for name in TRANSFORMS:
        transform(name, big)
    assert time.perf_counter() - started < 5


# -- the stand-in judges with known behaviour ----------------------------------------------------


def test_the_stand_in_reads_content_not_form():
    for answer in (candidate_answer("头痛三天"), "## 诊断\n\n- **高血压**\n- 复查。", "Rest. Drink water.\n\nSee a doctor."):
        for name in TRANSFORMS:
            assert answer_content(transform(name, answer)) == answer_content(answer)
    # a one-line plain answer (every candidate answer) is read as it is: the verdicts of every earlier run stand
    plain = candidate_answer("头痛三天", 3000)
    assert answer_content(plain) == plain


def test_the_flipping_judge_flips_a_known_half_by_the_ask():
    answer = candidate_answer("头痛三天")
    criteria = [f"回答是否提到第{i}项要点。" for i in range(400)]
    assert 0.4 < sum(map(unsteady, criteria)) / 400 < 0.6
    flips = [flips_on("judge-flip30", answer, c, attempt) for c in criteria if unsteady(c) for attempt in range(1, 21)]
    assert 0.25 < sum(flips) / len(flips) < 0.35
    assert not any(flips_on("judge-flip30", answer, c, 2) for c in criteria if not unsteady(c))
    assert not any(flips_on("judge-model", answer, c, 2) for c in criteria)
    assert flips_on("judge-flip30", answer, criteria[0], 3) == flips_on("judge-flip30", answer, criteria[0], 3)  # seeded


# -- the gate --------------------------------------------------------------------------------------


def found(rate, low, high, rows=300, cases=10):
    return {"judge": "j", "repeatability": {"flip_rate": {"estimate": rate, "low": low, "high": high}, "repeat": 2,
                                            "rows_counted": rows, "cases": cases, "self_kappa": {"estimate": 0.9, "low": 0.8, "high": 0.95}}}


def facts(reliability):
    return RunFacts("run.eval", "inspect", "clinconsensus", reliability=reliability)


def test_the_gate_reads_the_upper_end_and_names_the_judge_that_falls_short():
    bar = ReleaseBar(max_flip_rate=0.05)
    assert max_flip_rate(facts(found(0.01, 0.0, 0.03)), bar) == []
    (short,) = max_flip_rate(facts(found(0.20, 0.15, 0.25)), bar)
    assert "the judge falls short: its whole interval lies above --max-flip-rate 0.05, so no check of any size would pass it" in short
    (wide,) = max_flip_rate(facts(found(0.03, 0.01, 0.07)), bar)
    assert "upper end 0.070 is above --max-flip-rate 0.05" in wide and "about 1200 rows (900 more)" in wide
    (small,) = max_flip_rate(facts(found(0.0, 0.0, 0.0, rows=60, cases=2)), bar)
    assert "too small a check to show a flip rate <= 0.05" in small
    (flat,) = max_flip_rate(facts(found(0.06, 0.04, 0.09)), bar)
    assert "the estimate itself is not below 0.05" in flat
    assert max_flip_rate(facts(None), bar) == [
        "--max-flip-rate needs the judge asked again for this run (--reliability DIR, made by clinconsensus-eval reliability RUN "
        "--output DIR)"]
    assert max_flip_rate(facts({"mismatch": "another judge"}), bar) == ["another judge"]
    assert max_flip_rate(facts(found(0.2, 0.15, 0.25)), ReleaseBar()) == []  # no bar asked
    assert "the judge asked again flips at most 0.05" in bar.accepts()


def test_an_asks_file_is_read_by_a_strict_grammar_and_never_raises(tmp_path):
    # Hand-edited or damaged asks files: only lines asked_line could have written are asks; a verdict
    # is true, false or null, so "yes" or 1 never becomes one; a file that is no UTF-8 is named.
    import json

    from clinconsensus_tasks.run_records.reliability_check import ASKS, read_asks

    good = {"unit": "u1", "judge": "j", "verdicts": {"c1": True, "c2": None}, "failures": {"c2": "timeout: "}, "usage": {"calls": 2}}
    lines = [json.dumps(good), json.dumps({**good, "unit": ["u2"]}), json.dumps({**good, "unit": "u3", "verdicts": {"c1": "yes"}}),
             json.dumps({**good, "unit": "u4", "verdicts": {"c1": 1}}), json.dumps({**good, "unit": "u5", "usage": []}), "[1, 2]",
             "{not json", "", json.dumps({**good, "verdicts": {"c1": False}}), json.dumps({"unit": "u6", "verdicts": {}})]
    (tmp_path / ASKS).mkdir()
    (tmp_path / ASKS / "000001-a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / ASKS / "000002-b.jsonl").write_bytes(b'{"unit": "u7", "verdicts": {}}\n\xff\xfe')
    asks, notes = read_asks(tmp_path)
    assert asks == {"u1": good, "u6": {"unit": "u6", "verdicts": {}}}
    first = tmp_path / ASKS / "000001-a.jsonl"
    assert notes == [f"{first}:2: not an ask (no unit name): left out",
                     f"{first}:3: not an ask (verdicts must map criterion ids to true, false or null): left out",
                     f"{first}:4: not an ask (verdicts must map criterion ids to true, false or null): left out",
                     f"{first}:5: not an ask (usage must be an object): left out",
                     f"{first}:6: not an ask (not a JSON object): left out",
                     f"{first}:7: not an ask (not a JSON object): left out",
                     f"{first}:9: u1 asked twice: the first answer kept",
                     f"{tmp_path / ASKS / '000002-b.jsonl'}: not UTF-8 text (byte 31): every ask in it left out"]


# -- a judge that never flipped: the exact bound for no flip in n cases (issue 58, item 6) -----------------


def never_flipped(cases: int, criteria: int = 10) -> list[AskedRow]:
    """``cases`` cases of ``criteria`` rows, each asked twice alike: met on the first half, not met on the rest."""
    return [row(f"c{k:02d}", str(i), i < criteria // 2, i < criteria // 2) for k in range(cases) for i in range(criteria)]


def bound(n: int) -> float:
    return 1 - 0.05 ** (1 / n)  # the exact one-sided 95% bound for 0 of n cases


def test_a_judge_that_never_flipped_gets_the_exact_bound_for_its_cases_not_a_zero_width_interval():
    # 12 cases of 10 rows, no flip: the case bootstrap's 0.000 [0.000, 0.000] would pass any bar.
    found = repeatability(never_flipped(12), 2, resamples=200)
    assert found["flip_rate"] == {"estimate": 0.0, "stderr": pytest.approx(math.nan, nan_ok=True), "low": 0.0,
                                  "high": pytest.approx(bound(12)), "cases": 12,
                                  "zero_events": {"event": "flip", "cases": 12, "bound": pytest.approx(bound(12))}}
    assert bound(12) == pytest.approx(0.2209221919455559)
    assert found["pairwise_disagreement"]["high"] == pytest.approx(bound(12))
    # self-kappa: every item unanimous, met on half: chance 0.5, lower end kappa at p_o = 1 - B
    kappa = found["self_kappa"]
    assert (kappa["estimate"], kappa["low"], kappa["high"]) == (1.0, pytest.approx(1 - bound(12) / 0.5), 1.0)
    assert kappa["zero_events"]["chance"] == 0.5
    assert flip_text({"judge": "j", "repeatability": found}) == (
        "judge j flips 0.000 [0.000, 0.221] (no flip in 12 cases: exact bound) of its rows asked 2 times (120 rows of 12 cases; "
        "self-kappa 1.000 [0.558, 1.000] (no flip in 12 cases: exact bound))")
    # each slice's rate over its own cases
    assert found["by"]["subject"]["心内"]["high"] == pytest.approx(bound(12))
    # an edit that moved no verdict: every share bounded, net within +-B
    edits = invariance({f"c{k}": [(T, T), (F, F)] for k in range(30)}, resamples=100)
    assert [edits[k]["high"] for k in ("flip_rate", "up", "down", "net")] == [pytest.approx(bound(30))] * 4
    assert edits["net"]["low"] == pytest.approx(-bound(30)) and edits["up"]["zero_events"]["event"] == "flip to met"
    # one edit moved up only: up keeps its bootstrap, down (none) gets the bound
    moved = invariance({**{f"c{k}": [(T, T), (F, F)] for k in range(29)}, "c29": [(F, T), (F, F)]}, resamples=100)
    assert "zero_events" not in moved["up"] and "zero_events" not in moved["net"] and moved["down"]["high"] == pytest.approx(bound(30))


@pytest.mark.parametrize("cases, bar, passes", [(59, 0.05, True), (30, 0.05, False), (29, 0.1, True), (28, 0.1, False),
                                                (14, 0.2, True), (13, 0.2, False)])
def test_the_gate_passes_a_judge_without_flips_by_its_cases(cases, bar, passes):
    # The upper end is 1 - 0.05 ** (1 / n): 0.0495 at 59 cases, 0.0950 at 30, 0.0981 at 29, 0.1014 at
    # 28, 0.1926 at 14, 0.2057 at 13; the refusal names the cases that would pass (0.05: 59, 0.1: 29, 0.2: 14).
    found = {"judge": "j", "repeatability": repeatability(never_flipped(cases), 2, resamples=100)}
    problems = max_flip_rate(facts(found), ReleaseBar(max_flip_rate=bar))
    if passes:
        assert problems == []
        return
    needed = {0.05: 59, 0.1: 29, 0.2: 14}[bar]
    assert problems == [
        f"{flip_text(found)}: the interval's upper end {bound(cases):.3f} is above --max-flip-rate {bar:g} (with no flip, "
        f"{needed} cases ({needed - cases} more) would bring the exact bound's upper end to {bar:g})"]
    assert f"0.000 [0.000, {bound(cases):.3f}] (no flip in {cases} cases: exact bound)" in problems[0]


def test_the_gate_on_a_small_check_without_flips_names_the_cases_and_a_bar_of_0_is_never_shown():
    small = {"judge": "j", "repeatability": repeatability(never_flipped(5), 2, resamples=100)}
    assert max_flip_rate(facts(small), ReleaseBar(max_flip_rate=0.05)) == [
        f"{flip_text(small)}: too small a check to show a flip rate <= 0.05 (the gate reads an interval from at least 10 asked "
        "cases and 100 rows; with no flip, 59 cases (54 more) would bring the exact bound's upper end to 0.05)"]
    # 40 cases of 2 rows: cases enough, rows not (80 < 100); the bound alone would pass 0.1
    few_rows = {"judge": "j", "repeatability": repeatability(never_flipped(40, criteria=2), 2, resamples=100)}
    (problem,) = max_flip_rate(facts(few_rows), ReleaseBar(max_flip_rate=0.1))
    assert "too small a check to show a flip rate <= 0.1 (the gate reads an interval from at least 10 asked cases and 100 rows; " \
           "with no flip, 29 cases would bring the exact bound's upper end to 0.1)" in problem
    steady = {"judge": "j", "repeatability": repeatability(never_flipped(300), 2, resamples=50)}
    assert max_flip_rate(facts(steady), ReleaseBar(max_flip_rate=0.0)) == [
        f"{flip_text(steady)}: the interval's upper end 0.010 is above --max-flip-rate 0 (no check of any size shows a flip rate "
        "<= 0 at its interval's upper end: a sample leaves room for a flip)"]
