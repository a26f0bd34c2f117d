"""lm-evaluation-harness glue for ClinConsensus: dataset, judge filter, per-case results, aggregations.

How a run flows (``task_configs/clinconsensus/clinconsensus.yaml``):

1. ``load_dataset`` reads and validates the cases (``CLINCONSENSUS_DATA``: ``hub``, ``sample`` or a
   path). Building the task needs no judge; when lm-eval runs it, the task class checks the
   judge(s) before the first model request (``lmeval_judge.ClinConsensusTask.before_run``), so a
   misconfigured run fails before any generation.
2. The model answers each question (any lm-eval backend; chat APIs need ``--apply_chat_template``).
3. The ``judge`` filter receives every answer of the task at once and grades them all concurrently
   against their rubrics through the OpenAI-compatible judge (``judge_client``), with the on-disk
   verdict cache. Each document's filtered response is a JSON string holding its verdicts, so they
   land in ``--log_samples``.
4. ``process_results`` reads each document's :class:`GradedCase` back and returns its per-case
   value of every metric in :func:`metric_list`: the term whose mean is the metric (rubric
   accuracy, Pass@k, CACS@k, aggregated by lm-eval's own ``mean``, so lm-eval reports their
   standard errors), a count (``total``), or what a named aggregation below needs (audience
   slices, agreement of two judges). The YAMLs are generated from :func:`metric_list`
   (``task_configs/clinconsensus/_generate_configs.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import math
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.clinconsensus import settings
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.judge.client import JudgeSettings, enforce_failure_policy, judge_documents, panel_from_env
from clinconsensus_tasks.judge.official_template import prompt_record
from clinconsensus_tasks.scorers.clinconsensus.answers import VisibleAnswer, visible_answer
from clinconsensus_tasks.clinconsensus.logs import JUDGED_ANSWER
from clinconsensus_tasks.clinconsensus.lmeval_judge import LOCAL_GRADER, ClinConsensusTask, judge_mode, judge_prompt_of, task_env  # noqa: F401 (the YAMLs' class)
from clinconsensus_tasks.judge.provenance import data_provenance, judge_provenance, jurors_provenance
from clinconsensus_tasks.lmeval_glue import across_ranks, case_mean, first_responses, give_case_mean_its_stderr, quiet_custom_dataset_hint  # noqa: F401 (case_mean: the YAMLs' aggregation)
from clinconsensus_tasks.scorers.agreement import Confusion
from clinconsensus_tasks.scorers.clinconsensus.audience import LAY, PROFESSIONAL
from clinconsensus_tasks.scorers.clinconsensus import metric_table
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult, mean, slice_metric_name
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_THRESHOLDS, case_terms
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import PairedCase, comparison_metrics
from clinconsensus_tasks.scorers.clinconsensus.jury import panel_record
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import FailureTally
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE, GradedCase, failure_tally

quiet_custom_dataset_hint()  # lm-eval's --metadata hint, once per task, is noise here
give_case_mean_its_stderr()  # <metric>_stderr for the YAMLs' case_mean, as for lm-eval's own mean


def extra_thresholds(value: Any, n: int) -> list[int]:
    """Thresholds beyond the YAML's 7 and 10, from ``--metadata '{"thresholds": [5, 8]}'``."""
    if value in (None, "", []):
        return []
    return [k for k in settings.thresholds(value, n) if k not in DEFAULT_THRESHOLDS]


# -- 1. dataset ---------------------------------------------------------------------------------


def load_dataset(thresholds: Any = None, **kwargs: Any) -> dict[str, Any]:
    """``custom_dataset`` hook (both tasks): the validated cases as a ``datasets.Dataset`` test split.

    lm-eval passes the task metadata (``--metadata``; from its CLI also the model arguments) as
    keyword arguments; ``thresholds`` and the judge settings given there are used. Building needs
    no judge: the judge(s) are checked when lm-eval runs the task (``ClinConsensusTask.before_run``).
    """
    import datasets

    given = settings_table.given_settings(kwargs)  # every setting given by --metadata (an API key there is refused)
    env = settings_table.merged_env(given)
    n = settings.n_criteria_from_env(env)
    extra = extra_thresholds(thresholds, n)
    loaded = load_cases(settings_table.raw("data", env) or "hub", n, settings_table.raw("revision", env))
    print(f"[clinconsensus] {len(loaded.cases)} cases from {loaded.source}", file=sys.stderr)
    provenance = data_provenance(loaded)
    rows = [{**case.to_record(), "extra_thresholds": extra, "n_criteria": n, "data_provenance": provenance}
            for case in loaded.cases]
    return {"test": datasets.Dataset.from_list(rows)}


# -- 3. judge filter ------------------------------------------------------------------------------


