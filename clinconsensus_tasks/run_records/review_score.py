"""A physician review, step 3 (score): every judge against the physicians, from the key and the labels.

:func:`score_review` compares every judge of the exported runs with the physicians' reference (their
strict majority, ``scorers.physician_review.reference``), and the physicians with each other;
:func:`run_agreement` compares one run's own headline judge (what the release gate adds to a run's
facts). Every figure is the core's (``scorers.agreement``): undefined statistics NaN, case bootstrap
intervals with the cases that contributed. A row is (item, verdict): a run of several epochs that
gave one answer twice contributes a row per epoch. A judge that holds no verdict for a row's
criterion (the run lacks it) has no row there and is counted as ``no_verdict``; a failed judgment
(the judge was asked and gave no verdict) is counted as ``judge_failures``; neither enters the
agreement.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.run_records.review_export import SLICES, stratum as _stratum
from clinconsensus_tasks.run_records.review_intake import Review, coverage
from clinconsensus_tasks.run_records.review_sheets import text_sha256
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, summarize
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS, case_terms, mean_names
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE
from clinconsensus_tasks.scorers.physician_review import (
    CANNOT_TELL, MET, NOT_MET, RESAMPLES, agreement, physicians_estimate, rater_agreement, reference,
)

RUBRIC_ONLY = ("criteria were drawn per case (--criteria-per-case): Pass@k and CACS@k need every criterion of a case labelled; "
               "rubric accuracy is estimated from the drawn criteria")
SEVERAL_EPOCHS = "a run of several epochs: Pass@k and CACS@k are estimated from runs of one epoch"
NO_COMPLETE_CASE = ("no reviewed case has a physicians' reference on every criterion (ties, cannot tell, rows left out): Pass@k and "
                    "CACS@k need them all")

Row = tuple[str, "bool | None"]  # (item id, the judge's verdict: None for a failed judgment)


def references(review: Review) -> tuple[dict[str, bool], Counter]:
    """The physicians' reference on each labelled row (:func:`physician_review.reference`) and how
    many rows had none, by why (``tie``, ``cannot tell``)."""
    out: dict[str, bool] = {}
    missing: Counter = Counter()
    for item, labels in review.labels.items():
        ref, why = reference(list(labels.values()))
        if ref is None:
            missing[why] += 1
        else:
            out[item] = ref
    return out, missing


def _agreement(items: Mapping[str, Mapping[str, Any]], pairs: Sequence[tuple[str, bool, bool]], resamples: int,
               seed: int) -> dict[str, Any]:
    """Agreement of (item, reference, judge) pairs, grouped by case for the bootstrap."""
    by_case: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for item, ref, verdict in pairs:
        by_case[items[item]["case_id"]].append((ref, verdict))
    figures = agreement(by_case, resamples, seed)
    return {"rows": len(pairs), "cases": len(by_case), **{m: v.to_dict() for m, v in figures.items()}}


def _judge_rows(review: Review, refs: Mapping[str, bool], rows: Sequence[Row], no_verdict: int, resamples: int,
                seed: int) -> dict[str, Any]:
    """One judge against the physicians on the rows both have: agreement with case-bootstrap
    intervals, overall, per subject and difficulty, and against each physician on the overlap rows
    (where two physicians' disagreement is a tie, the majority has no reference; each physician
    alone has one); the judge's failures and missing verdicts among the rows, counted."""
    items = review.key["items"]
    with_ref = [(i, v) for i, v in rows if i in refs]
    failures = sum(1 for _, v in with_ref if v is None)
    decided = [(i, refs[i], bool(v)) for i, v in with_ref if v is not None]
    out = {"rows": len(decided), "judge_failures": failures, "no_verdict": no_verdict, "without_reference": len(rows) - len(with_ref),
           "overall": _agreement(items, decided, resamples, seed)}
    for dim in SLICES:
        labels = sorted({items[i][dim] for i, _, _ in decided})
        out[f"by_{dim}"] = {label: _agreement(items, [d for d in decided if items[d[0]][dim] == label], resamples, seed)
                            for label in labels}
    overlap = set(review.key.get("overlap_cases") or ())
    if overlap and len(review.physicians) > 1:
        out["by_physician_on_overlap"] = {
            f"P{p}": _agreement(items, [(i, review.labels[i][p] == MET, bool(v)) for i, v in rows if v is not None
                                        and items[i]["case_id"] in overlap and review.labels.get(i, {}).get(p) in (MET, NOT_MET)],
                                resamples, seed)
            for p in sorted(review.physicians, key=int)}
    return out


