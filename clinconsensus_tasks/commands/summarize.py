"""``clinconsensus-eval summarize``: metrics and breakdowns from the records of runs; ``--strict``: the release gate."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from clinconsensus_tasks import json_output
from clinconsensus_tasks.commands.arguments import add_thresholds
from clinconsensus_tasks.commands.gate_options import GATE_ONLY, add_gate_arguments, given
from clinconsensus_tasks.commands.tables import format_table, number
# The numbers the gate prints under each run it passes (the gate and publish share them: gates.release_gate).
from clinconsensus_tasks.gates.release_gate import headline_figures, headline_text  # noqa: F401


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
    add_gate_arguments(p, when="with --strict")
    p.add_argument("--junit", metavar="FILE",
                   help="with --strict: also write the verdicts as JUnit XML to FILE, a test case per check per run (a "
                        "failure carrying its FAIL lines), for CI's test view; a local path or a URL (default: none)")
    p.add_argument("--markdown", metavar="FILE",
                   help="with --strict: also write a Markdown summary to FILE (each run's verdict, its headline numbers with "
                        "their intervals, what the gate read); appended to when FILE is the file $GITHUB_STEP_SUMMARY names, "
                        "as GitHub Actions expects (--markdown \"$GITHUB_STEP_SUMMARY\"); a local path or a URL (default: none)")


# What --strict writes besides its lines (they mean nothing without it either).
GATE_OUTPUTS = ("--junit", "--markdown")


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
    strict_only = [flag for flag in (*GATE_ONLY, *GATE_OUTPUTS) if given(args, flag)]
    if strict_only:
        from clinconsensus_tasks.errors import ConfigurationError

        raise ConfigurationError(f"{', '.join(strict_only)} {'belongs' if len(strict_only) == 1 else 'belong'} to the release gate: "
                                 "add --strict")
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
    that passes, the headline numbers it passed with their 95% intervals (``gates.release_gate``,
    which ``publish`` runs too). ``--json``: the same facts as strict JSON, the exit code the same;
    ``--junit``/``--markdown``: the same verdicts for CI (``gates.release_outputs``)."""
    from clinconsensus_tasks.commands.gate_options import gate_bar, shown_problems
    from clinconsensus_tasks.gates.release_gate import release_gate

    bar = gate_bar(args)
    say = (lambda line: None) if args.json else print  # noqa: E731 (--json: the same facts, as one JSON document at the end)
    result = release_gate(args.logs, bar, args.review, args.reliability, say=say, shown_problems=shown_problems())
    if args.junit or args.markdown:
        from clinconsensus_tasks.gates.release_outputs import junit_xml, markdown_summary, write_output

        for target, render in ((args.junit, junit_xml), (args.markdown, markdown_summary)):
            if target:
                print(write_output(target, render(result)), file=sys.stderr)
    print(result.summary(), file=sys.stderr)
    if args.json:
        print(json_output.dumps(result.document))
    return 0 if result.passed else 1

