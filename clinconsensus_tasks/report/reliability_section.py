"""The report's section on a reliability check (``report ... --reliability DIR``): each judge of the
runs asked again, how often a verdict flips, whether answer-irrelevant edits move it, and each
headline's noise split between the cases and the judge. The figures are those ``clinconsensus-eval
reliability`` prints, made again from the check's asks and the runs the report read."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.gates.texts import figure, interval_text, undefined
from clinconsensus_tasks.report.sections import Section, Table
from clinconsensus_tasks.report.svg import bar_chart
from clinconsensus_tasks.run_records.reliability_check import load_check, match_run, run_figures
from clinconsensus_tasks.storage import same_location


def reliability_section(check: Any, figures: Sequence[Mapping[str, Any]], left_out: Sequence[str], incomplete: int) -> Section:
    """``figures``: ``run_records.reliability_check.run_figures`` of each run of the check that the
    report holds; ``left_out``: a line for each of the check's runs not shown (not read by the report,
    or re-judged since the check); ``incomplete``: asks not yet made."""
    settings = check.plan["settings"]
    section = Section(f"The judge asked again (check {check.folder})")
    section.notes.append(
        f"{len(check.plan['rows'])} cases drawn per subject x difficulty stratum (every case the same chance), criteria per case "
        f"{settings['criteria_per_case']}; each row asked {settings['repeat']} times as it was and once under each edit "
        f"({', '.join(settings['transforms']) or 'none'}), each ask a fresh request under the run's own protocol. Flip rate: rows "
        "whose asks are not all equal; pairwise: pairs of asks that disagree; self-kappa: Fleiss' kappa with each ask a rater. "
        "Intervals: 95% percentile bootstrap of cases; where no row flipped, the bootstrap has nothing to resample, and the "
        "interval's end is the exact bound for no flip in n cases, 1 - 0.05^(1/n) (marked: exact bound).")
    if incomplete:
        section.notes.append(f"NOT FINISHED: {incomplete} planned asks are missing; run the same reliability command again.")
    section.notes += left_out
    for note in check.notes:
        section.notes.append(f"Left out of the check: {note}")
    judges = [(run, j) for run in figures for j in run["judges"]]
    section.tables.append(Table("Each judge against itself", ["#", "run · judge", "flip rate [95% CI]", "pairwise", "self-kappa",
                                                              "rows (cases)", "failed asks"],
                                [[f"#{n}", f"{run['run']} · {j['role']} {j['judge']}", interval_text(j["repeatability"]["flip_rate"]),
                                  interval_text(j["repeatability"]["pairwise_disagreement"]), interval_text(j["repeatability"]["self_kappa"]),
                                  f"{j['repeatability']['rows_counted']} ({j['repeatability']['cases']})",
                                  str(j["repeatability"]["failed_asks"])] for n, (run, j) in enumerate(judges, start=1)]))
    if judges:
        section.charts.append(bar_chart([f"#{n}" for n in range(1, len(judges) + 1)],
                                        {"flip rate": [_bar(j["repeatability"]["flip_rate"]) for _, j in judges]},
                                        "Share of rows whose verdict changed when asked again"))
    edits = [[f"{run['run']} · {j['role']}", form, interval_text(f["flip_rate"]), interval_text(f["up"]), interval_text(f["down"]),
              interval_text(f["net"]), str(f["rows"])] for run, j in judges for form, f in j["invariance"].items()]
    if edits:
        section.tables.append(Table("Answer-irrelevant edits: verdicts against the first ask as it was (up: not met to met)",
                                    ["run · judge", "edit", "flip rate", "up", "down", "net (up - down)", "rows"], edits))
        section.notes.append("An edit keeps every fact and instruction of the answer (docs/reliability.md says why each is "
                             "answer-irrelevant): a judge's own noise flips edited rows as often as asked-again ones, in both "
                             "directions; a net far from 0 is a judge reading form.")
    noise = [[run["run"], name, f"{m['estimate']:.4f}", interval_text(m["cases_and_judge"]), interval_text(m["judge_alone"]),
              figure(m["judge_share"])]
             for run in figures if "why" not in run["headline"] for name, m in run["headline"].items()]
    if noise:
        section.tables.append(Table("Each headline's noise: cases and judge", ["run", "metric", "estimate", "cases and judge [95% CI]",
                                                                               "judge alone [95% CI]", "judge's share of the variance"], noise))
        section.notes.append("The case bootstrap (cases and judge) resamples values each judged once, so it holds the judge's noise "
                             "already: it is the interval for the benchmark's cases with the judge in it. The judge's share is the "
                             "part of its variance the judge's asks show; judge alone is how far the same cases' headline moves "
                             "when the judge is asked again (bench/judge_noise.py: coverage of each).")
    for run in figures:
        if "why" in run["headline"]:
            section.notes.append(f"{run['run']}: the headline's noise is n/a: {run['headline']['why']}.")
    flipped = [[run["run"], row["case_id"], row["criterion_id"], row["subject"], row["difficulty"],
                " ".join("?" if a is None else "met" if a else "not met" for a in row["asks"])]
               for run in figures for j in run["judges"] if j["role"] == run["headline_role"] for row in j["repeatability"]["flipped"]]
    if flipped:
        section.tables.append(Table(f"Rows whose verdict flipped ({len(flipped)}): for the physicians' review to look at",
                                    ["run", "case", "criterion", "subject", "difficulty", "asks"], flipped, collapsed=True))
    for dim in ("subject", "difficulty"):
        table = [[f"{run['run']} · {j['role']}", label, str(s["rows"]), interval_text(s)]
                 for run, j in judges for label, s in j["repeatability"]["by"][dim].items()]
        if table:
            section.tables.append(Table(f"Flip rate by {dim}", ["run · judge", dim, "rows", "flip rate [95% CI]"], table, collapsed=True))
    return section


def _bar(figure: Mapping[str, float]) -> float | None:
    return None if undefined(figure["estimate"]) else figure["estimate"]


def check_section(folder: str | Path, runs: Any, resamples: int, seed: int) -> Section:
    """The reliability check in ``folder`` on the runs the report read (figures made from their records),
    each run matched to the check as the gate matches it (``reliability_check.match_run``)."""
    check = load_check(folder)
    figures, left_out, incomplete = [], [], 0
    for index, planned in enumerate(check.plan["runs"]):
        held = next((run for run in runs.clin if same_location(run.path, planned["path"])), None)
        if held is None:
            left_out.append(f"{planned['path']}: asked in the check, not among the report's runs (name its log to see it here).")
            continue
        records = read_case_records(held.path)  # the report keeps no records: the check's few runs are read again
        match = match_run(check, held.path, records)
        if match.why_not:
            left_out.append(f"{held.path}: not shown: {match.why_not}.")
            continue
        incomplete += match.missing
        figures.append(run_figures(check.plan, match.index, records, check.asks, held.thresholds, resamples, seed))
    return reliability_section(check, figures, left_out, incomplete)
