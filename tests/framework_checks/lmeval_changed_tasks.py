"""What lm-eval's CI hands its new-task test: the names of the tasks in the changed YAML files.

lm-eval's ``tests/test_tasks.py`` imports ``new_tasks`` from the ``tests/utils.py`` beside it. In
lm-eval's ``new_tasks`` workflow, ``tj-actions/changed-files`` writes the changed files to
``.github/outputs/tasks_all_changed_and_modified_files.txt`` and ``new_tasks()`` turns each YAML
there into a name: a task file gives its ``task``, a group file (``task`` is a list) its ``group``.
lm-eval's source distribution on PyPI ships ``tests/test_tasks.py`` but not ``tests/utils.py``, so
the framework-checks tier puts this module in its place (as ``tests/utils.py`` of the run folder),
reading the same file the same way. It is this project's code, written for that role.
"""

from __future__ import annotations

from pathlib import Path

CHANGED_FILES = Path(".github/outputs/tasks_all_changed_and_modified_files.txt")


def task_or_group(yaml_file: Path) -> str | None:
    """The name lm-eval's test loads for one YAML file: its task, or its group for a group file."""
    from lm_eval.tasks._yaml_loader import load_yaml

    config = load_yaml(str(yaml_file), resolve_func=False)
    if isinstance(config.get("task"), str):
        return config["task"]
    if isinstance(config.get("task"), list):
        return config["group"]
    return None


def new_tasks() -> list[str] | None:
    """The task and group names of the changed YAML files; None when no list was written."""
    if not CHANGED_FILES.exists():
        return None
    names = {task_or_group(Path(p)) for p in CHANGED_FILES.read_text(encoding="utf-8").split() if p.endswith(".yaml") and Path(p).exists()}
    return sorted(n for n in names if n)
