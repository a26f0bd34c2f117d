"""The physicians' checks of the release gate (``summarize --strict --review DIR``): the run's judge
against a physicians' review (``run_records.review_score.run_agreement``, in ``RunFacts.physicians``).

* :func:`review_whole`: with either bar below, every sheet of the review read and labels back from
  every physician;
* :func:`min_kappa` (``--min-kappa X``): the LOWER END of the judge-physician kappa's 95% interval
  at least X, from at least :data:`GATE_MIN_CASES` reviewed cases and :data:`GATE_MIN_ROWS` rows; a
  review with no disagreement on any row is read at the exact bound for none in its cases (kappa at
  ``p_o = 1 - (1 - 0.05 ** (1 / n))``, ``scorers.agreement.zero_event_bound``), not the bootstrap's
  zero-width 1.000 [1.000, 1.000], and a refusal says how many such cases would pass;
* :func:`judge_bias` (``--max-judge-bias X``): the interval of the judge's bias on rubric accuracy
  (its headline minus the physicians' estimate over every case) within +-X points; a review whose
  reviewed cases show no spread gives no interval (``physician_review.physicians_estimate``'s
  ``no_spread``), and is refused as such, never passed on a zero-width interval.

A refusal says which kind it is: the judge falls short (the whole interval lies past the bar: no
review of any size would pass it, so the judge must change), or the review is too small to show it
(a larger review could change the outcome: the cases it would need), as ``gates.reliability`` does.

A one-sided test on an interval, never on the estimate alone (docs/review.md). The one-line texts
the gate and ``summarize`` print of a review are here too (:func:`physicians_text`, :func:`estimate_text`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from clinconsensus_tasks.gates.bar import ReleaseBar, needed_for
from clinconsensus_tasks.gates.facts import RunFacts
from clinconsensus_tasks.gates.texts import figure, interval_text, points, undefined
from clinconsensus_tasks.log_files import CLIMEDBENCH
from clinconsensus_tasks.run_records.review_intake import MIN_LABELLED_SHARE, coverage_text
from clinconsensus_tasks.scorers.agreement import zero_event_units

GATE_MIN_CASES = 10  # the fewest reviewed cases whose percentile interval the gate reads (fewer: too few clusters)
GATE_MIN_ROWS = 100  # and rows: ten rows that all agree give kappa 1.0 in every resample
# docs/review.md's simulation (bench/review_sample_size.py): cases for a +-0.05 interval at kappa 0.7,
# all 30 criteria labelled, the judge's errors spread evenly / clustered in cases.
PLANNED_CASES = {"even": 27, "clustered": 174}


def physicians_text(found: Mapping[str, Any]) -> str:
    """A run's judge against the physicians (``run_records.review_score.run_agreement``), in one
    line: kappa with its interval (or none), macro F1, the rows and cases, and the review's coverage."""
    overall = found["overall"]
    kappa, f1 = overall["kappa"], overall["macro_f1"]
    cover = f"; review: {coverage_text(found['coverage'])}" if "coverage" in found else ""
    if not found["rows"]:
        return f"no physician-labelled row of this run's answers{cover}"
    return (f"judge-physician kappa {interval_text(kappa)}, macro F1 {figure(f1['estimate'])} "
            f"on {found['rows']} rows of {overall['cases']} cases ({found['judge_failures']} failed judgments, "
            f"{found.get('no_verdict', 0)} criteria the run lacks left out){cover}")


def _no_rows(found: Mapping[str, Any]) -> str:
    """Why a run has no row to compare, and what to do."""
    if found.get("without_reference"):
        return (f"the review holds {found['without_reference']} row(s) of this run's answers, none with a physicians' reference "
                "(ties, 'cannot tell', or rows left out): add a physician to break ties, or have the rows labelled again")
    return ("the review holds no physician-labelled row of this run's answers: export it from this run "
            "(clinconsensus-eval review export RUN) and have the sheets filled")


