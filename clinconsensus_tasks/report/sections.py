"""The report's sections: tables, charts and notes, built from the runs (``report.runs``).

Every number is computed by the project's scoring core (``scorers.clinconsensus.cacs`` and its
metric table, ``scorers.climedbench``, ``run_records.agreement.compare_records``) from the records the log
readers return, so the report equals what the frameworks logged; the leaderboard's columns are
the metric table's (a metric added there appears here). The bootstrap intervals score every
resample with the same core.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.report.costs import usage_rows
from clinconsensus_tasks.log_files import model_display_name
from clinconsensus_tasks.report.runs import CURVE_KS, ClinRun, MedRun, Runs
from clinconsensus_tasks.report.svg import bar_chart, escape, heatmap, line_chart, radar_chart
from clinconsensus_tasks.scorers.climedbench import scenarios as cmb
from clinconsensus_tasks.scorers.climedbench.length_deciles import DECILES, decile_metric
from clinconsensus_tasks.scorers.climedbench.robustness import OVERALL, paired_drops
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, summarize
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS
from clinconsensus_tasks.scorers.clinconsensus.metric_table import format_value, headline_names, mean_names
from clinconsensus_tasks.scorers.usage import Prices
from clinconsensus_tasks.storage import location, same_location

AUDIENCES = ("lay", "professional")
HEADLINE = headline_names()[0]  # the score charts and breakdowns show (CACS@10)
LEADERBOARD_COUNTS = ("empty_answers", "truncated_answers", "judge_failures", "suspect_answers")


@dataclass
class Table:
    """A table rendered both as Markdown and as HTML; ``collapsed`` tables are closed ``<details>``
    in the page (long provenance a reader opens when needed)."""

    title: str
    header: list[str]
    rows: list[list[str]]
    collapsed: bool = False

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(c.replace("|", "\\|").replace("\n", "<br>") for c in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        head = "".join(f"<th>{escape(c)}</th>" for c in self.header)
        # Numbers and names wrap at spaces only; long unspaced text (paths, hashes) anywhere.
        cell = lambda c: f'<td class="long">{escape(c)}</td>' if len(c) > 40 else f"<td>{escape(c)}</td>"  # noqa: E731
        body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in self.rows)
        table = f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
        if self.collapsed:
            return f"<details><summary>{escape(self.title)}</summary>{table}</details>"
        return f"<h3>{escape(self.title)}</h3>{table}"


@dataclass
class Section:
    title: str
    tables: list[Table] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _f(value: float | None) -> str:
    return format_value("", value)


def _ci(interval: tuple[float, float]) -> str:
    return f"[{_f(interval[0])}, {_f(interval[1])}]"


# -- ClinConsensus --------------------------------------------------------------------------------


def bootstrap_intervals(
    results: Sequence[CaseResult], n_criteria: int = DEFAULT_N_CRITERIA, resamples: int = 1000, seed: int = 0, level: float = 0.95,
    thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of every mean metric, resampling cases with replacement.

    Each case's terms (``scorers.cacs.case_term_rows``, the terms the frameworks' metrics average)
    are computed once; a resample is a vector of case counts (``scorers.agreement``'s one case
    bootstrap), so every metric of every resample is one matrix product. Deterministic for a given
    ``seed``, so a report can be regenerated exactly; no interval (NaN) from fewer than two cases.
    """
    from clinconsensus_tasks.scorers.agreement import mean_intervals
    from clinconsensus_tasks.scorers.clinconsensus.cacs import case_term_rows

    names = mean_names(thresholds)
    rows = case_term_rows(results, thresholds, n_criteria)
    if not rows:
        return {name: (math.nan, math.nan) for name in names}
    intervals = mean_intervals([[row[name] for name in names] for row in rows], resamples, seed, level)
    return {name: (i.low, i.high) for name, i in zip(names, intervals)}


def _count_cell(name: str, value: float, cases: int) -> str:
    if name == "empty_answers" and value:
        return f"{int(value)} of {cases} ⚠"
    return format_value(name, value) + (" ⚠" if name == "judge_failures" and value else "")


