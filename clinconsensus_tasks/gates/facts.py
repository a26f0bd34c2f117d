"""What a run recorded, read once from its files: the facts every gate reads (``gates.release``
for ``summarize --strict``, ``gates.regression`` for ``compare-models``) and nothing else.

A run is an Inspect log, or an lm-eval results file with the samples file(s) of its tasks
(``--log_samples``); a samples file without its results file is a run that did not finish.
:func:`gate_runs` finds the runs among files and folders, :func:`run_facts` reads the one run a
path names. Each reader records what it found; judging it is the gates' business.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase, inspect_log_cases, read_case_records
from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.judge.provenance import DATA_FIELDS
from clinconsensus_tasks.log_files import (
    CLIMEDBENCH, CLINCONSENSUS, benchmark_of, ended_by_judge_policy, Found, find_logs, is_file, is_inspect_log, is_lmeval_results, is_lmeval_samples,
    lmeval_run_key, lmeval_task, read_inspect_log as read_eval,
)
from clinconsensus_tasks.scorers.clinconsensus.metric_table import reported_thresholds
from clinconsensus_tasks.scorers.clinconsensus.records import INSPECT_SCORER, SECOND_ROLE


@dataclass
class RunFacts:
    """What one run recorded, read once from its files; every check reads these and nothing else."""

    where: str
    framework: str  # "inspect" or "lm-eval"
    benchmark: str
    task: str = ""
    unfinished: list[str] = field(default_factory=list)  # why the run did not finish
    task_version: str = ""
    model: str = ""  # the model under test, as the run names it
    header_judges: tuple[str, ...] = ()  # the judge(s) the run's header names
    self_grading_allowed: bool = False
    selection: str = ""  # --limit / sample ids the run was given ("" for none)
    planned_cases: int | None = None  # cases in the data the run loaded
    data: Mapping[str, str] = field(default_factory=dict)  # judge.provenance.DATA_FIELDS
    header_metrics: Mapping[str, float] = field(default_factory=dict)
    thresholds: tuple[int, ...] = (7, 10)
    records: list[LoggedCase] = field(default_factory=list)  # ClinConsensus
    errored: int = 0  # samples without a record (Inspect errored samples)
    judges_per_case: int = 1
    items: Any = None  # CliMedBench ItemLog
    synthetic: bool | None = None  # CliMedBench: the bundled synthetic sample
    variant: str = "clean"  # CliMedBench: clean, or an analysis variant (perturbed, nota, cot, ll)
    physicians: Mapping[str, Any] | None = None  # the judge against a physicians' review (review.run_agreement), when given
    reliability: Mapping[str, Any] | None = None  # the judge asked again (gates.reliability.check_of_run), when given
    epochs_reducer: str = "mean"  # Inspect --epochs-reducer: how each case's epochs made its value


# -- reading what a run recorded -----------------------------------------------------------------


def _inspect_facts(path: Path) -> RunFacts:
    log = read_eval(path)
    spec = log.eval
    benchmark = benchmark_of(path)
    facts = RunFacts(str(path), "inspect", benchmark, spec.task, task_version=str(spec.task_version), model=spec.model)
    errored = [s for s in log.samples or [] if s.error is not None or not s.scores]
    # Ended by the judge failure policy and re-judged since: the samples, read now, decide, under every other check.
    if log.status != "success" and not ended_by_judge_policy(log):
        first = (log.error.message.splitlines() or [""])[0][:300] if log.error else ""
        facts.unfinished.append(f"status {log.status}" + (f": {first}" if first else ""))
    if errored:
        facts.unfinished.append(f"{len(errored)} sample(s) errored: {', '.join(repr(s.id) for s in errored[:5])}")
    facts.errored = len(errored)
    args = spec.task_args or {}
    limit, sample_id = spec.config.limit, spec.config.sample_id
    facts.selection = " ".join(x for x in (f"--limit {limit}" if limit is not None else "",
                                           f"--sample-id {sample_id}" if sample_id is not None else "") if x)
    facts.planned_cases = spec.dataset.samples
    facts.epochs_reducer = ",".join(spec.config.epochs_reducer or ["mean"])
    scores = next((s for s in (log.results.scores if log.results else []) if s.scorer in (INSPECT_SCORER, "climedbench_scorer")), None)
    facts.header_metrics = {k: m.value for k, m in scores.metrics.items()} if scores else {}
    if benchmark == CLIMEDBENCH:
        from clinconsensus_tasks.climedbench.logs import read_inspect_log

        facts.items = read_inspect_log(path, log)  # the log read above
        facts.synthetic = bool((spec.metadata or {}).get("synthetic_sample"))
        facts.variant = str(args.get("variant") or "clean")
        return facts
    roles = spec.model_roles or {}
    facts.header_judges = tuple(m.model for r in ("grader", "local_grader") if r in roles
                                for m in (roles[r] if isinstance(roles[r], list) else [roles[r]]))
    facts.self_grading_allowed = bool(args.get("allow_self_grading"))
    facts.data = {k: str((spec.metadata or {}).get(k) or "") for k in DATA_FIELDS}
    facts.thresholds = tuple(int(k) for k in args.get("thresholds") or (7, 10))
    facts.records = list(inspect_log_cases(log, path, skip_errored=True))  # the log read above: one read for header and cases
    facts.judges_per_case = max([len(r.graded.roles) for r in facts.records] + [2 if SECOND_ROLE in roles else 1])
    return facts


def _lmeval_header(results_path: Path, tasks: Sequence[str], facts: RunFacts) -> dict[str, Any] | None:
    """Read the results file into ``facts`` (version, model, selection, planned cases); the results."""
    try:
        results = json.loads(results_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        facts.unfinished.append(f"results file {results_path.name} unreadable ({type(exc).__name__}: {exc})")
        return None
    config = results.get("config") or {}
    versions = {str((results.get("versions") or {}).get(task, "")) for task in tasks}
    facts.task_version = versions.pop() if len(versions) == 1 else " / ".join(sorted(versions))
    facts.model = str(results.get("model_name") or "")
    limit = config.get("limit")
    facts.selection = f"--limit {limit}" if limit is not None else ""
    counts = [(results.get("n-samples") or {}).get(task) or {} for task in tasks]
    facts.planned_cases = sum(int(c.get("original") or 0) for c in counts)
    if not facts.selection and any(c.get("effective") != c.get("original") for c in counts):
        facts.selection = "fewer documents than the task holds (n-samples)"
    return results


def _metrics_of(results: Mapping[str, Any], task: str) -> dict[str, float]:
    return {key.split(",", 1)[0]: value for key, value in ((results.get("results") or {}).get(task) or {}).items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}


def _lmeval_facts(results_path: Path, tasks: Sequence[str], samples: Mapping[str, Path | None]) -> RunFacts:
    """One lm-eval run of one benchmark: a ClinConsensus task, or every CliMedBench task of the call."""
    benchmark = CLIMEDBENCH if tasks[0].startswith(CLIMEDBENCH) else CLINCONSENSUS
    named = samples.get(tasks[0]) if len(tasks) == 1 else None
    facts = RunFacts(str(named or results_path), "lm-eval", benchmark, ",".join(tasks))
    results = _lmeval_header(results_path, tasks, facts)
    missing = [task for task in tasks if samples.get(task) is None]
    if missing:
        facts.unfinished.append(f"no samples file for {', '.join(missing)} beside {results_path.name}: nothing to check "
                                "the numbers against; run lm_eval with --log_samples")
    if results is None or missing:
        return facts
    if benchmark == CLIMEDBENCH:
        from clinconsensus_tasks.climedbench.logs import ItemLog, read_lmeval_samples

        facts.items = ItemLog(str(results_path), facts.model, "lm-eval")
        variants = {t.removeprefix(f"{CLIMEDBENCH}_").partition("_")[2] or "clean" for t in tasks}
        facts.variant = ", ".join(sorted(variants))
        for task in tasks:
            log = read_lmeval_samples(samples[task])
            facts.items.results += log.results
            facts.items.unscored += log.unscored
            facts.items.items.update(log.items)
            scenario = {r.scenario for r in log.results}
            if len(scenario) == 1 and "score" in _metrics_of(results, task):
                facts.header_metrics = {**facts.header_metrics, f"{scenario.pop()}/score": _metrics_of(results, task)["score"]}
        facts.synthetic = _bundled_climedbench(facts.items.items)
        return facts
    task, path = tasks[0], samples[tasks[0]]
    facts.header_metrics = _metrics_of(results, task)
    judge = ((results.get("configs") or {}).get(task) or {}).get("metadata", {}).get("judge") or {}
    named = [*(judge.get("jurors") or [judge]), judge.get("local") or {}]  # a jury: its jurors
    facts.header_judges = tuple(j["judge"] for j in named if isinstance(j, dict) and j.get("judge"))
    facts.records = read_case_records(path)
    first = _first_doc(path)
    facts.data = {k: str((first.get("data_provenance") or {}).get(k) or "") for k in DATA_FIELDS}
    facts.thresholds = reported_thresholds(facts.header_metrics) or (10, 7)
    facts.judges_per_case = max([len(r.graded.roles) for r in facts.records] + [1])
    return facts


def _first_doc(samples: Path) -> dict[str, Any]:
    with samples.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return json.loads(line).get("doc") or {}
    return {}


def _canonical(item: Any) -> str:
    return hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _bundled_climedbench(items: Mapping[str, Any]) -> bool:
    """Whether every item a CliMedBench run asked is an item of the bundled synthetic sample."""
    from clinconsensus_tasks.climedbench.dataset import load_scenario
    from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS

    bundled = {_canonical(item) for code in SCENARIOS for item in load_scenario(code, None, announce=False).items}
    return bool(items) and all(_canonical(item) in bundled for item in items.values())


# -- which runs -----------------------------------------------------------------------------------


def gate_runs(paths: Sequence[str | Path]) -> list[Callable[[], RunFacts]]:
    """The runs among ``paths`` (files, or folders searched as the report searches them), each as
    a reader of its facts: every Inspect log; every lm-eval results file with each of its tasks'
    samples files; a samples file without its results file (a run that did not finish)."""
    files = find_logs(paths)
    listed = set(files)  # a file the folder listing found needs no request of its own (a URL: no HEAD per object)
    present = lambda p: p in listed or is_file(p)  # noqa: E731
    readers: list[Callable[[], RunFacts]] = []
    claimed: set[Path] = set()
    for path in files:
        if is_lmeval_results(path):
            readers += _lmeval_readers(path, claimed, present=present)
    for path in files:  # a samples file named alone: its results file is beside it
        results = path.with_name(f"results_{lmeval_run_key(path)[1]}.json")
        if is_lmeval_samples(path) and path not in claimed and present(results):
            readers += _lmeval_readers(results, claimed, only=lmeval_task(path), present=present)
    for path in files:
        if is_inspect_log(path, named=True) and not is_lmeval_results(path):
            readers.append(lambda p=path: _inspect_facts(p))
        elif is_lmeval_samples(path) and path not in claimed:
            readers.append(lambda p=path: RunFacts(str(p), "lm-eval", benchmark_of(p),
                                                   unfinished=[f"no lm-eval results file beside {p.name}: the run did not finish"]))
    found = Found(readers)
    found.superseded = files.superseded  # left out, and said so: the gate prints them with its verdicts
    return found


def _lmeval_readers(results: Path, claimed: set[Path], only: str = "",
                    present: Callable[[Path], bool] = is_file) -> list[Callable[[], RunFacts]]:
    """One reader per ClinConsensus task of the results file, and one for all its CliMedBench tasks
    (``only``: that task alone)."""
    try:
        tasks = [t for t in (json.loads(results.read_text(encoding="utf-8")).get("configs") or {}) if t == only or not only]
    except (OSError, ValueError):
        return [lambda: _lmeval_facts(results, [only or CLINCONSENSUS], {})]
    stamp = results.stem.removeprefix("results_")
    beside = {task: results.with_name(f"samples_{task}_{stamp}.jsonl") for task in tasks}
    samples = {task: path if present(path) else None for task, path in beside.items()}
    claimed.update(p for p in samples.values() if p is not None)
    groups = [[t] for t in tasks if t.startswith(CLINCONSENSUS)] + [[t for t in tasks if t.startswith(CLIMEDBENCH)]]
    return [lambda g=group: _lmeval_facts(results, g, samples) for group in groups if group]


def run_facts(path: str | Path) -> RunFacts:
    """The facts of the one run ``path`` names (a log or samples file, or a folder holding one run's
    files); :class:`ClinConsensusError` when it names none or several."""
    readers = gate_runs([path])
    if len(readers) != 1:
        raise ClinConsensusError(f"{path}: {'no' if not readers else len(readers)} run(s) found (Inspect logs, lm-eval "
                                 "results/samples files); name the files of one run")
    return readers[0]()
