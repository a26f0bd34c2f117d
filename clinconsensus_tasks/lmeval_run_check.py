"""Telling an lm-eval build from an lm-eval run, so building needs nothing a run needs.

Why: building a task (``TaskManager.load``, ``lm_eval validate``, lm-eval's own
``tests/test_tasks.py`` that reviews contributed tasks) must need no judge, no similarity model
and no network, and send nothing; a real run with a missing or wrong judge (or similarity model)
must still stop before the model under test is asked anything.

lm-eval 0.4.13 has no hook between the two. Its evaluator's order of calls is:
``simple_evaluate`` builds the model, then ``TaskManager.load`` builds every task (dataset
download, ``custom_dataset``), then ``evaluate()`` calls each task's ``build_all_requests`` and,
right after the last one, sends the requests to the model. ``build_all_requests`` is also called
by ``tests/test_tasks.py``, with the request settings only (``limit``, ``rank``, ``world_size``).
What tells the run is the call itself: ``evaluate()`` hands ``build_all_requests`` the run's whole
prompt set-up (:data:`RUN_ARGUMENTS`: the system instruction, the chat template choice, the
request cache settings), a build of requests alone does not. There :meth:`RunCheckedTask.before_run`
checks what the run needs, after every task is built and before the first model request.
``tests/framework_checks`` runs lm-eval's own task test against the tasks (no check made), and the
fault tests run real evaluations with a wrong judge (the check made, nothing generated): an lm-eval
that stopped passing these arguments fails those tests.
"""

from __future__ import annotations

from typing import Any

from lm_eval.api.task import ConfigurableTask

# The keyword arguments lm-eval's ``evaluate()`` passes ``build_all_requests`` (0.4.13), beyond those
# of a build of requests alone: a run's prompt set-up.
RUN_ARGUMENTS = frozenset({"system_instruction", "apply_chat_template", "fewshot_as_multiturn", "cache_requests"})


def is_run(arguments: dict[str, Any]) -> bool:
    """Whether ``build_all_requests`` was called as lm-eval's evaluator calls it for a run."""
    return RUN_ARGUMENTS <= arguments.keys()


class RunCheckedTask(ConfigurableTask):
    """lm-eval's configurable task that checks what a run needs only when lm-eval runs it.

    Subclasses put the check in :meth:`before_run`; the YAMLs name the class with ``class:``.
    """

    def __init__(self, config: dict | None = None, **kwargs: Any) -> None:
        # lm-eval hands a YAML ``class:`` task its whole config, the ``class`` key included,
        # which lm-eval's own TaskConfig does not take.
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)

    def build_all_requests(self, **kwargs: Any) -> Any:
        if is_run(kwargs):
            self.before_run()
        return super().build_all_requests(**kwargs)

    def before_run(self) -> None:
        """Check what a run of this task needs (raise a ``ConfigurationError`` saying what is missing)."""