def _headline(items: Mapping[str, Mapping[str, Any]], refs: Mapping[str, bool], rows: Sequence[Row],
              thresholds: Sequence[int], n_criteria: int) -> dict[str, Any]:
    """The headline metrics on the sampled answers, the physicians' labels beside the judge's: rubric
    accuracy on every row both have (a failed judgment counts as not met, as in the headline), and
    every metric on the answers whose ``n_criteria`` criteria all have a physicians' reference."""
    rows = [(i, v) for i, v in rows if i in refs]
    out: dict[str, Any] = {"rows": len(rows)}
    if rows:
        out["rubric_accuracy"] = {"physicians": sum(refs[i] for i, _ in rows) / len(rows),
                                  "judge": sum(v is True for _, v in rows) / len(rows)}
    answers: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for i, v in rows:
        answers[(items[i]["case_id"], items[i]["answer_sha256"])].append((i, v))
    complete = [group for group in answers.values() if len(group) == n_criteria]
    out["complete_answers"] = len(complete)
    if complete:
        phys = [CaseResult(sum(refs[i] for i, _ in g), len(g), 0, {}, items[g[0][0]]["case_id"]) for g in complete]
        judge = [CaseResult(sum(v is True for _, v in g), len(g), sum(v is None for _, v in g), {}, items[g[0][0]]["case_id"])
                 for g in complete]
        p, j = summarize(phys, thresholds, n_criteria), summarize(judge, thresholds, n_criteria)
        out["metrics"] = {n: {"physicians": p[n], "judge": j[n]} for n in mean_names(thresholds)}
    return out


def estimates(census: Mapping[str, Sequence[Sequence[int]]], strata: Mapping[str, Any], rows: Sequence[Row], review: Review,
              refs: Mapping[str, bool], thresholds: Sequence[int], n_criteria: int) -> dict[str, Any]:
    """The run's headline metrics over ALL its cases as the physicians would grade them
    (``physician_review.physicians_estimate``), beside the judge's own: ``census`` is the judge's
    [met, judged] on every case of the run, one per epoch (a case's term is their mean, as in the
    headline), ``rows`` its verdicts on the reviewed rows (every epoch's). Rubric accuracy from every
    reviewed case (the rows the physicians decided; a failed judgment is not met, as in the
    headline); Pass@k and CACS@k from the reviewed cases whose every criterion has a physicians'
    reference, in a run of one epoch. Rows without a reference (ties, cannot tell) are left out and
    counted."""
    names, items = mean_names(thresholds), review.key["items"]
    judge_terms = {case: {name: sum(t[name] for t in terms) / len(terms) for name in names}
                   for case, terms in ((c, [case_terms(met, judged, thresholds, n_criteria) for met, judged in epochs])
                                       for c, epochs in census.items())}
    epochs = max((len(e) for e in census.values()), default=1)
    decided: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    without_reference = 0
    for item, verdict in rows:
        if item in refs:
            decided[items[item]["case_id"]].append((refs[item], verdict is True))
        else:
            without_reference += 1
    strata_of = {case: tuple(strata.get(case) or ("-",)) for case in census}
    complete = {case: pairs for case, pairs in decided.items() if len(pairs) == n_criteria * len(census[case])}
    whole = len(complete) == len(decided)  # every reviewed case has a reference on every criterion
    out: dict[str, Any] = {"rows_without_reference": without_reference, "complete_cases": len(complete), "metrics": {}}
    reviewed = {case: (sum(p for p, _ in pairs) / len(pairs), sum(j for _, j in pairs) / len(pairs)) for case, pairs in decided.items()}
    out["metrics"]["rubric_accuracy"] = physicians_estimate({c: t["rubric_accuracy"] for c, t in judge_terms.items()}, reviewed, strata_of,
                                                            whole_cases=whole)
    if not complete or epochs > 1:
        out["why"] = (RUBRIC_ONLY if review.key["settings"].get("criteria_per_case") != "all" else
                      SEVERAL_EPOCHS if epochs > 1 else NO_COMPLETE_CASE)
        return out
    for name in names:
        if name == "rubric_accuracy":
            continue
        reviewed = {case: (case_terms(sum(p for p, _ in pairs), n_criteria, thresholds, n_criteria)[name],
                           case_terms(sum(j for _, j in pairs), n_criteria, thresholds, n_criteria)[name]) for case, pairs in complete.items()}
        out["metrics"][name] = physicians_estimate({c: t[name] for c, t in judge_terms.items()}, reviewed, strata_of)
    return out


