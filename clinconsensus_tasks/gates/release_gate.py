"""The release gate over a set of runs: what ``summarize --strict`` prints and ``publish`` publishes.

Both commands call :func:`release_gate` with the same bar (``gates.bar.ReleaseBar``, built from the
same flags), so a number ``publish`` writes is one the gate passed, read by the same code: each run's
facts (``gates.facts``), the checks of ``gates.release`` (``CHECKS``, in their order, and the smoke
test left beside a complete run), the physicians' review and the judge asked again when their
folders are given, and the headline numbers of each run that passes (:func:`headline_figures`).

What it gives back, :class:`GateResult`, holds three views of the same facts: the ``--json``
document (``document``: the bar, ``passed``, each run's verdict), each check's outcome per run (for
the JUnit file: ``GateRun.checks``), and what each run rests on (``GateRun.provenance``: the model,
the judge and its prompt's sha256, the task version, the data's source, revision and sha256).
The lines a user reads are said as the runs are read (``say``), one run at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from clinconsensus_tasks.gates.bar import ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts, gate_runs
from clinconsensus_tasks.gates.release import CHECKS, partial_beside_complete, run_problems
from clinconsensus_tasks.log_files import CLIMEDBENCH, CLINCONSENSUS, model_display_name
from clinconsensus_tasks.scorers.redact import redact

OK, FAIL = "ok", "FAIL"
BOOTSTRAP_RESAMPLES = 1000  # the report's (``report --resamples``), seed 0: the gate's intervals are the leaderboard's

# Each check of ``gates.release.CHECKS`` by the name a CI's test view shows (a JUnit test case per
# check per run); a check not named here is shown by its function's name.
CHECK_NAMES = {
    "_finished": "finished",
    "_version": "current task version",
    "_data": "the benchmark's data",
    "_whole": "every case",
    "_independent": "an independent judge",
    "_official": "the official protocol",
    "_judged": "judged within the failure bar",
    "_numbers": "header numbers equal to the records'",
    "review_whole": "the physicians' review read whole",
    "min_kappa": "judge-physician kappa (--min-kappa)",
    "judge_bias": "the judge's bias against the physicians (--max-judge-bias)",
    "max_flip_rate": "the judge's flip rate (--max-flip-rate)",
}
SMOKE_CHECK = "no smoke test beside the release run"
NOT_CHECKED = "not checked: the run did not finish, so its numbers are not final"


def check_name(check: Callable[..., Any]) -> str:
    """The readable name of one of the gate's checks."""
    name = getattr(check, "__name__", str(check))
    return CHECK_NAMES.get(name, name.strip("_").replace("_", " "))


@dataclass
class GateRun:
    """One run the gate read: its verdict as ``--json`` gives it, each check's outcome, and what its
    numbers rest on."""

    verdict: dict[str, Any]
    checks: list[CheckOutcome]
    provenance: dict[str, Any]

    @property
    def passed(self) -> bool:
        return self.verdict["verdict"] == OK


@dataclass
class GateResult:
    """The gate over every run it found: the ``--json`` document and each run's details."""

    document: dict[str, Any]
    runs: list[GateRun] = field(default_factory=list)
    paths: Sequence[str] = ()

    @property
    def passed(self) -> bool:
        return bool(self.runs) and all(run.passed for run in self.runs)

    def summary(self) -> str:
        """The last line the gate prints (to stderr)."""
        if not self.runs:
            return f"no run to check in {', '.join(map(str, self.paths))} (Inspect logs or lm-eval results/samples files)"
        passing = sum(run.passed for run in self.runs)
        return f"{passing} of {len(self.runs)} run(s) pass the {self.document['profile']}"


