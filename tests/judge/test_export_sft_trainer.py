"""export-sft in the official trainer's form, split by held-out models (issue 61, items 1 and 2).

Runs of three models graded over real HTTP by the stand-in judge with an official-form template
(one user message, the three placeholders; the project's own words, as the official text cannot be
had here), one of them with answers long enough that the judge's input limit cuts them. The export
is then read the way the official trainer reads it: two keys, the user turn then the reply, a
chat template with thinking off, the prompt's labels masked with -100, the sequence cut at the
limit, on a byte-level BPE tokenizer built here."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.errors import ConfigurationError, DataValidationError
from clinconsensus_tasks.scorers.clinconsensus.verdicts import read_official, read_verdict

pytestmark = pytest.mark.slow

TEMPLATE = (
    "Check one grading item against a clinical reply.\n\n"
    "### Patient's message\n{user_message}\n\n"
    "### Reply under review\n{response}\n\n"
    "### Grading item\n{rubric_item}\n\n"
    "### Your answer\nA JSON object in a fenced block:\n```json\n{{\"explanation\": \"...\", \"criteria_met\": true/false}}\n```"
)
# Qwen3's template in miniature: thinking off puts an empty thinking block before the reply.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['role'] == 'assistant' %}<think>\n\n</think>\n\n{% endif %}"
    "{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and not enable_thinking %}"
    "<think>\n\n</think>\n\n{% endif %}{% endif %}"
)
CASES = [c.case_id for c in load_cases("sample").cases]
TRAINING_CASES, HELD_OUT_CASES = CASES[:8], CASES[8:]


def tiny_tokenizer(folder: Path) -> Path:
    """A byte-level BPE tokenizer (any text encodes) trained here on the sample's texts, with
    Qwen's chat markers and the template above, saved as a Hugging Face folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [TEMPLATE] + [c.question + "".join(t for _, t in c.rubrics) for c in load_cases("sample").cases]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=["<|im_start|>"])
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    return folder


def trainer_example(tok, item: dict, max_length: int) -> tuple[list[int], list[int], int]:
    """One record as the official trainer makes it (its record form, read from the facts: the
    chat template with thinking off, the sequence cut at ``max_length``, the prompt's labels -100):
    the input ids, the labels and the prompt's length."""
    messages = [{"role": "user", "content": item["instruction"]}, {"role": "assistant", "content": item["output"]}]
    full = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False, enable_thinking=False)
    user = tok.apply_chat_template(messages[:1], tokenize=False, add_generation_prompt=True, enable_thinking=False)
    ids = tok.encode(full, add_special_tokens=False)[:max_length]
    prompt = len(tok.encode(user, add_special_tokens=False))
    labels = ids.copy()
    labels[:min(prompt, len(labels))] = [-100] * min(prompt, len(labels))
    return ids, labels, prompt


def prompt_length(tok, content: str) -> int:
    text = tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True, enable_thinking=False)
    return len(tok.encode(text, add_special_tokens=False))


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def runs(fake_server, tmp_path):
    """Three models' runs (Inspect logs in one folder) and every judge request they sent."""
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    template_file = tmp_path / "judge_template.txt"
    template_file.write_text(TEMPLATE, encoding="utf-8")
    fake_server.set_judge_templates([TEMPLATE], record=True)
    plan = [("cand-model", "judge-model", TRAINING_CASES, 0), ("markdown-model", "judge-model", HELD_OUT_CASES, 0),
            # the released judge's name: its official input limit (5,120 tokens) cuts these 6,000-character answers
            ("long-model", "ClinConsensus-Judge-8B", TRAINING_CASES, 6000)]
    try:
        for model, judge, cases, answer_chars in plan:
            fake_server._server.state.configure({"answer_chars": answer_chars})
            log = inspect_eval(clinconsensus(data="sample", judge_prompt=str(template_file)), model=f"openai-api/cand/{model}",
                               model_roles={"grader": f"openai-api/judge/{judge}"}, sample_id=cases,
                               log_dir=str(tmp_path / "logs"), display="none")[0]
            assert log.status == "success", log.error
    finally:
        fake_server._server.state.configure({"answer_chars": 0})  # the session's server: back as it was
    sent = fake_server.judge_messages()
    assert len(sent) == 30 * (8 + 4 + 8) and all(len(m) == 1 and m[0]["role"] == "user" for m in sent)
    return tmp_path / "logs", [m[0]["content"] for m in sent]


