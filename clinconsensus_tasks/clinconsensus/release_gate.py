"""The release gate: is a ClinConsensus run fit to publish? (``clinconsensus-eval summarize --strict``)

``inspect eval`` exits 0 whatever the status of its log (Inspect's convention; ``inspect eval-set``
exits 1 unless every task completed), so a release checklist cannot rely on exit codes. This gate
reads the runs themselves, Inspect logs and lm-eval output alike, and names every problem:

* the run did not finish: an Inspect log whose status is not ``success`` or that holds errored
  samples; an lm-eval samples file without its results file next to it. One exception: a log
  ended by the judge failure policy and re-judged since (``inspect score LOG --overwrite``) passes
  when its samples, read now, pass the policy (Inspect keeps the old status on re-scoring);
* failed judgments above the threshold of the judgments planned (judgments of errored samples
  count as failed), the same rule as the frameworks' own policy;
* suspect answers (``answer_guard``: answers that imitate the judge prompt or carry a verdict).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_of, find_logs, is_inspect_log, is_lmeval_samples
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import FailureTally, JudgeFailureError
from clinconsensus_tasks.scorers.clinconsensus.records import failure_tally


def gate_targets(paths: Sequence[str | Path]) -> list[Path]:
    """The run files the gate checks among ``paths`` (files, or folders searched as the report
    searches them): Inspect logs of either benchmark and lm-eval ClinConsensus samples files.
    lm-eval results files are checked beside their samples file; CliMedBench's lm-eval samples
    carry no judgment to check."""
    return [p for p in find_logs(paths) if is_inspect_log(p, named=True) or is_lmeval_samples(p, CLINCONSENSUS)]


def run_problems(path: str | Path, threshold: float, n_criteria: int = 30) -> list[str]:
    """Why the run in ``path`` (an Inspect ``.eval``/``.json`` log or an lm-eval
    ``samples_clinconsensus*.jsonl`` file) is not fit to publish; empty when it is. A CliMedBench
    Inspect log is checked for its status only (no judge)."""
    path = Path(path)
    if path.suffix == ".jsonl":
        return _lmeval_problems(path, threshold, n_criteria)
    if benchmark_of(path) != CLINCONSENSUS:
        return _status_problems(path)
    return _inspect_problems(path, threshold, n_criteria)


def _status_problems(path: Path) -> list[str]:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path), header_only=True)
    if log.status == "success":
        return []
    first = (log.error.message.splitlines() or [""])[0][:300] if log.error else ""
    return [f"status {log.status}" + (f": {first}" if first else "")]


def _judgment_problems(tally: FailureTally, suspect: int, threshold: float) -> list[str]:
    problems = []
    if tally.exceeds(threshold):
        reasons = "; ".join(f"{label} x{n}" for label, n in tally.reasons.most_common(3))
        problems.append(f"{tally.failed} of {tally.judged} judgments failed, above the {threshold:.1%} allowed ({reasons})")
    if suspect:
        problems.append(f"{suspect} suspect answer(s) (imitating the judge prompt or carrying a verdict)")
    return problems


def _inspect_problems(path: Path, threshold: float, n_criteria: int) -> list[str]:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path))
    errored = [s for s in log.samples or [] if s.error is not None or not s.scores]
    records = read_case_records(path, skip_errored=True)
    tally = failure_tally([r.graded for r in records])
    planned = tally.judged + n_criteria * len(errored) * (2 if any(r.graded.local_judgments for r in records) else 1)
    run = tally.with_unjudged(planned)
    problems = _judgment_problems(run, sum(1 for r in records if r.graded.suspect), threshold)
    if errored:
        problems.insert(0, f"{len(errored)} sample(s) errored: {', '.join(repr(s.id) for s in errored[:5])}")
    policy_only = log.status == "error" and log.error is not None and JudgeFailureError.__name__ in (log.error.traceback or "")
    if log.status != "success" and not (policy_only and not problems):
        first = (log.error.message.splitlines() or [""])[0][:300] if log.error else ""
        problems.insert(0, f"status {log.status}" + (f": {first}" if first else ""))
    return problems


def _lmeval_problems(path: Path, threshold: float, n_criteria: int) -> list[str]:
    records = read_case_records(path)
    tally = failure_tally([r.graded for r in records])
    problems = _judgment_problems(tally, sum(1 for r in records if r.graded.suspect), threshold)
    stamp = path.stem.rsplit("_", 1)[-1]  # samples_<task>_<timestamp>.jsonl beside results_<timestamp>.json
    results = path.with_name(f"results_{stamp}.json")
    if not results.is_file():
        problems.insert(0, f"no lm-eval results file {results.name} beside it: the run did not finish")
    else:
        json.loads(results.read_text(encoding="utf-8"))  # a torn results file is an error, not a pass
    return problems
