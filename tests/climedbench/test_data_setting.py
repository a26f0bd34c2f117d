"""CliMedBench's data is asked for by name: a folder, or ``sample`` for the bundled synthetic items.

Its data is not public, so a run with no data setting used to score the 141 synthetic items and
print a score that looked like the benchmark's. Now, as ClinConsensus asks for its sample
(``data=sample``), CliMedBench asks for its own (Inspect ``-T data_dir=sample``, lm-eval
``CLIMEDBENCH_DATA_DIR=sample``), and with no setting a run refuses before any model request, in
one line saying where the data comes from, how to lay it out and how to run the sample on
purpose. Building an lm-eval task (to list, validate or review it) still needs no data. The
stand-in server on 127.0.0.1 plays the model under test; its call counts show what was sent.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clinconsensus_tasks.climedbench.dataset import NO_DATA, chosen_data_dir, load_scenario
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.inspect_compat import PrerequisiteError
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, build_prompt, score_answer, summarize
from clinconsensus_tasks.stand_in import climedbench_answer

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# What a user reads (the message, word for word): where the data comes from, how to lay it out,
# how to give it in each framework, and how to run the synthetic sample on purpose.
MESSAGE = (
    "CliMedBench: no data folder given, and its data is not public: the CliMedBench authors give it on request "
    "(arXiv 2410.03502). Lay it out as one JSONL file per scenario (ID1.jsonl ... CS.jsonl; the Data section of "
    "clinconsensus_tasks/climedbench/README.md) and give the folder: Inspect `-T data_dir=DIR`, lm-eval "
    "`CLIMEDBENCH_DATA_DIR=DIR`. To run the bundled synthetic sample on purpose (its scores say nothing about a model): "
    "`-T data_dir=sample` / `CLIMEDBENCH_DATA_DIR=sample`."
)


def expected_sso() -> float:
    """SSO's score on the sample for the stand-in's answers, by the shared core."""
    sso = SCENARIOS["SSO"]
    return summarize([("SSO", *score_answer(sso, item, climedbench_answer(build_prompt(sso, item))))
                      for item in load_scenario("SSO", "sample", announce=False).items])["SSO/kendall_tau"]


def test_no_data_setting_is_one_line_that_names_every_way_on():
    assert NO_DATA == MESSAGE and "\n" not in NO_DATA
    for unset in (None, "", "   "):
        with pytest.raises(ConfigurationError) as error:
            chosen_data_dir(unset)
        assert str(error.value) == MESSAGE
    assert chosen_data_dir(" sample ") == "sample" and chosen_data_dir("/data/climedbench") == "/data/climedbench"
    # The README shows the same line, and the section it points to is there.
    readme = (ROOT / "clinconsensus_tasks" / "climedbench" / "README.md").read_text(encoding="utf-8")
    assert f"\n{MESSAGE}\n" in readme and "\n### Data\n" in readme


def test_inspect_task_without_data_refuses_with_the_line_inspect_prints_alone(fake_server):
    from clinconsensus_tasks.climedbench.inspect_task import climedbench, climedbench_sso, climedbench_wtd

    for build in (lambda: climedbench(), lambda: climedbench_sso(), lambda: climedbench(scenarios="SSO", data_dir=" "),
                  lambda: climedbench_wtd(similarity_model="/no/such/model")):  # the data first: no model is loaded
        with pytest.raises(ConfigurationError) as error:
            build()
        assert isinstance(error.value, PrerequisiteError) and error.value.message == MESSAGE == str(error.value)
    assert fake_server.stats()["calls"] == {}


def test_inspect_task_with_the_sample_asked_for_builds_and_says_so(capsys):
    from clinconsensus_tasks.climedbench.inspect_task import climedbench, climedbench_sso

    task = climedbench_sso(data_dir="sample")
    assert len(task.dataset) == 10 and task.metadata["synthetic_sample"] is True
    assert capsys.readouterr().err.splitlines() == [
        "[climedbench] data_dir=sample: the synthetic sample bundled with clinconsensus-tasks (not CliMedBench data), "
        "10 items in 1 scenario(s); its scores say nothing about a model"]
    assert len(climedbench(data_dir="sample", scenarios="SSO,CPR,KE,ID2").dataset) == 41


def test_lmeval_builds_without_data_and_sends_nothing(fake_server, monkeypatch, capsys):
    from clinconsensus_tasks.lmeval_glue import task_manager

    monkeypatch.delenv("CLIMEDBENCH_DATA_DIR")
    monkeypatch.setenv("CLIMEDBENCH_SIMILARITY_MODEL", "/no/such/model")  # a build needs neither
    names = ["climedbench_sso", "climedbench_bkt_ll", "climedbench_wtd", "climedbench_id2_nota"]
    loaded = task_manager().load(names)["tasks"]
    for task in loaded.values():
        task.build_all_requests(rank=0, limit=10, world_size=1)  # outside lm-eval's evaluate(): a build, not a run
        assert len(task.instances) >= 10
    assert fake_server.stats()["calls"] == {}
    err = capsys.readouterr().err
    assert "a run refuses (CLIMEDBENCH_DATA_DIR=DIR, or =sample on purpose)" in err and NO_DATA not in err


@pytest.mark.slow
def test_lmeval_run_without_data_refuses_before_the_first_request_and_runs_the_sample_when_asked(fake_server, monkeypatch):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    monkeypatch.delenv("CLIMEDBENCH_DATA_DIR")
    run = dict(model="local-chat-completions", apply_chat_template=True, bootstrap_iters=0,
               model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"})
    for tasks in (["climedbench_sso"], ["climedbench_bkt_ll"]):
        with pytest.raises(ConfigurationError) as error:
            simple_evaluate(tasks=tasks, **run)
        assert str(error.value) == MESSAGE
    assert fake_server.stats()["calls"] == {}
    # Asked for by name, through --metadata (lm-eval's convention) or the environment: the sample runs.
    by_metadata = simple_evaluate(tasks=["climedbench_sso"], metadata={"data_dir": "sample"}, **run)
    monkeypatch.setenv("CLIMEDBENCH_DATA_DIR", "sample")
    by_environment = simple_evaluate(tasks=["climedbench_sso"], **run)
    for results in (by_metadata, by_environment):
        assert results["results"]["climedbench_sso"]["kendall_tau,answer"] == pytest.approx(expected_sso(), abs=1e-12)
    assert fake_server.stats()["calls"]["cand-model"] == 20


def _inspect_cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLIMEDBENCH_")}
    env["COLUMNS"] = "1000"  # Inspect prints through rich, which wraps at the terminal's width
    return subprocess.run([str(BIN / "inspect"), "eval", *args, "--model", "openai-api/cand/cand-model",
                           "--log-dir", str(tmp_path / "logs")], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.slow
def test_inspect_cli_without_data_prints_one_line_and_with_the_sample_runs_it(fake_server, tmp_path):
    # What a user types. No data: the one line alone (no traceback), exit 1, no log, nothing asked.
    done = _inspect_cli(["clinconsensus_tasks/climedbench"], tmp_path)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 1 and lines == [MESSAGE], lines
    assert not (tmp_path / "logs").exists() and fake_server.stats()["calls"] == {}
    # The sample, asked for by name: it runs, says so in one line, and the log records it.
    done = _inspect_cli(["clinconsensus_tasks/climedbench_sso", "-T", "data_dir=sample"], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if line.startswith("[climedbench]")] == [
        "[climedbench] data_dir=sample: the synthetic sample bundled with clinconsensus-tasks (not CliMedBench data), "
        "10 items in 1 scenario(s); its scores say nothing about a model"]
    from inspect_ai.log import read_eval_log

    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.metadata["synthetic_sample"] is True
    assert log.results.scores[0].metrics["kendall_tau"].value == pytest.approx(expected_sso(), abs=1e-12)
    assert fake_server.stats()["calls"]["cand-model"] == 10


@pytest.mark.slow
def test_lmeval_cli_without_data_ends_on_the_one_line(fake_server, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLIMEDBENCH_")}
    done = subprocess.run([str(BIN / "lm_eval"), "--model", "local-chat-completions",
                           "--model_args", f"model=cand-model,base_url={fake_server.base_url}/chat/completions",
                           "--include_path", str(ROOT / "task_configs"), "--tasks", "climedbench_sso", "--apply_chat_template"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode != 0
    last = [line for line in done.stderr.splitlines() if line.strip()][-1]
    assert last == f"clinconsensus_tasks.errors.ConfigurationError: {MESSAGE}", done.stderr[-3000:]
    assert fake_server.stats()["calls"] == {}


def test_eval_yaml_counts_what_ships():
    """The register entry's sample counts: CliMedBench's data is not public, so what ships, and
    what ``-T data_dir=sample`` runs, is the synthetic sample."""
    entry = yaml.safe_load((ROOT / "eval.yaml").read_text(encoding="utf-8"))
    counts = {task["name"]: task["dataset_samples"] for task in entry["tasks"] if task["name"].startswith("climedbench")}
    shipped = {s.task_name: len(load_scenario(code, "sample", announce=False).items) for code, s in SCENARIOS.items()}
    assert counts == {"climedbench": sum(shipped.values()), **shipped} and counts["climedbench"] == 141
    assert re.search(r"synthetic\s+sample of 141 items", entry["description"])


def test_the_demo_asks_for_the_sample_by_name(monkeypatch, tmp_path):
    from clinconsensus_tasks.commands.demo import climedbench_task_args, demo_environment, plan_demo

    monkeypatch.delenv("CLIMEDBENCH_SIMILARITY_MODEL", raising=False)
    plan = plan_demo(None, None)
    assert climedbench_task_args(plan) == {"data_dir": "sample", "scenarios": ",".join(plan.scenarios), "similarity_model": None}
    assert demo_environment("http://127.0.0.1:1/v1", tmp_path, plan)["CLIMEDBENCH_DATA_DIR"] == "sample"  # lm-eval
