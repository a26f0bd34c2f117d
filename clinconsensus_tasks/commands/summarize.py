"""``clinconsensus-eval summarize``: metrics and breakdowns from the records of runs; ``--strict``: the release gate."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from clinconsensus_tasks import json_output
from clinconsensus_tasks.commands.arguments import add_thresholds, gate_failure_share_type
from clinconsensus_tasks.commands.tables import format_table, number


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", help="Inspect .eval/.json logs or lm-eval samples_clinconsensus_*.jsonl files, or folders "
                                        "holding them (an Inspect log dir, an lm-eval output dir); local paths or URLs (s3://...)")
    add_thresholds(p)
    p.add_argument("--n-criteria", type=int, default=30, help="expected criteria per case, N")
    p.add_argument("--percent", action="store_true", help="print metrics in percent instead of fractions (the frameworks' scale)")
    p.add_argument("--json", action="store_true", help="print JSON (fractions) instead of tables; with --strict, the "
                                                        "gate's verdicts, problems and numbers as JSON (undefined figures null)")
    p.add_argument("--prices", action="append", default=[], metavar="[JUDGE=]IN,CACHED,OUT",
                   help="judge prices per million tokens (input, cached input, output), per judge or for all; repeatable "
                        "(default: tokens only, no cost)")
    p.add_argument("--csv", metavar="DIR", help="also write cases.csv and summary.csv to DIR (default: none)")
    p.add_argument("--strict", action="store_true",
                   help="the release gate instead of tables: exit 1 unless every run is a release run: finished, the current "
                        "task version, the public data pinned to a hub commit, every case, an independent judge named by the run, "
                        "the official prompt per criterion, at most 1%% failed judgments (CliMedBench: unparseable answers), no "
                        "suspect answer, header numbers equal to the records' (inspect eval itself exits 0 whatever the status). "
                        "No environment variable changes the bar; the flags below do, and the verdict line prints them")
    p.add_argument("--judge-failure-threshold", metavar="SHARE", type=gate_failure_share_type,
                   help="with --strict: accept this share of failed judgments (default 0.01; another value is printed as an exception)")
    p.add_argument("--allow-prompt", action="append", default=[], metavar="NAME",
                   help="with --strict: accept this judge prompt or judge mode besides the official prompt per criterion, or "
                        "'jury' for a jury's majority (repeatable; printed as an exception; default: the official one only)")
    p.add_argument("--review", metavar="DIR",
                   help="with --strict: a physicians' review folder (review export/score): each ClinConsensus run's judge "
                        "against the physicians' labels on that run's answers is printed with the run's verdict (default: none)")
    p.add_argument("--min-kappa", type=float, metavar="X",
                   help="with --strict and --review: refuse a run unless the lower end of its judge's Cohen's kappa interval "
                        "with the physicians is at least X, on at least 10 reviewed cases, every sheet read (default: no bar)")
    p.add_argument("--max-judge-bias", type=float, metavar="POINTS",
                   help="with --strict and --review: refuse a run unless the 95%% interval of its judge's bias on rubric accuracy "
                        "(the judge's headline minus the physicians' estimate over all cases) lies within +-POINTS percentage "
                        "points (default: no bar)")
    p.add_argument("--reliability", metavar="DIR",
                   help="with --strict: a check of the judge asked again (clinconsensus-eval reliability RUN --output DIR): "
                        "each ClinConsensus run's judge's flip rate is printed with the run's verdict (default: none)")
    p.add_argument("--max-flip-rate", type=float, metavar="X",
                   help="with --strict and --reliability: refuse a run unless the upper end of its judge's flip-rate interval "
                        "(rows whose asks are not all equal) is at most X, from a finished check of at least 10 cases "
                        "(default: no bar)")
    p.add_argument("--data-sha256", metavar="SHA",
                   help="with --strict: the run read a copy of the public file with this sha256 instead of the hub pinned to "
                        "a commit (printed on the verdict line; default: the hub data at the 40-hex commit the run was given)")


# The options of the release gate (they mean nothing without --strict), and the bars that read a folder.
GATE_ONLY = ("--judge-failure-threshold", "--allow-prompt", "--data-sha256", "--review", "--min-kappa", "--max-judge-bias",
             "--reliability", "--max-flip-rate")
GATE_NEEDS = {"--min-kappa": ("--review", "the physicians' review (the folder of review export)"),
              "--max-judge-bias": ("--review", "the physicians' review (the folder of review export)"),
              "--max-flip-rate": ("--reliability", "the judge asked again (the folder of clinconsensus-eval reliability RUN "
                                                   "--output DIR)")}


def _given(args: argparse.Namespace, flag: str) -> bool:
    return getattr(args, flag[2:].replace("-", "_")) not in (None, [], "")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.scorers.clinconsensus.cacs import breakdowns, summarize
    from clinconsensus_tasks.scorers.clinconsensus.metric_table import mean_names

    from clinconsensus_tasks.report.costs import judge_usage, usage_rows
    from clinconsensus_tasks.scorers.usage import parse_prices
    from clinconsensus_tasks.scorers.clinconsensus.jury import jury_summary
    from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE
    from clinconsensus_tasks.run_records.agreement import compare_records

    if args.strict:
        return _release_gate(args)
    given = [flag for flag in GATE_ONLY if _given(args, flag)]
    if given:
        from clinconsensus_tasks.errors import ConfigurationError

        raise ConfigurationError(f"{', '.join(given)} {'belongs' if len(given) == 1 else 'belong'} to the release gate: add --strict")
    prices = parse_prices(args.prices)
    report = {}
    all_records = {}
    from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_logs

    for path in map(str, benchmark_logs(args.logs, CLINCONSENSUS)):  # a folder: the ClinConsensus logs it holds
        records = all_records[path] = read_case_records(path)
        rows = [r.graded.result() for r in records]
        report[path] = {
            "overall": summarize(rows, args.thresholds, args.n_criteria),
            "breakdowns": breakdowns(rows, args.thresholds, args.n_criteria),
            "judge_usage": usage_rows(judge_usage([r.graded for r in records]), prices),
        }
        if any(r.graded.dual for r in records):
            local_rows = [r.graded.role_result(SECOND_ROLE) for r in records]
            report[path]["local_judge"] = summarize(local_rows, args.thresholds, args.n_criteria)
            report[path]["local_judge_breakdowns"] = breakdowns(local_rows, args.thresholds, args.n_criteria)
            compared = compare_records(records, None, args.thresholds, args.n_criteria, where=path)  # the records read above, once
            report[path]["agreement"] = {k: v for k, v in compared.items() if not k.startswith("other/")}
        panel = jury_summary([r.graded for r in records], args.thresholds, args.n_criteria)
        if panel:
            report[path]["jury"] = panel
    if args.csv:
        from clinconsensus_tasks.report.csv_export import write_csv

        written = write_csv(args.csv, all_records, args.thresholds, args.n_criteria, prices)
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    if args.json:
        print(json_output.dumps(report))
        return 0
    num = lambda x: number(x, args.percent)  # noqa: E731
    for path, result in report.items():
        overall = result["overall"]
        print(f"== {path}  ({int(overall['cases'])} cases, {int(overall['judge_failures'])} judge failures)")
        names = mean_names(args.thresholds)
        print("\n".join(format_table(["", *names], [["overall", *(num(overall[n]) for n in names)]])))
        for dim, labels in result["breakdowns"].items():
            print(f"-- by {dim}")
            rows = [[label, str(int(stats["cases"])), *(num(stats[c]) for c in names)] for label, stats in labels.items()]
            print("\n".join(format_table(["label", "cases", *names], rows)))
        if "agreement" in result:
            print("-- two judges: local judge " + "  ".join(f"{n} {num(result['local_judge'][n])}" for n in names))
            print("\n".join(format_table(["agreement", "value"], [[k, number(v)] for k, v in result["agreement"].items()])))
        if "jury" in result:
            print("\n".join(_jury_lines(result["jury"], names, num)))
        for row in result["judge_usage"]:
            cost = "" if row["cost"] is None else f", cost {row['cost']:.4f}"
            print(f"-- judge {row['judge']}: {row['calls']} calls, {row['prompt_tokens']} prompt tokens "
                  f"({row['cached_prompt_tokens']} cached), {row['completion_tokens']} completion tokens{cost}")
        print("(values in %)" if args.percent else "(fractions, as the frameworks report them; --percent for %)")
    return 0


def _jury_lines(jury: dict, names: Sequence[str], num) -> list[str]:
    from clinconsensus_tasks.gates.texts import interval_text as interval

    lines = [f"-- jury of {len(jury['jurors'])} (strict majority, at least {jury['min_votes']} usable votes): the headline is "
             f"the panel's verdicts, not the single-judge official protocol; fleiss_kappa {interval(jury['fleiss_kappa'])}"]
    rows = [[f"{j['role']} {j['judge']}", *(num(j[n]) for n in names), str(int(j["judge_failures"]))] for j in jury["jurors"]]
    lines += format_table(["juror", *names, "failures"], rows)
    lines += [f"   kappa {pair} {interval(k)}" for pair, k in jury["pairwise_kappa"].items()]
    return lines


def _release_gate(args: argparse.Namespace) -> int:
    """``summarize --strict``: one line per problem, naming the run; exit 1 if there is any.
    The bar is the release profile (``gates.release``), loosened only by this command's own
    flags, never by the environment; each verdict line says what it accepted, and under each run
    that passes, the headline numbers it passed with their 95% intervals (:func:`headline_figures`).
    ``--json``: the same facts as strict JSON (:func:`_verdict`), the exit code the same."""
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.log_files import CLINCONSENSUS
    from clinconsensus_tasks.gates.bar import RELEASE_FAILURE_SHARE, ReleaseBar
    from clinconsensus_tasks.gates.facts import RunFacts, gate_runs
    from clinconsensus_tasks.gates.release import partial_beside_complete, run_problems
    from clinconsensus_tasks.run_records.review_score import run_agreement
    from clinconsensus_tasks.scorers.redact import redact

    share = RELEASE_FAILURE_SHARE if args.judge_failure_threshold is None else args.judge_failure_threshold
    for flag, (needed, what) in GATE_NEEDS.items():
        if _given(args, flag) and not _given(args, needed):
            raise ConfigurationError(f"{flag} needs {what}: {needed} DIR")
    try:
        bar = ReleaseBar(share, (args.data_sha256 or "").strip().lower(), tuple(args.allow_prompt), args.min_kappa, args.max_judge_bias,
                         args.max_flip_rate)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    say = (lambda line: None) if args.json else print  # noqa: E731 (--json: the same facts, as one JSON document at the end)
    gate: dict = {"profile": bar.accepts(), "exceptions": bar.exceptions(), "passed": False, "runs": [], "superseded": []}
    review = None
    if args.review:
        from clinconsensus_tasks.run_records.review_intake import load_review

        review = load_review(args.review)
        # The problems `review score` names, here too: the kappa below rests on the rows they left.
        from clinconsensus_tasks.commands.review import SHOWN_PROBLEMS

        gate["review"] = {"folder": args.review, "left_out": [redact(p) for p in review.problems],
                          "notes": [redact(n) for n in review.notes]}
        for problem in review.problems[:SHOWN_PROBLEMS]:
            say(f"review {args.review}: left out: {redact(problem)}")
        if len(review.problems) > SHOWN_PROBLEMS:
            say(f"review {args.review}: ... and {len(review.problems) - SHOWN_PROBLEMS} more left out "
                f"(clinconsensus-eval review score {args.review} --json lists every one)")
        for note in review.notes:
            say(f"review {args.review}: note: {redact(note)}")
    check = None
    if args.reliability:
        from clinconsensus_tasks.gates.reliability import check_of_run
        from clinconsensus_tasks.run_records.reliability_check import load_check

        check = load_check(args.reliability)
        gate["reliability"] = {"folder": args.reliability, "notes": [redact(n) for n in check.notes]}
        for note in check.notes:
            say(f"reliability {args.reliability}: note: {redact(note)}")
    runs = gate_runs(args.logs)
    if not runs:
        print(f"no run to check in {', '.join(args.logs)} (Inspect logs or lm-eval results/samples files)", file=sys.stderr)
        if args.json:
            print(json_output.dumps(gate))
        return 1
    failed = 0
    seen: list[RunFacts] = []  # each run's name, model, task and selection, its records let go
    for old, newer in runs.superseded:
        gate["superseded"].append({"run": str(old), "superseded_by": str(newer)})
        say(f"left {old}: superseded by {newer}, a later attempt of the same task; not checked")
    for read in runs:
        facts = read()
        if review is not None and facts.benchmark == CLINCONSENSUS:
            facts.physicians = run_agreement(facts.records, review)
        if check is not None and facts.benchmark == CLINCONSENSUS and facts.records:
            facts.reliability = check_of_run(check, facts)
        verdict = _verdict(facts, [redact(problem) for problem in run_problems(facts, bar)])
        failed += verdict["verdict"] == FAIL
        gate["runs"].append(verdict)
        seen.append(RunFacts(facts.where, facts.framework, facts.benchmark, facts.task, model=facts.model, selection=facts.selection))
        for line in _verdict_lines(verdict, bar.accepts(), args.review, args.reliability):
            say(line)
    # A run of part of the data beside a complete run of the same model and task: a smoke test left
    # in the release folder (each run is read one at a time, so this is said once all are read).
    beside = partial_beside_complete(seen)
    for verdict in gate["runs"]:
        smoke = beside.get(verdict["run"])
        if smoke:
            verdict["problems"].append(smoke)
            say(f"FAIL {verdict['run']}: {smoke}")
    gate["passed"] = not failed
    print(f"{len(runs) - failed} of {len(runs)} run(s) pass the {bar.accepts()}", file=sys.stderr)
    if args.json:
        print(json_output.dumps(gate))
    return 1 if failed else 0


OK, FAIL = "ok", "FAIL"
BOOTSTRAP_RESAMPLES = 1000  # the report's (``report --resamples``), seed 0: the gate's intervals are the leaderboard's


def headline_figures(facts) -> dict | None:
    """The headline numbers of a run the gate read (``gates.facts.RunFacts``), each with its 95%
    interval: ClinConsensus, every headline metric of the metric table at the run's thresholds
    (CACS@k, Pass@k, rubric accuracy) as its records give them (the header's, which the gate checks
    equal), the interval the report's leaderboard shows (``report.sections.bootstrap_intervals``:
    the one case bootstrap of ``scorers.agreement``, 1000 resamples, seed 0; none from fewer cases
    than it needs); CliMedBench, its overall score (the unweighted mean of its scenarios' scores,
    as the frameworks report it; no interval). ``None`` for a run with nothing scored."""
    from clinconsensus_tasks.log_files import CLIMEDBENCH
    from clinconsensus_tasks.report.sections import bootstrap_intervals
    from clinconsensus_tasks.scorers.climedbench.scenarios import summarize as summarize_items
    from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize
    from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, headline_names

    if facts.benchmark == CLIMEDBENCH:
        results = facts.items.results if facts.items is not None else []
        if not results:
            return None
        overall = summarize_items([r.row for r in results])
        return {"score": {"estimate": overall["score"], "scenarios": len({r.scenario for r in results}), "items": len(results)}}
    if not facts.records:
        return None
    results = [r.graded.result() for r in facts.records]
    overall = summarize(results, facts.thresholds, DEFAULT_N_CRITERIA)
    ci = bootstrap_intervals(results, DEFAULT_N_CRITERIA, BOOTSTRAP_RESAMPLES, 0, thresholds=facts.thresholds)
    cases = int(overall["cases"])
    return {name: {"estimate": overall[name], "low": ci[name][0], "high": ci[name][1], "cases": cases}
            for name in headline_names(facts.thresholds)}


def headline_text(figures: dict) -> str:
    """:func:`headline_figures` in one line, as the gate prints it under a run's ``ok`` line."""
    from clinconsensus_tasks.gates.texts import figure, interval_text

    if "score" in figures:
        score = figures["score"]
        return (f"score {figure(score['estimate'])} (the unweighted mean of {score['scenarios']} scenario scores, "
                f"{score['items']} items; no interval)")
    cases = next(iter(figures.values()))["cases"]
    return (", ".join(f"{name} {interval_text(f)}" for name, f in figures.items())
            + f" ({cases} case{'' if cases == 1 else 's'}; 95% intervals: case bootstrap, {BOOTSTRAP_RESAMPLES} resamples)")


