"""CliMedBench end to end on Inspect's own mock model (``mockllm/model``), as the Inspect Evals
Register asks of every evaluation: task, prompt, answer parsing and scorer wired together, offline.

``mockllm/model`` stands in for the model under test and answers every question with the letter
A, so ID1's accuracy is the share of the bundled ID1 items whose gold answer is A, counted from the
data file itself. Every output carries its token usage, so mockllm never downloads a tokenizer.
"""

from __future__ import annotations

import json
from importlib import resources

from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from clinconsensus_tasks.climedbench import climedbench_id1


def test_climedbench_id1_end_to_end_on_mockllm(tmp_path, monkeypatch):
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    asked: list[str] = []

    def always_a(messages, tools, tool_choice, config) -> ModelOutput:
        asked.append(messages[-1].text)
        output = ModelOutput.from_content(model="mockllm", content="答案：A")
        output.usage = ModelUsage(input_tokens=10, output_tokens=3, total_tokens=13)
        return output

    items = [json.loads(line) for line in
             resources.files("clinconsensus_tasks.data.climedbench").joinpath("ID1.jsonl").read_text(encoding="utf-8").splitlines()]
    log = inspect_eval(climedbench_id1(data_dir="sample"), model=get_model("mockllm/model", custom_outputs=always_a),
                       log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success"
    assert len(asked) == len(items) == 10
    metrics = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    assert metrics["accuracy"] == sum(item["answer"] == "A" for item in items) / 10 == 0.3  # 3 of the 10 bundled ID1 items have gold A
    assert metrics["parse_failure"] == 0.0


def test_climedbench_metric_through_the_epoch_reducer(tmp_path, monkeypatch):
    # Two epochs: each question is answered A the first time it is asked and B the second, so the
    # epoch reducer (mean) leaves each item (gold == A) / 2 + (gold == B) / 2 and the metric their mean.
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    seen: dict[str, int] = {}

    def a_then_b(messages, tools, tool_choice, config) -> ModelOutput:
        question = messages[-1].text
        seen[question] = seen.get(question, 0) + 1
        output = ModelOutput.from_content(model="mockllm", content="答案：" + "AB"[seen[question] - 1])
        output.usage = ModelUsage(input_tokens=10, output_tokens=3, total_tokens=13)
        return output

    items = [json.loads(line) for line in
             resources.files("clinconsensus_tasks.data.climedbench").joinpath("ID1.jsonl").read_text(encoding="utf-8").splitlines()]
    log = inspect_eval(climedbench_id1(data_dir="sample"), model=get_model("mockllm/model", custom_outputs=a_then_b), epochs=2,
                       log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success" and sorted(seen.values()) == [2] * 10
    metrics = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    golds = [item["answer"] for item in items]
    assert metrics["accuracy"] == (golds.count("A") + golds.count("B")) / 20 == 0.25  # gold: 3 A, 2 B of the 10 items
