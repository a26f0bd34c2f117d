"""``clinconsensus-eval review``: judges checked against physicians (docs/review.md).

``review export RUN... --output DIR`` writes one blind sheet per physician (XLSX and CSV) and the
review key beside them; ``review score DIR`` reads the filled sheets back and reports every judge
of the runs against the physicians, and the physicians against each other. The rules are
``scorers.physician_review``; the loop is ``run_records.review_export``, ``review_intake`` and
``review_score``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from clinconsensus_tasks import json_output
from clinconsensus_tasks.commands.arguments import add_thresholds
from clinconsensus_tasks.commands.tables import format_table


SHOWN_PROBLEMS = 50  # lines of problems printed; --json has all


def _criteria(value: str) -> int | None:
    if value.strip().lower() == "all":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of criteria or 'all', got {value!r}") from None


def _share(value: str) -> float:
    try:
        share = float(value.rstrip("%")) / (100 if value.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a share such as 0.2 or 20%, got {value!r}") from None
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError(f"expected a share in [0, 1], got {value!r}")
    return share


def _resamples(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of resamples, got {value!r}") from None
    if n < 100:
        raise argparse.ArgumentTypeError(f"{n} resamples: a 95% percentile interval needs at least 100 (1000 is the default)")
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="review_command", required=True, metavar="STEP")
    export = sub.add_parser("export", formatter_class=p.formatter_class, help="write blind review sheets (one per physician) and the review key from runs",
                            description="Draw a stratified sample of (answer, criterion) rows from the runs and write one blind "
                                        "sheet per physician (XLSX with a drop-down, and CSV) and the review key beside them.")
    export.add_argument("runs", nargs="+", metavar="RUN", help="Inspect logs, lm-eval samples files or folders holding them, "
                                                               "of either framework (every judge of every run is compared)")
    export.add_argument("--output", required=True, metavar="DIR", help="a new folder (or URL prefix, s3://...) for the sheets and review_key.json")
    export.add_argument("--cases", type=int, default=30, help="cases to draw, stratified by subject x difficulty")
    export.add_argument("--criteria-per-case", type=_criteria, default=None, metavar="M|all",
                        help="criteria drawn per case (default: all 30, which also gives Pass@k and CACS@k from the labels)")
    export.add_argument("--reviewers", type=int, default=1, help="physicians, one sheet each")
    export.add_argument("--overlap", type=_share, default=0.2, metavar="SHARE",
                        help="share of the cases every physician labels (their agreement with each other is measured there)")
    export.add_argument("--seed", type=int, default=0, help="seed of the draw and of each sheet's shuffle")
    export.add_argument("--format", choices=("both", "xlsx", "csv"), default="both", help="sheet files to write")
    score = sub.add_parser("score", formatter_class=p.formatter_class, help="read the filled sheets back: every judge against the physicians",
                           description="Read the filled sheets of a review folder and report each judge's agreement with the "
                                       "physicians (case-bootstrap intervals), the physicians with each other, and every row "
                                       "left out and why.")
    score.add_argument("folder", metavar="DIR", help="the folder (or URL prefix) review export wrote, with the filled sheets in it")
    score.add_argument("--json", action="store_true", help="print JSON instead of tables")
    score.add_argument("--resamples", type=_resamples, default=1000, help="bootstrap resamples of cases (at least 100)")
    score.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    add_thresholds(score)
    score.add_argument("--n-criteria", type=int, default=30, help="criteria per case, N")


def main(args: argparse.Namespace) -> int:
    return _export(args) if args.review_command == "export" else _score(args)


def _export(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.report.runs import read_runs
    from clinconsensus_tasks.run_records.review_export import FORMATS, ReviewRun, plan_review, write_review

    if args.reviewers < 1:
        raise ValueError(f"--reviewers must be at least 1, got {args.reviewers}")
    found = read_runs(args.runs)
    for path, why in found.skipped:
        print(f"review export: skipped {path}: {why}", file=sys.stderr)
    if not found.clin:
        raise ValueError(f"no finished ClinConsensus run in {', '.join(args.runs)}")
    # The report's reading names and sorts the runs and keeps no records: each run's records are read for the draw.
    runs = [ReviewRun(r.name, r.path, r.meta.get("framework", ""), read_case_records(r.path)) for r in found.clin]
    plan = plan_review(runs, args.cases, args.criteria_per_case, args.reviewers, args.overlap, args.seed)
    written = write_review(plan, args.output, FORMATS if args.format == "both" else (args.format,))
    print(f"review {plan['export_id']}: {plan['drawn_cases']} cases, {len(plan['items'])} rows to label, "
          f"{len(plan['judges'])} judge(s) of {len(runs)} run(s) to compare")
    for physician, info in plan["physicians"].items():
        print(f"  physician {physician}: {info['rows']} rows in {', '.join(info.get('files', []))}")
    print(f"  the key (keep it with the sheets, do not send it): {written[-1]}")
    print(f"then: clinconsensus-eval review score {args.output}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.run_records.review_intake import load_review
    from clinconsensus_tasks.run_records.review_score import score_review

    review = load_review(args.folder)
    result = score_review(review, args.resamples, args.seed, args.thresholds, args.n_criteria)
    if args.json:
        print(json_output.dumps(result))
    else:
        print("\n".join(score_lines(result)))
    shown = result["problems"][:SHOWN_PROBLEMS]
    for problem in shown:
        print(f"review score: left out: {problem}", file=sys.stderr)
    if len(result["problems"]) > len(shown):
        print(f"review score: ... and {len(result['problems']) - len(shown)} more (--json lists every one)", file=sys.stderr)
    return 0


def score_lines(result: dict[str, Any]) -> list[str]:
    """``review score``'s tables."""
    from clinconsensus_tasks.gates.texts import interval_text
    from clinconsensus_tasks.report.review_section import ESTIMATE_HEADER, estimate_rows
    from clinconsensus_tasks.run_records.review_intake import coverage_text

    rows = result["rows"]
    lines = [f"== review {result['export_id']} ({result['folder']}): {rows['items']} rows exported, {rows['labelled_items']} labelled, "
             f"{rows['with_reference']} with a physicians' reference ({rows['ties']} ties, {rows['cannot_tell']} cannot tell only)",
             f"coverage: {coverage_text(result['coverage'])}"]
    lines += format_table(["physician", "assigned", "labelled", "cannot tell", "left out", "files"],
                          [[p, str(t["assigned"]), str(t["labelled"]), str(t["cannot_tell"]),
                            ", ".join(f"{why} {n}" for why, n in t["left_out"].items()) or "-", ", ".join(t["files"]) or "none returned"]
                           for p, t in result["physicians"].items()])
    metrics = ("percent_agreement", "kappa", "macro_f1", "precision_met", "recall_met")
    lines.append("-- judges against the physicians (95% intervals resampling cases)")
    lines += format_table(["judge", "rows", "cases", "failures", "no verdict", *metrics],
                          [[f"{j['run']} · {j['title']} {j['judge']}", str(j["rows"]), str(j["overall"]["cases"]), str(j["judge_failures"]),
                            str(j["no_verdict"]), *(interval_text(j["overall"][m]) for m in metrics)] for j in result["judges"]])
    on_overlap = [[f"{j['run']} · {j['title']}", p, str(s["rows"]), str(s["cases"]), interval_text(s["kappa"]), interval_text(s["macro_f1"])]
                  for j in result["judges"] for p, s in (j.get("by_physician_on_overlap") or {}).items()]
    if on_overlap:
        lines.append("-- each judge against each physician, on the rows every physician labels")
        lines += format_table(["judge", "physician", "rows", "cases", "kappa", "macro_f1"], on_overlap)
    physicians = result["physician_agreement"]
    if physicians:
        lines.append(f"-- physicians with each other (the ceiling): Fleiss' kappa {interval_text(physicians['fleiss_kappa'])} "
                     f"on {physicians['fleiss_rows']} rows")
        lines += [f"   kappa {pair} {interval_text(p['kappa'])} on {p['rows']} rows" for pair, p in physicians["pairwise"].items()]
    for judge in result["judges"]:
        for dim in ("subject", "difficulty"):
            by = judge[f"by_{dim}"]
            if len(by) > 1:
                lines.append(f"-- {judge['run']} · {judge['title']}: by {dim}")
                lines += format_table([dim, "rows", "cases", "kappa", "macro_f1"],
                                      [[label, str(s["rows"]), str(s["cases"]), interval_text(s["kappa"]), interval_text(s["macro_f1"])]
                                       for label, s in by.items()])
        head = judge["headline"]
        if head.get("rubric_accuracy"):
            text = (f"-- {judge['run']} · {judge['title']}: rubric accuracy on {head['rows']} labelled rows: physicians "
                    f"{head['rubric_accuracy']['physicians']:.3f}, judge {head['rubric_accuracy']['judge']:.3f}")
            if head.get("metrics"):
                text += f"; on {head['complete_answers']} fully labelled answers: " + ", ".join(
                    f"{n} {v['physicians']:.3f} / {v['judge']:.3f}" for n, v in head["metrics"].items() if n != "rubric_accuracy")
            lines.append(text)
    estimated = estimate_rows(result["judges"])
    if estimated:
        lines.append("-- each run's headline over all its cases: the judge's, and the physicians' estimate (difference estimator)")
        lines += format_table(ESTIMATE_HEADER, estimated)
        lines += [f"   {j['run']} · {j['title']}: rubric accuracy only: {j['physicians_estimate']['why']}"
                  for j in result["judges"] if (j.get("physicians_estimate") or {}).get("why")]
    lines += [f"note: {n}" for n in result["notes"]]
    if result["problems"]:
        lines.append(f"{len(result['problems'])} row(s) or file(s) left out: listed on stderr")
    return lines
