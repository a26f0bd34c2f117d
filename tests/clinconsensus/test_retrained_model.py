"""A model retrained and served again under the same name gets its own answers, in both frameworks.

What every fine-tuning team does: serve checkpoint 1 as ``my-model``, run the benchmark, retrain,
serve checkpoint 2 as ``my-model`` again, run the same command again. The second run must ask
the model again and score checkpoint 2's answers. The scripted ``my-model`` of the stand-in
server (a real OpenAI-compatible HTTP server on 127.0.0.1) stands in for that vLLM server: its
answers depend on which checkpoint is "served"; the judge is the stand-in's ``judge-model``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clinconsensus_tasks.stand_in import candidate_answer

pytestmark = pytest.mark.slow

LIMIT = 3


class Checkpoints:
    """The model under test: its answers are those of the checkpoint being served."""

    def __init__(self) -> None:
        self.serving = 1

    def __call__(self, request) -> str:
        answer = candidate_answer(request.user)
        # Checkpoint 2 gives a shorter answer: other text, so other verdicts from the judge.
        return answer if self.serving == 1 else f"[checkpoint {self.serving}] " + answer[: len(answer) // 3]


def inspect_answers(log_dir: Path, **task_args) -> tuple[list[str], float]:
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    log = inspect_eval(clinconsensus(data="sample", **task_args), model="openai-api/cand/my-model",
                       model_roles={"grader": "openai-api/judge/judge-model"}, limit=LIMIT, log_dir=str(log_dir),
                       display="none")[0]
    assert log.status == "success", log.error
    rubric = next(m.value for s in log.results.scores for k, m in s.metrics.items() if k == "rubric_accuracy")
    return [s.output.completion for s in sorted(log.samples, key=lambda s: str(s.id))], rubric


def test_inspect_asks_a_retrained_model_again_under_the_same_name(fake_server, tmp_path):
    model = Checkpoints()
    fake_server.script("my-model", model)
    first, first_accuracy = inspect_answers(tmp_path / "logs")
    assert fake_server.stats()["calls"]["my-model"] == LIMIT
    model.serving = 2  # retrained, served again under the same name
    second, second_accuracy = inspect_answers(tmp_path / "logs")
    assert fake_server.stats()["calls"]["my-model"] == 2 * LIMIT  # every answer asked again
    assert all(a.startswith("[checkpoint 2] ") for a in second) and not any(a.startswith("[checkpoint") for a in first)
    assert second_accuracy != first_accuracy


def test_inspect_serves_cached_answers_only_when_asked_to(fake_server, tmp_path):
    # -T answer_cache=true: the user's own choice, for a model that does not change; the answers
    # then come from Inspect's response cache, keyed by the model's name, so a retrained model
    # served under that name is not asked (which is why it is off by default).
    model = Checkpoints()
    fake_server.script("my-model", model)
    first, _ = inspect_answers(tmp_path / "logs", answer_cache=True)
    model.serving = 2
    second, _ = inspect_answers(tmp_path / "logs", answer_cache=True)
    assert fake_server.stats()["calls"]["my-model"] == LIMIT and second == first


def test_lmeval_asks_a_retrained_model_again_under_the_same_name(fake_server, tmp_path):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    model = Checkpoints()
    fake_server.script("my-model", model)
    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = "judge-model"

    def run() -> list[str]:
        results = simple_evaluate(model="local-chat-completions", limit=LIMIT, log_samples=True, bootstrap_iters=0,
                                  model_args={"model": "my-model", "base_url": f"{fake_server.base_url}/chat/completions"},
                                  apply_chat_template=True)
        return [s["resps"][0][0] for s in sorted(results["samples"]["clinconsensus"], key=lambda s: s["doc"]["case_id"])]

    try:
        first = run()
        model.serving = 2
        second = run()
    finally:
        del os.environ["CLINCONSENSUS_JUDGE_MODEL"]
    assert fake_server.stats()["calls"]["my-model"] == 2 * LIMIT
    assert all(a.startswith("[checkpoint 2] ") for a in second) and first != second
