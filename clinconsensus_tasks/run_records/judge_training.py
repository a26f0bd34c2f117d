"""A judge's verdicts as training data for a local judge: what ``export-sft`` writes, and how.

Why here: the released local judge (``skylenage/ClinConsensus-Judge-8B``) is Qwen3-8B fine-tuned
on an API judge's verdicts by the official trainer (``scripts/train_sft_judge.py`` of the official
repository), and a judge trained on other prompts or replies than the ones it is run with gives
other verdicts. So each record is rebuilt from what the run recorded, exactly:

* the prompt is the one the judge was sent: the template the record names (rebuilt and checked by
  its sha256, ``run_records.protocol.judged_with``) filled with the answer the judge saw, which is
  the recorded answer cut where the judge's input limit cut it (``judge_input_cut``);
* the reply is the verdict the judge gave, in one of two forms (:data:`FORMS`): ``chat`` (chat
  ``messages``, the verdict JSON as the assistant turn) or ``trainer`` (the official trainer's
  JSON lines: ``instruction``, the one user turn, and ``output``, the reply to learn, the verdict in
  the fenced ```` ```json ```` block the official template asks the judge for);
* the split is by case (a hash of the case id, ``dev_share``) and by model (:func:`split_cases`):
  the answers of the models named as held out are the development set and none of their cases is
  in the training set, as the paper measures its judge on models (and cases) it was not trained on;
* a record whose prompt alone reaches the trainer's sequence limit (5,120 tokens) would train on
  nothing (the trainer cuts the sequence there and masks the prompt's labels): it is left out and
  counted (:class:`PromptLength`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.scorers.clinconsensus.records import RoleVerdicts

CHAT, TRAINER = "chat", "trainer"
FORMS = (CHAT, TRAINER)
# scripts/train_sft_judge.py --max-length, configs/training_config.json max_sequence_length (commit 52be41d)
TRAINER_MAX_LENGTH = 5120
REPLY_FENCE = "```json\n{}\n```"  # the answer form the official template asks the judge for

Messages = list[dict[str, str]]


def verdict_reply(explanation: str, met: bool, form: str) -> str:
    """The judge's verdict as the reply to learn: the JSON object (``chat``), inside a ``json`` code
    fence as the released judge answers (``trainer``)."""
    verdict = json.dumps({"explanation": explanation, "criteria_met": met}, ensure_ascii=False)
    return REPLY_FENCE.format(verdict) if form == TRAINER else verdict


def judged_answer(case: LoggedCase, verdicts: RoleVerdicts) -> str:
    """The answer ``verdicts``' judge saw: the recorded answer, cut where the judge's input limit
    cut it (``judge_input_cut``: its first ``judged_chars`` characters). A cut that does not fit
    the recorded answer is an error: the prompt could not be rebuilt as it was sent."""
    cut = verdicts.input_cut
    if not cut:
        return case.answer
    total, kept = cut.get("answer_chars"), cut.get("judged_chars")
    if not isinstance(kept, int) or total != len(case.answer) or kept > len(case.answer):
        raise DataValidationError([f"{case.where}: the judge saw the answer cut ({dict(cut)}), which does not fit the recorded answer "
                                   f"of {len(case.answer)} characters: the prompt it was sent cannot be rebuilt"])
    return case.answer[:kept]


def trainer_record(messages: Messages, reply: str, where: str) -> dict[str, str]:
    """The official trainer's record: the one user turn as ``instruction``, the reply as ``output``.
    A prompt of another shape (the project's prompt: a system message, then the user's) has no
    place in it: an error saying what to export instead."""
    if len(messages) != 1 or messages[0].get("role") != "user":
        roles = ", ".join(m.get("role", "?") for m in messages)
        raise DataValidationError([f"{where}: judged with a prompt of {len(messages)} message(s) ({roles}); the official trainer's "
                                   "records hold one user turn (the official template, or a template file): export --format chat, "
                                   "or judge with judge_prompt=official"])
    return {"instruction": messages[0]["content"], "output": reply}


def record_digest(messages: Messages, reply: str) -> str:
    """What makes two records the same (the prompt and the reply), whatever the form."""
    return hashlib.sha256(json.dumps([messages, reply], ensure_ascii=False).encode("utf-8")).hexdigest()


# -- which model answered ---------------------------------------------------------------------------


def model_matcher(held_out: Sequence[str]) -> Callable[[str], str | None]:
    """Which held-out name (if any) a run's model is: the name as the run wrote it, or as
    ``model_display_name`` shows it (``openai-api/vllm/org/name`` and lm-eval's ``org__name`` are
    ``org/name``)."""
    from clinconsensus_tasks.log_files import model_display_name

    wanted = {name: {name, model_display_name(name)} for name in held_out}

    def match(model: str) -> str | None:
        forms = {model, model_display_name(model)}
        return next((name for name, names in wanted.items() if names & forms), None)

    return match


def case_bucket(case_id: str, seed: int) -> float:
    """Where the hash of ``case_id`` (with ``seed``) falls in [0, 1]: below ``dev_share``, dev."""
    return int(hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


@dataclass
class Split:
    """Which split each answer goes to (:meth:`part`): the development cases, why each is one, and
    which models are held out."""

    held_out: Callable[[str], str | None]
    any_held_out: bool = False
    dev_cases: set[str] = field(default_factory=set)
    by_share: set[str] = field(default_factory=set)  # the hash of the case id fell under dev_share
    held_out_alone: set[str] = field(default_factory=set)  # only held-out models answered it

    def part(self, model: str, case_id: str) -> str | None:
        """``train``, ``dev``, or ``None`` for an answer in neither: with held-out models, the
        training set is the other models' answers to the training cases and the development set the
        held-out models' answers to the development cases (a held-out model's answer to a training
        case, and a training model's answer to a development case, are left out)."""
        dev = case_id in self.dev_cases
        if not self.any_held_out:
            return "dev" if dev else "train"
        if self.held_out(model) is not None:
            return "dev" if dev else None
        return None if dev else "train"


