"""lm-evaluation-harness glue for ClinConsensus: dataset, judge filter, per-case results, aggregations.

How a run flows (``task_configs/clinconsensus/clinconsensus.yaml``):

1. ``load_dataset`` reads and validates the cases (``CLINCONSENSUS_DATA``: ``hub``, ``sample`` or a
   path) and checks the judge settings first, so a misconfigured run fails before any generation.
2. The model answers each question (any lm-eval backend; chat APIs need ``--apply_chat_template``).
3. The ``judge`` filter receives every answer of the task at once and grades them all concurrently
   against their rubrics through the OpenAI-compatible judge (``judge_client``), with the on-disk
   verdict cache. Each document's filtered response is a JSON string holding its verdicts, so they
   land in ``--log_samples``.
4. ``process_results`` turns that into one compact record per case, and the ``aggregate_*``
   functions compute each metric with the shared scoring core (``clinconsensus_tasks.scorers``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import re
import sys
from typing import Any, Callable, Sequence

from clinconsensus_tasks.clinconsensus.dataset import ENV_DATA, load_cases
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.judge.cache import check_cache_file
from clinconsensus_tasks.judge.client import JudgeSettings, enforce_failure_policy, judge_documents
from clinconsensus_tasks.scorers.clinconsensus.audience import LAY, PROFESSIONAL
from clinconsensus_tasks.scorers.clinconsensus.cacs import DEFAULT_N_CRITERIA, DEFAULT_THRESHOLDS, CaseResult, cacs_at_k, pass_at_k, rubric_accuracy
from clinconsensus_tasks.scorers.agreement import Confusion
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import PairedCase, comparison_metrics, pair_verdicts
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import JUDGE_MODES, PER_CRITERION, PROBE_MESSAGES

ENV_JUDGE_MODE = "CLINCONSENSUS_JUDGE_MODE"
ENV_N_CRITERIA = "CLINCONSENSUS_N_CRITERIA"
ENV_JUDGE_CHECK = "CLINCONSENSUS_JUDGE_CHECK"


def judge_mode() -> str:
    mode = os.environ.get(ENV_JUDGE_MODE, PER_CRITERION).strip() or PER_CRITERION
    if mode not in JUDGE_MODES:
        raise ConfigurationError(f"{ENV_JUDGE_MODE}={mode!r}; choose one of {', '.join(JUDGE_MODES)}")
    return mode


def n_criteria() -> int:
    raw = os.environ.get(ENV_N_CRITERIA, "")
    try:
        return int(raw) if raw else DEFAULT_N_CRITERIA
    except ValueError:
        raise ConfigurationError(f"{ENV_N_CRITERIA}={raw!r} is not an integer") from None


def extra_thresholds(value: Any, n: int) -> list[int]:
    """Thresholds beyond the YAML's 7 and 10, from ``--metadata '{"thresholds": [5, 8]}'``."""
    if value in (None, "", []):
        return []
    try:
        ks = [int(k) for k in (value.split(",") if isinstance(value, str) else value)]
    except (TypeError, ValueError):
        raise ConfigurationError(f"thresholds={value!r}: expected integers such as [5, 8]") from None
    if any(not 1 <= k <= n for k in ks):
        raise ConfigurationError(f"thresholds={value!r}: every k must lie in 1..{n}")
    return [k for k in dict.fromkeys(ks) if k not in DEFAULT_THRESHOLDS]


def check_judge(settings: JudgeSettings) -> None:
    """Send the judge one tiny request now, before the model under test answers anything."""
    from openai import OpenAI

    client = OpenAI(base_url=settings.base_url, api_key=settings.api_key, max_retries=settings.max_retries, timeout=settings.timeout)
    try:
        client.chat.completions.create(model=settings.model, messages=PROBE_MESSAGES, max_tokens=8, extra_body=dict(settings.extra_body) or None)  # type: ignore[arg-type]
    except Exception as exc:
        raise ConfigurationError(
            f"The ClinConsensus judge at {settings.base_url} (model {settings.model!r}) did not answer a test request: "
            f"{type(exc).__name__}: {exc}. Check CLINCONSENSUS_JUDGE_BASE_URL, _MODEL and _API_KEY "
            f"({ENV_JUDGE_CHECK}=0 skips this check)."
        ) from exc
    finally:
        client.close()


# -- 1. dataset ---------------------------------------------------------------------------------


LOCAL_JUDGE_PREFIX = "CLINCONSENSUS_LOCAL_JUDGE_"


def load_dataset_dual(thresholds: Any = None, **kwargs: Any) -> dict[str, Any]:
    """``clinconsensus_dual``: as :func:`load_dataset`, and the second (local) judge must be set too."""
    settings = JudgeSettings.from_env(prefix=LOCAL_JUDGE_PREFIX)
    if os.environ.get(ENV_JUDGE_CHECK, "1") not in ("0", "false", "no"):
        check_judge(settings)
    return load_dataset(thresholds, **kwargs)


