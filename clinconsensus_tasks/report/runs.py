"""The runs a report shows: every log read into ClinConsensus and CliMedBench runs with their metadata.

Files are found by ``clinconsensus_tasks.log_files`` and read by the benchmarks' readers
(``clinconsensus.logs``, ``climedbench.logs``), the same as every other command; this module only
groups them into runs (an lm-eval CliMedBench call writes one samples file per scenario), names
the runs (one name per model across frameworks) and collects what each log says about how it was
made. Every number is computed by the scoring core from the records the readers return.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks.climedbench.logs import read_inspect_log as read_climedbench_inspect, read_item_log
from clinconsensus_tasks.clinconsensus.logs import LoggedCase, inspect_log_cases, read_case_records
from clinconsensus_tasks.judge.provenance import judge_display
from clinconsensus_tasks.log_files import (
    CLIMEDBENCH, CLINCONSENSUS, ended_by_judge_policy, find_logs, is_inspect_log, is_lmeval_results, is_lmeval_samples, lmeval_run_key, lmeval_task,
    model_display_name, read_inspect_log,
)
from clinconsensus_tasks.storage import is_url
from clinconsensus_tasks.scorers.climedbench import scenarios as cmb
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult
from clinconsensus_tasks.scorers.climedbench.length_deciles import decile_scores
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, breakdowns, cacs_at_k, parse_thresholds, summarize
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS
from clinconsensus_tasks.scorers.clinconsensus.metric_table import reported_thresholds, totals

CURVE_KS = range(1, 31)


@dataclass
class ClinRun:
    """One ClinConsensus run as the report keeps it: what its sections compute from, made once from
    the run's records when it is read (:meth:`of`), never the records themselves (a 2,500-case
    run's records are about 85 MB; this is under 1 MB, so a campaign of a hundred runs fits in a
    few hundred MB). ``same_as`` names an earlier run that logged exactly the same per-case results."""

    name: str
    path: str
    results: list[CaseResult]  # each record's result (summary, breakdowns, curve, intervals)
    n_criteria: int = DEFAULT_N_CRITERIA
    meta: dict[str, Any] = field(default_factory=dict)
    same_as: str = ""
    thresholds: tuple[int, ...] = DEFAULT_THRESHOLDS  # the run's k of Pass@k and CACS@k, 7 and 10 always among them
    tallies: dict[str, float] = field(default_factory=dict)  # every count of the metric table (metric_table.totals)
    judges: tuple[str, ...] = ()  # the judges the records name (graded.judge), where the header names none
    agreement: dict[str, float] | None = None  # a dual run's two judges (run_records.agreement.compare_records)
    agreement_judges: tuple[str, ...] = ()  # a dual run's reference and second judge
    jury: dict[str, Any] | None = None  # a jury's jurors (scorers.clinconsensus.jury.jury_summary)
    usage: dict[str, Any] = field(default_factory=dict)  # judge -> TokenUsage (report.costs.judge_usage)
    content: dict[str, str] = field(default_factory=dict)  # case -> sha256 of what it asked (question, rubric): pairing
    judge_modes: tuple[str, ...] = ()
    fingerprint_key: str = ""  # sha256 of every record's (case, epoch, verdicts): runs logged alike

    @classmethod
    def of(cls, name: str, path: str, records: Sequence[LoggedCase], n_criteria: int = DEFAULT_N_CRITERIA,
           meta: dict[str, Any] | None = None, thresholds: tuple[int, ...] = DEFAULT_THRESHOLDS) -> "ClinRun":
        """The run made from its records, which are then let go."""
        from clinconsensus_tasks.gates.regression import case_content
        from clinconsensus_tasks.report.costs import judge_usage
        from clinconsensus_tasks.run_records.agreement import compare_records
        from clinconsensus_tasks.scorers.clinconsensus.jury import jury_summary
        from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE

        graded = [r.graded for r in records]
        dual = any(g.dual for g in graded)
        fingerprint = [(g.case_id, g.epoch, tuple(j.met for j in g.judgments)) for g in graded]
        return cls(
            name, path, [g.result() for g in graded], n_criteria, dict(meta or {}), thresholds=thresholds,
            tallies=totals(graded), judges=tuple(sorted({g.judge for g in graded if g.judge})),
            agreement=compare_records(records, None, n_criteria=n_criteria, where=path) if dual else None,
            agreement_judges=(graded[0].judge, graded[0].roles[SECOND_ROLE].judge) if dual else (),
            jury=jury_summary(graded, (10, 7), DEFAULT_N_CRITERIA) or None, usage=judge_usage(graded),
            content={r.graded.case_id: case_content(r) for r in records},
            judge_modes=tuple(sorted({g.judge_mode for g in graded if g.judge_mode})),
            fingerprint_key=hashlib.sha256(repr(fingerprint).encode("utf-8")).hexdigest(),
        )

    @property
    def dual(self) -> bool:
        return self.agreement is not None

    def summary(self) -> dict[str, float]:
        return summarize(self.results, self.thresholds, self.n_criteria)

    def counts(self) -> dict[str, float]:
        """Every count of the metric table (judge failures, empty answers, judge tokens ...)."""
        return dict(self.tallies)

    def breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        return self._breakdowns

    @functools.cached_property
    def _breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        return breakdowns(self.results, self.thresholds, self.n_criteria)

    def curve(self) -> list[float]:
        met = [r.met for r in self.results]
        return [cacs_at_k(met, k, self.n_criteria) for k in CURVE_KS if k <= self.n_criteria]

    def fingerprint(self) -> str:
        return self.fingerprint_key

    def pairable(self, thresholds: Sequence[int], n_criteria: int) -> Any:
        """The run as ``compare-models`` pairs it (``gates.regression``), from its results."""
        from clinconsensus_tasks.gates.regression import pairable_of_results

        return pairable_of_results(self.path, self.results, self.content, self.judges, self.judge_modes, thresholds, n_criteria)


@dataclass
class MedRun:
    """One CliMedBench run: its scored items and their summary."""

    name: str
    path: str
    results: list[ItemResult]
    meta: dict[str, Any] = field(default_factory=dict)
    same_as: str = ""

    @property
    def rows(self) -> list[tuple[str, float, bool]]:
        return [r.row for r in self.results]

    @property
    def variant(self) -> str:
        """How the run asked its items: ``clean``, ``perturbed``, ``nota``, ``cot`` (several: joined by commas)."""
        return _variant(self.results)

    def summary(self) -> dict[str, float]:
        return cmb.summarize(self.rows)

    def decile_summary(self) -> dict[str, float]:
        """Scores per input-length decile, from the items whose log carries their decile."""
        return decile_scores((r.scenario, r.length_decile, r.value) for r in self.results if r.length_decile)

    def item_scores(self) -> dict[tuple[str, str], float]:
        return {(r.scenario, r.item_id): r.value for r in self.results}

    def fingerprint(self) -> list[tuple[Any, ...]]:
        return sorted((r.key, r.epoch, r.value, r.parsed) for r in self.results)


@dataclass
class Runs:
    clin: list[ClinRun] = field(default_factory=list)
    med: list[MedRun] = field(default_factory=list)
    results_files: list[dict[str, Any]] = field(default_factory=list)  # lm-eval results_*.json metadata
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (log, why): unfinished or empty
    climedbench_files: dict[str, list[ItemResult]] = field(default_factory=dict)  # an lm-eval samples file's items, until grouped


def _variant(results: Sequence[ItemResult]) -> str:
    """The variant a run asked its items in (``clean``, ``perturbed`` ...; several joined by commas)."""
    return ",".join(sorted({r.variant for r in results})) or "clean"


def _run_name(model: str, variant: str) -> str:
    return model if variant == "clean" else f"{model} [{variant}]"


# -- what each log says about its run ---------------------------------------------------------------


def _inspect_meta(log: Any) -> dict[str, Any]:
    ev = log.eval
    roles = {name: ", ".join(c.model for c in cfg) if isinstance(cfg, list) else cfg.model  # a list: a jury
             for name, cfg in (ev.model_roles or {}).items()}
    meta = dict(ev.metadata or {})
    return {
        "framework": "inspect",
        "task": ev.task,
        "model": ev.model,
        "judges": [roles[r] for r in ("grader", "local_grader") if r in roles],
        "judge_mode": meta.get("judge_mode", ""),
        "data_source": meta.get("data_source") or meta.get("data_sources") or (ev.dataset.location if ev.dataset else ""),
        "data_sha256": meta.get("data_sha256", ""),
        "data_revision": meta.get("data_revision", ""),
        "judge_prompt_sha256": meta.get("judge_prompt_sha256", ""),
        "task_version": ev.task_version,
        "synthetic_sample": meta.get("synthetic_sample"),
        "packages": dict(ev.packages or {}),
        "created": ev.created,
    }


def _lmeval_meta(path: Path, tasks: Sequence[str] | None = None) -> dict[str, Any]:
    """Run metadata of an lm-eval samples file, from the provenance its first record carries."""
    meta = {"framework": "lm-eval", "task": ", ".join(tasks) if tasks else lmeval_task(path), "model": path.parent.name,
            "judges": [], "judge_mode": "", "data_source": "", "data_sha256": "", "packages": {}}
    with path.open(encoding="utf-8") as handle:
        first = next((line for line in handle if line.strip()), "")
    if not first:
        return meta
    sample = json.loads(first)
    data = (sample.get("doc") or {}).get("data_provenance") or {}
    meta.update({k: data[k] for k in ("data_source", "data_sha256", "data_revision") if data.get(k)})
    filtered = sample.get("filtered_resps") or [""]
    try:
        record = json.loads(filtered[0] if isinstance(filtered, list) else filtered)
    except (TypeError, ValueError):
        return meta  # CliMedBench records: no judge
    if isinstance(record, dict):
        judges = [p for p in (record.get("provenance"), record.get("local_provenance")) if p]
        meta["judges"] = [judge_display(p["judge_model"], p["judge_endpoint"]) for p in judges]
        if judges:
            meta.update(judge_mode=judges[0]["judge_mode"], judge_prompt_sha256=judges[0]["judge_prompt_sha256"])
    return meta


def with_defaults(thresholds: Sequence[int]) -> tuple[int, ...]:
    """``thresholds`` and the paper's 7 and 10, largest first (the metric table's order)."""
    return tuple(sorted(set(thresholds) | set(DEFAULT_THRESHOLDS), reverse=True))


def _results_beside(samples: Path) -> list[Path]:
    """The results file beside an lm-eval samples file (same timestamp), if it is there."""
    stamp = samples.stem.rsplit("_", 1)[-1]
    return sorted(samples.parent.glob(f"results_{stamp}.json"))


def read_from(path: Path) -> list[Path]:
    """Every file :func:`_read_one` reads for ``path``: the file, and for an lm-eval ClinConsensus
    samples file the results file beside it (its CACS@k thresholds): a kept reading's key."""
    return [path, *_results_beside(path)] if is_lmeval_samples(path, CLINCONSENSUS) else [path]


