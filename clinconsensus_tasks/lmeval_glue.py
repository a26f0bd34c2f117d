"""What both benchmarks' lm-eval glue shares, and running the package's lm-eval tasks from Python.

Each benchmark's own glue (``clinconsensus/lmeval_task.py``, ``climedbench/lmeval_task.py``)
imports from here, never from the other benchmark. ``lm_eval`` indexes its ~14,000 built-in task YAMLs on start (about 20 s on a small machine). A
``TaskManager`` restricted to this package's YAMLs skips that:

>>> from clinconsensus_tasks.lmeval_glue import simple_evaluate
>>> results = simple_evaluate(model="local-chat-completions",
...     model_args={"model": "m", "base_url": "http://localhost:8000/v1/chat/completions"},
...     tasks=["clinconsensus"], apply_chat_template=True)
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Sequence

from clinconsensus_tasks.scorers.means import mean, stderr_of_mean


TASK_PREFIXES = ("clinconsensus", "climedbench")


class CustomDatasetHintFilter(logging.Filter):
    """Drops lm-eval's hint that custom kwargs can be passed to ``--metadata``, for this package's tasks.

    lm-eval 0.4.13 logs that hint (two lines) for every task built from a ``custom_dataset``
    function, whatever the task: 14 times in a CliMedBench run. These tasks take their settings
    from environment variables (documented in docs/lm-eval.md); other tasks' hints are kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith(TASK_PREFIXES) and "Custom kwargs can be passed to `--metadata`" in message)


def quiet_custom_dataset_hint() -> None:
    """Install :class:`CustomDatasetHintFilter` on lm-eval's task logger (once)."""
    logger = logging.getLogger("lm_eval.api.task")
    if not any(isinstance(f, CustomDatasetHintFilter) for f in logger.filters):
        logger.addFilter(CustomDatasetHintFilter())


def case_mean(items: Sequence[float]) -> float:
    """The aggregation of every mean metric of the package's lm-eval tasks: an exactly rounded sum
    over the cases divided by their count (``scorers.means.mean``), the float Inspect reports too,
    and the same whatever order lm-eval hands the values in (one process, or several data-parallel
    ranks gathered rank by rank, where lm-eval's own ``mean`` differs in the last digit)."""
    return mean(items)


def _with_case_mean_stderr(stderr_for_metric: Callable[..., Any]) -> Callable[..., Any]:
    def stderr_for(metric: Callable[..., Any], bootstrap_iters: int) -> Any:
        if metric is case_mean:  # lm-eval's closed form for its own mean, with order-free sums
            return stderr_of_mean if bootstrap_iters > 0 else None
        return stderr_for_metric(metric, bootstrap_iters)

    stderr_for.__wrapped__ = stderr_for_metric  # type: ignore[attr-defined]
    stderr_for.case_mean = True  # type: ignore[attr-defined]
    return stderr_for


def give_case_mean_its_stderr() -> None:
    """Make lm-eval report ``<metric>_stderr`` for :func:`case_mean` as it does for its ``mean``.

    lm-eval 0.4.13 picks a closed-form standard error by the identity of the aggregation function
    (``lm_eval.api.metrics.stderr_for_metric``: its ``mean`` gets ``mean_stderr``, any other
    function none). The lookup that ``evaluator_utils`` imported is wrapped so that
    :func:`case_mean` gets the same statistic (``scorers.means.stderr_of_mean``); every other
    function is answered by lm-eval's own lookup, unchanged. Called when the package's lm-eval glue
    (``clinconsensus/lmeval_task.py``, ``climedbench/lmeval_task.py``) is imported: lm-eval
    imports it while loading the package's YAMLs, before any aggregation. Idempotent.
    """
    for name in ("lm_eval.evaluator_utils", "lm_eval.api.metrics"):
        module = sys.modules.get(name)
        if module is None:
            try:
                module = __import__(name, fromlist=["stderr_for_metric"])
            except ImportError:  # lm-eval is not installed: nothing to give a standard error to
                return
        current = getattr(module, "stderr_for_metric", None)
        if current is None:
            raise RuntimeError(f"lmeval_glue.give_case_mean_its_stderr: {name} has no stderr_for_metric (read in lm-eval 0.4.13); "
                               "this patch must be rewritten for the installed lm-eval, or case_mean's metrics lose their stderr")
        if not getattr(current, "case_mean", False):
            module.stderr_for_metric = _with_case_mean_stderr(current)