def load_dataset(thresholds: Any = None, **kwargs: Any) -> dict[str, Any]:
    """``custom_dataset`` hook: the validated cases as a ``datasets.Dataset`` test split.

    lm-eval passes the task metadata (``--metadata``; from its CLI also the model arguments) as
    keyword arguments; only ``thresholds`` is used. Everything a run needs is checked here, before
    the model under test answers anything: the data, the judge settings, and (unless
    ``CLINCONSENSUS_JUDGE_CHECK=0``) that the judge answers.
    """
    import datasets

    settings = JudgeSettings.from_env()
    judge_mode()
    n = n_criteria()
    extra = extra_thresholds(thresholds, n)
    loaded = load_cases(os.environ.get(ENV_DATA, "hub"), n)
    if settings.use_cache:
        warning = check_cache_file(settings.cache_dir)
        if warning:
            print(f"[clinconsensus] WARNING: {warning}", file=sys.stderr)
    if os.environ.get(ENV_JUDGE_CHECK, "1") not in ("0", "false", "no"):
        check_judge(settings)
    print(f"[clinconsensus] {len(loaded.cases)} cases from {loaded.source}", file=sys.stderr)
    rows = [{**case.to_record(), "extra_thresholds": extra} for case in loaded.cases]
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


def first_responses(resps: Sequence[Any]) -> list[str]:
    """Each document's first response, as a string (lm-eval gives a list of ``repeats`` per doc)."""
    return [(r[0] if isinstance(r, (list, tuple)) and r else r) or "" for r in resps]


def judge_filter_dual(resps: Sequence[Sequence[str]], docs: Sequence[dict]) -> list[str]:
    """``custom`` filter of ``clinconsensus_dual``: grade every answer with both judges at once.

    Each document's record holds the reference judge's verdicts, the local judge's verdicts under
    ``local`` and the confusion counts ``[tp, tn, fp, fn]`` of the two (reference first).
    """
    reference_settings = JudgeSettings.from_env()
    local_settings = JudgeSettings.from_env(prefix=LOCAL_JUDGE_PREFIX)
    mode = judge_mode()
    answers = first_responses(resps)

    async def both() -> tuple[Any, Any]:
        return await asyncio.gather(
            judge_documents(answers, docs, reference_settings, mode), judge_documents(answers, docs, local_settings, mode)
        )

    (records, stats), (local_records, local_stats) = _run(both)
    enforce_failure_policy([*records, *local_records], reference_settings)  # both judges' failures, as in Inspect
    out = []
    for record, local in zip(records, local_records):
        matrix = pair_verdicts([j["met"] for j in record["judgments"]], [j["met"] for j in local["judgments"]])
        record["local"] = {k: local[k] for k in ("met", "failures", "judge_model", "judgments")}
        record["confusion"] = [matrix.tp, matrix.tn, matrix.fp, matrix.fn]
        out.append(json.dumps(record, ensure_ascii=False))
    for name, st in ((reference_settings.model, stats), (local_settings.model, local_stats)):
        print(f"[clinconsensus] judge {name}: {st['calls']} calls, {st['cache_hits']} cache hits", file=sys.stderr)
    return out


def judge_filter(resps: Sequence[Sequence[str]], docs: Sequence[dict]) -> list[str]:
    """``custom`` filter: grade all answers of the task; one JSON record (verdicts) per document.

    Each document's first response is graded (the task runs one response per document; with
    ``repeats`` raised, the others are reported and left ungraded).
    """
    settings = JudgeSettings.from_env()
    mode = judge_mode()
    answers = first_responses(resps)
    extra = sum(max(0, len(r) - 1) for r in resps if isinstance(r, (list, tuple)))
    if extra:
        print(f"[clinconsensus] WARNING: {extra} extra response(s) from `repeats` > 1 are not graded; only each document's first is", file=sys.stderr)
    records, stats = _run(lambda: judge_documents(answers, docs, settings, mode))
    failures = sum(r["failures"] for r in records)
    empty = sum(r["empty_answer"] for r in records)
    suspect = sum(bool(r["suspect_answer"]) for r in records)
    print(
        f"[clinconsensus] judge {settings.model}: {stats['calls']} calls, {stats['cache_hits']} cache hits, "
        f"{failures} failed judgment(s), {empty} empty answer(s) not sent to the judge, {suspect} suspect answer(s)",
        file=sys.stderr,
    )
    enforce_failure_policy(records, settings)
    return [json.dumps(r, ensure_ascii=False) for r in records]


# -- 4. per-case results and aggregations ------------------------------------------------------------


DECLARED_METRICS: tuple[str, ...] = (
    "rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10", "judge_failures", "empty_answers",
    *(f"{name}[audience={who}]" for who in (LAY, PROFESSIONAL) for name in ("rubric_accuracy", "cacs@7", "cacs@10")),
)