def _verdict(facts, problems: list[str]) -> dict:
    """One run's verdict as ``--json`` gives it: ok or FAIL, the problems (the FAIL lines' words), the
    headline numbers of a run that passes, and the physicians' and reliability figures it was read with."""
    reliability = None if facts.reliability is None else {k: v for k, v in facts.reliability.items() if k != "figures"}
    return {"run": facts.where, "framework": facts.framework, "benchmark": facts.benchmark, "verdict": FAIL if problems else OK,
            "problems": problems, "headline": None if problems else headline_figures(facts),
            "physicians": facts.physicians, "reliability": reliability}


def _verdict_lines(verdict: dict, accepted: str, review: str | None, reliability: str | None) -> list[str]:
    """The text of one run's verdict: a FAIL line per problem, or the ``ok`` line with its headline
    numbers under it; then the physicians' and the reliability figures the run was read with."""
    from clinconsensus_tasks.gates.physicians import estimate_text, physicians_text
    from clinconsensus_tasks.gates.reliability import flip_text

    where = verdict["run"]
    lines = [f"FAIL {where}: {problem}" for problem in verdict["problems"]] or [f"ok   {where}: {accepted}"]
    if verdict["headline"] is not None:
        lines.append(f"     {where}: {headline_text(verdict['headline'])}")
    if verdict["physicians"] is not None:
        lines.append(f"     {where}: {physicians_text(verdict['physicians'])} (review {review})")
        lines.append(f"     {where}: {estimate_text(verdict['physicians'])}")
    if verdict["reliability"] is not None and not verdict["reliability"].get("mismatch"):
        lines.append(f"     {where}: {flip_text(verdict['reliability'])} (reliability {reliability})")
    return lines
