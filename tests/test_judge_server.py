"""What a judge's server takes, known before a request is sent (``judge.server_info``,
``judge.input_limit``), in both frameworks.

``ServerFront`` (tests/judge_servers.py) stands in for the two servers a judge runs on: vLLM (its
``/v1/models`` shape with ``max_model_len``; refuses an over-long prompt with 400) and OpenAI's API
(refuses an unknown request field with 400). Behind it, the stand-in (``fake_server``) gives the
verdicts. Each test runs Inspect's ``openai-api`` provider and lm-eval's judge client on the same
two sample cases and checks the requests the front received and the counts both report.
"""

from __future__ import annotations

import json
import os

import pytest
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import (
    ENV_FAILURE_THRESHOLD,
)
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import (
    per_criterion_messages,
    verdict_schema,
)
from judge_servers import ServerFront, configure_stand_in

from clinconsensus_tasks.judge.input_limit import (
    OFFICIAL_MAX_INPUT_TOKENS,
    judge_input_limit,
    limit_from_refusal,
    request_tokens,
)
from clinconsensus_tasks.judge.server_info import (
    ServerInfo,
    read_models,
    with_thinking_off,
)

CASES = 2
RELEASED = "skylenage/ClinConsensus-Judge-8B"


def run_inspect(front, judge, tmp_path, **task_args):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    os.environ["FRONT_BASE_URL"], os.environ["FRONT_API_KEY"] = front.base_url, "test-key"
    log = inspect_eval(clinconsensus(data="sample", **task_args), model="openai-api/cand/cand-model",
                       model_roles={"grader": f"openai-api/front/{judge}"}, log_dir=str(tmp_path / "logs"),
                       display="none", limit=CASES)[0]
    assert log.status == "success", log.error
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    reasons = [j["error"] for s in log.samples for j in s.scores["rubric_scorer"].metadata["judgments"] if j["error"]]
    return metrics, reasons


def inspect_log(tmp_path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    return read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0])


def run_lmeval(front, judge):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ["CLINCONSENSUS_JUDGE_BASE_URL"], os.environ["CLINCONSENSUS_JUDGE_MODEL"] = front.base_url, judge
    out = simple_evaluate(model="local-chat-completions", apply_chat_template=True, limit=CASES, bootstrap_iters=0, log_samples=True,
                          model_args={"model": "cand-model", "base_url": f"{front.upstream}/chat/completions"})
    metrics = {k.split(",")[0]: v for k, v in out["results"]["clinconsensus"].items() if k.endswith(",judge")}
    records = [json.loads(s["filtered_resps"][0]) for s in out["samples"]["clinconsensus"]]
    reasons = [j["error"] for r in records for j in r["judgments"] if j["error"]]
    return metrics, reasons, out


@pytest.fixture
def long_answers(fake_server):
    """Candidate answers padded to 3,000 characters (about 3,000 estimated tokens)."""
    configure_stand_in(fake_server, {"answer_chars": 3000})
    yield
    configure_stand_in(fake_server, {"answer_chars": 0})


def test_server_kind_and_thinking_switch_from_models_listing():
    vllm = read_models({"data": [{"id": "j", "owned_by": "vllm", "max_model_len": 8192}]}, "j")
    assert vllm == ServerInfo("vllm", 8192)
    assert read_models({"data": [{"id": "gpt-4.1", "owned_by": "system"}]}, "gpt-4.1") == ServerInfo("openai", None)
    assert with_thinking_off(vllm, {"top_k": 1}) == {"top_k": 1, "chat_template_kwargs": {"enable_thinking": False}}
    assert with_thinking_off(vllm, {"chat_template_kwargs": {"enable_thinking": True}}) == {"chat_template_kwargs": {"enable_thinking": True}}
    assert with_thinking_off(ServerInfo("openai"), {}) == {}


def test_structured_output_in_the_form_each_server_takes():
    from clinconsensus_tasks.judge.protocol import response_format

    llamacpp = read_models({"data": [{"id": "smollm2", "object": "model", "owned_by": "me", "permissions": []}]}, "smollm2")
    assert llamacpp == ServerInfo("llamacpp", None, 1)  # llama-cpp-python: one request at a time
    assert read_models({"data": [{"id": "m", "owned_by": "llamacpp"}]}, "m").kind == "llamacpp"
    assert read_models({"data": [{"id": "m", "owned_by": "me"}]}, "m").kind == "openai"  # "me" alone names nobody
    assert response_format("llamacpp", "per_criterion") == {"type": "json_object", "schema": verdict_schema("per_criterion")}
    for kind in ("openai", "vllm", "sglang"):
        assert response_format(kind, "per_criterion")["type"] == "json_schema"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["llamacpp", "openai"])
