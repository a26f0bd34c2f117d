"""Judge calls leave when the provider's prompt cache can serve them, and lm-eval's judge step
holds a bounded number of cases.

The stand-in server (127.0.0.1) plays the judge API and keeps a provider's prompt cache: a call's
shared prefix (everything before the rubric item) is billed cached only when a call carrying it has
completed before this one arrived; it counts such calls (``prefix_repeats_after_return``) among the
calls whose prefix was sent before (``prefix_repeats``).
"""

from __future__ import annotations

import asyncio
import json

import pytest
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import grade_answer
from frameworks import run_inspect, run_lmeval

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.stand_in import candidate_answer
from clinconsensus_tasks.judge.client import (
    JudgeSettings,
    cases_in_flight,
    judge_documents,
)

RUBRICS = [("C1", "标准一"), ("C2", "标准二"), ("C3", "标准三")]
CASES, CRITERIA = 12, 30  # the bundled sample


def test_the_first_criterion_returns_before_the_others_are_sent():
    """A recording judge: C1 goes out alone; C2 and C3 leave together once C1 has returned."""
    events = []

    async def judge(messages, fresh):
        criterion = messages[-1]["content"].rsplit("\n", 1)[-1]
        events.append(("sent", criterion))
        await asyncio.sleep(0.01)
        events.append(("returned", criterion))
        return json.dumps({"explanation": "理由", "criteria_met": True})

    out = asyncio.run(grade_answer("问题", "回答", RUBRICS, judge))
    assert [j.met for j in out] == [True, True, True]
    assert events[:4] == [("sent", "标准一"), ("returned", "标准一"), ("sent", "标准二"), ("sent", "标准三")]


def test_calls_2_to_30_reach_the_judge_after_the_first_returned_in_both_frameworks(fake_server, tmp_path):
    """With a 50 ms judge, every repeat of a case's prefix arrives after the case's first call has
    completed, in Inspect and in lm-eval, so the provider bills every repeat at the cached rate.
    (Before: all 30 calls left at once and most repeats arrived first.)"""
    fake_server.set_latency(0.05)
    for run in (lambda: run_inspect(tmp_path / "logs", judge_mode="per_criterion"),
                lambda: run_lmeval(fake_server.base_url, mode="per_criterion")):
        fake_server.reset()
        run()
        stats = fake_server.stats()
        assert stats["judge_calls"] == CASES * CRITERIA
        assert stats["prefix_repeats"] == stats["prefix_repeats_after_return"] == CASES * (CRITERIA - 1)
        usage = stats["judge_usage"]
        assert 0 < usage["cached_prompt_tokens"] < usage["prompt_tokens"]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_lmeval_judge_grades_a_bounded_number_of_cases_at_a_time(fake_server, concurrency):
    """A scripted judge logs which case each request belongs to; at no point are more cases open
    (first call seen, not every call answered) than ``cases_in_flight`` allows. Before the bound,
    every case's first call was queued up front: all 12 cases were open at once."""
    cases = load_cases("sample").cases
    docs = [case.to_record() for case in cases]
    answers = [candidate_answer(doc["question"]) for doc in docs]
    open_cases: dict[str, int] = {}
    most_open = []

    def judge(request):
        case = next(doc["case_id"] for doc in docs if doc["question"] in request.user)
        open_cases[case] = open_cases.get(case, 0) + 1
        most_open.append(sum(1 for seen in open_cases.values() if seen < CRITERIA))
        return json.dumps({"explanation": "理由", "criteria_met": False})

    fake_server.script("scripted-judge", judge)
    settings = JudgeSettings(base_url=fake_server.base_url, model="scripted-judge", concurrency=concurrency, use_cache=False)
    records, stats = asyncio.run(judge_documents(answers, docs, settings, "per_criterion"))
    assert [r.case_id for r in records] == [doc["case_id"] for doc in docs]  # every case, in order
    assert stats["calls"] == CASES * CRITERIA
    assert max(most_open) == cases_in_flight(concurrency) == 2 * concurrency