def _cases_without_disagreement(zero: Mapping[str, Any], cases: int, bar: float) -> str:
    """How many cases, none with a disagreement, bring the exact bound's kappa to ``bar`` at this
    chance agreement: kappa at ``p_o = 1 - B`` is ``1 - B / (1 - p_e)``, so ``B <= (1 - bar)(1 - p_e)``,
    solved for the cases by ``scorers.agreement.zero_event_units``."""
    chance = zero["chance"]
    needed = zero_event_units((1 - bar) * (1 - chance))
    if needed is None:
        return f"no review of any size shows kappa >= {bar:g} at its interval's lower end: a sample leaves room for a disagreement"
    needed = max(needed, GATE_MIN_CASES)
    more = f" ({needed - cases} more)" if needed > cases else ""
    return (f"with no disagreement, {needed} cases{more} would bring the exact bound's lower end to {bar:g} at this chance "
            f"agreement ({chance:.3f})")


def _cases_needed(kappa: Mapping[str, Any], cases: int, bar: float) -> str:
    """How many cases the review would need for the kappa interval's lower end to reach ``bar``:
    the interval's half-width shrinks as one over the square root of the cases (at this spread and
    this estimate), or docs/review.md's simulation where there is no interval yet; for a review with
    no disagreement, the cases that bring the exact bound to ``bar`` (:func:`_cases_without_disagreement`)."""
    estimate, low = kappa["estimate"], kappa["low"]
    plan = (f"docs/review.md's simulation asks for about {PLANNED_CASES['even']} cases of 30 criteria at kappa 0.7 with the "
            f"judge's errors spread evenly, {PLANNED_CASES['clustered']} with them clustered")
    zero = kappa.get("zero_events")
    if zero and "chance" in zero:
        return _cases_without_disagreement(zero, cases, bar)
    if math.isnan(low) or math.isnan(estimate):
        return (f"the gate reads an interval from at least {GATE_MIN_CASES} cases and {GATE_MIN_ROWS} rows with a physicians' "
                f"reference; {plan}")
    if estimate <= bar:
        return f"the estimate itself is not above {bar:g}: more cases narrow the interval, they do not raise it"
    needed = needed_for(cases, estimate, low, bar)
    return f"at this estimate and spread about {needed} cases ({max(needed - cases, 1)} more) would bring the lower end to {bar:g}"


def estimate_text(found: Mapping[str, Any]) -> str:
    """The physicians' estimate of a run's rubric accuracy beside the judge's, and the bias, in one line."""
    est = (found.get("physicians_estimate") or {}).get("metrics", {}).get("rubric_accuracy")
    if not est:
        return "no physicians' estimate (no reviewed row of this run)"
    phys, bias = est["physicians"], est["bias"]
    if undefined(phys["estimate"]) or undefined(phys["low"]):
        return (f"rubric accuracy: judge {est['judge']:.3f}, physicians' estimate "
                f"{figure(phys['estimate'])} [no interval: {est['why']}]")
    return (f"rubric accuracy: judge {est['judge']:.3f}, physicians' estimate {phys['estimate']:.3f} [{phys['low']:.3f}, "
            f"{phys['high']:.3f}], judge's bias {points(bias['estimate'])} points [{points(bias['low'])}, {points(bias['high'])}] "
            f"from {est['reviewed_cases']} of {est['cases']} cases reviewed ({est['design']})")