def test_structured_output_reaches_each_server_in_its_form_from_both_frameworks(fake_server, tmp_path, monkeypatch, kind):
    # The judge asks for the verdict's schema; a llama.cpp server refuses OpenAI's json_schema form.
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_STRUCTURED_OUTPUT", "1")
    with ServerFront(fake_server.base_url, kind) as front:
        inspect_metrics, inspect_reasons = run_inspect(front, "judge-model", tmp_path, judge_structured_output=True)
        inspect_bodies = front.judge_bodies()
        front.bodies.clear()
        lmeval_metrics, lmeval_reasons, _ = run_lmeval(front, "judge-model")
        lmeval_bodies = front.judge_bodies()
    forms = {json.dumps(b["response_format"], sort_keys=True) for b in inspect_bodies + lmeval_bodies}
    want = {"type": "json_object", "schema": verdict_schema("per_criterion")} if kind == "llamacpp" else None
    assert len(forms) == 1 and len(inspect_bodies) == len(lmeval_bodies) == 30 * CASES
    if want is not None:
        assert json.loads(forms.pop()) == want
    else:
        assert json.loads(forms.pop())["type"] == "json_schema"
    assert front.refused == [] and inspect_reasons == lmeval_reasons == []
    assert inspect_metrics["cacs@10"] == lmeval_metrics["cacs@10"]


def test_input_limit_rule():
    assert judge_input_limit(RELEASED, None, 512).max_tokens == OFFICIAL_MAX_INPUT_TOKENS == 5120
    assert judge_input_limit(f"hf/{RELEASED}", ServerInfo("vllm", 4096), 512).max_tokens == 4096 - 512
    assert judge_input_limit(RELEASED, ServerInfo("vllm", 32768), 512).max_tokens == 5120  # the smaller of the two
    assert judge_input_limit("judge-model", ServerInfo("vllm", 4096), 512).why == "the server's max_model_len 4096 minus 512 verdict tokens"
    assert judge_input_limit("gpt-4.1", ServerInfo("openai"), 512).max_tokens is None
    limit = judge_input_limit(RELEASED, None, 512)
    cut = limit.fit_answer("答" * 9000, "问题", [("c1", "标准")], "per_criterion", None)
    assert cut == "答" * len(cut)  # the tail is cut
    assert 5100 < request_tokens(per_criterion_messages("问题", cut, "标准")) <= 5120  # the whole request fits, just


# A context refusal of a 2,000-token prompt by a server with 2,048 tokens of context, in the words
# of each server that words it differently (as their sources and documentation give them).
REFUSALS = {
    "vllm, llama-cpp-python": "This model's maximum context length is 2048 tokens. However, you requested 2128 tokens "
                              "(2000 in the messages, 128 in the completion). Please reduce the length of the messages or completion.",
    "vllm (newer)": "This model's maximum context length is 2048 tokens. However, your request has 2000 input tokens. "
                    "Please reduce the length of the input messages.",
    "openai": "Error code: 400 - {'error': {'message': \"This model's maximum context length is 2048 tokens. However, your messages "
              "resulted in 2000 tokens. Please reduce the length of the messages.\", 'type': 'invalid_request_error', "
              "'code': 'context_length_exceeded'}}",
    "sglang": "The input (2000 tokens) is longer than the model's context length (2048 tokens).",
    "llama.cpp server": "Error code: 400 - {'error': {'code': 400, 'message': 'the request exceeds the available context size, "
                        "try increasing it', 'type': 'exceed_context_size_error', 'n_prompt_tokens': 2000, 'n_ctx': 2048}}",
    "tgi": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 2000 `inputs` tokens and "
           "128 `max_new_tokens`",
    "anthropic": "prompt is too long: 2000 tokens > 2048 maximum",
    "llama-cpp-python (raw)": "Requested tokens (2000) exceed context window of 2048",
}


@pytest.mark.parametrize("server", sorted(REFUSALS))
def test_a_refusal_for_context_gives_the_limit_in_the_servers_own_tokens(server):
    # 663 estimated tokens (631 Chinese characters and 32 for the template) that the server counted
    # as 2,000: the 1,920 tokens left beside a 128-token verdict are 1920 * 663 / 2000 * 0.95 = 604.66
    # of the estimate.
    messages = [{"role": "user", "content": "答" * 631}]
    assert request_tokens(messages) == 663
    limit = limit_from_refusal(REFUSALS[server], messages, 128)
    assert limit is not None and limit.max_tokens == 604, server
    assert limit.why == ("the server's context of 2048 tokens, from its refusal, minus 128 verdict tokens, "
                         "at 663 estimated for the server's 2000 prompt tokens, less 5%")


