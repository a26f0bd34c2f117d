"""Helpers that run ClinConsensus and CliMedBench through each framework against the fake server."""

from __future__ import annotations

import os
from pathlib import Path

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import FAULT_MALFORMED_ALWAYS, candidate_answer, fault_for, oracle_verdict
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, summarize

HEADLINE = ["rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10", "judge_failures"]


def expected_metrics(flaky: bool = False, batched: bool = False) -> dict[str, float]:
    """What a correct pipeline must report on the bundled sample, from the server's own rules.
    ``batched``: a flaky judge's list that leaves out a criterion for good is never a verdict, so
    such a case fails all its criteria (a batched reply is all or nothing)."""
    out = summarize(expected_cases(flaky, batched))
    out.pop("cases")
    return out


def expected_without_failed(flaky: bool = False) -> dict[str, float]:
    """The headline metrics over the cases with no failed judgment (``cacs@10(judgments=complete)`` ...),
    from the server's own rules: a case with a failed judgment is left out, not scored as not met."""
    complete = summarize([r for r in expected_cases(flaky) if r.failures == 0])
    return {f"{name}(judgments=complete)": complete[name] for name in ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy")}


def expected_cases(flaky: bool = False, batched: bool = False) -> list[CaseResult]:
    """Each bundled case as the stand-in server grades it (see :func:`expected_metrics`)."""
    rows = []
    for case in load_cases("sample").cases:
        answer = candidate_answer(case.question)
        met = failures = 0
        for _, criterion in case.rubrics:
            if flaky and fault_for(answer, criterion) == FAULT_MALFORMED_ALWAYS:
                failures += 1
            else:
                met += oracle_verdict(answer, criterion)
        if batched and failures:
            met, failures = 0, len(case.rubrics)
        rows.append(CaseResult(met, len(case.rubrics), failures, case.slices()))
    return rows


def run_inspect(log_dir: Path, judge: str = "judge-model", candidate: str = "cand-model", expect_success: bool = True,
                max_retries: int = 3, **task_args):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    logs = inspect_eval(
        clinconsensus(data="sample", **task_args),
        model=f"openai-api/cand/{candidate}",
        model_roles={"grader": f"openai-api/judge/{judge}"},
        log_dir=str(log_dir),
        display="none",
        max_retries=max_retries,
    )
    log = logs[0]
    if not expect_success:
        return log, {}
    assert log.status == "success", log.error
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    return log, metrics


def run_lmeval(base_url: str, output_path: Path | None = None, judge: str = "judge-model", mode: str | None = None,
               bootstrap_iters: int = 0, candidate: str = "cand-model"):
    """One lm-eval run; with ``output_path``, results and samples files are written there as
    ``lm_eval --output_path DIR --log_samples`` writes them (its EvaluationTracker)."""
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = judge
    if mode:
        os.environ["CLINCONSENSUS_JUDGE_MODE"] = mode
    tracker = None
    if output_path is not None:
        from lm_eval.loggers import EvaluationTracker

        tracker = EvaluationTracker(output_path=str(output_path))
    results = simple_evaluate(
        model="local-chat-completions",
        model_args={"model": candidate, "base_url": f"{base_url}/chat/completions", "num_concurrent": 4},
        apply_chat_template=True,
        log_samples=True,
        bootstrap_iters=bootstrap_iters,  # > 0: lm-eval computes <metric>_stderr (closed form for its mean)
        evaluation_tracker=tracker,
    )
    if tracker is not None:
        tracker.save_results_aggregated(results=results, samples=results["samples"])
        for name in results["configs"]:
            tracker.save_results_samples(task_name=name, samples=results["samples"][name])
    task = results["results"]["clinconsensus"]
    # Scores only: the judge token totals (judge_*_tokens) are what the run spent, not a score.
    metrics = {k.split(",")[0]: v for k, v in task.items()
               if k.endswith(",judge") and (bootstrap_iters or "_stderr" not in k) and "_tokens" not in k}
    return results, metrics


def run_lmeval_tasks(base_url: str, tasks, model: str = "cand-model") -> dict:
    """lm-eval's ``simple_evaluate`` on ``tasks`` with the server as the chat model, samples logged."""
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    return simple_evaluate(
        tasks=list(tasks),
        model="local-chat-completions",
        model_args={"model": model, "base_url": f"{base_url}/chat/completions", "num_concurrent": 4},
        apply_chat_template=True,
        log_samples=True,
        bootstrap_iters=0,
    )


def write_lmeval_samples(results: dict, path: Path, task: str = "clinconsensus") -> Path:
    """lm-eval's ``--log_samples`` file of an in-process run (``results["samples"]``), as lm-eval writes it."""
    import json

    path.write_text("".join(json.dumps({**s, "filtered_resps": [str(r) for r in s["filtered_resps"]]}, ensure_ascii=False, default=str) + "\n"
                            for s in results["samples"][task]), encoding="utf-8")
    return path
