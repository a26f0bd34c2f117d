"""lm-eval's own review of contributed tasks, run over this package's task folders as lm-eval runs it.

lm-eval's ``new_tasks`` workflow lists the changed YAML files of ``lm_eval/tasks/`` and runs
``pytest -x -s -vv tests/test_tasks.py``; the test loads every listed task with ``TaskManager``
(lm-eval's own index, where the wheel puts these tasks) and checks download, splits,
``doc_to_text``/target/choices and ``build_all_requests(limit=10)``. Here the listed files are the
installed copies of ``task_configs/`` in an environment that holds only ``pip install
clinconsensus-tasks`` (conftest ``core_env``): no judge set, no similarity model, no extra, the hub
switched off (``CLINCONSENSUS_DATA=sample``: the 900 public cases are otherwise read from the hub,
which lm-eval's CI reaches and this machine does not). CliMedBench gets no data folder, as lm-eval's
CI would have none (its data is not public): its tasks build on the bundled sample, and only a run
refuses (``climedbench.lmeval_task.CliMedBenchTask``).

Two deviations, both lm-eval's limits rather than choices: the task files and the group files go
in two runs (lm-eval refuses to load a group in the same call as its own leaf tasks: "Duplicate
task"), the groups as the top-level ones, whose loading builds their subgroups; and lm-eval's
regression test of its built-in FDA/SWDE/SQuAD tasks in the same file is deselected (it downloads
those tasks' datasets from the hub).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from wheel_build import ROOT

pytestmark = pytest.mark.framework_checks

HERE = Path(__file__).parent
HUB_ONLY = "tests/test_tasks.py::test_strip_whitespace_in_target_and_metric"
BASE_TESTS = 13  # the checks lm-eval's BaseTasks makes of every task


def installed_task_folder(venv: Path) -> Path:
    (folder,) = venv.glob("lib/python*/site-packages/lm_eval/tasks/clinconsensus_tasks")
    return folder


def task_and_group_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """Task files, and the top-level group files (groups no other group names)."""
    tasks, groups, members = [], {}, set()
    for path in sorted(folder.rglob("*.yaml")):
        text = yaml.safe_load(re.sub(r"!function \S+", "null", path.read_text(encoding="utf-8")))
        if isinstance(text.get("task"), list):
            groups[text["group"]] = path
            members.update(t for t in text["task"] if isinstance(t, str))
        else:
            tasks.append(path)
    return tasks, [p for name, p in groups.items() if name not in members]


def run_new_task_test(venv: Path, sdist: Path, workdir: Path, changed: list[Path]) -> str:
    """lm-eval's test in a folder laid out as its checkout's CI sees it; returns its output."""
    (workdir / "tests").mkdir(parents=True)
    shutil.copy(sdist / "tests" / "test_tasks.py", workdir / "tests" / "test_tasks.py")
    (workdir / "tests" / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(HERE / "lmeval_changed_tasks.py", workdir / "tests" / "utils.py")
    outputs = workdir / ".github" / "outputs"
    outputs.mkdir(parents=True)
    (outputs / "tasks_all_changed_and_modified_files.txt").write_text("\n".join(map(str, changed)) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLINCONSENSUS_", "CLIMEDBENCH_", "JUDGE_", "PYTHONPATH"))}
    env.update(CLINCONSENSUS_DATA="sample", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TQDM_DISABLE="1")
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-x", "-s", "-vv", "-p", "no:cacheprovider",
                           "tests/test_tasks.py", "--deselect", HUB_ONLY],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    return done.stdout


def passed_per_task(output: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in re.findall(r"::TestNewTasksElseDefault::test_\w+\[([\w-]+)\] PASSED", output):
        counts[task] = counts.get(task, 0) + 1
    return counts


def test_lmeval_new_task_test_passes_on_every_task_and_group(core_env, lmeval_sdist, tmp_path):
    tasks, top_groups = task_and_group_files(installed_task_folder(core_env))
    names = {yaml.safe_load(re.sub(r"!function \S+", "null", p.read_text(encoding="utf-8")))["task"] for p in tasks}
    assert len(names) == len(tasks) == 63 and {"clinconsensus", "clinconsensus_dual", "climedbench_id2_nota"} <= names

    output = run_new_task_test(core_env, lmeval_sdist, tmp_path / "tasks", tasks)
    assert passed_per_task(output) == {name: BASE_TESTS for name in names}, output[-3000:]

    assert sorted(p.stem for p in top_groups) == ["_climedbench", "_climedbench_cot", "_climedbench_ll", "_climedbench_nota", "_climedbench_perturbed"]
    output = run_new_task_test(core_env, lmeval_sdist, tmp_path / "groups", top_groups)
    climedbench_tasks = {n for n in names if n.startswith("climedbench_")}
    assert passed_per_task(output) == {name: BASE_TESTS for name in climedbench_tasks}, output[-3000:]


def test_generate_configs_pass_ruff_under_lmevals_own_configuration(core_env, lmeval_sdist):
    ruff = str(core_env / "bin" / "ruff")
    config = str(lmeval_sdist / "pyproject.toml")
    files = [str(p) for p in sorted((ROOT / "task_configs").glob("*/_generate_configs.py"))]
    assert len(files) == 2
    for check in (["check"], ["format", "--check"]):
        done = subprocess.run([ruff, *check, "--config", config, *files], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