def test_a_refusal_without_its_count_or_for_another_reason():
    messages = [{"role": "user", "content": "答" * 631}]
    counted_nothing = limit_from_refusal("This model's maximum context length is 2048 tokens.", messages, 512)
    assert counted_nothing is not None and counted_nothing.max_tokens == 2048 - 512
    for other in ("Unrecognized request argument supplied: chat_template_kwargs", "response_format type 'json_schema' is not supported",
                  "max_tokens is too large: 10000. This model supports at most 4096 completion tokens", "'max_tokens' must be <= 4096"):
        assert limit_from_refusal(other, messages, 512) is None, other


@pytest.mark.slow
def test_a_judge_whose_server_lists_no_context_has_long_answers_judged_cut_after_its_first_refusal(fake_server, tmp_path, long_answers):
    # Stands in for llama-cpp-python's server (tests/real_server/ meets the real one): it lists no
    # context, has 4,000 tokens and counts two tokens for each of the estimate's. The answers (3,000
    # characters) do not fit; the first refusal gives the limit, (4000 - 512) * 1/2 * 0.95 = 1656.8,
    # and every case is judged with its answer cut to it, with the cut on its record.
    with ServerFront(fake_server.base_url, "llamacpp", max_model_len=4000, tokens_per_estimate=2) as front:
        inspect_metrics, inspect_reasons = run_inspect(front, "judge-model", tmp_path)
        log = inspect_log(tmp_path)
        inspect_cuts = [s.scores["rubric_scorer"].metadata["judge_input_cut"] for s in log.samples]
        inspect_bodies, inspect_refused = front.judge_bodies(), len(front.refused)
        front.bodies.clear()
        front.refused.clear()
        lmeval_metrics, lmeval_reasons, out = run_lmeval(front, "judge-model")
        lmeval_cuts = [json.loads(s["filtered_resps"][0])["judge_input_cut"] for s in out["samples"]["clinconsensus"]]
        lmeval_bodies, lmeval_refused = front.judge_bodies(), len(front.refused)
    assert inspect_reasons == lmeval_reasons == []
    assert 1 <= inspect_refused <= CASES and 1 <= lmeval_refused <= CASES  # the first request of a case, at most
    judged = [b for b in inspect_bodies + lmeval_bodies if 2 * request_tokens(b["messages"]) + 512 <= 4000]
    assert len(judged) == 2 * 30 * CASES
    assert max(request_tokens(b["messages"]) for b in judged) <= 1656
    why = "the server's context of 4000 tokens, from its refusal, minus 512 verdict tokens"
    assert [c["limit_tokens"] for c in inspect_cuts] == [c["limit_tokens"] for c in lmeval_cuts] == [1656] * CASES
    assert all(c["why"].startswith(why) and c["answer_chars"] == 3000 > c["judged_chars"] for c in inspect_cuts + lmeval_cuts)
    # The same cut in both; the refused request named in `why` is whichever case's came back first.
    assert [{k: v for k, v in c.items() if k != "why"} for c in inspect_cuts] == [{k: v for k, v in c.items() if k != "why"} for c in lmeval_cuts]
    assert {k: inspect_metrics[k] for k in ("cacs@10", "rubric_accuracy", "judge_failures")} == \
        {k: lmeval_metrics[k] for k in ("cacs@10", "rubric_accuracy", "judge_failures")}


@pytest.mark.slow
def test_a_server_that_answers_one_request_at_a_time_gets_one_at_a_time_from_both_frameworks(fake_server, tmp_path, monkeypatch):
    # llama-cpp-python's server (as GET /v1/models shows it) works on one request at a time; more
    # only wait in its queue until the client's time-out and are sent again (tests/real_server/
    # saw 12 and 104 re-sent requests). Both frameworks keep one judge request in flight, with
    # their default 32 connections and without a setting, and still judge every criterion.
    with ServerFront(fake_server.base_url, "llamacpp") as front:
        front_latency(fake_server, 0.02)
        inspect_metrics, inspect_reasons = run_inspect(front, "judge-model", tmp_path)
        inspect_most, front.most_in_flight = front.most_in_flight, 0
        lmeval_metrics, lmeval_reasons, _ = run_lmeval(front, "judge-model")
        lmeval_most = front.most_in_flight
        front_latency(fake_server, 0.0)
    assert (inspect_most, lmeval_most) == (1, 1)
    assert len(front.judge_bodies()) == 2 * 30 * CASES and inspect_reasons == lmeval_reasons == []
    assert inspect_metrics["cacs@10"] == lmeval_metrics["cacs@10"]