def release_gate(paths: Sequence[str], bar: ReleaseBar, review_folder: str | None = None, reliability_folder: str | None = None,
                 say: Callable[[str], None] = print, shown_problems: int = 50) -> GateResult:
    """The release gate over the runs among ``paths`` under ``bar``: each run's verdict said as it
    is read (``say``: its FAIL lines or its ``ok`` line and headline numbers), the review's and the
    check's notes first. ``shown_problems``: how many of the review's left-out rows are said."""
    from clinconsensus_tasks.gates.reliability import check_of_run
    from clinconsensus_tasks.run_records.review_score import run_agreement

    accepted = bar.accepts()
    document: dict[str, Any] = {"profile": accepted, "exceptions": bar.exceptions(), "passed": False, "runs": [], "superseded": []}
    result = GateResult(document, paths=tuple(map(str, paths)))
    review = None
    if review_folder:
        from clinconsensus_tasks.run_records.review_intake import load_review

        review = load_review(review_folder)
        # The problems `review score` names, here too: the kappa below rests on the rows they left.
        document["review"] = {"folder": review_folder, "left_out": [redact(p) for p in review.problems],
                              "notes": [redact(n) for n in review.notes]}
        for problem in review.problems[:shown_problems]:
            say(f"review {review_folder}: left out: {redact(problem)}")
        if len(review.problems) > shown_problems:
            say(f"review {review_folder}: ... and {len(review.problems) - shown_problems} more left out "
                f"(clinconsensus-eval review score {review_folder} --json lists every one)")
        for note in review.notes:
            say(f"review {review_folder}: note: {redact(note)}")
    check = None
    if reliability_folder:
        from clinconsensus_tasks.run_records.reliability_check import load_check

        check = load_check(reliability_folder)
        document["reliability"] = {"folder": reliability_folder, "notes": [redact(n) for n in check.notes]}
        for note in check.notes:
            say(f"reliability {reliability_folder}: note: {redact(note)}")
    runs = gate_runs(paths)
    if not runs:
        return result
    seen: list[RunFacts] = []  # each run's name, model, task and selection, its records let go
    for old, newer in runs.superseded:
        document["superseded"].append({"run": str(old), "superseded_by": str(newer)})
        say(f"left {old}: superseded by {newer}, a later attempt of the same task; not checked")
    for read in runs:
        facts = read()
        if review is not None and facts.benchmark == CLINCONSENSUS:
            facts.physicians = run_agreement(facts.records, review)
        if check is not None and facts.benchmark == CLINCONSENSUS and facts.records:
            facts.reliability = check_of_run(check, facts)
        problems = [redact(problem) for problem in run_problems(facts, bar)]
        run = GateRun(verdict(facts, problems), check_outcomes(facts, bar, problems), run_provenance(facts))
        result.runs.append(run)
        document["runs"].append(run.verdict)
        seen.append(RunFacts(facts.where, facts.framework, facts.benchmark, facts.task, model=facts.model, selection=facts.selection))
        for line in verdict_lines(run.verdict, accepted, review_folder, reliability_folder):
            say(line)
    # A run of part of the data beside a complete run of the same model and task: a smoke test left
    # in the release folder (each run is read one at a time, so this is said once all are read).
    beside = partial_beside_complete(seen)
    for run in result.runs:
        smoke = beside.get(run.verdict["run"])
        run.checks.append(CheckOutcome(SMOKE_CHECK, [smoke] if smoke else []))
        if smoke:
            run.verdict["problems"].append(smoke)
            run.verdict["verdict"], run.verdict["headline"] = FAIL, None
            say(f"FAIL {run.verdict['run']}: {smoke}")
    document["passed"] = result.passed
    return result


# The checks that read a bar only a flag asks for: with none of their flags given they are not run
# (a CI's test view shows them skipped, not passed).
CHECK_FLAGS = {"review_whole": (("min_kappa", "--min-kappa"), ("max_judge_bias", "--max-judge-bias")),
               "min_kappa": (("min_kappa", "--min-kappa"),), "judge_bias": (("max_judge_bias", "--max-judge-bias"),),
               "max_flip_rate": (("max_flip_rate", "--max-flip-rate"),)}


@dataclass
class CheckOutcome:
    """One check of one run: its problem lines (empty: passed), or why it was not checked."""

    name: str
    problems: list[str] = field(default_factory=list)
    skipped: str = ""


def check_outcomes(facts: RunFacts, bar: ReleaseBar, problems: Sequence[str]) -> list[CheckOutcome]:
    """Each check of ``CHECKS`` run on the run's facts: its name and its problem lines (redacted, as
    the verdict's). The verdict (``problems``, from ``gates.release.run_problems``) decides: when it
    holds only some checks' lines (a run that did not finish is given that reason alone), the
    checks it did not read are not checked; so are the checks whose bar no flag asked for."""
    outcomes = []
    for check in CHECKS:
        flags = CHECK_FLAGS.get(getattr(check, "__name__", ""), ())
        if flags and all(getattr(bar, attribute) is None for attribute, _ in flags):
            outcomes.append(CheckOutcome(check_name(check), skipped=f"no bar asked ({' or '.join(flag for _, flag in flags)})"))
        else:
            outcomes.append(CheckOutcome(check_name(check), [redact(line) for line in check(facts, bar)]))
    if [line for outcome in outcomes for line in outcome.problems] != list(problems):
        for outcome in outcomes:
            if not outcome.problems or not all(line in problems for line in outcome.problems):
                outcome.problems, outcome.skipped = [], outcome.skipped or NOT_CHECKED
    return outcomes