def leaderboard(runs: Sequence[ClinRun], resamples: int, seed: int) -> tuple[Table, list[str]]:
    """Every mean metric of the metric table with its interval, and the counts that change how a
    score reads (empty and truncated answers, failed judgments, suspect answers); notes for each."""
    ks = tuple(sorted({k for run in runs for k in run.thresholds}, reverse=True))  # every run's k, for every run
    names = mean_names(ks)
    header = ["model", "cases", *[f"{m} [95% CI]" for m in names], *[c.replace("_", " ") for c in LEADERBOARD_COUNTS], "judge"]
    rows, notes = [], []
    for run in runs:
        s, counts = summarize(run.results, ks, run.n_criteria), run.counts()
        ci = bootstrap_intervals(run.results, run.n_criteria, resamples, seed, thresholds=ks)
        cases = int(s["cases"])
        judges = run.meta.get("judges") or list(run.judges)
        rows.append([run.name, str(cases), *[f"{_f(s[m])} {_ci(ci[m])}" for m in names],
                     *[_count_cell(c, counts[c], cases) for c in LEADERBOARD_COUNTS], ", ".join(judges)])
        notes += run_notes(run, counts, cases)
    return Table("Leaderboard (bootstrap: resampled cases)", header, rows), notes


def run_notes(run: ClinRun, counts: Mapping[str, float], cases: int) -> list[str]:
    """What a reader must know before comparing this run's scores."""
    notes = []
    if counts["empty_answers"]:
        notes.append(f"⚠ {run.name}: {int(counts['empty_answers'])} of {cases} answers were empty. An empty answer meets no "
                     "criterion and is not sent to the judge, so these scores measure missing answers, not weak ones: "
                     "check the model endpoint (timeouts, content filters, a token limit spent on thinking).")
    if counts["judge_failures"]:
        notes.append(f"⚠ {run.name}: {int(counts['judge_failures'])} failed judgment(s) counted as not met, so its scores are "
                     "lower bounds; finish the judging (docs/failures-and-recovery.md) before comparing it.")
    if counts["suspect_answers"]:
        notes.append(f"⚠ {run.name}: {int(counts['suspect_answers'])} answer(s) hold verdict-like JSON or judge prompt section "
                     "markers (suspect_answer in the log); a judge reply that repeats such a verdict is no verdict and counts as a failed judgment (docs/verdict-rule.md).")
    if run.same_as:
        notes.append(f"{run.name} has exactly the same verdicts on every case as {run.same_as}; in the charts its line is "
                     "dashed over the other's.")
    return notes


def _breakdown_values(runs: Sequence[ClinRun], dim: str) -> tuple[list[str], dict[tuple[str, str], float]]:
    values: dict[tuple[str, str], float] = {}
    labels: list[str] = []
    for run in runs:
        for label, stats in run.breakdowns().get(dim, {}).items():
            values[(run.name, label)] = stats[HEADLINE]
            if label not in labels:
                labels.append(label)
    return sorted(labels), values


def _breakdown_table(runs: Sequence[ClinRun], dim: str, title: str) -> Table:
    labels, values = _breakdown_values(runs, dim)
    return Table(title, ["model", *labels], [[r.name, *[_f(values.get((r.name, l))) for l in labels]] for r in runs])


AGREEMENT_COLUMNS = ("agreement/percent", "agreement/kappa", "agreement/macro_f1", "agreement/cacs@10_diff", "other/cacs@10", "other/judge_failures")


def agreement_table(runs: Sequence[ClinRun]) -> Table:
    """Reference judge against the local judge, for dual-judge runs (``run_records.agreement.compare_records``,
    on the records the report read)."""
    rows = []
    for run in runs:
        if run.agreement is None:
            continue
        metrics = run.agreement
        judges = run.meta.get("judges") or list(run.agreement_judges)
        cells = [_f(metrics.get(c)) for c in AGREEMENT_COLUMNS[:-1]] + [str(int(metrics.get(AGREEMENT_COLUMNS[-1], 0)))]
        rows.append([run.name, " vs ".join(judges), *cells])
    header = ["model", "judges (reference vs local)", "percent", "kappa", "macro F1", "CACS@10 diff", "local CACS@10", "local judge failures"]
    return Table("Judge agreement (dual-judge runs)", header, rows)


JURY_NOTE = ("A jury run's score is its panel's majority verdict per criterion (a tie, or fewer usable votes than a "
             "majority of the panel, is a failed judgment): it is not the single-judge official protocol, and the release "
             "gate refuses it unless accepted with --allow-prompt jury.")