def process_results(doc: dict, results: Sequence[str]) -> dict[str, Any]:
    """Per-case values: the compact record ``[met, judged, failures, audience, empty]`` under each
    metric the YAML declares (its aggregation computes the metric with the scoring core), and for
    extra thresholds the per-case Pass@k indicator and CACS@k term, whose mean is the metric."""
    record = json.loads(results[0])
    value = [record["met"], record["judged"], record["failures"], doc["audience"], int(record["empty_answer"])]
    names = DECLARED_METRICS
    if "local" in record:
        value += [record["local"]["met"], record["local"]["failures"], *record["confusion"]]
        names = DECLARED_METRICS + DUAL_METRICS
    out: dict[str, Any] = {name: value for name in names}
    out["suspect_answers"] = int(bool(record.get("suspect_answer")))
    n = n_criteria()
    for k in doc.get("extra_thresholds") or []:
        out[f"pass@{k}"] = pass_at_k([record["met"]], k)
        out[f"cacs@{k}"] = cacs_at_k([record["met"]], k, n)
    return out


def _results(items: Sequence[Sequence[Any]], audience: str | None = None) -> list[CaseResult]:
    return [CaseResult(int(i[0]), int(i[1]), int(i[2])) for i in items if audience in (None, i[3])]


DUAL_METRICS: tuple[str, ...] = (
    "local/rubric_accuracy", "local/pass@7", "local/pass@10", "local/cacs@7", "local/cacs@10", "local/judge_failures",
    "agreement/percent", "agreement/kappa", "agreement/macro_f1", "agreement/precision_met", "agreement/recall_met",
    "agreement/met_count_pearson", "agreement/cacs@7_diff", "agreement/cacs@10_diff",
)


def _paired(items: Sequence[Sequence[Any]]) -> list[PairedCase]:
    out = []
    for i in items:
        reference = CaseResult(int(i[0]), int(i[1]), int(i[2]))
        other = CaseResult(int(i[5]), int(i[1]), int(i[6]))
        out.append(PairedCase(reference, other, Confusion(tp=int(i[7]), tn=int(i[8]), fp=int(i[9]), fn=int(i[10]))))
    return out


def _dual(key: str) -> Callable[[Sequence[Sequence[Any]]], float]:
    def aggregate(items: Sequence[Sequence[Any]]) -> float:
        return comparison_metrics(_paired(items), DEFAULT_THRESHOLDS, n_criteria(), prefix="local", by_label=False)[key]

    aggregate.__name__ = "aggregate_" + re.sub(r"\W", "_", key)
    return aggregate


# ``!function`` targets of clinconsensus_dual.yaml (local/<metric>, agreement/<statistic>), served
# by the module ``__getattr__`` below like the threshold aggregations.
_DUAL_BY_NAME = {"aggregate_" + re.sub(r"\W", "_", key): key for key in DUAL_METRICS}


def aggregate_rubric_accuracy(items: Sequence[Sequence[Any]]) -> float:
    return rubric_accuracy(_results(items))


def aggregate_judge_failures(items: Sequence[Sequence[Any]]) -> float:
    return float(sum(r.failures for r in _results(items)))


def aggregate_empty_answers(items: Sequence[Sequence[Any]]) -> float:
    return float(sum(int(item[4]) for item in items))


def aggregate_suspect_answers(items: Sequence[int]) -> float:
    """Answers holding verdict-like JSON or judge prompt section markers (``answer_guard``)."""
    return float(sum(items))


def _make_aggregation(name: str) -> Callable[[Sequence[Sequence[Any]]], float] | None:
    """``aggregate_{pass,cacs}_at_<k>[_<audience>]`` and ``aggregate_rubric_accuracy_<audience>``
    for any k, so a YAML can report other thresholds without new code; and the dual-judge ones."""
    if name in _DUAL_BY_NAME:
        return _dual(_DUAL_BY_NAME[name])
    match = re.fullmatch(r"aggregate_(pass|cacs)_at_(\d+)(?:_(lay|professional))?", name)
    if match:
        kind, k, who = match.group(1), int(match.group(2)), match.group(3)

        def aggregate(items: Sequence[Sequence[Any]]) -> float:
            met = [r.met for r in _results(items, who)]
            if not met:  # no case in this slice: there is no value, not a zero
                return float("nan")
            return pass_at_k(met, k) if kind == "pass" else cacs_at_k(met, k, n_criteria())

        aggregate.__name__ = name
        return aggregate
    match = re.fullmatch(r"aggregate_rubric_accuracy_(lay|professional)", name)
    if match:
        who = match.group(1)

        def aggregate_accuracy(items: Sequence[Sequence[Any]]) -> float:
            rows = _results(items, who)
            return rubric_accuracy(rows) if rows else float("nan")

        aggregate_accuracy.__name__ = name
        return aggregate_accuracy
    return None


def __getattr__(name: str) -> Any:
    aggregation = _make_aggregation(name)
    if aggregation is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return aggregation