def headline_figures(facts: RunFacts) -> dict | None:
    """The headline numbers of a run the gate read, each with its 95% interval: ClinConsensus, every
    headline metric of the metric table at the run's thresholds (CACS@k, Pass@k, rubric accuracy) as
    its records give them (the header's, which the gate checks equal), with the interval the
    report's leaderboard shows (``report.sections.bootstrap_intervals``: the one case bootstrap of
    ``scorers.agreement`` over the cases' metric terms, 1000 resamples, seed 0; none from fewer
    cases than it needs); CliMedBench, its overall score (the unweighted mean of its scenarios'
    scores, as the frameworks report it; no interval). ``None`` for a run with nothing scored."""
    import math

    from clinconsensus_tasks.scorers.agreement import mean_intervals
    from clinconsensus_tasks.scorers.climedbench.scenarios import summarize as summarize_items
    from clinconsensus_tasks.scorers.clinconsensus.cacs import case_term_rows, summarize
    from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, headline_names, mean_names

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
    names = mean_names(facts.thresholds)
    rows = case_term_rows(results, facts.thresholds, DEFAULT_N_CRITERIA)
    ci = {name: (math.nan, math.nan) for name in names}
    if rows:
        intervals = mean_intervals([[row[name] for name in names] for row in rows], BOOTSTRAP_RESAMPLES, 0, 0.95)
        ci = {name: (i.low, i.high) for name, i in zip(names, intervals)}
    cases = int(overall["cases"])
    return {name: {"estimate": overall[name], "low": ci[name][0], "high": ci[name][1], "cases": cases}
            for name in headline_names(facts.thresholds)}


def headline_text(figures: Mapping[str, Any]) -> str:
    """:func:`headline_figures` in one line, as the gate prints it under a run's ``ok`` line."""
    from clinconsensus_tasks.gates.texts import figure, interval_text

    if "score" in figures:
        score = figures["score"]
        return (f"score {figure(score['estimate'])} (the unweighted mean of {score['scenarios']} scenario scores, "
                f"{score['items']} items; no interval)")
    cases = next(iter(figures.values()))["cases"]
    return (", ".join(f"{name} {interval_text(f)}" for name, f in figures.items())
            + f" ({cases} case{'' if cases == 1 else 's'}; 95% intervals: case bootstrap, {BOOTSTRAP_RESAMPLES} resamples)")


def verdict(facts: RunFacts, problems: list[str]) -> dict[str, Any]:
    """One run's verdict as ``--json`` gives it: ok or FAIL, the problems (the FAIL lines' words), the
    headline numbers of a run that passes, and the physicians' and reliability figures it was read with."""
    reliability = None if facts.reliability is None else {k: v for k, v in facts.reliability.items() if k != "figures"}
    return {"run": facts.where, "framework": facts.framework, "benchmark": facts.benchmark, "verdict": FAIL if problems else OK,
            "problems": problems, "headline": None if problems else headline_figures(facts),
            "physicians": facts.physicians, "reliability": reliability}


def verdict_lines(verdict: Mapping[str, Any], accepted: str, review: str | None, reliability: str | None) -> list[str]:
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


def run_provenance(facts: RunFacts) -> dict[str, Any]:
    """What a run's numbers rest on, as it recorded it: the model and task, the task version, the
    judge(s) and their prompt (name and sha256 of its template) and mode, the data (source, sha256,
    the hub revision asked for and the commit read), the thresholds and the cases or items scored."""
    out: dict[str, Any] = {"run": facts.where, "framework": facts.framework, "benchmark": facts.benchmark, "task": facts.task,
                           "model": model_display_name(facts.model) if facts.framework == "inspect" else facts.model,
                           "task_version": facts.task_version, "selection": facts.selection}
    if facts.benchmark == CLIMEDBENCH:
        results = facts.items.results if facts.items is not None else []
        out.update(variant=facts.variant, items=len(results), scenarios=sorted({r.scenario for r in results}))
        return out
    prompts = {r.graded.judge_prompt.get("judge_prompt", "") for r in facts.records}
    shas = {r.graded.judge_prompt.get("judge_prompt_sha256", "") for r in facts.records}
    judges = {v.judge for r in facts.records for v in r.graded.roles.values() if v.judge}
    out.update(judges=list(facts.header_judges) or sorted(judges), judge_mode=", ".join(sorted({r.graded.judge_mode for r in facts.records})),
               judge_prompt=", ".join(sorted(p for p in prompts if p)), judge_prompt_sha256=", ".join(sorted(s for s in shas if s)),
               data_source=facts.data.get("data_source", ""), data_sha256=facts.data.get("data_sha256", ""),
               data_revision=facts.data.get("data_revision", ""), data_revision_requested=facts.data.get("data_revision_requested", ""),
               thresholds=sorted(facts.thresholds, reverse=True), cases=len({r.graded.case_id for r in facts.records}))
    return out
