"""The CliMedBench lm-eval YAMLs: exactly what the committed generator writes, packaged in the
wheel, and aggregated by lm-eval's own built-in ``mean`` (so lm-eval reports the stderr)."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path

import pytest

from clinconsensus_tasks.climedbench.logs import lmeval_metrics
from clinconsensus_tasks.scorers.climedbench.item_result import score_item
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, DIMENSIONS, SCENARIOS
from clinconsensus_tasks.task_configs.climedbench import _generate_configs as generator

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "task_configs" / "climedbench"


def test_committed_files_are_what_the_generator_writes():
    generated = generator.generate()
    for name, text in generated.items():
        assert (FOLDER / name).read_text(encoding="utf-8") == text, f"{name}: run _generate_configs.py"
    assert generator.stale_files(FOLDER) == []
    # 14 generative tasks, 10 log-likelihood tasks, 7 dimension groups and the two top groups;
    # the analysis variants: 14 perturbed, 9 NOTA (the choice scenarios but FTT), 14 CoT, one group each.
    choice = [s for s in SCENARIOS.values() if s.kind == CHOICE]
    nota = [s for s in choice if s.code != "FTT"]
    assert len(SCENARIOS) + len(choice) + len(DIMENSIONS) + 2 == 33
    assert len(generated) == 33 + 2 * len(SCENARIOS) + len(nota) + 3 == 73
    assert {f"{s.task_name}.yaml" for s in SCENARIOS.values()} | {f"{s.task_name}_ll.yaml" for s in choice} <= set(generated)
    assert {f"{s.task_name}_{v}.yaml" for s in SCENARIOS.values() for v in ("perturbed", "cot")} <= set(generated)
    assert {name for name in generated if name.endswith("_nota.yaml") and not name.startswith("_")} == {f"{s.task_name}_nota.yaml" for s in nota}
    assert {"_climedbench_perturbed.yaml", "_climedbench_nota.yaml", "_climedbench_cot.yaml"} <= set(generated)


def test_check_mode_reports_a_stale_or_extra_file(tmp_path):
    for name, text in generator.generate().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    command = [sys.executable, "-m", "clinconsensus_tasks.task_configs.climedbench._generate_configs", "--check", "--folder", str(tmp_path)]
    assert subprocess.run(command, cwd=ROOT, capture_output=True, text=True).returncode == 0
    (tmp_path / "climedbench_sso.yaml").write_text("task: climedbench_sso\n", encoding="utf-8")
    (tmp_path / "climedbench_old.yaml").write_text("task: climedbench_old\n", encoding="utf-8")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1
    assert "out of date: climedbench_sso.yaml" in done.stderr and "climedbench_old.yaml (not generated)" in done.stderr


def test_task_metrics_are_what_process_results_returns():
    for scenario in SCENARIOS.values():
        _, config = generator.task_config(generator.VARIANTS[0], scenario)
        names = [m["metric"] for m in config["metric_list"]]
        item = {"id": "x", "options": dict.fromkeys("ABCD", "o"), "answer": "ABCD" if scenario.kind == "order" else "A"}
        if scenario.kind == "keywords":
            item = {"id": "x", "answer": ["k"]}
        result = score_item(scenario.code, item, "", cosine=0.0)
        deciles = [f"length_decile_{d}" for d in range(1, 11)]
        assert names == list(lmeval_metrics(result)) + deciles, scenario.code
        for decile in range(1, 11):  # each document reports its own decile, one of those listed
            reported = list(lmeval_metrics(score_item(scenario.code, item, "", cosine=0.0, length_decile=decile)))
            assert reported == list(lmeval_metrics(result)) + [f"length_decile_{decile}"], scenario.code
        assert {m["aggregation"] for m in config["metric_list"]} == {"clinconsensus_tasks.climedbench.lmeval_task.case_mean"}


@pytest.mark.slow
def test_lm_eval_aggregates_every_metric_with_the_order_free_mean_and_reports_its_stderr(monkeypatch, similarity_model_dir):
    # Loading the WTD task checks its similarity model before any generation: give it one that loads.
    monkeypatch.setenv("CLIMEDBENCH_SIMILARITY_MODEL", str(similarity_model_dir))
    from lm_eval import evaluator_utils
    from lm_eval.api.metrics import mean, mean_stderr, nanmean

    from clinconsensus_tasks.lmeval_glue import case_mean, task_manager
    from clinconsensus_tasks.scorers.means import stderr_of_mean

    tasks = task_manager().load([s.task_name for s in SCENARIOS.values()])["tasks"]
    for scenario in SCENARIOS.values():
        aggregations = tasks[scenario.task_name].aggregation()
        assert set(aggregations) == {scenario.metric, "score", "parse_failure", *(f"length_decile_{d}" for d in range(1, 11))}
        assert all(fn is case_mean for fn in aggregations.values()), scenario.code
    # The lookup lm-eval's aggregation step calls (evaluator_utils) gives case_mean the closed form
    # of a mean's standard error, and answers every other function as lm-eval does.
    lookup = evaluator_utils.stderr_for_metric
    assert lookup(case_mean, bootstrap_iters=1) is stderr_of_mean and lookup(case_mean, bootstrap_iters=0) is None
    assert lookup(mean, bootstrap_iters=1) is mean_stderr and lookup(max, bootstrap_iters=1) is None
    assert lookup(nanmean, bootstrap_iters=5) is not None and lookup.__wrapped__.__module__ == "lm_eval.api.metrics"


def test_the_wheel_packages_every_yaml():
    """Every file of the folder matches a package-data pattern of both installed copies."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+")
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    for package in ("clinconsensus_tasks.task_configs.climedbench", "lm_eval.tasks.clinconsensus_tasks.climedbench"):
        patterns = package_data[package]
        for path in FOLDER.iterdir():
            if path.suffix != ".py" and path.name != "__pycache__":
                assert any(fnmatch.fnmatch(path.name, p) for p in patterns), (package, path.name)


def test_every_task_and_group_reports_the_one_task_version():
    # Issue 26, item 7: the leaf tasks took their version from the hand-written templates (1.1)
    # while their groups, Inspect and the CHANGELOG said 1.2. Read as lm-eval reads them, includes
    # resolved, every file's version is TASK_VERSION.
    from lm_eval.tasks._yaml_loader import load_yaml  # the loader TaskManager reads task files with (0.4.13)

    from clinconsensus_tasks.scorers.climedbench.metric_table import TASK_VERSION

    versions = {path.name: load_yaml(path, resolve_func=False).get("metadata", {}).get("version")
                for path in sorted(FOLDER.glob("*.yaml"))}
    assert len(versions) == 73 and set(versions.values()) == {float(TASK_VERSION)}, versions