def _run(coro_factory: Callable[[], Any]) -> Any:
    """Run a coroutine to completion, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(coro_factory())).result()


def seen_answers(resps: Sequence[Any], env: Mapping[str, str] | None = None) -> list[VisibleAnswer]:
    """Each document's first response as the user saw it: a reasoning model's ``<think>`` text
    removed unless ``judge_sees_thinking`` is set. lm-eval's API backends drop the
    finish reason, so an answer counts as truncated here when its thinking never closed."""
    keep = settings_table.read_flag("judge_sees_thinking", env)
    return [visible_answer(a, keep) for a in first_responses(resps)]


def _noted(record: GradedCase, seen: VisibleAnswer) -> GradedCase:
    return replace(record, answer_truncated=seen.cut_in_thinking, thinking_removed=seen.thinking_removed)


def judge_filter_dual(resps: Sequence[Sequence[str]], docs: Sequence[dict]) -> list[str]:
    """``custom`` filter of ``clinconsensus_dual``: grade every answer with the grader role's
    judge(s) and the second judge at once; each record holds the second judge's verdicts under
    its role (``local_grader``)."""
    return _judge_all(resps, docs, dual=True)


def judge_filter(resps: Sequence[Sequence[str]], docs: Sequence[dict]) -> list[str]:
    """``custom`` filter: grade all answers of the task; one JSON record (verdicts) per document.

    The grader role is one judge or a jury (``CLINCONSENSUS_JUDGE_MODEL`` / ``--metadata
    judge_model`` a list: ``scorers.clinconsensus.jury``). Each document's first response is
    graded (the task runs one response per document; with ``repeats`` raised, the others are
    reported and left ungraded).
    """
    return _judge_all(resps, docs, dual=False)


def _judge_all(resps: Sequence[Sequence[str]], docs: Sequence[dict], dual: bool) -> list[str]:
    env = task_env()
    panel = panel_from_env(env=env)
    local = JudgeSettings.from_env(LOCAL_GRADER, env) if dual else None
    judges = panel + ([local] if local is not None else [])
    mode = judge_mode(env)
    seen = seen_answers(resps, env)
    answers = [v.text for v in seen]
    extra = sum(max(0, len(r) - 1) for r in resps if isinstance(r, (list, tuple)))
    if extra:
        print(f"[clinconsensus] WARNING: {extra} extra response(s) from `repeats` > 1 are not graded; only each document's first is", file=sys.stderr)
    template = judge_prompt_of(env, mode)
    reading = settings.verdict_reading(None, mode, env=env)  # strict, or the official runner's reading (recorded per record)

    async def every_judge() -> list[Any]:
        return await asyncio.gather(*(judge_documents(answers, docs, judge, mode, template=template, verdict_reading=reading)
                                      for judge in judges))

    graded = _run(every_judge)
    per_judge = [records for records, _ in graded]
    records = [panel_record(case) for case in zip(*per_judge[:len(panel)])] if len(panel) > 1 else per_judge[0]
    if local is not None:
        records = [r.with_role(SECOND_ROLE, second) for r, second in zip(records, per_judge[-1])]
    for judge, (_, stats) in zip(judges, graded):
        print(f"[clinconsensus] judge {judge.model}: {stats['calls']} calls, {stats['cache_hits']} cache hits", file=sys.stderr)
    print(f"[clinconsensus] {sum(r.failures for r in records)} failed judgment(s) in the headline, "
          f"{sum(r.answer_empty for r in records)} empty answer(s) not sent to the judge, "
          f"{sum(1 for r in records if r.suspect)} suspect answer(s)", file=sys.stderr)
    # Every judge role's failures, as in Inspect, over the whole run: in a data-parallel run each
    # rank holds its share, and every rank decides on all ranks' tallies, so the run stops (on every
    # rank, none left waiting) exactly when one process would stop.
    enforce_failure_policy(records, panel[0], run_tally(across_ranks((share_key(docs), failure_tally(records)))))
    prompt = prompt_record(template, mode)
    provenance: dict[str, Any] = {"provenance": jurors_provenance([(j.model, j.base_url) for j in panel], mode, prompt)}
    if local is not None:
        provenance["local_provenance"] = judge_provenance(local.model, local.base_url, mode, prompt)
    # Each record carries the answer the judge saw (thinking removed unless asked), as Inspect's score does.
    return [json.dumps({**_noted(r, v).to_dict(), JUDGED_ANSWER: v.text, **provenance}, ensure_ascii=False) for r, v in zip(records, seen)]


def share_key(docs: Sequence[dict]) -> str:
    """What names one rank's share of the cases: the sha256 of its case ids, in order."""
    return hashlib.sha256("\n".join(str(d.get("case_id")) for d in docs).encode("utf-8")).hexdigest()


def run_tally(shares: Sequence[tuple[str, FailureTally]]) -> FailureTally:
    """The whole run's tally from every rank's ``(share_key, tally)``: distinct shares added, a share
    that several ranks hold counted once (under a tensor-parallel launcher every rank judges every
    case, and the run's count is one rank's, not their sum)."""
    distinct: dict[str, FailureTally] = {}
    for key, share in shares:
        distinct.setdefault(key, share)
    tally = FailureTally()
    for share in distinct.values():
        tally.add_tally(share)
    return tally