def jury_table(runs: Sequence[ClinRun]) -> Table:
    """Each juror of the jury runs (``scorers.clinconsensus.jury``): its CACS@10 and failures,
    its kappa with the panel's other jurors, and the panel's Fleiss' kappa with its interval."""
    rows = []
    for run in runs:
        jury = run.jury
        if not jury:
            continue
        fleiss = jury["fleiss_kappa"]
        for juror in jury["jurors"]:
            pairs = [f"{pair.replace(juror['role'], '').strip('-')} {k['estimate']:.3f}" for pair, k in jury["pairwise_kappa"].items()
                     if juror["role"] in pair.split("-")]
            rows.append([run.name, f"{juror['role']}: {juror['judge']}", _f(juror["cacs@10"]), str(int(juror["judge_failures"])),
                         ", ".join(pairs), f"{fleiss['estimate']:.3f} [{fleiss['low']:.3f}, {fleiss['high']:.3f}]"])
    return Table("Jury (jury runs): each juror, and how far the jurors agree", ["model", "juror", "juror CACS@10", "juror failures",
                                                                                  "Cohen's kappa with", "Fleiss' kappa [95%]"], rows)


TOKEN_NOTE = ("Judge tokens are what the judge API reported for the calls it answered. A call served from a cache "
              "(Inspect's response cache, the lm-eval path's verdict cache) costs none and a re-asked judgment counts every "
              "reply, so runs with the same verdicts can differ in tokens.")


def usage_table(runs: Sequence[ClinRun], prices: Mapping[str, Prices] | None = None) -> Table:
    """Judge tokens per run and judge, from the API usage recorded per case (``report.costs``)."""
    rows = []
    for run in runs:
        for row in usage_rows(run.usage, prices):
            rows.append([run.name, row["judge"], str(row["calls"]), str(row["prompt_tokens"]), str(row["cached_prompt_tokens"]),
                         str(row["completion_tokens"]), "–" if row["cost"] is None else f"{row['cost']:.4f}"])
    return Table("Judge tokens and cost", ["model", "judge", "calls", "prompt tokens", "cached prompt tokens", "completion tokens",
                                           "cost (--prices)"], rows)


def clin_section(runs: Sequence[ClinRun], resamples: int, seed: int, prices: Mapping[str, Prices] | None = None) -> Section:
    section = Section("ClinConsensus")
    table, notes = leaderboard(runs, resamples, seed)
    section.tables.append(table)
    section.notes += notes
    section.notes.append(f"Intervals: percentile bootstrap over cases, {resamples} resamples, numpy Generator seed {seed}.")
    section.charts.append(line_chart({r.name: r.curve() for r in runs}, list(CURVE_KS)[: min(r.n_criteria for r in runs)],
                                     "CACS@k, k = 1..30", "CACS@k"))
    for dim, label in (("subject", "subject"), ("task", "task label")):
        labels, values = _breakdown_values(runs, dim)
        section.charts.append(heatmap([r.name for r in runs], labels, values, f"{HEADLINE.upper()} by {label}"))
        section.tables.append(_breakdown_table(runs, dim, f"{HEADLINE.upper()} by {label}"))
    audience = {r.name: [r.breakdowns().get("audience", {}).get(a, {}).get(HEADLINE) for a in AUDIENCES] for r in runs}
    section.charts.append(bar_chart(list(AUDIENCES), audience, f"{HEADLINE.upper()}: lay vs professional"))
    section.tables.append(Table(f"{HEADLINE.upper()} by audience", ["model", *AUDIENCES], [[n, *map(_f, v)] for n, v in audience.items()]))
    agreement = agreement_table(runs)
    if agreement.rows:
        section.tables.append(agreement)
    jury = jury_table(runs)
    if jury.rows:
        section.tables.append(jury)
        section.notes.append(JURY_NOTE)
    section.tables.append(usage_table(runs, prices))
    section.notes.append(TOKEN_NOTE)
    return section


# -- CliMedBench ----------------------------------------------------------------------------------


