"""compare, agreement, rescore and export-sft on logs the frameworks write, over real HTTP."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import alt_disagrees, candidate_answer, oracle_verdict
from clinconsensus_tasks.judge.client import JudgeSettings
from clinconsensus_tasks.commands.compare import compare_logs
from clinconsensus_tasks.commands.export_sft import export_sft
from clinconsensus_tasks.commands.rescore import rescore
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.scorers.clinconsensus.cacs import mean
from clinconsensus_tasks.scorers.clinconsensus.metric_table import cacs_term
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import per_criterion_messages

from frameworks import expected_metrics, run_inspect, run_lmeval

pytestmark = pytest.mark.slow


def settings(server, model):
    return JudgeSettings(base_url=server.base_url, model=model, api_key="k", cache_dir=None, use_cache=False)


@pytest.fixture
def inspect_log(fake_server, tmp_path):
    log, _ = run_inspect(tmp_path / "logs")
    return log.location


def test_rescore_inspect_log_in_batched_mode_and_with_another_judge(fake_server, tmp_path, inspect_log):
    fake_server.reset()
    batched = tmp_path / "batched.eval"
    metrics = rescore(inspect_log, batched, settings(fake_server, "judge-model"), "batched")
    assert fake_server.stats()["kinds"] == {"batched": 12}  # the answers are reused, not regenerated
    assert {k: metrics[k] for k in ("cacs@7", "cacs@10", "rubric_accuracy")} == {k: expected_metrics()[k] for k in ("cacs@7", "cacs@10", "rubric_accuracy")}
    # The new log is a real Inspect log with the new metrics in its results.
    from inspect_ai.log import read_eval_log

    new = read_eval_log(str(batched))
    assert new.results.scores[0].metrics["cacs@10"].value == metrics["cacs@10"]
    assert new.eval.metadata["rescored"]["judge_mode"] == "batched"
    # Judge-mode agreement: the test judge gives the same verdicts in both modes.
    report = compare_logs(inspect_log, str(batched))
    assert report["agreement/percent"] == 1.0 and report["agreement/kappa"] == 1.0

    alt = tmp_path / "alt.eval"
    rescore(inspect_log, alt, settings(fake_server, "judge-alt"))
    report = compare_logs(inspect_log, str(alt))
    flips = sum(alt_disagrees(candidate_answer(c.question), t) for c in load_cases("sample").cases for _, t in c.rubrics)
    assert report["agreement/percent"] == (360 - flips) / 360


def test_rescore_lmeval_samples(fake_server, tmp_path):
    results, _ = run_lmeval(fake_server.base_url)
    samples = tmp_path / "samples_clinconsensus.jsonl"
    samples.write_text("".join(json.dumps({**s, "filtered_resps": [str(r) for r in s["filtered_resps"]]}, ensure_ascii=False, default=str) + "\n"
                               for s in results["samples"]["clinconsensus"]), encoding="utf-8")
    out = tmp_path / "rescored.jsonl"
    metrics = rescore(str(samples), out, settings(fake_server, "judge-alt"), "batched")
    records = [r.graded for r in read_case_records(out)]
    assert len(records) == 12 and {r.judge for r in records} == {"judge-alt"}
    # Rubric accuracy is the mean of the per-case shares, which is total met / total judged (30 each).
    assert mean([r.met / 30 for r in records]) == metrics["rubric_accuracy"]
    assert sum(r.met for r in records) / 360 == pytest.approx(metrics["rubric_accuracy"], rel=1e-15)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["cacs@10"] == cacs_term(records[0].met, 10)  # per-case values rewritten too


def test_the_retired_agreement_command_points_to_review(capsys):
    # It matched labels by case and criterion only: one model's labels applied to another's answers.
    from clinconsensus_tasks.cli import main as cli_main

    assert cli_main(["agreement", "--labels", "labels.jsonl", "run.eval"]) == 2
    err = capsys.readouterr().err
    assert "`agreement --labels` is retired" in err and "clinconsensus-eval review score DIR" in err and "by its sha256" in err


def test_export_sft_split_by_case_deduplicated_in_the_judge_prompt_format(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(
        clinconsensus(data="sample"), model="openai-api/cand/cand-model",
        model_roles={"grader": "openai-api/judge/judge-model", "local_grader": "openai-api/judge/judge-alt"},
        log_dir=str(tmp_path / "logs"), display="none",
    )[0].location
    manifest = export_sft([log, log], tmp_path / "sft", judge="reference", dev_share=0.25, seed=3)
    train = [json.loads(x) for x in (tmp_path / "sft" / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    dev = [json.loads(x) for x in (tmp_path / "sft" / "dev.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(train) + len(dev) == 360 and manifest["duplicates_dropped"] == 360  # the log given twice
    assert {r["case_id"] for r in train}.isdisjoint({r["case_id"] for r in dev}) and dev
    assert manifest["files"]["train"]["records"] == len(train) and manifest["judge_models"] == ["openai-api/judge/judge-model"]
    first = train[0]
    case = next(c for c in load_cases("sample").cases if c.case_id == first["case_id"])
    text = dict(case.rubrics)[first["criterion_id"]]
    assert first["messages"][:2] == per_criterion_messages(case.question, candidate_answer(case.question), text)
    verdict = json.loads(first["messages"][2]["content"])
    assert verdict["criteria_met"] == oracle_verdict(candidate_answer(case.question), text)
    # The local judge's verdicts export the same way.
    local = export_sft([log], tmp_path / "sft-local", judge="local")
    assert local["judge_models"] == ["openai-api/judge/judge-alt"]
    # A dual-judge log compares its own two judges.
    report = compare_logs(log)
    assert 0 < report["agreement/percent"] < 1