def _lmeval_thresholds(samples: Path) -> tuple[int, ...]:
    """The k an lm-eval run reported CACS@k for (7, 10 and any given in ``--metadata``), read from
    the results file beside its samples file (same timestamp); 7 and 10 when there is none."""
    found: set[int] = set()
    for results in _results_beside(samples):
        for metrics in (json.loads(results.read_text(encoding="utf-8")).get("results") or {}).values():
            found |= set(reported_thresholds(metrics))
    return with_defaults(found)


def _lmeval_results(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    config = data.get("config") or {}
    return {"path": str(path), "model": data.get("model_name") or path.parent.name,
            "model_args": config.get("model_args"), "tasks": sorted((data.get("results") or {}).keys())}


# -- reading ----------------------------------------------------------------------------------------


def _climedbench_results(path: Path) -> list[ItemResult]:
    """The run's scored items; an unscored sample is an error (a scenario score without it would be wrong)."""
    log = read_item_log(path)
    log.require_scored()
    return log.results


def _record_judges(records: Sequence[LoggedCase]) -> list[str]:
    """The judges of a ClinConsensus run as its first record with provenance names them, named as
    lm-eval's records name them (``provenance.judge_display``)."""
    for record in records:
        if record.provenance:
            return [judge_display(p["judge_model"], p["judge_endpoint"]) for p in record.provenance]
    # none (a log re-judged by rescore keeps no provenance): the judges its verdicts name, never the header's
    return list(dict.fromkeys(role.judge for r in records for role in r.graded.roles.values() if role.judge))


def _read_inspect(path: Path, runs: Runs) -> None:
    log = read_inspect_log(path, header_only=True)  # a run left out is left out on its header alone
    if log.status != "success" and not (ended_by_judge_policy(log) and log.results):  # re-judged since: its numbers stand
        runs.skipped.append((str(path), f"unfinished Inspect run (status {log.status!r})"))
        return
    if not (log.results and log.results.total_samples):
        runs.skipped.append((str(path), "no samples"))
        return
    log = read_inspect_log(path)  # once: every sample's record (and the header again, with them)
    meta = _inspect_meta(log)
    task = log.eval.task.rsplit("/", 1)[-1]
    name = model_display_name(log.eval.model)
    if task.startswith(CLINCONSENSUS):
        n = int((log.eval.task_args or {}).get("n_criteria") or DEFAULT_N_CRITERIA)
        records = list(inspect_log_cases(log, path))
        meta["judges"] = _record_judges(records) or meta["judges"]
        ks = with_defaults(parse_thresholds((log.eval.task_args or {}).get("thresholds") or DEFAULT_THRESHOLDS, n))
        runs.clin.append(ClinRun.of(name, str(path), records, n, meta, thresholds=ks))
    elif task.startswith(CLIMEDBENCH):
        items = read_climedbench_inspect(path, log)
        items.require_scored()
        runs.med.append(MedRun(_run_name(name, _variant(items.results)), str(path), items.results, meta))
    else:
        raise ValueError(f"{path}: task {log.eval.task!r} is neither ClinConsensus nor CliMedBench")


def _read_lmeval_climedbench(paths: Sequence[Path], items: dict[str, list[ItemResult]], runs: Runs) -> None:
    """One lm-eval CliMedBench run from its samples files (one per scenario task, same folder and
    timestamp; ``items``: each file's scored items): one CliMedBench run in the report, as in
    Inspect. Variant tasks run in the same call (``--tasks climedbench,climedbench_perturbed``)
    make one run per variant."""
    by_variant: dict[str, tuple[list[ItemResult], list[str], list[Path]]] = {}
    for path in sorted(paths):  # the same run whichever order the files were named in
        found = items[str(path)]
        if not found:
            runs.skipped.append((str(path), "no samples"))
            continue
        for variant in sorted({r.variant for r in found}):
            rows, tasks, used = by_variant.setdefault(variant, ([], [], []))
            rows += [r for r in found if r.variant == variant]
            used.append(path)
            tasks.append(lmeval_task(path))
    for variant, (rows, tasks, used) in by_variant.items():
        name = _run_name(model_display_name(used[0].parent.name), variant)
        runs.med.append(MedRun(name, ", ".join(map(str, used)), rows, _lmeval_meta(used[0], tasks)))


# Reading runs side by side: a campaign's logs are read in worker processes, one per CPU, when they
# are large enough for that to pay (a worker starts in about a second; a 2,500-case Inspect log takes
# about 4 s to read). bench/campaign_read.py measures it.
PARALLEL_MIN_BYTES = 64 * 1024 * 1024


def _read_one(path: Path) -> Runs:
    """What one file adds to the runs (a CliMedBench lm-eval samples file: its items, grouped with the
    other files of its run once every file is read)."""
    runs = Runs()
    if is_lmeval_results(path):
        runs.results_files.append(_lmeval_results(path))
    elif is_lmeval_samples(path, CLINCONSENSUS):
        records = read_case_records(path)
        if records:
            runs.clin.append(ClinRun.of(model_display_name(path.parent.name), str(path), records, meta=_lmeval_meta(path),
                                        thresholds=_lmeval_thresholds(path)))
        else:
            runs.skipped.append((str(path), "no samples"))
    elif is_lmeval_samples(path, CLIMEDBENCH):
        runs.climedbench_files[str(path)] = _climedbench_results(path)
    elif is_inspect_log(path, named=True):
        _read_inspect(path, runs)
    else:
        raise ValueError(f"{path}: expected an Inspect log, samples_clinconsensus*/samples_climedbench_* .jsonl or results_*.json")
    return runs


def _workers(paths: Sequence[Path]) -> int:
    """How many processes read ``paths``: one per CPU this process may use, when the files are large
    (local files only: a URL's size is not asked for); 1 otherwise."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    local = [p for p in paths if isinstance(p, Path) and not is_url(p)]
    if cpus < 2 or len(local) < 2 or sum(p.stat().st_size for p in local if p.is_file()) < PARALLEL_MIN_BYTES:
        return 1
    return min(cpus, len(local))


def _read_each(paths: Sequence[Path], cache: Any = None) -> list[Runs]:
    """:func:`_read_one` of every path, in their order: from ``cache`` (``report.run_cache.RunCache``)
    where it holds this very file's reading, the rest side by side in worker processes where
    :func:`_workers` says so. A file a worker could not read is read again here, so its error is the
    one a reading in this process raises, with nothing of it lost in passing between processes. A
    reading is stored unless its file changed while it was read."""
    keys = [cache.key(read_from(path)) if cache is not None else None for path in paths]
    out: list[Runs | None] = [cache.get(key, Runs) if cache is not None else None for key in keys]
    todo = [i for i, part in enumerate(out) if part is None]
    missing = [paths[i] for i in todo]
    workers = _workers(missing)
    if workers > 1:
        import concurrent.futures
        import multiprocessing

        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_read_one, path) for path in missing]
            for i, path, future in zip(todo, missing, futures):
                try:
                    out[i] = future.result()
                except Exception:  # noqa: BLE001 -- read here again: the error as this process raises it
                    out[i] = _read_one(path)
    else:
        for i, path in zip(todo, missing):
            out[i] = _read_one(path)
    if cache is not None:
        for i in todo:
            if keys[i] is not None and cache.key(read_from(paths[i])) == keys[i]:
                cache.put(keys[i], out[i])
    return out  # type: ignore[return-value]


def read_runs(paths: Sequence[str | Path], cache: Any = None) -> Runs:
    """Sort every log (or folder of logs) into ClinConsensus runs, CliMedBench runs and lm-eval
    results files; unfinished or empty logs are skipped and listed in ``Runs.skipped``. ``cache``
    (``report.run_cache.RunCache``) serves the files read before, unchanged."""
    runs = Runs()
    climedbench_groups: dict[tuple[Path, str], list[Path]] = {}
    items: dict[str, list[ItemResult]] = {}
    found = find_logs(paths)
    runs.skipped += [(str(old), f"superseded by {newer}, a later attempt of the same task") for old, newer in found.superseded]
    files = list(found)
    for path, part in zip(files, _read_each(files, cache)):
        runs.results_files += part.results_files
        runs.clin += part.clin
        runs.med += part.med
        runs.skipped += part.skipped
        items.update(part.climedbench_files)
        if is_lmeval_samples(path, CLIMEDBENCH):
            climedbench_groups.setdefault(lmeval_run_key(path), []).append(path)
    for group in climedbench_groups.values():
        _read_lmeval_climedbench(group, items, runs)
    _share(runs.clin)
    for group in (runs.clin, runs.med):
        _unique_names(group)
        _mark_identical(group)
    return runs


def _share(runs: Sequence[ClinRun]) -> None:
    """One copy of what the runs of a campaign hold alike: a case's labels (its slices), its id and
    its content digest are the same in every run of the same data, but each run's reading made its
    own (in a worker, or from the cache): the same values, shared, take a campaign of a hundred runs
    from about 500 MB to about 250 MB held."""
    from dataclasses import replace

    slices: dict[Any, Any] = {}
    strings: dict[str, str] = {}
    for run in runs:
        results = []
        for r in run.results:
            key = tuple((dim, tuple(labels)) for dim, labels in r.slices.items())
            shared = slices.setdefault(key, r.slices)
            case = strings.setdefault(r.case, r.case) if r.case is not None else None
            results.append(r if shared is r.slices and case is r.case else replace(r, slices=shared, case=case))
        run.results = results
        run.content = {strings.setdefault(case, case): strings.setdefault(digest, digest) for case, digest in run.content.items()}


def _unique_names(runs: Sequence[ClinRun | MedRun]) -> None:
    """One leaderboard row per run: a model run in both frameworks gets the framework after its
    name; a model seen twice in one framework gets ``#2``, ``#3`` ..."""
    frameworks: dict[str, set[str]] = {}
    for run in runs:
        frameworks.setdefault(run.name, set()).add(run.meta.get("framework", ""))
    for run in runs:
        if len(frameworks[run.name]) > 1:
            run.name = f"{run.name} ({run.meta.get('framework', '')})"
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.name] = seen.get(run.name, 0) + 1
        if seen[run.name] > 1:
            run.name = f"{run.name} #{seen[run.name]}"


def _mark_identical(runs: Sequence[ClinRun | MedRun]) -> None:
    """``same_as``: the first earlier run with exactly the same per-case verdicts or item scores
    (one model's answers graded alike in both frameworks, a run read twice), so the report can say
    so instead of drawing one line over the other."""
    first: dict[str, str] = {}
    for run in runs:
        key = repr(run.fingerprint())
        if key in first:
            run.same_as = first[key]
        else:
            first[key] = run.name