def test_a_server_reports_its_slots():
    from clinconsensus_tasks.judge.server_info import in_flight, read_props

    assert read_props({"total_slots": 4, "n_ctx": 8192}) == 4 and read_props({}) is None
    assert in_flight(32, ServerInfo("llamacpp", None, 4), "j") == 4
    assert in_flight(2, ServerInfo("llamacpp", None, 4), "j") == 2 and in_flight(32, ServerInfo("vllm", 4096), "j") == 32


def front_latency(fake_server, seconds):
    configure_stand_in(fake_server, {"latency": seconds})


@pytest.mark.slow
@pytest.mark.parametrize("kind, judge", [("vllm", RELEASED), ("vllm", "ClinConsensus-Judge-8B"), ("openai", "judge-model"),
                                         ("openai", RELEASED)])
def test_thinking_off_exactly_where_the_server_takes_the_switch(fake_server, tmp_path, kind, judge):
    # The released judge's template thinks unless told; vLLM takes the switch, OpenAI's API answers
    # 400 to it. No setting is given: the kind comes from GET /v1/models. Every request carries
    # the same fields (judge.protocol.request_fields), the judge check's included: on vLLM each of
    # the 61 requests of a framework (1 check, 60 judgments) has the switch; a hosted API gets it
    # in none, whatever the judge is called.
    from clinconsensus_tasks.judge.protocol import PROBE_MAX_TOKENS

    with ServerFront(fake_server.base_url, kind) as front:
        inspect_metrics, inspect_reasons = run_inspect(front, judge, tmp_path)
        inspect_bodies = list(front.bodies)
        front.bodies.clear()
        lmeval_metrics, lmeval_reasons, _ = run_lmeval(front, judge)
        lmeval_bodies = list(front.bodies)
    sent = 30 * CASES + 1
    for bodies in (inspect_bodies, lmeval_bodies):
        assert len(bodies) == sent and [b["max_tokens"] for b in bodies].count(PROBE_MAX_TOKENS) == 1
        assert {b["model"] for b in bodies} == {judge}
    expected = [{"enable_thinking": False}] * sent if kind == "vllm" else [None] * sent
    assert [b.get("chat_template_kwargs") for b in inspect_bodies] == expected
    assert [b.get("chat_template_kwargs") for b in lmeval_bodies] == expected
    assert front.refused == [] and inspect_reasons == lmeval_reasons == []
    assert inspect_metrics["cacs@10"] == lmeval_metrics["cacs@10"] and inspect_metrics["judge_failures"] == lmeval_metrics["judge_failures"] == 0


@pytest.mark.parametrize("kind", ["vllm", "openai"])
def test_the_solvers_judge_check_carries_the_judgments_fields(fake_server, monkeypatch, kind):
    # Judges whose client is not the plain OpenAI SDK are checked by the solver (inspect_task._probe),
    # through Inspect's generate: its one request carries what a judgment to that judge carries.
    import asyncio

    from inspect_ai.model import get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import _probe
    from clinconsensus_tasks.judge.protocol import PROBE_MAX_TOKENS

    with ServerFront(fake_server.base_url, kind) as front:
        monkeypatch.setenv("FRONT_BASE_URL", front.base_url)
        monkeypatch.setenv("FRONT_API_KEY", "test-key")
        asyncio.run(_probe([get_model(f"openai-api/front/{RELEASED}", memoize=False)]))
    assert [(b["model"], b["max_tokens"]) for b in front.bodies] == [(RELEASED, PROBE_MAX_TOKENS)]
    assert front.bodies[0].get("chat_template_kwargs") == ({"enable_thinking": False} if kind == "vllm" else None)
    assert front.refused == []


