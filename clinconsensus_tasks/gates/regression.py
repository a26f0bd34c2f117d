"""The regression gate of a release checklist (``clinconsensus-eval compare-models BASELINE CANDIDATE``).

Two runs of the same benchmark (Inspect logs or lm-eval outputs, in any mix) are paired case by
case; each headline metric gets the candidate - baseline difference, a paired bootstrap interval
and a paired permutation p-value (``scorers.paired``), and ``--fail-if-worse METRIC[:DELTA]`` turns
that into an exit code for CI. Runs on different data (case ids, questions or rubrics differ) or
graded by different judges (model or judge mode) are refused unless the caller says otherwise:
a difference between them would not be the model's.

Before pairing, each run is held to the facts the release gate (``summarize --strict``) reads from
it (``gates.facts``, judged by ``gates.release``'s rules, :data:`COMPARISON_CHECKS`):
finished (status, errored samples, results with samples), judgment failures within the bar, no
suspect or cut answer, the whole selection (no ``--limit``), the current task version, header
numbers equal to the records'. A run that fails one is refused (exit 1, the gate's words for each
side, a JUnit error): its numbers are not the model's. The release-only facts (the public data at
its revision, an independent judge, the official prompt) do not apply: two runs of a custom prompt
or of the bundled sample may be compared; nor do the model's own empty or unparseable answers, which
the comparison scores (a candidate that stops answering is worse, not refused). The flags that
loosen a fact (``--judge-failure-threshold``, ``--allow-different-data``, ``--allow-different-judge``)
are printed on the RESULT line.

Per-case values come from the projects' own log readers and scoring core, so a run's value here
equals what its framework reported: ClinConsensus from ``clinconsensus.logs.read_case_records``
(each case's term of every mean metric of ``scorers.clinconsensus.metric_table``: rubric accuracy,
Pass@k indicators, CACS@k terms),
CliMedBench from the per-item scores in the Inspect log or lm-eval sample records.
"""

from __future__ import annotations

import hashlib
import json
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.log_files import CLIMEDBENCH, CLINCONSENSUS, SeveralRuns, benchmark_of, is_lmeval_samples, run_files
from clinconsensus_tasks.gates.bar import ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts, run_facts
from clinconsensus_tasks.gates.release import COMPARISON_CHECKS, COMPARISON_PROFILE, run_problems
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, case_terms
from clinconsensus_tasks.scorers.clinconsensus.metric_table import format_value
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS
from clinconsensus_tasks.scorers.redact import redact
from clinconsensus_tasks.scorers.usage import judge_name
from clinconsensus_tasks.scorers.paired import PairedColumns, PairedResult, compare_paired, worse_beyond
from clinconsensus_tasks.storage import output_location, write_bytes

SIDES = ("baseline", "candidate")


class RunMismatch(ClinConsensusError):
    """The two runs cannot be compared as they stand (other data, other judge, other benchmark)."""


@dataclass
class Cell:
    """One case's contribution to one metric: numerator and denominator sums (over epochs) and stratum."""

    num: float = 0.0
    den: float = 0.0
    stratum: str = ""


@dataclass
class PairableRun:
    """A run reduced to what pairing needs: per metric, per case key, a :class:`Cell`."""

    path: str
    benchmark: str
    metrics: dict[str, dict[str, Cell]]
    content: dict[str, str]  # case key -> sha256 of what was asked (question, rubrics / item)
    judges: tuple[str, ...] = ()
    judge_mode: str = ""

    def add(self, metric: str, key: str, num: float, den: float = 1.0, stratum: str = "") -> None:
        cell = self.metrics.setdefault(metric, {}).setdefault(key, Cell(stratum=stratum))
        cell.num += num
        cell.den += den


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()


# -- reading runs (files: ``log_files.run_files``; records: the benchmarks' readers) ---------------


def case_content(record: Any) -> str:
    """sha256 of what a ClinConsensus case asked (its question and rubric): cases pair by it."""
    return _digest([record.question, [list(x) for x in record.rubrics]])


