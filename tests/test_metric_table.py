"""The metric tables are the one place a metric, the headline list and the task version are written.

Stands in for a newcomer who adds a metric: if any module other than the table lists the headline
metrics itself, or a version is written twice, the next change would have to find every copy.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

from clinconsensus_tasks.clinconsensus.lmeval_task import metric_list
from clinconsensus_tasks.scorers.climedbench import metric_table as climedbench_table
from clinconsensus_tasks.scorers.clinconsensus import metric_table

ROOT = Path(__file__).resolve().parents[1]
TABLES = {ROOT / "scorers" / "clinconsensus" / "metric_table.py", ROOT / "scorers" / "climedbench" / "metric_table.py"}
HEADLINE_KINDS = {"cacs@": "cacs", "pass@": "pass", "rubric_accuracy": "rubric_accuracy"}


def _kinds(node: ast.AST) -> set[str]:
    """Which headline metrics a literal names: string constants and the fixed parts of f-strings."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found |= {kind for prefix, kind in HEADLINE_KINDS.items() if sub.value.startswith(prefix)}
    return found


def headline_lists(source: str) -> list[int]:
    """Lines where a tuple, list or set literal, a generator feeding one, or a sum of lists names
    two or more kinds of headline metric: a spelled-out headline list."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.ListComp, ast.GeneratorExp, ast.BinOp)) and len(_kinds(node)) >= 2:
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_scan_finds_the_shapes_the_headline_list_used_to_take():
    # The four spellings this project had before the table (html_report, inspect_task, lmeval_task, cli).
    assert headline_lists('HEADLINE = ("rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10")') == [1]
    assert headline_lists('HEADLINE_ORDER = ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy")') == [1]
    assert headline_lists('H = (*(f"cacs@{k}" for k in K), *(f"pass@{k}" for k in K), "rubric_accuracy")') == [1]
    assert headline_lists('names = ["rubric_accuracy"] + [f"pass@{k}" for k in ks] + [f"cacs@{k}" for k in ks]') == [1]
    assert headline_lists('x = ("rubric_accuracy", "judge_failures")') == []


def test_no_module_but_the_table_spells_the_headline_list():
    offenders = {}
    for path in sorted([*ROOT.joinpath("clinconsensus_tasks").rglob("*.py"), *ROOT.joinpath("scorers").rglob("*.py"),
                        *ROOT.joinpath("task_configs").rglob("*.py"), *ROOT.joinpath("bench").rglob("*.py")]):
        if path in TABLES:
            continue
        lines = headline_lists(path.read_text(encoding="utf-8"))
        if lines:
            offenders[str(path.relative_to(ROOT))] = lines
    assert offenders == {}, "read the headline list from scorers/clinconsensus/metric_table.py (headline_names, mean_names)"


def test_the_headline_in_its_order():
    assert metric_table.headline_names() == ["cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy"]
    assert metric_table.headline_names((5, 7, 10)) == ["cacs@10", "cacs@7", "cacs@5", "pass@10", "pass@7", "pass@5", "rubric_accuracy"]
    # lm-eval's results table starts with the headline, as Inspect's does.
    assert [m.name for m in metric_list()][:5] == metric_table.headline_names()


def test_one_version_per_benchmark_in_code_yaml_and_changelog():
    clin = [yaml.safe_load(re.sub(r"!function \S+", "x", p.read_text(encoding="utf-8")))["metadata"]["version"]
            for p in sorted((ROOT / "task_configs" / "clinconsensus").glob("*.yaml"))]
    assert clin == [float(metric_table.TASK_VERSION)] * 2
    med = {yaml.safe_load(re.sub(r"!function \S+", "x", p.read_text(encoding="utf-8"))).get("metadata", {}).get("version")
           for p in (ROOT / "task_configs" / "climedbench").glob("_climedbench*.yaml")}
    assert med == {float(climedbench_table.TASK_VERSION)}
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    latest = changelog.split("\n## ", 2)[1]  # the newest section
    assert f"ClinConsensus {metric_table.TASK_VERSION}" in latest and f"CliMedBench {climedbench_table.TASK_VERSION}" in latest


def test_display_and_format_follow_the_table():
    assert metric_table.format_value("cacs@10", 0.123456) == "0.1235"
    assert metric_table.format_value("local/cacs@7(subject=心血管内科)", 0.5) == "0.5000"
    assert metric_table.format_value("empty_answers", 2.0) == "2"
    assert metric_table.format_value("judge_completion_tokens", 1234.0) == "1234"
    assert metric_table.format_value("score", float("nan")) == "–"
