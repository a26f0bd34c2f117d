"""An lm-eval results file names its judge (``clinconsensus.lmeval_judge``), and both frameworks
name a judge the same way (``provenance.judge_display``).

lm-eval runs against the stand-in (``fake_server``: candidate and judge) and writes its files with
its own ``EvaluationTracker``, as ``lm_eval --output_path DIR`` does; the results file is read back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinconsensus_tasks.settings_table import given_settings as metadata_settings
from clinconsensus_tasks.errors import ConfigurationError

pytestmark = pytest.mark.slow


def lmeval_results(base_url: str, out: Path, metadata: dict | None = None) -> tuple[dict, list[dict]]:
    from lm_eval.loggers import EvaluationTracker

    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    tracker = EvaluationTracker(output_path=str(out))
    results = simple_evaluate(model="local-chat-completions", apply_chat_template=True, limit=1, bootstrap_iters=0,
                              model_args={"model": "cand-model", "base_url": f"{base_url}/chat/completions"},
                              metadata=metadata, log_samples=True, evaluation_tracker=tracker)
    tracker.save_results_aggregated(results=results, samples=results["samples"])
    written = json.loads(next(out.rglob("results_*.json")).read_text(encoding="utf-8"))
    records = [json.loads(s["filtered_resps"][0]) for s in results["samples"]["clinconsensus"]]
    return written, records


def test_judge_settings_from_metadata_land_in_the_results_file(fake_server, tmp_path):
    # No CLINCONSENSUS_JUDGE_MODEL in the environment (the fixture unsets it): --metadata names the judge.
    written, records = lmeval_results(fake_server.base_url, tmp_path / "out", {"judge_model": "judge-model"})
    judge = written["configs"]["clinconsensus"]["metadata"]["judge"]
    host = fake_server.base_url.rsplit("/v1", 1)[0]
    assert {k: judge[k] for k in ("judge_model", "judge_endpoint", "judge", "judge_mode", "judge_prompt")} == {
        "judge_model": "judge-model", "judge_endpoint": host, "judge": f"judge-model @ {host}",
        "judge_mode": "per_criterion", "judge_prompt": "project"}
    assert len(judge["judge_prompt_sha256"]) == 64
    assert records[0]["provenance"] == judge  # the samples say the same
    assert "test-key" not in json.dumps(written)  # the key stays in the environment


def test_judge_from_the_environment_is_named_too_and_alike_in_inspect(fake_server, tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    written, records = lmeval_results(fake_server.base_url, tmp_path / "out")
    lmeval_judge = written["configs"]["clinconsensus"]["metadata"]["judge"]
    log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model", model_roles={"grader": "openai-api/judge/judge-model"},
                       log_dir=str(tmp_path / "logs"), display="none", limit=1)[0]
    inspect_judge = log.samples[0].scores["rubric_scorer"].metadata["provenance"]
    # One name for one judge: not `openai-api/judge/judge-model` beside `judge-model @ http://...`.
    assert inspect_judge == lmeval_judge == records[0]["provenance"]
    assert inspect_judge["judge"] == f"judge-model @ {fake_server.base_url.rsplit('/v1', 1)[0]}"


def test_metadata_refuses_what_would_leak_into_the_results_file():
    with pytest.raises(ConfigurationError, match="API key"):
        metadata_settings({"judge_api_key": "sk-1"})
    with pytest.raises(ConfigurationError, match="user-info"):
        metadata_settings({"judge_base_url": "https://me:sk-1@api.example.com/v1"})
    assert metadata_settings({"judge_model": "m", "judge_server": "vllm", "thresholds": [5]}) == {
        "CLINCONSENSUS_JUDGE_MODEL": "m", "CLINCONSENSUS_JUDGE_SERVER": "vllm"}