def across_ranks(value: Any) -> list[Any]:
    """``value`` from every rank of an lm-eval data-parallel run, in rank order (``[value]`` in one process).

    Under ``accelerate launch`` or ``torchrun`` each rank filters (judges) only its share of the
    cases; what must be decided as one process would decide it (the judge failure policy) is
    decided on every rank's share. Every rank reaches this call once per task, in the same order
    (lm-eval applies each task's filters on every rank). torch is not imported by this: a run
    that did not start torch.distributed has one rank.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
        return [value]
    out: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def cache_rank() -> int:
    """This process's rank as lm-eval names its ``--use_cache`` file (``<prefix>_rank<N>.db``): the
    torch.distributed rank of a data-parallel run, else ``LOCAL_RANK`` (lm-eval's own fallback
    under launchers where every process reports rank 0), else 0."""
    dist = sys.modules.get("torch.distributed")
    rank = dist.get_rank() if dist is not None and dist.is_available() and dist.is_initialized() else 0
    return rank or int(os.environ.get("LOCAL_RANK", "0") or 0)


@dataclass(frozen=True)
class KeptAnswers:
    """The model's answers of one lm-eval task, written where lm-eval's ``--use_cache PREFIX``
    reads them, so a run whose judge failed is finished with no model call.

    lm-eval's ``--use_cache`` caches the model's answers only when it was given before the run;
    without it a failed judge loses every answer (the samples are written after the metrics).
    :func:`keep_answers` writes each answer under the key lm-eval's own cache gives its request
    (``lm_eval.api.model.hash_args`` of the request's arguments), in the SQLite file lm-eval's
    ``CachingLM`` opens for ``--use_cache PREFIX`` on this rank. The same command with
    ``--use_cache PREFIX`` then serves every answer from it: the same requests, so the same keys
    (another model, prompt or generation setting makes other requests, which the model answers)."""

    prefix: str
    path: Path
    answers: int

    def hint(self) -> str:
        return (f"The model's {self.answers} answers are kept in {self.path}: once the judge works, finish this run with "
                f"the same lm_eval command plus `--use_cache {self.prefix}` (no model call: the answers come from that "
                "file, the verdicts obtained from the verdict cache).")

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


def keep_answers(instances: Sequence[Any], prefix: str) -> KeptAnswers:
    """Write the generated answers of ``instances`` (lm-eval ``Instance`` objects holding their
    responses) to ``<prefix>_rank<N>.db``, as lm-eval's ``CachingLM`` stores them (see :class:`KeptAnswers`)."""
    from lm_eval.api.model import hash_args
    from sqlitedict import SqliteDict

    path = Path(f"{prefix}_rank{cache_rank()}.db")
    path.parent.mkdir(parents=True, exist_ok=True)
    answered = [i for i in instances if i.request_type == "generate_until" and i.resps]
    with SqliteDict(str(path), autocommit=False) as db:
        for instance in answered:
            db[hash_args("generate_until", instance.args)] = instance.resps[-1]
        db.commit()
    return KeptAnswers(prefix, path, len(answered))


def first_responses(resps: Sequence[Any]) -> list[str]:
    """Each document's first response, as a string (lm-eval gives a list of ``repeats`` per doc)."""
    return [(r[0] if isinstance(r, (list, tuple)) and r else r) or "" for r in resps]


def task_configs_dir() -> Path:
    """Folder of the package's lm-eval YAMLs (what ``--include_path`` should point at)."""
    return Path(str(resources.files("clinconsensus_tasks.task_configs")))


def task_manager(include_defaults: bool = False, **kwargs: Any):
    """An lm-eval ``TaskManager`` that knows this package's tasks (and, optionally, the built-ins)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(task_configs_dir()), include_defaults=include_defaults, **kwargs)


def simple_evaluate(tasks: list[str] | None = None, **kwargs: Any) -> dict:
    """``lm_eval.simple_evaluate`` with :func:`task_manager`; ``tasks`` defaults to ``["clinconsensus"]``."""
    import lm_eval

    kwargs.setdefault("task_manager", task_manager(metadata=kwargs.get("metadata")))  # as lm_eval --metadata does
    return lm_eval.simple_evaluate(tasks=tasks or ["clinconsensus"], **kwargs)