def split_cases(runs: Sequence[tuple[str, Sequence[LoggedCase]]], held_out: Callable[[str], str | None], dev_share: float,
                seed: int) -> Split:
    """The split by case and by model (``runs``: each run's model and records). The development
    cases are those whose hash falls under ``dev_share`` and those only held-out models answered;
    with held-out models, :meth:`Split.part` puts their answers to those cases, and nothing else, in
    the development set, as the paper measures its judge on models it was not trained on (its
    counts fit cases apart too: 52,209 training examples are about 12 models x 145 cases x 30
    criteria, 5,933 development ones about 11 x 18 x 30; an inference, not a published fact). No
    case is in both sets."""
    split = Split(held_out)
    by_training: set[str] = set()
    by_held_out: set[str] = set()
    for model, records in runs:
        held = held_out(model) is not None
        split.any_held_out |= held
        for case in records:
            cid = case.graded.case_id
            if case_bucket(cid, seed) < dev_share:
                split.by_share.add(cid)
            (by_held_out if held else by_training).add(cid)
    split.held_out_alone = by_held_out - by_training
    split.dev_cases = split.by_share | split.held_out_alone
    return split


# -- how long a prompt is, as the trainer counts it ------------------------------------------------


@dataclass(frozen=True)
class PromptLength:
    """Tokens of a record's prompt and of the whole sequence, as the official trainer counts them
    where a tokenizer folder with a chat template is given (the chat template applied with thinking
    off: the prompt with the generation prompt, the sequence with the reply), else estimated as
    ``clinconsensus-eval estimate`` counts a request (``judge.token_count``: the tokenizer or
    encoding named, else characters per token, plus each message's formatting)."""

    prompt: Callable[[Messages], int]
    sequence: Callable[[Messages, str], int]
    description: str
    fallback: str = ""

    @classmethod
    def make(cls, tokenizer: str | None = None, chars_per_token: float | None = None) -> "PromptLength":
        from clinconsensus_tasks.judge.token_count import DEFAULT_CHARS_PER_TOKEN, MESSAGE_OVERHEAD, make_counter, prompt_tokens

        if tokenizer and os.path.isdir(tokenizer):
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(tokenizer)
            if getattr(tok, "chat_template", None):
                def render(messages: Messages, generation: bool) -> int:
                    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation, enable_thinking=False)
                    return len(tok.encode(text, add_special_tokens=False))

                return cls(lambda m: render(m, True), lambda m, reply: render([*m, {"role": "assistant", "content": reply}], False),
                           f"the chat template of {Path(tokenizer).name} with thinking off, as the official trainer counts")
        counter = make_counter(tokenizer, DEFAULT_CHARS_PER_TOKEN if chars_per_token is None else chars_per_token)
        return cls(lambda m: prompt_tokens(m, counter), lambda m, reply: prompt_tokens(m, counter) + MESSAGE_OVERHEAD + counter.count(reply),
                   f"{counter.description}, plus {MESSAGE_OVERHEAD} a message (an estimate: give --tokenizer the judge's tokenizer "
                   "folder to count as the trainer does)", counter.fallback)


def split_summary(lines: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """Records, cases and records per model of one split's index lines."""
    models: dict[str, int] = {}
    for line in lines:
        models[line["model"]] = models.get(line["model"], 0) + 1
    return {"records": len(lines), "cases": len({line["case_id"] for line in lines}), "models": dict(sorted(models.items()))}