def clinconsensus_pairable(path: str, records: Sequence[Any], thresholds: Sequence[int], n_criteria: int) -> PairableRun:
    """A ClinConsensus run's per-case terms, keyed by case, from its records."""
    return pairable_of_results(path, [r.graded.result() for r in records], {r.graded.case_id: case_content(r) for r in records},
                               {r.graded.judge for r in records if r.graded.judge}, {r.graded.judge_mode for r in records if r.graded.judge_mode},
                               thresholds, n_criteria)


def pairable_of_results(path: str, results: Sequence[Any], content: Mapping[str, str], judges: Iterable[str], modes: Iterable[str],
                        thresholds: Sequence[int], n_criteria: int) -> PairableRun:
    """A ClinConsensus run's per-case terms from each record's result (``scorers.cacs.CaseResult``:
    the report keeps those, not the records) and each case's :func:`case_content`."""
    run = PairableRun(path, CLINCONSENSUS, {}, dict(content), tuple(sorted(judges)), ", ".join(sorted(modes)))
    for r in results:
        for name, term in case_terms(r.met, r.judged, thresholds, n_criteria).items():  # every mean metric of the metric table
            run.add(name, r.case, term)
    return run


def climedbench_pairable(path: str, logs: Sequence[Any]) -> PairableRun:
    """A CliMedBench run's scored items, keyed by item, from its item logs; an unscored one is an
    error (a difference without it would not be the run's)."""
    run = PairableRun(path, CLIMEDBENCH, {}, {})
    for log in logs:
        log.require_scored()
        for result in log.results:
            key, code = result.key, result.scenario
            run.add("score", key, result.value, stratum=code)
            run.add(f"{code}/score", key, result.value, stratum=code)
            run.add(f"dimension/{SCENARIOS[code].dimension}", key, result.value, stratum=code)
            run.content[key] = _digest(log.items.get(key))
    return run


def pairable_from_facts(facts: RunFacts, thresholds: Sequence[int], n_criteria: int) -> PairableRun:
    """The run the gate's facts already hold (its records, its items): compared without reading it again."""
    if facts.benchmark == CLINCONSENSUS:
        return clinconsensus_pairable(facts.where, facts.records, thresholds, n_criteria)
    return climedbench_pairable(facts.where, [facts.items])


def one_run(path: str | Path, benchmark: str | None = None) -> list[Path]:
    """The files of the one run ``path`` names (:func:`log_files.run_files`); :class:`RunMismatch` for several.
    ``benchmark``: that benchmark's run in an lm-eval output folder of one call of both."""
    try:
        return run_files(path, benchmark)
    except SeveralRuns as exc:
        raise RunMismatch(str(exc)) from None


def read_run(path: str | Path, thresholds: Sequence[int] = (7, 10), n_criteria: int = DEFAULT_N_CRITERIA) -> PairableRun:
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.climedbench.logs import read_item_log

    files = one_run(path)
    if benchmark_of(files[0]) == CLINCONSENSUS:
        return clinconsensus_pairable(str(files[0]), [r for f in files for r in read_case_records(f)], thresholds, n_criteria)
    return climedbench_pairable(str(files[0]), [read_item_log(f) for f in files])


# -- the runs' facts: the release gate's readers and rules -------------------------------------------


@dataclass
class Refusal:
    """Runs the gate will not compare: each side's problems in the release gate's words (empty: fit)."""

    paths: dict[str, str]  # side -> the run's file, as the gate names it
    problems: dict[str, list[str]]  # side -> why it is not fit to compare
    exceptions: list[str] = field(default_factory=list)

    def refused(self) -> list[str]:
        return [side for side in SIDES if self.problems[side]]

    def to_dict(self) -> dict[str, Any]:
        return {**self.paths, "refused": {side: self.problems[side] for side in self.refused()},
                "checked": COMPARISON_PROFILE, "exceptions": self.exceptions, "passed": False}


