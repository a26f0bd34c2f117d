"""Telling an lm-eval build from an lm-eval run, so building needs nothing a run needs.

Why: building a task (``TaskManager.load``, ``lm_eval validate``, lm-eval's own
``tests/test_tasks.py`` that reviews contributed tasks) must need no judge, no similarity model
and no network, and send nothing; a real run with a missing or wrong judge (or similarity model)
must still stop before the model under test is asked anything.

lm-eval 0.4.13 has no hook between the two. Its evaluator's order of calls is:
``simple_evaluate`` builds the model, then ``TaskManager.load`` builds every task (dataset
download, ``custom_dataset``), then ``evaluate()`` calls each task's ``build_all_requests`` and,
right after the last one, sends the requests to the model. ``build_all_requests`` is also called
by ``tests/test_tasks.py`` (directly, not through ``evaluate``). So the nearest place that tells a
run from a build is ``build_all_requests`` *called by* ``lm_eval.evaluator.evaluate``: there
:meth:`RunCheckedTask.before_run` checks what the run needs, after every task is built and before
the first model request.
"""

from __future__ import annotations

import sys
from typing import Any

from lm_eval.api.task import ConfigurableTask

EVALUATOR_MODULE, EVALUATOR_FUNCTION = "lm_eval.evaluator", "evaluate"


def called_by_evaluate(depth: int = 2) -> bool:
    """Whether the function ``depth`` frames up the stack (from this function's caller's caller) is
    lm-eval's ``evaluate``: the run, as opposed to a test or a tool building requests."""
    frame = sys._getframe(depth)
    return frame.f_globals.get("__name__") == EVALUATOR_MODULE and frame.f_code.co_name == EVALUATOR_FUNCTION


class RunCheckedTask(ConfigurableTask):
    """lm-eval's configurable task that checks what a run needs only when lm-eval runs it.

    Subclasses put the check in :meth:`before_run`; the YAMLs name the class with ``class:``.
    """

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        # lm-eval hands a YAML ``class:`` task its whole config, the ``class`` key included,
        # which lm-eval's own TaskConfig does not take.
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)

    def build_all_requests(self, *args: Any, **kwargs: Any) -> Any:
        if called_by_evaluate():
            self.before_run()
        return super().build_all_requests(*args, **kwargs)

    def before_run(self) -> None:
        """Check what a run of this task needs (raise a ``ConfigurationError`` saying what is missing)."""
