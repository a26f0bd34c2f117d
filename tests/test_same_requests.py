"""Both frameworks ask the model under test the same way (``clinconsensus_tasks.generation``).

The stand-in server (``fake_server``) plays the model under test through ``script``, which hands
each request body to the test: what a real server would receive, as each framework's real client
code sends it. The generation fields (everything but ``model`` and ``messages``) must be equal,
field by field, between Inspect's ``openai-api`` provider and lm-eval's ``local-chat-completions``,
for ClinConsensus and for a CliMedBench scenario; and each framework's own override must reach the
request.
"""

from __future__ import annotations

import os

import pytest

from clinconsensus_tasks.stand_in import candidate_answer, climedbench_answer
from clinconsensus_tasks.generation import CLIMEDBENCH, CLINCONSENSUS

pytestmark = pytest.mark.slow

CANDIDATE = "capture-model"


def capture(fake_server, answer) -> list[dict]:
    """Script the candidate: answer as the stand-in's model does, keep each request body."""
    bodies: list[dict] = []

    def reply(req):
        bodies.append(req.body)
        return answer(req.user)

    fake_server.script(CANDIDATE, reply)
    return bodies


def generation_fields(bodies: list[dict]) -> list[dict]:
    """Every field but ``model`` and ``messages``. lm-eval always sends ``stop`` (an empty list when
    there is no stop sequence); Inspect sends none then (its ``hf/`` provider fails on an empty
    list): an empty ``stop`` is read as no ``stop``, as OpenAI-compatible servers read it."""
    return [{k: v for k, v in b.items() if k not in ("model", "messages") and not (k == "stop" and v == [])} for b in bodies]


def inspect_bodies(fake_server, tmp_path, task, answer, **eval_args) -> list[dict]:
    from inspect_ai import eval as inspect_eval

    bodies = capture(fake_server, answer)
    log = inspect_eval(task, model=f"openai-api/cand/{CANDIDATE}", model_roles={"grader": "openai-api/judge/judge-model"},
                       log_dir=str(tmp_path / "logs"), display="none", limit=2, **eval_args)[0]
    assert log.status == "success", log.error
    return generation_fields(bodies)


def lmeval_bodies(fake_server, task_name, answer, gen_kwargs=None, model_args=None) -> list[dict]:
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = "judge-model"
    bodies = capture(fake_server, answer)
    simple_evaluate(tasks=[task_name], model="local-chat-completions",
                    model_args={"model": CANDIDATE, "base_url": f"{fake_server.base_url}/chat/completions", **(model_args or {})},
                    apply_chat_template=True, limit=2, bootstrap_iters=0, gen_kwargs=gen_kwargs)
    return generation_fields(bodies)


def test_clinconsensus_candidate_requests_are_equal_in_both_frameworks(fake_server, tmp_path):
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    inspect_side = inspect_bodies(fake_server, tmp_path, clinconsensus(data="sample"), candidate_answer)
    lmeval_side = lmeval_bodies(fake_server, "clinconsensus", candidate_answer)
    declared = {"max_tokens": 8192, "temperature": 0.0, "seed": 1234}
    assert CLINCONSENSUS.max_tokens == 8192
    assert inspect_side == lmeval_side == [declared, declared]


def test_climedbench_candidate_requests_are_equal_and_overridable_in_both_frameworks(fake_server, tmp_path):
    from clinconsensus_tasks.climedbench.inspect_task import climedbench_bkt

    inspect_side = inspect_bodies(fake_server, tmp_path, climedbench_bkt(data_dir="sample"), climedbench_answer)
    lmeval_side = lmeval_bodies(fake_server, "climedbench_bkt", climedbench_answer)
    declared = {"max_tokens": 1024, "temperature": 0.0, "seed": 1234}
    assert CLIMEDBENCH.max_tokens == 1024
    assert inspect_side == lmeval_side == [declared, declared]

    # Each framework's own override reaches the request: Inspect's generate options (--temperature,
    # --max-tokens, --seed), lm-eval's --gen_kwargs and the API backend's seed model argument.
    inspect_side = inspect_bodies(fake_server, tmp_path, climedbench_bkt(data_dir="sample"), climedbench_answer, temperature=0.5, max_tokens=64, seed=7)
    lmeval_side = lmeval_bodies(fake_server, "climedbench_bkt", climedbench_answer,
                                gen_kwargs="temperature=0.5,do_sample=true,max_gen_toks=64", model_args={"seed": 7})
    overridden = {"max_tokens": 64, "temperature": 0.5, "seed": 7}
    assert inspect_side == lmeval_side == [overridden, overridden]
