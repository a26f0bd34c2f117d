"""Every use of Inspect's private modules (``inspect_ai._*``, ``inspect_ai.*._*``), in one place.

Inspect's public API does not cover these four needs; each import below says why it is needed.
An Inspect upgrade that moves one of them breaks this file only (checked against inspect-ai
0.3.285). Nothing else in the project may import a private Inspect module.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

# ``inspect eval`` prints a PrerequisiteError as one line, without a traceback: the class our
# configuration errors also derive from when they stop a task (see ``inspect_task.shown_alone``).
from inspect_ai._util.error import PrerequisiteError

# The generate config of the running eval (the command line's --max-retries, --timeout,
# --attempt-timeout). A judge bound to a model role does not receive these from Inspect.
from inspect_ai.model._generate_config import active_generate_config

# The registry: to make a plugin's scorer loadable under the name a log records for it.
from inspect_ai._util.registry import RegistryInfo, registry_add, registry_has, registry_info

# The context Inspect's own log reader validates a sample with (``log_files.read_local_eval`` reads a
# finished .eval member by member and builds Inspect's ``EvalSample`` as Inspect's reader would).
from inspect_ai._util.constants import get_deserializing_context

__all__ = ["PrerequisiteError", "active_generate_config", "get_deserializing_context", "register_logged_scorer_name"]


def register_logged_scorer_name(factory: Callable[..., Any]) -> None:
    """Let ``inspect score LOG`` find a plugin scorer by the name the log records for it.

    Inspect records a scorer in ``log.eval.scorers`` under its *unqualified* name
    (``as_scorer_spec`` -> ``registry_unqualified_name``: ``rubric_scorer``), but looks names up
    with the package prefix a plugin's objects are registered under
    (``clinconsensus_tasks/rubric_scorer``); an unqualified name is only tried as
    ``inspect_ai/<name>``. So ``inspect score LOG`` cannot load any plugin's scorer, and
    ``--scorer clinconsensus_tasks/rubric_scorer`` loads it without the options the log
    recorded. Registering the same factory under the unqualified name too (as a scorer from a
    user's own task file is registered) closes that gap: ``inspect score`` imports every plugin's
    entry point at start-up (``platform_init`` -> ``ensure_entry_points``), then finds the scorer
    and calls it with the logged options. A scorer already registered under that name (a user's)
    is left alone.
    """
    info = registry_info(factory)
    name = info.name.rsplit("/", 1)[-1]
    if name == info.name or registry_has("scorer", name):
        return

    @functools.wraps(factory)
    def logged_name(*args: Any, **kwargs: Any) -> Any:
        return factory(*args, **kwargs)

    registry_add(logged_name, RegistryInfo(type="scorer", name=name, metadata=dict(info.metadata)))
