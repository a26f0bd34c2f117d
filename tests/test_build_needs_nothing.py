"""Building a task needs nothing a run needs; a run still stops before the first model request.

lm-eval builds tasks to list, validate and review them (``TaskManager.load``, ``lm_eval
validate``, its ``tests/test_tasks.py``, which also calls ``build_all_requests``): that must need
no judge, no similarity model and no network, and send nothing. A real run with a missing or
broken judge (or similarity model) must stop before the model under test is asked anything, in
both frameworks. The stand-in server on 127.0.0.1 plays the model under test and the judge; its
call counts show what was sent. A closed port stands in for an unreachable download of the
official judge prompt.
"""

from __future__ import annotations

import pytest

from clinconsensus_tasks.errors import ConfigurationError

from loopback_server import closed_port_url

TASKS = ["clinconsensus", "clinconsensus_dual", "climedbench_wtd", "climedbench_wtd_perturbed", "climedbench_bkt_perturbed"]


def nothing_usable(monkeypatch, tmp_path) -> None:
    """No judge set, an official prompt that cannot be fetched, a similarity model that is not there."""
    for name in ("CLINCONSENSUS_JUDGE_BASE_URL", "CLINCONSENSUS_JUDGE_MODEL", "CLINCONSENSUS_LOCAL_JUDGE_BASE_URL",
                 "CLINCONSENSUS_LOCAL_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "official")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT_URL", closed_port_url())
    monkeypatch.setenv("CLIMEDBENCH_SIMILARITY_MODEL", str(tmp_path / "no-model-here"))


def test_lmeval_builds_every_task_with_no_judge_and_sends_nothing(fake_server, monkeypatch, tmp_path):
    from clinconsensus_tasks.lmeval_glue import task_manager

    nothing_usable(monkeypatch, tmp_path)
    loaded = task_manager().load(TASKS)["tasks"]
    assert sorted(loaded) == sorted(TASKS)
    for task in loaded.values():
        task.build_all_requests(rank=0, limit=10, world_size=1)  # outside lm-eval's evaluate(): a build, not a run
        assert len(task.instances) == 10
    assert fake_server.stats()["calls"] == {}


@pytest.mark.slow
def test_lmeval_run_with_no_judge_stops_before_the_first_model_request(fake_server, monkeypatch, tmp_path):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    nothing_usable(monkeypatch, tmp_path)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "project")
    run = dict(model="local-chat-completions", apply_chat_template=True,
               model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"})
    with pytest.raises(ConfigurationError, match="The ClinConsensus judge is not configured: set CLINCONSENSUS_JUDGE_BASE_URL"):
        simple_evaluate(tasks=["climedbench_sso", "clinconsensus"], **run)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    with pytest.raises(ConfigurationError, match="CLINCONSENSUS_LOCAL_JUDGE_BASE_URL"):
        simple_evaluate(tasks=["clinconsensus_dual"], **run)
    assert fake_server.stats()["calls"] == {}  # the reference judge is checked after every setting is known
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "official")
    with pytest.raises(ConfigurationError, match="official ClinConsensus judge prompt could not be obtained"):
        simple_evaluate(tasks=["clinconsensus"], **run)
    assert fake_server.stats()["calls"] == {}


@pytest.mark.slow
def test_inspect_run_with_no_judge_stops_before_the_first_model_request(fake_server, monkeypatch, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus import clinconsensus

    nothing_usable(monkeypatch, tmp_path)
    log = inspect_eval(clinconsensus(data="sample", judge_prompt="project"), model="openai-api/cand/cand-model",
                       log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "error" and "No judge bound" in log.error.message
    assert fake_server.stats()["calls"] == {}