def med_section(runs: Sequence[MedRun]) -> Section:
    section = Section("CliMedBench")
    summaries = {r.name: r.summary() for r in runs}
    codes = [c for c in cmb.SCENARIOS if any(f"{c}/score" in s for s in summaries.values())]
    header = ["model", "score", "parse failure", *[f"{c} ({cmb.SCENARIOS[c].metric})" for c in codes]]
    rows = [[n, _f(s.get("score")), _f(s.get("parse_failure")), *[_f(s.get(f"{c}/score")) for c in codes]] for n, s in summaries.items()]
    section.tables.append(Table("Per-scenario scores", header, rows))
    section.notes += [f"{r.name} has exactly the same item scores as {r.same_as}; in the charts its line and polygon are dashed "
                      "over the other's." for r in runs if r.same_as]
    names = {d: f"{zh} {d}" for d, zh in cmb.DIMENSIONS.items()}
    dims = {n: {names[d]: s[f"dimension/{d}"] for d in cmb.DIMENSIONS if f"dimension/{d}" in s} for n, s in summaries.items()}
    section.charts.append(radar_chart(list(names.values()), dims, "CliMedBench: the 7 dimensions"))
    section.tables.append(Table("Dimensions", ["model", *names.values()], [[n, *[_f(d.get(v)) for v in names.values()]] for n, d in dims.items()]))
    failures = {n: [s.get(f"{c}/parse_failure") for c in codes] for n, s in summaries.items()}
    section.charts.append(bar_chart(codes, failures, "Parse failures per scenario (share of answers)"))
    section.tables.append(Table("Parse failures per scenario", ["model", *codes], [[n, *map(_f, v)] for n, v in failures.items()]))
    deciles = {r.name: r.decile_summary() for r in runs}
    curves = {n: [d.get(decile_metric(k), 0.0) for k in DECILES] for n, d in deciles.items() if d}
    if curves:
        section.charts.append(line_chart(curves, list(DECILES), "Score per input-length decile (1 shortest, 10 longest)", "score", "decile"))
        section.tables.append(Table("Score per input-length decile (unweighted mean over scenarios)", ["model", *map(str, DECILES)],
                                    [[n, *[_f(deciles[n].get(decile_metric(k))) for k in DECILES]] for n in curves]))
    return section


def robustness_section(runs: Sequence[MedRun], resamples: int, seed: int) -> Section | None:
    """Clean against each variant of the same model, per scenario: paired drops with intervals."""
    pooled: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    for run in runs:
        model = model_display_name(str(run.meta.get("model") or run.name))  # the leaderboard's name, framework aside
        pooled.setdefault((model, run.variant), {}).update(run.item_scores())
    rows, codes = [], [c for c in cmb.SCENARIOS]
    for (model, variant), scores in pooled.items():
        clean = pooled.get((model, "clean"))
        if variant == "clean" or not clean or not set(clean) & set(scores):
            continue
        drops, unpaired = paired_drops(clean, scores, resamples, seed)
        by = {d.scope: d for d in drops}
        rows.append([model, variant, f"{_f(by[OVERALL].drop)} {_ci((by[OVERALL].low, by[OVERALL].high))}",
                     str(by[OVERALL].items), str(unpaired["only_clean"]),
                     *[f"{_f(by[c].clean)} → {_f(by[c].variant)}" if c in by else "" for c in codes]])
    if not rows:
        return None
    section = Section("CliMedBench robustness")
    used = [c for i, c in enumerate(codes) if any(row[5 + i] for row in rows)]
    keep = [5 + codes.index(c) for c in used]
    section.tables.append(Table("Clean against each variant (drop = clean - variant, items paired)",
                                ["model", "variant", "overall drop [95% CI]", "paired items", "left out", *[f"{c} clean → variant" for c in used]],
                                [row[:5] + [row[i] for i in keep] for row in rows]))
    section.notes.append(f"Intervals: paired percentile bootstrap over items within each scenario, {resamples} resamples, "
                         f"numpy Generator seed {seed}; the overall drop is the unweighted mean of the scenario drops.")
    return section


# -- against a baseline -----------------------------------------------------------------------------


def baseline_section(baseline: str | Path, runs: Runs, resamples: int, seed: int) -> Section:
    """Every run of the baseline's benchmark against the baseline (``compare-models``), case by case."""
    from clinconsensus_tasks.log_files import CLINCONSENSUS
    from clinconsensus_tasks.gates.regression import RunMismatch, compare_runs, read_run

    def pairable(run: Any) -> Any:  # a ClinConsensus run from what the report holds (not read again)
        if isinstance(run, ClinRun):
            return run.pairable(DEFAULT_THRESHOLDS, run.n_criteria)
        # an lm-eval CliMedBench run is its call's samples files, named together: their folder holds the run
        return read_run(Path(run.path.split(", ")[0]).parent if ", " in run.path else run.path)

    section = Section(f"Against the baseline {location(baseline).name}")
    held = [run for run in [*runs.clin, *runs.med] if same_location(run.path, baseline)]
    base = pairable(held[0]) if held else read_run(baseline)
    for run in [*runs.clin, *runs.med]:
        if same_location(run.path, baseline):
            continue
        if isinstance(run, ClinRun) != (base.benchmark == CLINCONSENSUS):  # not read: another benchmark is not paired
            other = "ClinConsensus" if isinstance(run, ClinRun) else "CliMedBench"
            section.notes.append(f"{run.name}: not compared (a {other} run; the baseline is a {base.benchmark} run)")
            continue
        try:
            comparison = compare_runs(base, pairable(run), resamples=resamples, seed=seed)
        except RunMismatch as exc:
            section.notes.append(f"{run.name}: not compared ({exc})")
            continue
        rows = [[name, format_value(name, r.baseline), format_value(name, r.candidate), f"{r.difference:+.4f}", _ci(r.interval),
                 f"{r.p_value:.4f}"] for name, r in comparison.results.items()]
        section.tables.append(Table(f"{run.name} - baseline ({comparison.paired_cases} paired cases)",
                                    ["metric", "baseline", "candidate", "difference", "95% CI (paired bootstrap)", "p (paired permutation)"], rows))
    section.notes.append(f"Paired over the cases both runs share; {resamples} bootstrap resamples and permutations, seed {seed}.")
    return section