def check_runs(baseline: str | Path, candidate: str | Path, bar: ReleaseBar) -> tuple[Refusal, list[RunFacts]]:
    """Each run's facts (``gates.facts``) under the release gate's comparison rules and ``bar``;
    the facts too, which hold the runs' records (read once: the comparison is made from them). An
    lm-eval output folder of one call of both benchmarks (``lm_eval --tasks clinconsensus,climedbench
    --log_samples --output_path DIR``) is its ClinConsensus run: the one ClinConsensus samples file."""
    paths, problems, read = {}, {}, []
    for side, path in zip(SIDES, (baseline, candidate)):
        files = one_run(path, CLINCONSENSUS)
        chosen = files[0] if len(files) == 1 and is_lmeval_samples(files[0], CLINCONSENSUS) else path  # read alone, not the folder
        facts = run_facts(chosen)
        read.append(facts)
        paths[side], problems[side] = facts.where, run_problems(facts, bar, COMPARISON_CHECKS)
    return Refusal(paths, problems), read


def result_line(verdict: str, exceptions: Sequence[str]) -> str:
    """``RESULT: <verdict>``, and the flags that loosened a fact, as the release gate prints its exceptions."""
    return f"RESULT: {verdict}" + (f"; EXCEPTIONS: {', '.join(exceptions)}" if exceptions else "")


def format_refusal(refusal: Refusal) -> str:
    """One line per problem, naming the side and the run (``summarize --strict``'s words), and the verdict."""
    lines = []
    for side in SIDES:
        where = refusal.paths[side]
        lines += [f"FAIL {side} {where}: {redact(problem)}" for problem in refusal.problems[side]] or [f"ok   {side} {where}"]
    sides = " and ".join(refusal.refused())
    lines.append(result_line(f"REFUSED: the {sides} {'runs are' if len(refusal.refused()) > 1 else 'run is'} not fit to compare "
                             f"({COMPARISON_PROFILE}); nothing was compared", refusal.exceptions))
    return "\n".join(lines)


def write_refusal_junit(refusal: Refusal, path: str | Path) -> None:
    """JUnit XML of a refused comparison: one test case per run, an error for each run refused."""
    refused = refusal.refused()
    suite = ET.Element("testsuite", name="clinconsensus-eval compare-models", tests=str(len(SIDES)), failures="0",
                       errors=str(len(refused)), skipped="0")
    props = ET.SubElement(suite, "properties")
    for side in SIDES:
        ET.SubElement(props, "property", name=side, value=refusal.paths[side])
    ET.SubElement(props, "property", name="exceptions", value=", ".join(refusal.exceptions))
    for side in SIDES:
        case = ET.SubElement(suite, "testcase", classname="compare_models.runs", name=f"{side} run fit to compare")
        problems = [redact(p) for p in refusal.problems[side]]
        if problems:
            error = ET.SubElement(case, "error", message=f"{side} {refusal.paths[side]}: {problems[0]}", type="refused")
            error.text = "\n".join(problems)
        ET.SubElement(case, "system-out").text = "\n".join(problems) or f"{side} {refusal.paths[side]}: {COMPARISON_PROFILE}"
    _write_xml(suite, path)


def _write_xml(suite: Any, path: str | Path) -> None:
    """A JUnit file, to a local path or a URL."""
    import io

    data = io.BytesIO()
    ET.ElementTree(suite).write(data, encoding="utf-8", xml_declaration=True)
    write_bytes(output_location(path), data.getvalue())


# -- pairing and comparing ---------------------------------------------------------------------------


@dataclass
class Comparison:
    baseline: str
    candidate: str
    benchmark: str
    paired_cases: int
    only_baseline: list[str]
    only_candidate: list[str]
    changed: list[str]
    judges: dict[str, list[str]]
    results: dict[str, PairedResult] = field(default_factory=dict)
    gates: dict[str, float] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)  # the flags that loosened a fact, printed on the RESULT line

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline, "candidate": self.candidate, "benchmark": self.benchmark,
            "paired_cases": self.paired_cases, "only_baseline": self.only_baseline, "only_candidate": self.only_candidate,
            "changed_cases": self.changed, "judges": self.judges, "warnings": self.warnings,
            "metrics": {
                name: {"baseline": r.baseline, "candidate": r.candidate, "difference": r.difference,
                       "ci95": list(r.interval), "p_value": r.p_value, "p_exact": r.exact_p, "cases": r.cases,
                       **({"gate_delta": self.gates[name], "gate_failed": name in self.failed} if name in self.gates else {})}
                for name, r in self.results.items()
            },
            "checked": COMPARISON_PROFILE, "exceptions": self.exceptions,
            "passed": not self.failed,
        }