# -- 4. per-case values and aggregations ---------------------------------------------------------


@dataclass(frozen=True)
class LmEvalMetric:
    """One entry of the YAML's ``metric_list``: ``aggregation`` names a function in this module
    (``case_mean``, the order-free mean lm-eval gives a standard error, ``total``, ...)."""

    name: str
    aggregation: str
    higher_is_better: bool = True


SLICED = [name for m in metric_table.METRICS if m.by_audience for name in m.names()]
AUDIENCES = (LAY, PROFESSIONAL)
AGREEMENT = {  # metric name -> its aggregation function's name (defined below)
    name: "agreement_" + name.removeprefix("agreement/").replace("@", "")
    for m in metric_table.metrics_of(metric_table.AGREEMENT) for name in m.names()
}


def audience_metric(name: str, audience: str) -> str:
    return slice_metric_name(name, "audience", audience)


def metric_list(dual: bool = False) -> list[LmEvalMetric]:
    """Every metric the task reports, in the order of the results table, from the metric table
    (``scorers.clinconsensus.metric_table``); the YAMLs are generated from this list."""
    means = metric_table.mean_names()
    out = [LmEvalMetric(name, "case_mean") for name in means]
    out += [LmEvalMetric(name, "total", False) for name in metric_table.count_names() if name not in metric_table.TOKEN_COUNTS]
    out += [LmEvalMetric(audience_metric(name, who), "slice_mean") for who in AUDIENCES for name in SLICED]
    out += [LmEvalMetric(metric_table.without_failed_name(name), "slice_mean") for name in metric_table.without_failed_names()]
    out += [LmEvalMetric(name, "total", False) for name in metric_table.TOKEN_COUNTS]  # what the judge(s) spent
    if dual:
        out += [LmEvalMetric(f"local/{name}", "case_mean") for name in means]
        out.append(LmEvalMetric("local/judge_failures", "total", False))
        out += [LmEvalMetric(m_name, AGREEMENT[m_name], m.higher_is_better)
                for m in metric_table.metrics_of(metric_table.AGREEMENT) for m_name in m.names()]
    return out


def process_results(doc: dict, results: Sequence[str]) -> dict[str, Any]:
    """One case's value of every metric (see :func:`metric_list`); for thresholds added through
    ``--metadata`` also its Pass@k indicator and CACS@k term, whose mean is the metric."""
    record = GradedCase.from_dict(json.loads(results[0]), f"case {doc.get('case_id')!r}")
    n = int(doc.get("n_criteria") or settings.n_criteria_from_env())
    ks = (*DEFAULT_THRESHOLDS, *(doc.get("extra_thresholds") or []))
    terms = record.terms(ks, n)
    out: dict[str, Any] = {**terms, **metric_table.case_counts(record)}
    for who in AUDIENCES:
        for name in SLICED:
            out[audience_metric(name, who)] = terms[name] if doc.get("audience") == who else None
    for name in metric_table.without_failed_names():  # a case with a failed judgment is left out of these
        out[metric_table.without_failed_name(name)] = terms[name] if record.failures == 0 else None
    paired = record.paired()
    if paired is not None:
        out.update({f"local/{name}": value for name, value in case_terms(paired.other.met, paired.other.judged, DEFAULT_THRESHOLDS, n).items()})
        out["local/judge_failures"] = paired.other.failures
        pair = {"met": paired.reference.met, "local_met": paired.other.met, "judged": paired.reference.judged,
                "failures": paired.reference.failures, "local_failures": paired.other.failures,
                "confusion": [paired.confusion.tp, paired.confusion.tn, paired.confusion.fp, paired.confusion.fn]}
        out.update({name: pair for name in AGREEMENT})
    return out


def total(items: Sequence[float]) -> float:
    """A count over cases (judge failures, empty and truncated answers), summed exactly."""
    return math.fsum(items)


def slice_mean(items: Sequence[float | None]) -> float:
    """Mean over the cases of one slice (the others carry ``None``); NaN when the slice is empty."""
    values = [x for x in items if x is not None]
    return mean(values) if values else float("nan")


def _agreement(items: Sequence[dict[str, Any]], key: str) -> float:
    pairs = [
        PairedCase(CaseResult(i["met"], i["judged"], i["failures"]), CaseResult(i["local_met"], i["judged"], i["local_failures"]),
                   Confusion(*i["confusion"]))
        for i in items
    ]
    return comparison_metrics(pairs, DEFAULT_THRESHOLDS, settings.n_criteria_from_env(), prefix="local", by_label=False)[key]


def agreement_percent(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/percent")


def agreement_kappa(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/kappa")


def agreement_macro_f1(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/macro_f1")


def agreement_precision_met(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/precision_met")


def agreement_recall_met(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/recall_met")


def agreement_met_count_pearson(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/met_count_pearson")


def agreement_cacs7_diff(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/cacs@7_diff")


def agreement_cacs10_diff(items: Sequence[dict[str, Any]]) -> float:
    return _agreement(items, "agreement/cacs@10_diff")