def review_whole(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """With a bar on the physicians' figures: every sheet of the review read as a sheet, and labels
    back from every physician (a missing physician's cases are a hole in the stratified sample)."""
    if (bar.min_kappa is None and bar.max_judge_bias is None) or run.benchmark == CLIMEDBENCH or run.physicians is None:
        return []
    cover = run.physicians.get("coverage", {})
    problems = []
    if cover.get("unreadable"):
        problems.append(f"{len(cover['unreadable'])} sheet file(s) of the review could not be read as sheets "
                        f"({', '.join(cover['unreadable'][:3])}): mend or remove them, then gate again")
    if cover.get("not_returned"):
        problems.append(f"no usable labels back from {', '.join(cover['not_returned'])} (no sheet, none filled, only 'cannot "
                        "tell', or every row left out): the review's sample is not whole; gate once every physician's sheet is in")
    for physician, share in (cover.get("short") or {}).items():
        problems.append(f"{physician} labelled {share:.0%} of their rows, under the {MIN_LABELLED_SHARE:.0%} the gate asks for: "
                        "the review's sample is not whole; have the sheet finished")
    return problems


def judge_bias(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """With ``--max-judge-bias X``: the 95% interval of the judge's bias on rubric accuracy (its
    headline minus the physicians' estimate over every case) lies within +-X points."""
    if bar.max_judge_bias is None or run.benchmark == CLIMEDBENCH:
        return []
    if run.physicians is None:
        return ["--max-judge-bias needs the physicians' review of this run (--review DIR)"]
    if not run.physicians["rows"]:
        return [_no_rows(run.physicians)]
    est = (run.physicians.get("physicians_estimate") or {}).get("metrics", {}).get("rubric_accuracy")
    x = bar.max_judge_bias
    if est and not undefined(est["bias"]["low"]) and (100 * est["bias"]["low"] > x or 100 * est["bias"]["high"] < -x):
        low, high = est["bias"]["low"], est["bias"]["high"]
        return [f"{estimate_text(run.physicians)}: the judge falls short: its whole bias interval [{points(low)}, {points(high)}] lies "
                f"beyond +-{x:g} points (--max-judge-bias), so no review of any size would show it within; correct the judge "
                "(another model or prompt) and review it again"]
    if est and est.get("no_spread") and est["reviewed_cases"] >= GATE_MIN_CASES:
        return [f"{estimate_text(run.physicians)}: the review shows no spread, so there is no interval of the judge's bias for "
                f"--max-judge-bias {x:g} to pass; more reviewed cases give one once their differences differ, and a review of "
                "every case of the run with every criterion (a census) gives the exact figure"]
    if not est or undefined(est["bias"]["low"]) or est["reviewed_cases"] < GATE_MIN_CASES:
        return [f"{estimate_text(run.physicians)}: too small a review to show the judge's bias within +-{bar.max_judge_bias:g} "
                f"points (the gate reads an interval from at least {GATE_MIN_CASES} reviewed cases; docs/review.md's simulation "
                "asks for about 80 for +-2 points with the judge's errors spread evenly, 180 with them clustered)"]
    low, high = 100 * est["bias"]["low"], 100 * est["bias"]["high"]
    if low < -x or high > x:
        return [f"{estimate_text(run.physicians)}: the bias interval [{points(low / 100)}, {points(high / 100)}] is not within "
                f"+-{x:g} points (--max-judge-bias)"]
    return []


def min_kappa(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """With ``--min-kappa X``: the run's judge agrees with the physicians of the review at least X
    at the LOWER END of the kappa's 95% interval (a one-sided test: the estimate alone passes a
    judge the review cannot show to be that good), on a review of at least :data:`GATE_MIN_CASES`
    cases (every sheet read and every physician's labels back: :func:`review_whole`). With no
    disagreement on any row, the lower end is the exact bound the scoring core put there
    (``zero_events``): the gate reads it as any other lower end."""
    if bar.min_kappa is None or run.benchmark == CLIMEDBENCH:
        return []
    found = run.physicians
    if found is None:
        return ["--min-kappa needs the physicians' review of this run (--review DIR)"]
    problems: list[str] = []
    if not found["rows"]:
        return problems + [_no_rows(found)]
    kappa, cases = found["overall"]["kappa"], found["overall"]["cases"]
    if not undefined(kappa["high"]) and kappa["high"] < bar.min_kappa:
        problems.append(f"{physicians_text(found)}: the judge falls short: its whole kappa interval lies below --min-kappa "
                        f"{bar.min_kappa:g}, so no review of any size would show kappa >= {bar.min_kappa:g}; change the judge "
                        "(another model or prompt) and review it again")
    elif cases < GATE_MIN_CASES or found["rows"] < GATE_MIN_ROWS or undefined(kappa["low"]):
        if kappa.get("zero_events"):
            why = (f"the gate reads an interval from at least {GATE_MIN_CASES} cases and {GATE_MIN_ROWS} rows with a physicians' "
                   f"reference; {_cases_needed(kappa, cases, bar.min_kappa)}")
        else:
            why = _cases_needed({**kappa, "low": math.nan}, cases, bar.min_kappa)
        problems.append(f"{physicians_text(found)}: too small a review to show kappa >= {bar.min_kappa:g} ({why})")
    elif kappa["low"] < bar.min_kappa:
        problems.append(f"{physicians_text(found)}: the interval's lower end {kappa['low']:.3f} is below --min-kappa "
                        f"{bar.min_kappa:g} ({_cases_needed(kappa, cases, bar.min_kappa)})")
    return problems