# -- how the runs were made -------------------------------------------------------------------------


def _sha256(path: str | None) -> str:
    if not path or not Path(path).is_file():
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def package_versions() -> dict[str, str]:
    out = {}
    for dist in ("clinconsensus-tasks", "inspect-ai", "lm-eval"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _data_at_a_glance(source: Any) -> str:
    """A data source in a few words: a file's name, or ``13 files in <folder>`` for CliMedBench's per-scenario files."""
    if isinstance(source, dict):
        folders = {str(Path(str(p)).parent) for p in source.values()}
        where = folders.pop() if len(folders) == 1 else f"{len(folders)} folders"
        return f"{len(source)} scenario files in {where}"
    return Path(str(source)).name if source else ""


def _few(items: Sequence[str], what: str) -> str:
    """Up to two names in full; more as a count and the first and last (the full list is in the details)."""
    return ", ".join(items) if len(items) <= 2 else f"{len(items)} {what}: {items[0]} … {items[-1]}"


def _data_in_full(source: Any) -> tuple[str, str]:
    """``(sources, sha256s)``: one line per file for CliMedBench's per-scenario files."""
    if isinstance(source, dict):
        return ("\n".join(f"{code}: {path}" for code, path in source.items()),
                "\n".join(f"{code}: {_sha256(path)}" for code, path in source.items() if _sha256(path)))
    return str(source or ""), _sha256(source) if isinstance(source, str) else ""


def metadata_section(runs: Runs) -> Section:
    """Who ran what, at a glance; the full provenance (paths, hashes, packages) in closed details."""
    section = Section("Run metadata")
    glance, full = [], []
    for run in [*runs.clin, *runs.med]:
        m = run.meta
        source, shas = _data_in_full(m.get("data_source"))
        logs = run.path.split(", ")
        glance.append([run.name, m.get("framework", ""), _few(str(m.get("task", "")).split(", "), "tasks"),
                       ", ".join(m.get("judges") or []) or "–", _data_at_a_glance(m.get("data_source")) or "–",
                       location(logs[0]).name if len(logs) == 1 else f"{len(logs)} files in {location(logs[0]).parent}"])
        full.append([run.name, m.get("model", ""), m.get("framework", ""), m.get("task", ""), ", ".join(m.get("judges") or []),
                     m.get("judge_mode", ""), m.get("judge_prompt_sha256", ""), source, m.get("data_sha256") or shas,
                     m.get("data_revision", ""), ", ".join(f"{k} {v}" for k, v in (m.get("packages") or {}).items()), run.path])
    section.tables.append(Table("Runs at a glance", ["model", "framework", "task", "judges", "data", "log"], glance))
    section.tables.append(Table("Runs", ["model", "model as logged", "framework", "task", "judges", "judge mode", "judge prompt sha256",
                                         "data source", "data sha256", "data revision", "logged packages", "log"], full, collapsed=True))
    if runs.results_files:
        section.tables.append(Table("lm-eval results files", ["model", "model_args", "tasks", "file"],
                                    [[r["model"], str(r["model_args"] or ""), ", ".join(r["tasks"]), r["path"]] for r in runs.results_files],
                                    collapsed=True))
    if runs.skipped:
        section.tables.append(Table("Skipped logs (unfinished, empty, or superseded by a later attempt)", ["log", "reason"], [[p, why] for p, why in runs.skipped]))
    section.tables.append(Table("Report built with", ["package", "version"], [[k, v] for k, v in package_versions().items()], collapsed=True))
    return section
