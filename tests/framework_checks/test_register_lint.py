"""The Inspect Evals Register's linter, with the register's own settings, on this repository.

The register lints an entry's repository through ``inspect_evals_lint.lint_task_files`` with
``REGISTER_CONFIG`` (the single-evaluation layout, ``eval.yaml`` optional: the entry holds the
metadata); it reads no configuration of the repository. Each ``task_path`` of ``eval.yaml`` is
linted as the package holding it, here in the environment where the package is installed (the
dependency rule maps imports to the installed distributions). Every rule must pass; a finding is
accepted only where the code carries a suppression with its reason (the README lists them).
"""

from __future__ import annotations

from importlib import metadata

import pytest
import yaml

from wheel_build import ROOT

pytestmark = pytest.mark.framework_checks

LINT_VERSION = "0.12.0"


def test_register_lint_passes_every_rule_on_both_task_files():
    from inspect_evals_lint import REGISTER_CONFIG, lint_task_files

    assert metadata.version("inspect-evals-lint") == LINT_VERSION
    entry = yaml.safe_load((ROOT / "eval.yaml").read_text(encoding="utf-8"))
    task_files = sorted({task["task_path"] for task in entry["tasks"]})
    assert task_files == ["clinconsensus_tasks/climedbench/inspect_task.py", "clinconsensus_tasks/clinconsensus/inspect_task.py"]

    run = lint_task_files(ROOT, task_files, REGISTER_CONFIG)
    assert sorted(p.name for p in run.packages) == ["climedbench", "clinconsensus"]
    findings = [f"{p.name}: {d.rule.code} {d.rule.name} {d.status} {d.location}: {d.message}"
                for p in run.packages for d in p.diagnostics if d.status != "suppressed"]
    assert findings == []
    assert all(p.passed() for p in run.packages)
    suppressed = sorted({(p.name, d.rule.code) for p in run.packages for d in p.diagnostics})
    # What the README's register list explains, and nothing more.
    assert suppressed == [("climedbench", "IEFS002"), ("climedbench", "IETS008"),
                          ("clinconsensus", "IEBP001"), ("clinconsensus", "IEFS002"), ("clinconsensus", "IETS008")]


def test_register_entry_follows_the_schema_the_linter_checks():
    from inspect_evals_lint import REGISTER_CONFIG

    entry = yaml.safe_load((ROOT / "eval.yaml").read_text(encoding="utf-8"))
    assert set(REGISTER_CONFIG.eval_yaml_required_fields) <= set(entry)
    names = {task["name"] for task in entry["tasks"]}
    assert {"clinconsensus", "climedbench"} <= names
