"""One settings table (``clinconsensus_tasks.settings_table``): the docs are generated from it, the
Inspect tasks take exactly its ``-T`` arguments, no module names an environment variable it does
not hold, a flag is read one way, and lm-eval's ``--metadata`` comes before the environment."""

from __future__ import annotations

import inspect as pyinspect
import re
from pathlib import Path

import pytest

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = re.compile(r"\b(?:CLINCONSENSUS|CLIMEDBENCH)_[A-Z_]*[A-Z]\b")


def test_the_settings_reference_is_generated_from_the_table():
    assert (ROOT / "docs" / "settings.md").read_text(encoding="utf-8") == settings_table.reference_markdown(), (
        "docs/settings.md differs from the table: python -m clinconsensus_tasks.settings_table > docs/settings.md")


def test_the_inspect_tasks_take_exactly_the_tables_arguments():
    from clinconsensus_tasks.climedbench.inspect_task import climedbench
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    for task, benchmark in ((clinconsensus, "clinconsensus"), (climedbench, "climedbench")):
        parameters = set(pyinspect.signature(task).parameters)
        table = {s.inspect for s in settings_table.SETTINGS if s.benchmark == benchmark and s.inspect and not s.inspect.startswith("(")}
        assert parameters == table, f"{benchmark}: task only {parameters - table}, table only {table - parameters}"


def test_every_variable_the_package_names_is_in_the_table():
    known = {s.env_name(role) for s in settings_table.SETTINGS for role in settings_table.ROLE_ENV_PREFIX if s.env_name(role)}
    named = {}
    for path in [*(ROOT / "clinconsensus_tasks").rglob("*.py"), *(ROOT / "scorers").rglob("*.py")]:
        if "stand_in" in path.parts:
            continue
        for name in VARIABLE.findall(path.read_text(encoding="utf-8")):
            named.setdefault(name, path.relative_to(ROOT))
    unknown = {name: str(where) for name, where in named.items() if name not in known and name != "CLIMEDBENCH_ROLE"}
    assert not unknown, f"variables read or named outside the settings table: {unknown}"


def test_one_rule_for_flags():
    assert [settings_table.flag(v, "X") for v in ("1", "TRUE", "yes", "On", "0", "false", "No", "off")] == [True] * 4 + [False] * 4
    assert settings_table.flag(None, "X", default=True) is True and settings_table.flag("", "X", default=True) is True
    with pytest.raises(ConfigurationError, match=r"CLINCONSENSUS_JUDGE_CHECK='maybe': expected 1/0, true/false"):
        settings_table.read_flag("judge_check", {"CLINCONSENSUS_JUDGE_CHECK": "maybe"})
    assert settings_table.read_flag("judge_check", {}) is True and settings_table.read_flag("judge_sees_thinking", {}) is False


def test_metadata_comes_before_the_environment_and_judge_settings_are_per_role(monkeypatch):
    monkeypatch.setenv("CLINCONSENSUS_DATA", "hub")
    monkeypatch.setenv("CLINCONSENSUS_LOCAL_JUDGE_MODEL", "env-local")
    given = settings_table.given_settings({"data": "sample", "n_criteria": 30, "judge_model": ["a", "b"], "judge_check": False,
                                           "local_judge_concurrency": 4})
    env = settings_table.merged_env(given)
    assert settings_table.raw("data", env) == "sample" and settings_table.raw("judge_model", env) == "a,b"
    assert settings_table.read_flag("judge_check", env) is False
    assert settings_table.raw("judge_model", env, settings_table.LOCAL_GRADER) == "env-local"
    assert settings_table.raw("judge_concurrency", env, settings_table.LOCAL_GRADER) == "4"
    assert settings_table.raw("judge_concurrency", env) is None


def test_lmeval_load_dataset_reads_the_data_from_metadata_over_the_environment(monkeypatch, tmp_path):
    from clinconsensus_tasks.clinconsensus.lmeval_task import load_dataset

    monkeypatch.setenv("CLINCONSENSUS_DATA", str(tmp_path / "missing.jsonl"))
    rows = load_dataset(data="sample")["test"]
    assert len(rows) == 12 and rows[0]["n_criteria"] == 30
