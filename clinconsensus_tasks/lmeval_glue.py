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
from importlib import resources
from pathlib import Path
from typing import Any, Sequence


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
