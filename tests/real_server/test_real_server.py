"""Both frameworks against a server the project did not write: llama.cpp's OpenAI-compatible
server (``llama-cpp-python[server]``) serving SmolLM2-135M-Instruct (see ``conftest.py``).

What a real server and a real (tiny) model do with our requests is seen here, not assumed: its chat
template, its tokenizer, its sampling at temperature 0 with a seed, its error bodies. Run with
``bash .ci/realserver`` (installs the ``realserver`` extra, builds llama.cpp: minutes).
"""

from __future__ import annotations

import re

import pytest

from real_server.conftest import MODEL, point_at

pytestmark = pytest.mark.realserver

LIMIT = 4
MAX_TOKENS = 128  # the tiny model loops on some questions: a bounded answer keeps the tier in minutes
# A line or clause that starts an option label ("A. ...", "B、..."): an independent reading of "lists the options".
OPTION_LABEL = re.compile(r"(?:^|[\s。；;])([A-E])\s*[.、:：)]", re.MULTILINE)


def test_climedbench_id1_same_answers_and_numbers_in_both_frameworks(llama_server, real_env, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench_id1
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    point_at(real_env, llama_server, llama_server)
    log = inspect_eval(climedbench_id1(data_dir="sample"), model=f"openai-api/cand/{MODEL}", limit=LIMIT, max_tokens=MAX_TOKENS,
                       log_dir=str(tmp_path / "inspect"), display="none")[0]
    assert log.status == "success", log.error
    inspect_metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    inspect_answers = {str(s.metadata["item"]["id"]): s.output.completion for s in log.samples}

    results = simple_evaluate(tasks=["climedbench_id1"], model="local-chat-completions", limit=LIMIT, log_samples=True,
                              model_args={"model": MODEL, "base_url": f"{llama_server.base_url}/chat/completions", "num_concurrent": 1},
                              apply_chat_template=True, bootstrap_iters=0, gen_kwargs=f"max_gen_toks={MAX_TOKENS}")
    lm = results["results"]["climedbench_id1"]
    samples = results["samples"]["climedbench_id1"]
    lmeval_answers = {str(s["doc"]["id"]): s["resps"][0][0] for s in samples}

    # The same requests get the same answers from the real server (temperature 0, seed), so the same numbers.
    assert lmeval_answers == inspect_answers and len(lmeval_answers) == LIMIT
    assert inspect_metrics["accuracy"] == lm["accuracy,answer"] and inspect_metrics["parse_failure"] == lm["parse_failure,answer"]
    # An answer that only goes through the options, with no answer marker, is no choice.
    for sample in log.samples:
        answer = sample.output.completion
        listed = {m.group(1) for m in OPTION_LABEL.finditer(answer)}
        if len(listed) >= 2 and not re.search(r"答案|正确选项|选择|answer", answer, re.IGNORECASE):
            assert sample.scores["climedbench_scorer"].value["parsed"] == 0, answer
    print(f"\n[real server] started in {llama_server.started_in:.1f} s; answers: {list(inspect_answers.values())}")


JUDGE_MAX_TOKENS = 128


def clinconsensus_both(server, real_env, tmp_path, structured: bool, judge=None, answer_tokens: int = MAX_TOKENS):
    """One ClinConsensus case answered by the real model on ``server`` (``answer_tokens`` at most)
    and judged by it on ``judge`` (default: the same server), in Inspect then lm-eval: (Inspect
    log, Inspect record, lm-eval record or the JudgeFailureError lm-eval raised)."""
    import json

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.lmeval_glue import simple_evaluate
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import JudgeFailureError

    point_at(real_env, server, judge or server)
    # llama-cpp-python's server answers one request at a time: more in flight only wait in its queue
    # until the client's time-out, and are sent again. One connection, in both frameworks.
    real_env.setenv("CLINCONSENSUS_JUDGE_CONCURRENCY", "1")
    real_env.setenv("CLINCONSENSUS_DATA", "sample")
    real_env.setenv("CLINCONSENSUS_JUDGE_MAX_TOKENS", str(JUDGE_MAX_TOKENS))
    real_env.setenv("CLINCONSENSUS_JUDGE_STRUCTURED_OUTPUT", "1" if structured else "0")
    log = inspect_eval(clinconsensus(data="sample", judge_max_tokens=JUDGE_MAX_TOKENS, judge_structured_output=structured),
                       model=f"openai-api/cand/{MODEL}", limit=1, max_tokens=answer_tokens, max_connections=1,
                       model_roles={"grader": get_model(f"openai-api/judge/{MODEL}", config=GenerateConfig(max_connections=1), memoize=False)},
                       log_dir=str(tmp_path / "inspect"), display="none")[0]
    record = log.samples[0].scores["rubric_scorer"].metadata
    try:
        results = simple_evaluate(tasks=["clinconsensus"], model="local-chat-completions", limit=1, log_samples=True,
                                  model_args={"model": MODEL, "base_url": f"{server.base_url}/chat/completions", "num_concurrent": 1},
                                  apply_chat_template=True, bootstrap_iters=0, gen_kwargs=f"max_gen_toks={answer_tokens}")
        return log, record, json.loads(results["samples"]["clinconsensus"][0]["filtered_resps"][0])
    except JudgeFailureError as exc:
        return log, record, exc


def test_a_tiny_judges_prose_is_no_verdict_and_both_frameworks_fail_the_run_alike(llama_server, real_env, tmp_path):
    log, record, lmeval = clinconsensus_both(llama_server, real_env, tmp_path, structured=False)
    # SmolLM2 writes prose or echoes the prompt, not a verdict: every judgment fails, with the
    # reply in its reason, and the failure policy ends both runs with the same count.
    assert log.status == "error" and log.error.message.startswith('JudgeFailureError("30 of 30 judge verdicts failed')
    assert record["failures"] == 30 and all(j["error"].startswith("unparseable verdict") for j in record["judgments"])
    assert str(lmeval).startswith("30 of 30 judge verdicts failed")


def test_structured_output_in_llamacpps_form_makes_the_tiny_judges_verdicts_parse_alike(llama_server, real_env, tmp_path):
    log, record, lmeval = clinconsensus_both(llama_server, real_env, tmp_path, structured=True)
    # The server's grammar holds the reply to the verdict's schema ({"type": "json_object", "schema":
    # ...}; it answers OpenAI's json_schema form with HTTP 500): verdicts parse, except where the
    # token budget cuts the JSON. Both frameworks send the same requests and read the same verdicts.
    assert record["failures"] < 30 and record["met"] + record["failures"] <= 30
    inspect_verdicts = [j["met"] for j in record["judgments"]]
    if isinstance(lmeval, Exception):
        assert str(lmeval).startswith(f"{record['failures']} of 30 judge verdicts failed")
    else:
        assert [j["met"] for j in lmeval["judgments"]] == inspect_verdicts
    assert "HTTP 500" not in " ".join(j["error"] or "" for j in record["judgments"])


def test_a_long_answer_is_judged_cut_to_the_real_servers_context_alike(llama_server, small_llama_server, real_env, tmp_path):
    # The judge on a server with llama.cpp's default context of 2,048 tokens, which it does not
    # list; the answer runs to 600 tokens and the judge prompt around it to about 1,500 (SmolLM2
    # counts 1.6 tokens per estimated token of the Chinese template). The first request is refused
    # for its length; the limit that refusal gives cuts the answer, and the case is judged, cut, the
    # same way in both frameworks.
    real_env.setenv("CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD", "0")
    log, record, lmeval = clinconsensus_both(llama_server, real_env, tmp_path, structured=True, judge=small_llama_server, answer_tokens=600)
    cut = record.get("judge_input_cut")
    assert cut, record
    assert cut["why"].startswith("the server's context of 2048 tokens, from its refusal, minus 128 verdict tokens"), cut
    assert 0 < cut["judged_chars"] < cut["answer_chars"]
    # Judged, not refused: no judgment fails as a request the server or the limit refused (what
    # fails is the tiny judge's own reply, a re-ask of it too long to fit saying so in its reason).
    refused = [j["error"] for j in record["judgments"] if j["error_kind"] == "request"]
    assert refused == [], refused
    assert record["failures"] < 30
    assert not isinstance(lmeval, Exception), lmeval
    assert lmeval["judge_input_cut"] == cut
    assert [j["met"] for j in lmeval["judgments"]] == [j["met"] for j in record["judgments"]]


def test_estimate_with_the_models_own_tokenizer_is_within_5_percent_of_the_servers_count(llama_server, tmp_path):
    # `clinconsensus-eval estimate --tokenizer DIR` counts the judge prompts of a run before it
    # starts. Here DIR is SmolLM2's tokenizer, read by transformers from the very GGUF file the
    # server serves, and the count is set against what the server reports (usage.prompt_tokens)
    # for the same requests: the per-criterion prompts of two sample cases with the stand-in answer
    # `estimate` uses. The estimate adds 4 tokens per message for the chat format; SmolLM2's adds
    # 5 per message and 3 for the assistant's turn.
    import json
    import urllib.request

    from transformers import AutoTokenizer

    from clinconsensus_tasks.clinconsensus.dataset import load_cases, sample_path
    from clinconsensus_tasks.commands.estimate import estimate, make_counter, stand_in_answer
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, per_criterion_messages
    from real_server.conftest import gguf_path

    answer_chars = 600
    data = tmp_path / "two.jsonl"
    data.write_text("".join(sample_path().read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    AutoTokenizer.from_pretrained(str(gguf_path().parent), gguf_file=gguf_path().name).save_pretrained(tmp_path / "tokenizer")
    estimated = estimate(str(data), PER_CRITERION, answer_chars, make_counter(str(tmp_path / "tokenizer"))).usage

    served = 0
    for case in load_cases(str(data)).cases:
        for _, criterion in case.rubrics:
            body = {"model": MODEL, "max_tokens": 1, "temperature": 0,
                    "messages": per_criterion_messages(case.question, stand_in_answer(answer_chars), criterion)}
            request = urllib.request.Request(f"{llama_server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=300) as reply:
                served += json.loads(reply.read())["usage"]["prompt_tokens"]
    ratio = estimated.prompt_tokens / served
    print(f"\n[real server] estimate {estimated.prompt_tokens} prompt tokens, server {served}: {ratio:.4f}")
    assert estimated.calls == 60
    assert abs(ratio - 1) <= 0.05, (estimated.prompt_tokens, served)


def test_the_same_model_through_both_hf_backends(tmp_path, monkeypatch):
    # The GGUF file the server serves, loaded in process by transformers (dequantized to float32)
    # through lm-eval's `hf` backend and Inspect's `hf/` provider, as a model builder runs a local
    # checkpoint: climedbench_id1 on four questions, greedy, 32 new tokens, batches of two. Inspect
    # passes `gguf_file` to the model's from_pretrained but not to the tokenizer's, so both are
    # given the tokenizer as a folder (written from the same file).
    from inspect_ai import eval as inspect_eval
    from transformers import AutoTokenizer

    from clinconsensus_tasks.climedbench.inspect_task import climedbench_id1
    from clinconsensus_tasks.lmeval_glue import simple_evaluate
    from real_server.conftest import gguf_path

    folder, name = str(gguf_path().parent), gguf_path().name
    tokenizer = str(tmp_path / "tokenizer")
    AutoTokenizer.from_pretrained(folder, gguf_file=name).save_pretrained(tokenizer)
    new_tokens, batch = 32, 2
    monkeypatch.setenv("CLIMEDBENCH_DATA_DIR", "sample")  # lm-eval's run below: the bundled sample, by name
    log = inspect_eval(climedbench_id1(data_dir="sample"), model=f"hf/{MODEL}", max_tokens=new_tokens, max_connections=batch, limit=LIMIT,
                       model_args={"model_path": folder, "gguf_file": name, "tokenizer_path": tokenizer, "device": "cpu",
                                   "do_sample": False},
                       log_dir=str(tmp_path / "inspect"), display="none")[0]
    assert log.status == "success", log.error
    inspect_metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    inspect_answers = {str(s.metadata["item"]["id"]): s.output.completion for s in log.samples}
    results = simple_evaluate(tasks=["climedbench_id1"], model="hf", limit=LIMIT, log_samples=True, apply_chat_template=True,
                              model_args={"pretrained": folder, "gguf_file": name, "tokenizer": tokenizer, "device": "cpu",
                                          "dtype": "float32"},
                              batch_size=batch, gen_kwargs=f"max_gen_toks={new_tokens}", bootstrap_iters=0)
    lm = results["results"]["climedbench_id1"]
    lmeval_answers = {str(s["doc"]["id"]): s["resps"][0][0] for s in results["samples"]["climedbench_id1"]}
    print(f"\n[hf backends] answers: {list(inspect_answers.values())}")
    assert lmeval_answers == inspect_answers and len(inspect_answers) == LIMIT and any(inspect_answers.values())
    assert inspect_metrics["accuracy"] == lm["accuracy,answer"] and inspect_metrics["parse_failure"] == lm["parse_failure,answer"]
