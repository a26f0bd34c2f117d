"""``clinconsensus-eval export-sft``: one judge's verdicts as training data for a local judge."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks import json_output
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.run_records.judge_training import (
    CHAT,
    FORMS,
    TRAINER,
    TRAINER_MAX_LENGTH,
    PromptLength,
    judged_answer,
    model_matcher,
    record_digest,
    split_cases,
    split_summary,
    trainer_record,
    verdict_reply,
)
from clinconsensus_tasks.run_records.protocol import judged_with, run_model
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import per_criterion_messages
from clinconsensus_tasks.storage import file_sha256, make_folder, output_location, write_text

FORMAT_TEXT = {
    CHAT: "chat messages (the per-criterion judge prompt each case was judged with, then the verdict JSON)",
    TRAINER: "the official trainer's JSON lines (scripts/train_sft_judge.py): instruction, the judge prompt each case was "
             "judged with as its one user turn; output, the verdict JSON in a ```json fence, as the released judge answers",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", help="Inspect logs or lm-eval samples files, or folders or URLs holding them")
    p.add_argument("--output", required=True, help="folder for train.jsonl, dev.jsonl, manifest.json")
    p.add_argument("--judge", choices=["reference", "local"], default="reference", help="whose verdicts: the grader or the local_grader")
    p.add_argument("--format", choices=FORMS, default=CHAT,
                   help="chat: chat messages records; trainer: the official trainer's {instruction, output} records "
                        "(scripts/train_sft_judge.py), the verdict fenced as the released judge answers (default: chat)")
    p.add_argument("--held-out-models", action="append", default=[], metavar="NAME[,NAME...]",
                   help="models whose answers form the development set, none of their cases in train (the paper's held-out "
                        "models): train holds the other models' answers to the training cases, dev the held-out models' answers "
                        "to the development cases (repeatable or comma-separated; default: none, the split by case only)")
    p.add_argument("--dev-share", type=float, default=0.1, help="share of cases held out as dev, by a hash of the case id")
    p.add_argument("--seed", type=int, default=0, help="seed of the split by case")
    p.add_argument("--max-length", type=int, default=TRAINER_MAX_LENGTH,
                   help="the trainer's sequence limit in tokens: a record whose prompt alone reaches it trains nothing and is left "
                        "out (default: 5120, the official trainer's; 0: no limit)")
    p.add_argument("--tokenizer", help="count tokens with this tokenizer folder (its chat template with thinking off, as the trainer "
                                       "counts) or an OpenAI encoding (default: characters per token, as estimate)")
    p.add_argument("--chars-per-token", type=float, default=None, help="without --tokenizer: characters per token (default: 1.5, as estimate)")


def main(args: argparse.Namespace) -> int:
    held_out = [name.strip() for given in args.held_out_models for name in given.split(",") if name.strip()]
    manifest = export_sft(args.logs, args.output, args.judge, args.dev_share, args.seed, form=args.format, held_out_models=held_out,
                          max_length=args.max_length, tokenizer=args.tokenizer, chars_per_token=args.chars_per_token)
    for warning in manifest["warnings"]:
        print(f"clinconsensus-eval: export-sft: {warning}", file=sys.stderr)
    print(json_output.dumps(manifest))
    return 0


def export_sft(logs: Sequence[str], output: str | Path, judge: str = "reference", dev_share: float = 0.1, seed: int = 0, *,
               form: str = CHAT, held_out_models: Sequence[str] = (), max_length: int = TRAINER_MAX_LENGTH,
               tokenizer: str | None = None, chars_per_token: float | None = None) -> dict[str, Any]:
    """Turn one judge's verdicts into training records for a local judge
    (``run_records.judge_training``).

    Each record is the per-criterion prompt the judge was sent (the template its record names,
    rebuilt and checked by sha256, on the answer the judge saw) and the verdict it gave, in ``form``
    (``chat`` messages, or the official trainer's ``instruction``/``output``). Failed judgments
    are skipped, identical records kept once, records whose prompt alone reaches ``max_length``
    tokens left out (each counted). Cases whose hash falls under ``dev_share``, and cases only
    models of ``held_out_models`` answered, are the development cases; no case is in both sets.
    With held-out models, the training set is the other models' answers to the training cases and
    the development set the held-out models' answers to the development cases (the rest is left
    out and counted: ``run_records.judge_training.Split``). Writes
    ``train.jsonl``, ``dev.jsonl``, their index (case, criterion and model of each line, in order:
    ``train.index.jsonl``, ``dev.index.jsonl``) and ``manifest.json``, which says what was exported
    from what.
    """
    if judge not in ("reference", "local"):
        raise ValueError("judge must be 'reference' or 'local'")
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}")
    if not 0 <= dev_share < 1:
        raise ValueError("dev_share must lie in [0, 1)")
    if max_length < 0:
        raise ValueError("max_length must be positive (0: no limit)")
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_logs

    logs = benchmark_logs(logs, CLINCONSENSUS)  # a folder or URL prefix: the ClinConsensus logs in it
    output = output_location(output)  # a local folder or a URL prefix
    length = PromptLength.make(tokenizer, chars_per_token)
    runs = []
    for log in logs:
        model, named_by = run_model(log)
        runs.append((log, model, named_by, read_case_records(log)))
    held_out = model_matcher(held_out_models)
    unmatched = sorted(set(held_out_models) - {held_out(model) for _, model, _, _ in runs})
    if unmatched:
        raise ConfigurationError(f"--held-out-models {', '.join(unmatched)}: no run of that model among the logs (their models: "
                                 f"{', '.join(sorted({m for _, m, _, _ in runs}))})")
    split = split_cases([(model, records) for _, model, _, records in runs], held_out, dev_share, seed)
    make_folder(output)
    seen: set[str] = set()
    lines: dict[str, list[str]] = {"train": [], "dev": []}
    index: dict[str, list[dict[str, str]]] = {"train": [], "dev": []}
    skipped = duplicates = too_long = cut_replies = after_reask = 0
    outside: Counter[str] = Counter()  # answers in neither split: held-out models' to training cases, the others' to development cases
    judges: set[str] = set()
    templates: dict[tuple[str, str], Any] = {}
    sources = []
    for log, model, named_by, records in runs:
        exported = 0
        for record in records:
            graded = record.graded
            template = judged_with(record, templates)
            verdicts = graded.roles.get(SECOND_ROLE) if judge == "local" else graded.headline
            if verdicts is None:
                continue
            judges.add(verdicts.judge)
            answer = judged_answer(record, verdicts)  # as the judge saw it: cut where its input limit cut it
            criteria = dict(record.rubrics)
            part = split.part(model, graded.case_id)
            if part is None:
                outside["held_out_models_on_training_cases" if held_out(model) else "training_models_on_development_cases"] += len(verdicts.judgments)
                continue
            for j in verdicts.judgments:
                if j.met is None or j.attempts == 0:  # failed, or an empty answer nobody judged
                    skipped += 1
                    continue
                text = criteria[j.criterion_id]
                messages = template.messages(record.question, answer, text) if template else per_criterion_messages(record.question, answer, text)
                reply = verdict_reply(j.explanation, j.met, form)
                digest = record_digest(messages, reply)
                if digest in seen:
                    duplicates += 1
                    continue
                seen.add(digest)
                if max_length:
                    if length.prompt(messages) >= max_length:  # the trainer keeps max_length tokens and masks the prompt's: nothing learned
                        too_long += 1
                        continue
                    cut_replies += length.sequence(messages, reply) > max_length
                body = trainer_record(messages, reply, record.where) if form == TRAINER else {
                    "case_id": graded.case_id, "criterion_id": j.criterion_id, "model": model,
                    "messages": messages + [{"role": "assistant", "content": reply}]}
                lines[part].append(json.dumps(body, ensure_ascii=False))
                index[part].append({"case_id": graded.case_id, "criterion_id": j.criterion_id, "model": model})
                after_reask += j.attempts > 1
                exported += 1
        sources.append({"path": str(log), "sha256": file_sha256(log), "model": model, "model_from": named_by,
                        "held_out": held_out(model) is not None, "records": exported})
    files = {}
    for part, texts in lines.items():
        path, text = output / f"{part}.jsonl", "".join(line + "\n" for line in texts)
        index_path = output / f"{part}.index.jsonl"
        index_text = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in index[part])
        write_text(path, text)
        write_text(index_path, index_text)
        files[part] = {"path": str(path), **split_summary(index[part]), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                       "index": str(index_path), "index_sha256": hashlib.sha256(index_text.encode("utf-8")).hexdigest()}
    warnings = []
    if split.any_held_out and not lines["train"]:
        warnings.append("train.jsonl is empty: no model but the held-out ones answered a training case; name fewer models "
                        "with --held-out-models (docs/judges.md#training-a-local-judge)")
    if split.any_held_out and not lines["dev"]:
        warnings.append("dev.jsonl is empty: the held-out models answered no development case; give --dev-share (the paper's counts "
                        "suggest about 0.11 of the cases), or run the held-out models on cases of their own (docs/judges.md#training-a-local-judge)")
    if length.fallback:
        warnings.append(length.fallback)
    if too_long:
        warnings.append(f"{too_long} record(s) left out: their prompt alone reaches {max_length} tokens ({length.description})")
    manifest = {
        "format": FORMAT_TEXT[form],
        "form": form,
        "judge_prompts": sorted({f"{name} sha256 {sha}" for name, sha in templates}),
        "judge": judge,
        "judge_models": sorted(j for j in judges if j),
        "sources": sources,
        "held_out_models": sorted(held_out_models),
        "dev_share": dev_share,
        "seed": seed,
        "dev_cases": {"all": len(split.dev_cases), "by_dev_share": len(split.by_share),
                      "answered_by_held_out_models_alone": len(split.held_out_alone)},
        "left_out_outside_the_split": {"held_out_models_on_training_cases": outside["held_out_models_on_training_cases"],
                                       "training_models_on_development_cases": outside["training_models_on_development_cases"]},
        "files": files,
        "max_length": max_length,
        "token_count": length.description,
        "skipped_failed_judgments": skipped,
        "duplicates_dropped": duplicates,
        "left_out_prompt_reaches_max_length": too_long,
        "replies_cut_by_max_length": cut_replies,
        "verdicts_after_a_reask": after_reask,
        "warnings": warnings,
    }
    write_text(output / "manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    return manifest
