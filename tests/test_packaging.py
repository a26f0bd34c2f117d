"""How users reach the tasks: Inspect's entry point, lm-eval's task discovery, the light registry.

The discovery test for a plain ``pip install`` needs the package installed from a wheel: the
wheel puts a copy of the YAMLs inside lm-eval's own ``lm_eval/tasks/`` folder, the only place
lm-eval 0.4.13 scans. Installed from a wheel (as ``.ci/run`` does), the test uses the environment
as it is. In an editable checkout it builds the wheel of the checkout and installs it, next to a
copy of lm-eval, into a folder put first on ``PYTHONPATH`` (:func:`wheel_site`): the same layout
a wheel install makes, so the test runs in both and cannot pass by being skipped.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import pytest

from clinconsensus_tasks.lmeval_glue import task_configs_dir

from frameworks import HEADLINE, expected_metrics
from wheel_build import build_wheel

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]


def installed_editable() -> bool:
    direct_url = metadata.distribution("clinconsensus-tasks").read_text("direct_url.json")
    return bool(direct_url and json.loads(direct_url).get("dir_info", {}).get("editable"))


@pytest.mark.slow
def test_inspect_registry_is_light(tmp_path):
    code = (
        "import sys, time, inspect_ai, inspect_ai.model, inspect_ai.scorer, inspect_ai.solver, inspect_ai.dataset\n"
        "t = time.perf_counter(); import clinconsensus_tasks._registry; dt = time.perf_counter() - t\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'jieba', 'lm_eval', 'datasets') if m in sys.modules]\n"
        "print(dt, heavy)"
    )
    # Run outside the checkout, so the installed package is what gets imported.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path).stdout.split(" ", 1)
    assert float(out[0]) < 0.5, f"registry import took {out[0]} s"
    assert out[1].strip() == "[]"


def test_entry_points_are_declared():
    inspect_eps = {ep.name: ep.value for ep in metadata.entry_points(group="inspect_ai")}
    assert inspect_eps["clinconsensus_tasks"] == "clinconsensus_tasks._registry"
    # lm-eval pull request #4015 resolves the value with find_spec and scans that folder for YAMLs.
    (ep,) = [ep for ep in metadata.entry_points(group="lm_eval.tasks") if ep.name == "clinconsensus_tasks"]
    folder = Path(find_spec(ep.value).submodule_search_locations[0])
    assert (folder / "clinconsensus" / "clinconsensus.yaml").is_file()
    assert folder == task_configs_dir()


def test_scorers_live_inside_the_package_only():
    assert find_spec("clinconsensus_tasks.scorers") is not None
    assert find_spec("scorers") is None and find_spec("task_configs") is None


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory) -> Path | None:
    """None when the package is installed from a wheel; in an editable install, a folder holding
    the checkout's wheel installed next to a copy of lm-eval (what a wheel install lays out)."""
    if not installed_editable():
        return None
    root = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(root)
    site = root / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]
    # lm-eval scans the tasks folder beside its own code: its package must sit in the same folder.
    import lm_eval

    shutil.copytree(Path(lm_eval.__file__).parent, site / "lm_eval", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    # With the folder first on PYTHONPATH, both packages come from it, not from the checkout.
    where = subprocess.run([sys.executable, "-c", "import lm_eval.tasks, clinconsensus_tasks; print(lm_eval.tasks.__file__); "
                            "print(clinconsensus_tasks.__file__)"], env={**os.environ, "PYTHONPATH": str(site)},
                           capture_output=True, text=True, check=True, cwd=root)
    assert all(Path(line).is_relative_to(site) for line in where.stdout.split()), where.stdout
    return site


def _run_lm_eval(server, tmp_path, extra_args, site: Path | None = None):
    env = {
        **os.environ,
        **({"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])} if site else {}),
        "CLINCONSENSUS_DATA": "sample",
        "CLINCONSENSUS_JUDGE_BASE_URL": server.base_url,
        "CLINCONSENSUS_JUDGE_MODEL": "judge-model",
        "CLINCONSENSUS_JUDGE_PROMPT": "project",  # the stand-in server knows the project's prompt
        "CLINCONSENSUS_CACHE_DIR": str(tmp_path / "cache"),
    }
    cmd = [
        str(BIN / "lm_eval"), "--model", "local-chat-completions",
        "--model_args", f"model=cand-model,base_url={server.base_url}/chat/completions,num_concurrent=4",
        "--tasks", "clinconsensus,climedbench_sso", "--apply_chat_template", "--log_samples", "--output_path", str(tmp_path / "out"),
        *extra_args,
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (results_file,) = (tmp_path / "out").rglob("results_*.json")
    (samples_file,) = (tmp_path / "out").rglob("samples_clinconsensus_*.jsonl")
    all_results = json.loads(results_file.read_text(encoding="utf-8"))["results"]
    # CliMedBench is found the same way; its SSO score equals the shared core's on the same answers.
    from clinconsensus_tasks.climedbench.dataset import load_scenario
    from clinconsensus_tasks.stand_in import climedbench_answer
    from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, build_prompt, score_answer, summarize

    sso = SCENARIOS["SSO"]
    rows = [("SSO", *score_answer(sso, it, climedbench_answer(build_prompt(sso, it)))) for it in load_scenario("SSO", announce=False).items]
    # lm-eval aggregates with the core's mean (case_mean, an exactly rounded sum): equal to the last
    # bit, in any order (-0.16 on the sample; a plain sum in file order gives -0.15999999999999998).
    tau = all_results["climedbench_sso"]["kendall_tau,answer"]
    assert tau == math.fsum(value for _, value, _ in rows) / len(rows) == summarize(rows)["SSO/kendall_tau"] == -0.16
    results = all_results["clinconsensus"]
    return {k.split(",")[0]: v for k, v in results.items() if k.endswith(",judge") and "_stderr" not in k}, samples_file


@pytest.mark.slow
def test_lm_eval_cli_finds_the_task_after_a_wheel_install(fake_server, tmp_path, wheel_site):
    metrics, samples_file = _run_lm_eval(fake_server, tmp_path, [], wheel_site)
    assert {k: metrics[k] for k in HEADLINE} == expected_metrics()
    # The sample file written by the real CLI feeds clinconsensus-eval.
    done = subprocess.run([str(BIN / "clinconsensus-eval"), "summarize", "--json", str(samples_file)], capture_output=True, text=True, check=True, cwd=tmp_path)
    report = json.loads(done.stdout)[str(samples_file)]
    assert report["overall"]["cacs@10"] == metrics["cacs@10"]
    assert report["breakdowns"]["audience"]["lay"]["cacs@10"] == metrics["cacs@10(audience=lay)"]


@pytest.mark.slow
def test_lm_eval_cli_with_include_path(fake_server, tmp_path):
    include = subprocess.run([str(BIN / "clinconsensus-eval"), "include-path"], capture_output=True, text=True, check=True, cwd=tmp_path)
    metrics, _ = _run_lm_eval(fake_server, tmp_path, ["--include_path", include.stdout.strip()])
    assert {k: metrics[k] for k in HEADLINE} == expected_metrics()


@pytest.fixture(scope="module")
def target_site(tmp_path_factory) -> Path:
    """The checkout's wheel installed with ``pip install --no-deps --target DIR``: a package Inspect
    finds on ``PYTHONPATH``, not under a ``site-packages`` folder, which it does not take for installed."""
    root = tmp_path_factory.mktemp("target")
    wheel = next(iter(sorted((ROOT / "dist").glob("clinconsensus_tasks-*.whl"))), None) if not installed_editable() else None
    wheel = wheel or build_wheel(root)
    site = root / "lib"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert "site-packages" not in str(site)
    return site


@pytest.mark.slow
def test_inspect_finds_the_task_by_its_package_name_on_pythonpath(fake_server, tmp_path, target_site):
    # inspect eval clinconsensus_tasks/clinconsensus said "No inspect tasks were found" for a package
    # on PYTHONPATH: its tasks were registered under their bare names (docs/backends.md).
    env = {**os.environ, "PYTHONPATH": str(target_site), "CLINCONSENSUS_JUDGE_PROMPT": "project"}
    done = subprocess.run([sys.executable, "-c", "import clinconsensus_tasks; print(clinconsensus_tasks.__file__)"], env=env,
                          capture_output=True, text=True, check=True, cwd=tmp_path)
    assert Path(done.stdout.strip()).is_relative_to(target_site)  # the package comes from the --target folder
    done = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", "clinconsensus_tasks/clinconsensus", "--model",
                           "openai-api/cand/cand-model", "--model-role", "grader=openai-api/judge/judge-model", "-T", "data=sample",
                           "--limit", "1", "--log-dir", str(tmp_path / "logs"), "--display", "none"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0 and "No inspect tasks were found" not in done.stderr, done.stderr[-3000:]
    from inspect_ai.log import read_eval_log

    (log,) = (tmp_path / "logs").glob("*.eval")
    header = read_eval_log(str(log), header_only=True)
    assert header.status == "success" and header.eval.task == "clinconsensus_tasks/clinconsensus"