def score_review(review: Review, resamples: int = RESAMPLES, seed: int = 0, thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
                 n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, Any]:
    """Every judge of the exported runs against the physicians, the physicians with each other, the
    headline metrics beside each other, and what became of every row (JSON-ready)."""
    key, items = review.key, review.key["items"]
    refs, missing = references(review)
    judges = []
    for judge_id, info in key["judges"].items():
        rows = [(i, item["verdicts"][judge_id]) for i, item in items.items() if judge_id in item["verdicts"]]
        graded = {_answer(items[i]) for i, _ in rows}  # the answers this judge graded: a row of one without its verdict
        no_verdict = sum(1 for i, item in items.items() if i in refs and judge_id not in item["verdicts"] and _answer(item) in graded)
        entry = {"id": judge_id, **{k: v for k, v in info.items() if k != "census"}, **_judge_rows(review, refs, rows, no_verdict, resamples, seed),
                 "headline": _headline(items, refs, rows, thresholds, n_criteria)}
        if info.get("census") and info["role"] == HEADLINE_ROLE:
            census = {case: [counts] for case, counts in info["census"].items()}  # a judge id is one epoch's judging
            entry["physicians_estimate"] = estimates(census, key.get("strata") or {}, rows, review, refs, thresholds, n_criteria)
        judges.append(entry)
    overlap = set(key.get("overlap_cases") or ())
    raters = sorted(review.physicians, key=int)
    by_case: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for item, labels in review.labels.items():
        if items[item]["case_id"] in overlap:
            decided = {f"P{p}": label == MET for p, label in labels.items() if label != CANNOT_TELL}
            if len(decided) >= 2:
                by_case[items[item]["case_id"]].append(decided)
    physicians = rater_agreement(by_case, [f"P{p}" for p in raters], resamples, seed) if len(raters) > 1 else None
    return {
        "folder": str(review.folder), "export_id": review.export_id, "settings": key["settings"],
        "rows": {"exported": len(key["rows"]), "items": len(items), "labelled_items": len(review.labels),
                 "with_reference": len(refs), "ties": missing["tie"], "cannot_tell": missing["cannot tell"],
                 "cut_texts": sum(1 for i in items.values() if i.get("cut"))},
        "coverage": coverage(review),
        "physicians": {f"P{p}": review.physicians[p].to_dict() for p in raters},
        "physician_agreement": physicians,
        "judges": judges,
        "problems": list(review.problems),
        "notes": list(review.notes),
        "resamples": resamples, "seed": seed,
    }


def _answer(item: Mapping[str, Any]) -> tuple[str, str]:
    """The answer a row belongs to: its case and the answer's sha256."""
    return item["case_id"], item["answer_sha256"]


def run_agreement(records: Sequence[LoggedCase], review: Review, resamples: int = RESAMPLES, seed: int = 0,
                  thresholds: Sequence[int] = DEFAULT_THRESHOLDS, n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, Any]:
    """A run's own headline judge against the physicians, on the review's rows whose answer is this
    run's (matched by case, criterion and the answer's sha256; every epoch that gave the answer is a
    row): what the release gate adds to a run's facts, with the review's coverage. ``rows`` is 0 when
    the review holds none of the run's answers."""
    items = review.key["items"]
    refs, _ = references(review)
    by_answer: dict[tuple[str, str], list[dict[str, bool | None]]] = defaultdict(list)
    for r in records:
        by_answer[(r.graded.case_id, text_sha256(r.answer))].append({j.criterion_id: j.met for j in r.graded.judgments})
    rows: list[Row] = []
    no_verdict = 0
    for item_id, item in items.items():
        for verdicts in by_answer.get((item["case_id"], item["answer_sha256"]), ()):
            if item["criterion_id"] in verdicts:
                rows.append((item_id, verdicts[item["criterion_id"]]))
            elif item_id in refs:
                no_verdict += 1
    census = {}
    for r in records:  # the run's own headline on every case (a case of several epochs: their mean, as the headline's)
        census.setdefault(r.graded.case_id, []).append((r.graded.met, r.graded.judged))
    out = {**_judge_rows(review, refs, rows, no_verdict, resamples, seed), "coverage": coverage(review)}
    if rows:
        out["physicians_estimate"] = estimates(census, {r.graded.case_id: _stratum(r) for r in records}, rows, review, refs,
                                               thresholds, n_criteria)
    return out