def test_trainer_records_are_the_requests_sent_split_by_held_out_model_and_each_trains(runs, tmp_path, capsys):
    from transformers import AutoTokenizer

    from clinconsensus_tasks.cli import main as cli_main

    logs, sent = runs
    cut = [r for r in read_case_records(next(p for p in logs.iterdir() if _model_of(p) == "openai-api/cand/long-model"))
           if r.graded.headline.input_cut]
    assert len(cut) == 8  # every long answer was cut to fit the released judge's input limit
    tok_dir = tiny_tokenizer(tmp_path / "tokenizer")
    tok = AutoTokenizer.from_pretrained(tok_dir)
    lengths = {content: prompt_length(tok, content) for content in sent}
    seen = [r.answer[:r.graded.headline.input_cut["judged_chars"]] for r in cut]  # the cut answers, as the judge saw them
    long_ones = sorted(n for content, n in lengths.items() if any(f"\n{answer}\n\n### Grading item" in content for answer in seen))
    assert len(long_ones) == 240
    max_length = long_ones[len(long_ones) // 2]  # about half of the long model's prompts reach it, no other prompt does
    assert max(n for n in lengths.values() if n not in long_ones) < max_length

    code = cli_main(["export-sft", str(logs), "--format", "trainer", "--held-out-models", "markdown-model", "--dev-share", "0",
                     "--tokenizer", str(tok_dir), "--max-length", str(max_length), "--output", str(tmp_path / "sft")])
    out, err = capsys.readouterr()
    assert code == 0, err
    manifest = json.loads(out)
    left_out = sum(n >= max_length for n in lengths.values())
    assert 0 < left_out < 240 and left_out == sum(n >= max_length for n in long_ones)  # the long model's alone
    assert manifest["left_out_prompt_reaches_max_length"] == left_out
    assert f"{left_out} record(s) left out: their prompt alone reaches {max_length} tokens" in err

    train, dev = lines(tmp_path / "sft" / "train.jsonl"), lines(tmp_path / "sft" / "dev.jsonl")
    # The documented record form: exactly two string keys.
    assert all(set(item) == {"instruction", "output"} and all(isinstance(v, str) for v in item.values()) for item in train + dev)
    # Each instruction is a request the judge received, byte for byte (cut answers included); every
    # request is exported once, unless its prompt alone reaches the limit.
    assert Counter(item["instruction"] for item in train + dev) == Counter(c for c in sent if lengths[c] < max_length)
    # The reply is the verdict the judge gave, in the released judge's form: a fenced JSON object both readings read.
    assert all(item["output"].startswith("```json\n{") and item["output"].endswith("}\n```") for item in train + dev)
    assert all(read_verdict(item["output"], frozenset()).verdicts[None].met == read_official(item["output"]).verdicts[None].met
               for item in train + dev)
    # Read as the trainer reads it: every record trains at least one token, and the prompt is a prefix of the sequence.
    for item in train + dev:
        ids, labels, prompt = trainer_example(tok, item, max_length)
        assert prompt < max_length and sum(label != -100 for label in labels) >= 1
        full = tok.apply_chat_template([{"role": "user", "content": item["instruction"]}, {"role": "assistant", "content": item["output"]}],
                                       tokenize=False, enable_thinking=False)
        assert full.startswith(tok.apply_chat_template([{"role": "user", "content": item["instruction"]}], tokenize=False,
                                                       add_generation_prompt=True, enable_thinking=False))

    # The split: the held-out model's answers are the development set, and none of its cases is in train.
    train_index, dev_index = lines(tmp_path / "sft" / "train.index.jsonl"), lines(tmp_path / "sft" / "dev.index.jsonl")
    assert len(train_index) == len(train) and len(dev_index) == len(dev)
    assert {e["model"] for e in dev_index} == {"openai-api/cand/markdown-model"} and len(dev) == 120
    assert {e["case_id"] for e in dev_index} == set(HELD_OUT_CASES) and {e["case_id"] for e in train_index} == set(TRAINING_CASES)
    assert Counter(e["model"] for e in train_index) == {"openai-api/cand/cand-model": 240, "openai-api/cand/long-model": 240 - left_out}
    assert manifest["dev_cases"] == {"all": 4, "by_dev_share": 0, "answered_by_held_out_models_alone": 4}
    assert manifest["left_out_outside_the_split"] == {"held_out_models_on_training_cases": 0, "training_models_on_development_cases": 0}
    assert manifest["files"]["dev"]["models"] == {"openai-api/cand/markdown-model": 120} and manifest["files"]["train"]["cases"] == 8
    assert manifest["form"] == "trainer" and manifest["held_out_models"] == ["markdown-model"] and manifest["max_length"] == max_length
    assert manifest["token_count"] == "the chat template of tokenizer with thinking off, as the official trainer counts"
    assert sorted((s["model"], s["held_out"], s["records"]) for s in manifest["sources"]) == [
        ("openai-api/cand/cand-model", False, 240), ("openai-api/cand/long-model", False, 240 - left_out),
        ("openai-api/cand/markdown-model", True, 120)]
    assert all(s["model_from"] == "the Inspect log's header" for s in manifest["sources"])
    assert manifest["duplicates_dropped"] == 0 and manifest["skipped_failed_judgments"] == 0 and manifest["warnings"] == [
        f"{left_out} record(s) left out: their prompt alone reaches {max_length} tokens ({manifest['token_count']})"]


def test_the_chat_form_carries_the_cut_answer_and_a_split_leaving_no_training_case_says_so(runs, tmp_path):
    from clinconsensus_tasks.commands.export_sft import export_sft

    logs, sent = runs
    manifest = export_sft([str(logs)], tmp_path / "chat", dev_share=0.25, seed=1, max_length=0)
    records = lines(tmp_path / "chat" / "train.jsonl") + lines(tmp_path / "chat" / "dev.jsonl")
    assert Counter(r["messages"][0]["content"] for r in records) == Counter(sent) and len(records) == 600
    assert {r["case_id"] for r in lines(tmp_path / "chat" / "train.jsonl")}.isdisjoint({r["case_id"] for r in lines(tmp_path / "chat" / "dev.jsonl")})
    assert manifest["form"] == "chat" and manifest["held_out_models"] == [] and manifest["left_out_prompt_reaches_max_length"] == 0

    # Models that answered the same cases: the held-out one's answers to the development cases are dev, the
    # others' answers to the training cases train, and the rest in neither (counted).
    from clinconsensus_tasks.run_records.judge_training import case_bucket

    mixed = export_sft([str(logs)], tmp_path / "mixed", dev_share=0.25, seed=1, held_out_models=["long-model"], max_length=0)
    dev_cases = {c for c in CASES if case_bucket(c, 1) < 0.25}
    dev_index, train_index = lines(tmp_path / "mixed" / "dev.index.jsonl"), lines(tmp_path / "mixed" / "train.index.jsonl")
    assert dev_cases & set(TRAINING_CASES) and dev_cases & set(HELD_OUT_CASES)  # the seed splits both groups of cases
    assert {e["model"] for e in dev_index} == {"openai-api/cand/long-model"} and {e["case_id"] for e in dev_index} == dev_cases & set(TRAINING_CASES)
    assert "openai-api/cand/long-model" not in {e["model"] for e in train_index} and not dev_cases & {e["case_id"] for e in train_index}
    assert mixed["left_out_outside_the_split"] == {
        "held_out_models_on_training_cases": 30 * len(set(TRAINING_CASES) - dev_cases),
        "training_models_on_development_cases": 30 * len(dev_cases & set(TRAINING_CASES)) + 30 * len(dev_cases & set(HELD_OUT_CASES))}
    assert len(train_index) == 30 * (len(set(TRAINING_CASES) - dev_cases) + len(set(HELD_OUT_CASES) - dev_cases))

    everyone = export_sft([str(logs)], tmp_path / "none", dev_share=0.0, held_out_models=["cand-model", "long-model", "markdown-model"])
    assert everyone["files"]["train"]["records"] == 0 and everyone["files"]["dev"]["records"] == 600
    assert everyone["warnings"][0].startswith("train.jsonl is empty: no model but the held-out ones answered a training case")
    nobody = export_sft([str(logs)], tmp_path / "nobody", dev_share=0.0, held_out_models=["cand-model"])
    assert nobody["files"]["dev"]["records"] == 0 and nobody["warnings"][0].startswith("dev.jsonl is empty: the held-out models answered no")
    with pytest.raises(ConfigurationError, match="--held-out-models gpt-9: no run of that model among the logs"):
        export_sft([str(logs)], tmp_path / "typo", held_out_models=["gpt-9"])


def test_the_trainer_form_takes_one_user_turn(fake_server, tmp_path):
    from frameworks import run_inspect

    from clinconsensus_tasks.commands.export_sft import export_sft

    log, _ = run_inspect(tmp_path / "logs")  # the project's prompt: a system message and a user message
    with pytest.raises(DataValidationError, match=r"judged with a prompt of 2 message\(s\) \(system, user\); the official trainer's "
                                                  "records hold one user turn"):
        export_sft([log.location], tmp_path / "sft", form="trainer")


def _model_of(path: Path) -> str:
    from clinconsensus_tasks.run_records.protocol import run_model

    return run_model(path)[0]
