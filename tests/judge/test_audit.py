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
from clinconsensus_tasks.scorers.clinconsensus.cacs import case_terms
from frameworks import run_inspect

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.fake_openai_server import candidate_answer, oracle_verdict


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
