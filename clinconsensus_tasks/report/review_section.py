"""The report's section on a physicians' review (``report ... --review DIR``): each judge of the
reviewed runs against the physicians, the physicians with each other (the ceiling), what became
of every physician's rows, and the headline metrics on the sampled answers from both sides. The
figures are ``run_records.review_score.score_review``'s, the same ``review score`` prints."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from clinconsensus_tasks.gates.texts import interval_text, points, undefined
from clinconsensus_tasks.report.sections import Section, Table
from clinconsensus_tasks.report.svg import bar_chart
from clinconsensus_tasks.run_records.review_intake import coverage_text
from clinconsensus_tasks.scorers.physician_review import AGREEMENT_METRICS

HEADERS = {"percent_agreement": "agreement", "kappa": "Cohen's kappa", "macro_f1": "macro F1", "precision_met": "precision (met)",
           "recall_met": "recall (met)"}


def estimate_rows(judges: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """Each run's headline metrics over every case: the judge's, the physicians' estimate and the
    judge's bias (points), with their intervals; what ``review score`` and the report show. The last
    column names the design, and why an estimate has no interval where it has none."""
    rows = []
    for j in judges:
        est = j.get("physicians_estimate")
        for name, m in (est or {}).get("metrics", {}).items():
            bias = m["bias"]
            bias_text = "n/a" if undefined(bias["estimate"]) else (
                points(bias["estimate"]) + (" [no interval]" if undefined(bias["low"]) else f" [{points(bias['low'])}, {points(bias['high'])}]"))
            rows.append([f"{j['run']} · {j['title']}", name, f"{m['judge']:.3f}", interval_text(m["physicians"]), bias_text,
                         f"{m['reviewed_cases']} of {m['cases']}", ": ".join(t for t in (m["design"], m["why"]) if t)])
    return rows


ESTIMATE_HEADER = ["run · judge", "metric", "judge (all cases)", "physicians' estimate [95% CI]", "judge's bias, points [95% CI]",
                   "cases reviewed", "strata"]


def judge_name(judge: Mapping[str, Any]) -> str:
    return f"{judge['run']} · {judge['title']} ({judge['judge']})"


def review_section(result: Mapping[str, Any]) -> Section:
    rows, judges = result["rows"], result["judges"]
    section = Section(f"Judges against physicians (review {result['export_id']})")
    section.notes.append(
        f"{rows['items']} (answer, criterion) rows exported, {rows['labelled_items']} labelled, {rows['with_reference']} with a "
        f"physicians' reference (their majority; {rows['ties']} ties and {rows['cannot_tell']} rows of 'cannot tell' only are "
        f"left out, not guessed). Intervals: 95% percentile bootstrap of cases ({result['resamples']} resamples, seed "
        f"{result['seed']}): a case's criteria share one answer, so cases are resampled, not rows. Where judge and physicians "
        "agree on every row, the bootstrap has nothing to resample, and the interval's end is the exact bound for no "
        "disagreement in n cases, 1 - 0.05^(1/n) (kappa at that observed agreement; marked: exact bound).")
    section.notes.append(f"Coverage: {coverage_text(result['coverage'])}.")
    if result["problems"]:
        section.notes.append(f"{len(result['problems'])} rows or files left out of the sheets (edited, added, deleted, duplicated, "
                             "unlabelled or with a label not accepted): `clinconsensus-eval review score DIR` lists each.")
    section.tables.append(Table("Each judge against the physicians' labels",
                                ["#", "judge", "rows", "cases", "failed judgments", *(HEADERS[m] for m in AGREEMENT_METRICS)],
                                [[f"#{n}", judge_name(j), str(j["rows"]), str(j["overall"]["cases"]), str(j["judge_failures"]),
                                  *(interval_text(j["overall"][m]) for m in AGREEMENT_METRICS)] for n, j in enumerate(judges, start=1)]))
    if judges:
        section.charts.append(bar_chart([f"#{n}" for n in range(1, len(judges) + 1)],  # the table's numbers: names do not fit under bars
                                        {HEADERS[m]: [_bar(j["overall"][m]) for j in judges] for m in ("kappa", "macro_f1")},
                                        "Judges against physicians: Cohen's kappa and macro F1"))
    physicians = result.get("physician_agreement")
    if physicians:
        table = [["all (Fleiss' kappa)", str(physicians["fleiss_rows"]), interval_text(physicians["fleiss_kappa"])]]
        table += [[pair, str(p["rows"]), interval_text(p["kappa"])] for pair, p in physicians["pairwise"].items()]
        section.tables.append(Table("Physicians with each other, on the rows all of them label (the ceiling)", ["physicians", "rows", "kappa"],
                                    table))
    section.tables.append(Table("Each physician's rows", ["physician", "assigned", "labelled", "cannot tell", "left out", "sheets"],
                                [[p, str(t["assigned"]), str(t["labelled"]), str(t["cannot_tell"]),
                                  ", ".join(f"{why} {n}" for why, n in t["left_out"].items()) or "-", ", ".join(t["files"]) or "none returned"]
                                 for p, t in result["physicians"].items()]))
    estimated = estimate_rows(judges)
    if estimated:
        section.tables.append(Table("Each run's headline over all its cases: the judge's, and the physicians' estimated from the review",
                                    ESTIMATE_HEADER, estimated))
        section.notes.append("The physicians' estimate is the judge's figure over every case corrected by the judge's error on the "
                             "reviewed cases (stratified difference estimator, prediction-powered inference); its interval holds "
                             "whatever the judge's quality, and the judge's bias is the judge's figure minus it. Pass@k and CACS@k "
                             "need every criterion of a reviewed case labelled.")
        for j in judges:
            why = (j.get("physicians_estimate") or {}).get("why")
            if why:
                section.notes.append(f"{judge_name(j)}: rubric accuracy only: {why}.")
    head_rows = []
    for j in judges:
        head = j["headline"]
        if not head.get("rubric_accuracy"):
            continue
        metrics = "; ".join(f"{n} {v['physicians']:.3f} / {v['judge']:.3f}" for n, v in (head.get("metrics") or {}).items()
                            if n != "rubric_accuracy")
        head_rows.append([judge_name(j), str(head["rows"]), f"{head['rubric_accuracy']['physicians']:.3f}",
                          f"{head['rubric_accuracy']['judge']:.3f}", str(head["complete_answers"]), metrics or "-"])
    if head_rows:
        section.tables.append(Table("Headline metrics on the sampled answers: physicians / judge",
                                    ["judge", "rows", "rubric accuracy (physicians)", "rubric accuracy (judge)",
                                     "answers with every criterion labelled", "on those: physicians / judge"], head_rows))
    table = [[judge_name(j), p, str(s["rows"]), str(s["cases"]), interval_text(s["kappa"]), interval_text(s["macro_f1"])]
             for j in judges for p, s in (j.get("by_physician_on_overlap") or {}).items()]
    if table:
        section.tables.append(Table("Each judge against each physician, on the rows every physician labels", ["judge", "physician", "rows",
                                    "cases", "kappa", "macro F1"], table, collapsed=True))
    for dim in ("subject", "difficulty"):
        table = [[judge_name(j), label, str(s["rows"]), str(s["cases"]), interval_text(s["kappa"]), interval_text(s["macro_f1"])]
                 for j in judges for label, s in j[f"by_{dim}"].items()]
        if table:
            section.tables.append(Table(f"By {dim}", ["judge", dim, "rows", "cases", "kappa", "macro F1"], table, collapsed=True))
    return section


def _bar(figure: Mapping[str, float]) -> float | None:
    return None if undefined(figure["estimate"]) else figure["estimate"]
