"""Both benchmarks through the in-process backends model builders use: lm-eval's ``hf`` and
Inspect's ``hf/``, on a tiny random causal LM saved as a Hugging Face folder.

The model (``tiny_chat_lm``) stands in for a user's checkpoint: a 2-layer Qwen2-style network with
random weights, a character vocabulary covering the bundled data, and a ChatML chat template. It
writes noise, which is all these tests need: the same noise from both frameworks (greedy, same
template, same limit), so the judge (the stand-in, ``fake_server``) gives the same verdicts and
both report the same scores. Checked: the generation limit each framework was given, no stop
sequence but the end of turn, the chat template, batches of two, and the scores.
"""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.slow

LIMIT, MAX_TOKENS, BATCH = 2, 6, 2
SPECIALS = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture(scope="module")
def tiny_chat_lm(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from clinconsensus_tasks.scorers.climedbench.scenarios import (
        SCENARIOS,
        build_prompt,
    )
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from clinconsensus_tasks.climedbench.dataset import load_scenario
    from clinconsensus_tasks.clinconsensus.dataset import load_cases

    text = "".join(c.question for c in load_cases("sample").cases)
    text += "".join(build_prompt(SCENARIOS[code], item) for code in SCENARIOS for item in load_scenario(code, announce=False).items)
    chars = sorted(set(text) | {chr(i) for i in range(32, 127)} | {"\n"})
    vocab = {tok: i for i, tok in enumerate([*SPECIALS, *chars])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", "isolated")  # one token per character
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>", eos_token="<|im_end|>",
                                        additional_special_tokens=["<|im_start|>"], padding_side="left")
    tokenizer.chat_template = CHAT_TEMPLATE
    config = Qwen2Config(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, max_position_embeddings=4096, pad_token_id=0, eos_token_id=vocab["<|im_end|>"],
                         bos_token_id=None, tie_word_embeddings=True)
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-chat-lm")
    Qwen2ForCausalLM(config).save_pretrained(root)
    tokenizer.save_pretrained(root)
    return root


def inspect_answers(task, model_dir, tmp_path) -> tuple[dict, list[str], object]:
    from inspect_ai import eval as inspect_eval

    log = inspect_eval(task, model=f"hf/{model_dir}", model_args={"device": "cpu", "do_sample": False},
                       model_roles={"grader": "openai-api/judge/judge-model"}, max_tokens=MAX_TOKENS, max_connections=BATCH,
                       limit=LIMIT, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success", log.error
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    return metrics, [s.output.completion for s in log.samples], log


def lmeval_answers(task_name, model_dir) -> tuple[dict, list[str], dict]:
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    os.environ["CLINCONSENSUS_JUDGE_MODEL"] = "judge-model"
    out = simple_evaluate(tasks=[task_name], model="hf", model_args={"pretrained": str(model_dir), "device": "cpu", "dtype": "float32"},
                          apply_chat_template=True, batch_size=BATCH, gen_kwargs=f"max_gen_toks={MAX_TOKENS}", limit=LIMIT,
                          bootstrap_iters=0, log_samples=True)
    samples = sorted(out["samples"][task_name], key=lambda s: s["doc_id"])
    return out["results"][task_name], [s["resps"][0][0] for s in samples], out


def test_clinconsensus_through_both_hf_backends(fake_server, tiny_chat_lm, tmp_path):
    from transformers import AutoTokenizer

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    inspect_metrics, inspect_texts, log = inspect_answers(clinconsensus(data="sample"), tiny_chat_lm, tmp_path)
    lmeval_results, lmeval_texts, out = lmeval_answers("clinconsensus", tiny_chat_lm)

    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_lm)
    # The generation limit each framework was given: at most MAX_TOKENS tokens, no other stop.
    assert all(len(tokenizer(t, add_special_tokens=False)["input_ids"]) <= MAX_TOKENS for t in inspect_texts + lmeval_texts)
    assert inspect_texts == lmeval_texts and any(inspect_texts)
    # The chat template wrapped the question in both (lm-eval logs the prompt it sent).
    prompt = out["samples"]["clinconsensus"][0]["arguments"][0][0]
    assert prompt.startswith("<|im_start|>user\n") and prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert log.plan.config.max_tokens == MAX_TOKENS and log.plan.config.max_connections == BATCH
    assert out["config"]["batch_size"] == BATCH
    # Scores produced, the same in both.
    for name in ("rubric_accuracy", "cacs@7", "cacs@10", "judge_failures"):
        assert inspect_metrics[name] == lmeval_results[f"{name},judge"], name
    assert inspect_metrics["judge_failures"] == 0 and fake_server.stats()["kinds"]["per_criterion"] == 2 * 30 * LIMIT


def test_climedbench_through_both_hf_backends(fake_server, tiny_chat_lm, tmp_path):
    from clinconsensus_tasks.climedbench.inspect_task import climedbench_bkt

    inspect_metrics, inspect_texts, _ = inspect_answers(climedbench_bkt(data_dir="sample"), tiny_chat_lm, tmp_path)
    lmeval_results, lmeval_texts, _ = lmeval_answers("climedbench_bkt", tiny_chat_lm)
    assert inspect_texts == lmeval_texts
    assert inspect_metrics["accuracy"] == lmeval_results["accuracy,answer"]
    assert inspect_metrics["parse_failure"] == lmeval_results["parse_failure,answer"]
    json.dumps(lmeval_results)  # the results are plain numbers


def test_hf_judge_gets_thinking_off_unless_the_user_says(tiny_chat_lm):
    # A local judge in process (Inspect's hf/): its chat template is rendered with
    # enable_thinking=False, as the official runner renders the released judge's; -M enable_thinking wins.
    import asyncio

    from inspect_ai.model import get_model

    from clinconsensus_tasks.judge.inspect_server import server_of

    default = get_model(f"hf/{tiny_chat_lm}", device="cpu", memoize=False)
    chosen = get_model(f"hf/{tiny_chat_lm}", device="cpu", enable_thinking=True, memoize=False)
    assert default.api.enable_thinking is None  # Inspect's own default: the template decides
    asyncio.run(server_of(default))
    asyncio.run(server_of(chosen))
    assert (default.api.enable_thinking, chosen.api.enable_thinking) == (False, True)