@pytest.mark.slow
def test_a_request_over_a_served_judges_limit_is_counted_not_sent(fake_server, tmp_path, monkeypatch):
    # A vLLM judge with 600 tokens of context and a 512-token verdict budget: no judge prompt of a
    # case fits. Each judgment fails with the reason, and nothing is sent (no 400 paid for).
    monkeypatch.setenv(ENV_FAILURE_THRESHOLD, "0")
    with ServerFront(fake_server.base_url, "vllm", max_model_len=600) as front:
        inspect_metrics, inspect_reasons = run_inspect(front, "judge-model", tmp_path)
        lmeval_metrics, lmeval_reasons, _ = run_lmeval(front, "judge-model")
    assert front.judge_bodies() == [] and front.refused == []
    assert inspect_metrics["judge_failures"] == lmeval_metrics["judge_failures"] == 30 * CASES
    assert len(inspect_reasons) == len(lmeval_reasons) == 30 * CASES
    assert all("exceeds the judge's limit of 88 (the server's max_model_len 600 minus 512 verdict tokens); not sent" in r
               for r in inspect_reasons + lmeval_reasons)


@pytest.mark.slow
def test_released_judge_gets_long_answers_cut_to_its_limit(fake_server, tmp_path, long_answers):
    # The released judge served with 2,000 tokens of context: 1,488 input tokens. The answers
    # (3,000 characters) are cut so that every request fits; without the cut vLLM answers 400.
    with ServerFront(fake_server.base_url, "vllm", max_model_len=2000) as front:
        inspect_metrics, inspect_reasons = run_inspect(front, RELEASED, tmp_path)
        inspect_bodies = front.judge_bodies()
        front.bodies.clear()
        lmeval_metrics, lmeval_reasons, _ = run_lmeval(front, RELEASED)
        lmeval_bodies = front.judge_bodies()
    assert front.refused == [] and inspect_reasons == lmeval_reasons == []
    assert len(inspect_bodies) == len(lmeval_bodies) == 30 * CASES
    sizes = [request_tokens(b["messages"]) for b in inspect_bodies + lmeval_bodies]
    assert max(sizes) <= 2000 - 512 and min(sizes) > 1300  # cut to fit, not cut short
    assert sorted(json.dumps(b["messages"]) for b in inspect_bodies) == sorted(json.dumps(b["messages"]) for b in lmeval_bodies)
    assert {k: inspect_metrics[k] for k in ("cacs@10", "rubric_accuracy", "judge_failures")} == \
        {k: lmeval_metrics[k] for k in ("cacs@10", "rubric_accuracy", "judge_failures")}


@pytest.mark.slow
def test_dual_judge_recipe_as_pasted(fake_server, tmp_path, monkeypatch):
    # docs/backends.md's dual-judge recipe with no extra flag: the reference judge on a hosted API
    # (OpenAI-like: 400 to an unknown field), the local judge on vLLM. Only the local one is sent
    # the switch; no request is refused; both frameworks agree.
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    with ServerFront(fake_server.base_url, "openai") as hosted, ServerFront(fake_server.base_url, "vllm", 5632) as local:
        for svc, front in (("HOSTED", hosted), ("LOCAL", local)):
            monkeypatch.setenv(f"{svc}_BASE_URL", front.base_url)
            monkeypatch.setenv(f"{svc}_API_KEY", "test-key")
        log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model", limit=CASES, display="none",
                           model_roles={"grader": "openai-api/hosted/judge-model", "local_grader": "openai-api/local/judge-alt"},
                           log_dir=str(tmp_path / "logs"))[0]
        assert log.status == "success", log.error
        inspect_metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
        sent_inspect = (len(hosted.judge_bodies()), len(local.judge_bodies()))
        monkeypatch.setenv("CLINCONSENSUS_JUDGE_BASE_URL", hosted.base_url)
        monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
        monkeypatch.setenv("CLINCONSENSUS_LOCAL_JUDGE_BASE_URL", local.base_url)
        monkeypatch.setenv("CLINCONSENSUS_LOCAL_JUDGE_MODEL", "judge-alt")
        out = simple_evaluate(tasks=["clinconsensus_dual"], model="local-chat-completions", apply_chat_template=True, limit=CASES,
                              bootstrap_iters=0, model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"})
        lmeval_metrics = {k.split(",")[0]: v for k, v in out["results"]["clinconsensus_dual"].items() if k.endswith(",judge")}
    assert hosted.refused == local.refused == []
    assert sent_inspect == (30 * CASES, 30 * CASES)
    assert all("chat_template_kwargs" not in b for b in hosted.bodies)
    # Every request to the local judge has the switch, each framework's judge check included.
    assert [b.get("chat_template_kwargs") for b in local.bodies] == [{"enable_thinking": False}] * (2 * (30 * CASES + 1))
    for name in ("cacs@10", "local/cacs@10", "agreement/percent", "judge_failures", "local/judge_failures"):
        assert inspect_metrics[name] == lmeval_metrics[name], name
