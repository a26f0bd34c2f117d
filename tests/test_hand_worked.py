"""The hand-worked expectations of ``hand_worked.py`` against the scoring core, in milliseconds.

The end-to-end tests compare each framework's output with the same numbers; these check the
inputs of the derivation (the stand-in's verdicts and replies) and the core's arithmetic, so a
wrong number shows in the fast tier before any framework runs.
"""

from __future__ import annotations

import pytest

from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import candidate_answer, climedbench_answer, oracle_verdict
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, build_prompt, score_answer, summarize
from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult
from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize as summarize_cases

from hand_worked import CLIMEDBENCH, CLINCONSENSUS, CLINCONSENSUS_MET, SSO_TAUS, TOLERANCE


def test_clinconsensus_sample_meets_the_hand_counted_criteria():
    cases = load_cases("sample").cases
    met = {c.case_id: sum(oracle_verdict(candidate_answer(c.question), text) for _, text in c.rubrics) for c in cases}
    assert met == CLINCONSENSUS_MET
    summary = summarize_cases([CaseResult(met[c.case_id], len(c.rubrics)) for c in cases])
    assert {k: summary[k] for k in CLINCONSENSUS} == pytest.approx(CLINCONSENSUS, abs=TOLERANCE, rel=0)


def test_climedbench_sso_and_id1_score_as_worked_by_hand():
    rows = []
    for code in ("SSO", "ID1"):
        scenario = SCENARIOS[code]
        for item in load_scenario(code, announce=False).items:
            rows.append((code, *score_answer(scenario, item, climedbench_answer(build_prompt(scenario, item)))))
    taus = {item["id"]: value for item, (code, value, _) in zip(load_scenario("SSO", announce=False).items, rows) if code == "SSO"}
    assert taus == pytest.approx(SSO_TAUS, abs=TOLERANCE, rel=0)
    summary = summarize(rows)
    assert {k: summary[k] for k in CLIMEDBENCH} == pytest.approx(CLIMEDBENCH, abs=TOLERANCE, rel=0)
