"""``clinconsensus-eval audit``: the API judge grades a stratified sample of a local judge's run.

The stand-in server plays both judges: ``judge-alt`` (the local judge, which graded the run)
disagrees with ``judge-model`` (the API judge) on a fixed fifth of the criteria, so each judge's
verdicts, and therefore the expected sample, kappa and estimates, follow from the server's rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clinconsensus_tasks.scorers.agreement import Confusion, cohen_kappa
from clinconsensus_tasks.scorers.audit_estimate import (
    difference_estimate,
    stratified_sample,
)
from clinconsensus_tasks.scorers.clinconsensus.metric_table import case_terms
from frameworks import run_inspect, run_lmeval

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import candidate_answer, oracle_verdict


def test_audit_grades_only_the_sample_and_estimates_the_api_judge(fake_server, tmp_path, capsys):
    log, _ = run_inspect(tmp_path / "logs", judge="judge-alt", judge_mode="per_criterion")
    cases = load_cases("sample").cases
    strata = {c.case_id: (c.subject, c.difficulty) for c in cases}
    chosen = stratified_sample(strata, 0.5, seed=3)
    verdicts = {c.case_id: [(oracle_verdict(candidate_answer(c.question), t, "judge-model"),
                             oracle_verdict(candidate_answer(c.question), t, "judge-alt")) for _, t in c.rubrics] for c in cases}
    fake_server.reset()

    assert cli_main(["audit", str(Path(log.location)), "--share", "0.5", "--seed", "3", "--judge-model", "judge-model"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert fake_server.stats()["calls"] == {"judge-model": 30 * len(chosen)}  # the sample only
    assert (report["cases"], report["audited_cases"], report["local_judge"]) == (12, len(chosen), "openai-api/judge/judge-alt")
    pooled = sum((Confusion.of(verdicts[c]) for c in chosen), Confusion())
    assert report["kappa"]["estimate"] == pytest.approx(cohen_kappa(pooled))
    assert report["kappa"]["low"] < report["kappa"]["estimate"] < report["kappa"]["high"]
    local = {cid: case_terms(sum(b for _, b in v), 30)["cacs@7"] for cid, v in verdicts.items()}
    api = {cid: case_terms(sum(a for a, _ in verdicts[cid]), 30)["cacs@7"] for cid in chosen}
    expected = difference_estimate(local, api, strata)
    assert report["metrics"]["cacs@7"]["api_judge_estimate"] == pytest.approx(expected.to_dict())
    assert report["metrics"]["cacs@7"]["local_judge"] == pytest.approx(sum(local.values()) / 12)


@pytest.mark.parametrize("cheap_framework", ["inspect", "lmeval"])
def test_audit_reads_the_official_judges_run_on_the_sample(fake_server, tmp_path, capsys, cheap_framework):
    """The cheap run (``judge-alt``, standing in for a smaller API judge; an Inspect log or an
    lm-eval samples file) grades every case; the official judge (``judge-model``) grades only the
    printed sample, in its own Inspect run (``inspect eval ... --sample-id IDS``); ``audit
    --official`` reads its verdicts and calls no judge."""
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    if cheap_framework == "inspect":
        cheap_path = str(Path(run_inspect(tmp_path / "cheap", judge="judge-alt", judge_mode="per_criterion")[0].location))
    else:
        run_lmeval(fake_server.base_url, tmp_path / "cheap", judge="judge-alt", mode="per_criterion")
        cheap_path = str(next((tmp_path / "cheap").rglob("samples_clinconsensus*.jsonl")))
    assert cli_main(["audit", cheap_path, "--share", "0.5", "--seed", "3", "--sample-ids"]) == 0
    ids = capsys.readouterr().out.strip().split(",")
    cases = load_cases("sample").cases
    strata = {c.case_id: (c.subject, c.difficulty) for c in cases}
    assert ids == stratified_sample(strata, 0.5, seed=3)
    fake_server.reset()
    official = inspect_eval(clinconsensus(data="sample", judge_mode="per_criterion"), model="openai-api/cand/cand-model",
                            model_roles={"grader": "openai-api/judge/judge-model"}, log_dir=str(tmp_path / "official"),
                            display="none", sample_id=ids)[0]
    # the sample set's strata hold 1-2 cases, so at least 2 per stratum is every case here
    assert official.status == "success" and sorted(s.id for s in official.samples) == ids
    fake_server.reset()

    assert cli_main(["audit", cheap_path, "--share", "0.5", "--seed", "3",
                     "--official", str(Path(official.location))]) == 0
    report = json.loads(capsys.readouterr().out)

    assert fake_server.stats()["calls"].get("judge-model", 0) == 0  # verdicts read, not asked again
    verdicts = {c.case_id: [(oracle_verdict(candidate_answer(c.question), t, "judge-model"),
                             oracle_verdict(candidate_answer(c.question), t, "judge-alt")) for _, t in c.rubrics] for c in cases}
    assert (report["audited_cases"], report["api_judge"]) == (len(ids), "openai-api/judge/judge-model")
    pooled = sum((Confusion.of(verdicts[c]) for c in ids), Confusion())
    assert report["kappa"]["estimate"] == pytest.approx(cohen_kappa(pooled))
    local = {cid: case_terms(sum(b for _, b in v), 30)["cacs@7"] for cid, v in verdicts.items()}
    api = {cid: case_terms(sum(a for a, _ in verdicts[cid]), 30)["cacs@7"] for cid in ids}
    assert report["metrics"]["cacs@7"]["api_judge_estimate"] == pytest.approx(difference_estimate(local, api, strata).to_dict())


def test_audit_refuses_an_official_run_that_graded_other_answers(fake_server, tmp_path, capsys):
    """An official run whose model wrote other answers (``degraded-model`` stands in for a
    non-deterministic regeneration) cannot audit the cheap run: the verdicts would not be paired."""
    cheap, _ = run_inspect(tmp_path / "cheap", judge="judge-alt", judge_mode="per_criterion")
    official, _ = run_inspect(tmp_path / "official", candidate="degraded-model", judge_mode="per_criterion")
    assert cli_main(["audit", str(Path(cheap.location)), "--official", str(Path(official.location))]) == 2
    err = capsys.readouterr().err
    assert "the official run's answer differs from the cheap run's" in err and "SYN-0001" in err
