"""ClinConsensus end to end on Inspect's own mock model (``mockllm/model``), as the Inspect Evals
Register asks of every evaluation: the task, the solver and the scorer wired together, offline.

``mockllm/model`` stands in for both the model under test and the judge (the ``grader`` role).
The judge is a function of the prompt it gets: it calls a criterion met when the criterion's id
number is 1-15 and not met for 16-30, so each case has 15 of 30 criteria met, and the metrics
follow by hand: rubric accuracy 15/30, Pass@7 = Pass@10 = 1, CACS@7 = (15 - 7 + 1) / 24,
CACS@10 = (15 - 10 + 1) / 21. Every output carries its token usage, so mockllm never downloads
a tokenizer.
"""

from __future__ import annotations

import json

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from clinconsensus_tasks.clinconsensus import clinconsensus
from clinconsensus_tasks.clinconsensus.dataset import sample_path
from clinconsensus_tasks.clinconsensus.inspect_task import generate_with_judge_check

ANSWER = "考虑非ST段抬高型急性冠脉综合征，建议立即完善心电图和肌钙蛋白复查，并启动抗血小板治疗。"


def reply(text: str) -> ModelOutput:
    output = ModelOutput.from_content(model="mockllm", content=text)
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


def criteria_by_text() -> dict[str, int]:
    """Each criterion's text in the bundled sample -> the number of its id (``SYN-0001-R07`` -> 7)."""
    out: dict[str, int] = {}
    for line in sample_path().read_text(encoding="utf-8").splitlines():
        for rubric in json.loads(line)["rubrics"]:
            out[rubric["criterion"]] = int(rubric["criterion_id"].rsplit("-R", 1)[1])
    return out


class Judge:
    """The grader: one verdict per criterion asked; the judge check's test request gets a plain reply."""

    def __init__(self) -> None:
        self.criteria = criteria_by_text()
        self.verdicts = 0
        self.other = 0

    def __call__(self, messages, tools, tool_choice, config) -> ModelOutput:
        prompt = messages[-1].text
        asked = [text for text in self.criteria if text in prompt]
        if not asked:
            self.other += 1
            return reply("ok")
        self.verdicts += 1
        met = self.criteria[max(asked, key=len)] <= 15  # the longest text found is the criterion asked
        return reply(json.dumps({"explanation": "按评分标准逐项核对。", "criteria_met": met}, ensure_ascii=False))


def test_clinconsensus_end_to_end_on_mockllm(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    judge = Judge()
    answers: list[str] = []

    def model_under_test(messages, tools, tool_choice, config) -> ModelOutput:
        answers.append(messages[-1].text)
        return reply(ANSWER)

    log = inspect_eval(
        clinconsensus(data="sample", judge_prompt="project"),
        model=get_model("mockllm/model", custom_outputs=model_under_test),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=judge)},
        limit=2, log_dir=str(tmp_path / "logs"), display="none",
    )[0]
    assert log.status == "success"
    assert len(answers) == 2 and judge.verdicts == 60 and judge.other == 1  # one judge check, 30 verdicts per case
    metrics = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    assert metrics["rubric_accuracy"] == 0.5
    assert metrics["pass@7"] == metrics["pass@10"] == 1.0
    assert metrics["cacs@7"] == pytest.approx(9 / 24, abs=1e-12)
    assert metrics["cacs@10"] == pytest.approx(6 / 21, abs=1e-12)
    assert metrics["judge_failures"] == 0


def run_solver(tmp_path, grader) -> tuple[object, list[str]]:
    """generate_with_judge_check alone, on the sample's first two cases."""
    from inspect_ai import Task
    from inspect_ai.dataset import Sample

    answered: list[str] = []

    def model_under_test(messages, tools, tool_choice, config) -> ModelOutput:
        answered.append(messages[-1].text)
        return reply(ANSWER)

    task = Task(dataset=[Sample(input="问题一", id="a"), Sample(input="问题二", id="b")],
                solver=generate_with_judge_check(check=True))
    log = inspect_eval(task, model=get_model("mockllm/model", custom_outputs=model_under_test),
                       model_roles={"grader": grader} if grader is not None else None,
                       log_dir=str(tmp_path / "logs"), display="none")[0]
    return log, answered


def test_generate_with_judge_check_asks_the_judge_once_before_any_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    judge = Judge()
    log, answered = run_solver(tmp_path, get_model("mockllm/model", custom_outputs=judge))
    assert log.status == "success"
    assert judge.other == 1 and judge.verdicts == 0  # one test request for the whole run
    assert sorted(answered) == ["问题一", "问题二"]


def test_generate_with_judge_check_stops_before_any_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))

    def dead_judge(messages, tools, tool_choice, config) -> ModelOutput:
        raise RuntimeError("connection refused")

    log, answered = run_solver(tmp_path, get_model("mockllm/model", custom_outputs=dead_judge))
    assert answered == []  # the model under test was asked nothing
    assert log.status == "error" and "did not answer a test request" in log.error.message

    log, answered = run_solver(tmp_path / "unbound", None)  # no grader bound, no self-grading allowed
    assert answered == []
    assert log.status == "error" and "No judge bound" in log.error.message