def parse_gates(specs: Sequence[str]) -> dict[str, float]:
    """``["cacs@10:0.02", "rubric_accuracy"]`` -> ``{"cacs@10": 0.02, "rubric_accuracy": 0.0}``."""
    gates = {}
    for spec in specs:
        name, _, delta = spec.partition(":")
        try:
            gates[name.strip()] = float(delta) if delta.strip() else 0.0
        except ValueError:
            raise ValueError(f"--fail-if-worse {spec!r}: DELTA must be a number (a fraction, e.g. cacs@10:0.02)") from None
        if gates[name.strip()] < 0:
            raise ValueError(f"--fail-if-worse {spec!r}: DELTA must not be negative")
    return gates


def compare_runs(
    baseline: PairableRun,
    candidate: PairableRun,
    gates: dict[str, float] | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    allow_different_data: bool = False,
    allow_different_judge: bool = False,
) -> Comparison:
    """Pair the two runs by case and compare every metric both have; apply the gates."""
    gates = dict(gates or {})
    if baseline.benchmark != candidate.benchmark:
        raise RunMismatch(f"{baseline.path} is a {baseline.benchmark} run and {candidate.path} a {candidate.benchmark} run")
    keys_b, keys_c = set(baseline.content), set(candidate.content)
    common = sorted(keys_b & keys_c)
    changed = [k for k in common if baseline.content[k] != candidate.content[k]]
    only_b, only_c = sorted(keys_b - keys_c), sorted(keys_c - keys_b)
    if (only_b or only_c or changed) and not allow_different_data:
        raise RunMismatch(
            f"the runs are not on the same data: {len(only_b)} case(s) only in the baseline (e.g. {only_b[:3]}), "
            f"{len(only_c)} only in the candidate (e.g. {only_c[:3]}), {len(changed)} whose question or rubric differs "
            f"(e.g. {changed[:3]}). Pass --allow-different-data to compare the {len(common)} shared case(s)."
        )
    if not common:
        raise RunMismatch(f"{baseline.path} and {candidate.path} share no case")
    judges_b = {judge_name(j) for j in baseline.judges}
    judges_c = {judge_name(j) for j in candidate.judges}
    modes_differ = bool(baseline.judge_mode and candidate.judge_mode and baseline.judge_mode != candidate.judge_mode)
    if (judges_b != judges_c or modes_differ) and not allow_different_judge:
        raise RunMismatch(
            f"the runs were graded differently: baseline judge {sorted(baseline.judges)} ({baseline.judge_mode or 'mode not recorded'}), "
            f"candidate judge {sorted(candidate.judges)} ({candidate.judge_mode or 'mode not recorded'}). "
            "Pass --allow-different-judge to compare them anyway."
        )
    names = sorted((m for m in baseline.metrics if m in candidate.metrics), key=lambda m: m.startswith("dimension/"))
    unknown = [g for g in gates if g not in names]
    if unknown:
        raise ValueError(f"--fail-if-worse: unknown metric(s) {', '.join(unknown)}; this comparison has {', '.join(names)}")
    out = Comparison(baseline.path, candidate.path, baseline.benchmark, len(common), only_b, only_c, changed,
                     {"baseline": list(baseline.judges), "candidate": list(candidate.judges)}, gates=gates)
    if changed:
        out.warnings.append(f"{len(changed)} paired case(s) differ in question or rubric")
    for name in names:
        keys = [k for k in common if k in baseline.metrics[name] and k in candidate.metrics[name]]
        if not keys:
            continue
        b, c = baseline.metrics[name], candidate.metrics[name]
        cols = PairedColumns.build(
            [b[k].num for k in keys], [c[k].num for k in keys], [b[k].den for k in keys], [c[k].den for k in keys],
            [b[k].stratum for k in keys],
        )
        result = compare_paired(cols, resamples, seed)
        out.results[name] = result
        if name in gates and worse_beyond(result, gates[name]):
            out.failed.append(name)
    return out


# -- output ------------------------------------------------------------------------------------------


def _gate_cell(comparison: Comparison, name: str) -> str:
    """``pass``/``FAIL`` and the rule that was applied: the drop allowed, and that the interval must exclude 0."""
    if name not in comparison.gates:
        return ""
    delta = comparison.gates[name]
    rule = f"fails if worse by more than {delta:.4f} with the CI below 0" if delta else "fails if worse with the CI below 0"
    return ("FAIL" if name in comparison.failed else "pass") + f" ({rule})"


def format_table(comparison: Comparison) -> str:
    """The comparison as a table, values as the frameworks and ``summarize`` print them (fractions,
    four decimals: ``metric_table.format_value``)."""
    c = comparison
    width = max([22, *(len(name) + 2 for name in c.results)])
    lines = [
        f"baseline:  {c.baseline}",
        f"candidate: {c.candidate}",
        f"{c.benchmark}: {c.paired_cases} paired cases"
        + (f" ({len(c.only_baseline)} only in baseline, {len(c.only_candidate)} only in candidate)" if c.only_baseline or c.only_candidate else "")
        + f"; judges {', '.join(c.judges['baseline']) or '-'} / {', '.join(c.judges['candidate']) or '-'}",
        *[f"warning: {w}" for w in c.warnings],
        "",
        f"{'metric':<{width}}{'baseline':>10}{'candidate':>11}{'diff':>9}  {'95% CI (paired bootstrap)':<26}{'p (perm.)':>10}  gate",
    ]
    for name, r in c.results.items():
        ci = f"[{format_value(name, r.interval[0])}, {format_value(name, r.interval[1])}]"
        p = f"{r.p_value:.4f}" + ("*" if r.exact_p else " ")
        diff = "–" if math.isnan(r.difference) else f"{r.difference:+.4f}"
        lines.append(f"{name:<{width}}{format_value(name, r.baseline):>10}{format_value(name, r.candidate):>11}{diff:>9}  "
                     f"{ci:<26}{p:>10}  {_gate_cell(c, name)}".rstrip())
    lines.append("")
    lines.append("values are fractions, as the frameworks and summarize print them; diff = candidate - baseline; "
                 "p: two-sided paired permutation test (* exact: every swap pattern enumerated)")
    if c.gates or c.exceptions:
        verdict = f"FAIL: candidate worse on {', '.join(c.failed)}" if c.failed else "pass" if c.gates else "no gate (--fail-if-worse)"
        lines.append(result_line(verdict, c.exceptions))
    return "\n".join(lines)


def write_junit(comparison: Comparison, path: str | Path) -> None:
    """JUnit XML for CI systems: one test case per metric; gated metrics that fail are failures."""
    c = comparison
    suite = ET.Element("testsuite", name="clinconsensus-eval compare-models", tests=str(len(c.results)),
                       failures=str(len(c.failed)), errors="0", skipped="0")
    props = ET.SubElement(suite, "properties")
    for key, value in (("baseline", c.baseline), ("candidate", c.candidate), ("benchmark", c.benchmark), ("paired_cases", str(c.paired_cases)),
                       ("exceptions", ", ".join(c.exceptions))):
        ET.SubElement(props, "property", name=key, value=value)
    for name, r in c.results.items():
        case = ET.SubElement(suite, "testcase", classname=f"compare_models.{c.benchmark}", name=name)
        summary = (f"baseline {r.baseline:.6f}, candidate {r.candidate:.6f}, difference {r.difference:+.6f}, "
                   f"95% CI [{r.interval[0]:+.6f}, {r.interval[1]:+.6f}], p {r.p_value:.4f}, {r.cases} cases")
        if name in c.failed:
            failure = ET.SubElement(case, "failure", message=f"{name}: candidate worse by more than {c.gates[name]} (interval excludes 0)", type="regression")
            failure.text = summary
        ET.SubElement(case, "system-out").text = summary
    _write_xml(suite, path)
