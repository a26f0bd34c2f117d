"""``clinconsensus-eval export-sft``: one judge's verdicts as chat SFT data."""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks import json_output
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.run_records.protocol import judged_with
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import per_criterion_messages
from clinconsensus_tasks.storage import file_sha256, make_folder, output_location, write_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("logs", nargs="+", help="Inspect logs or lm-eval samples files")
    p.add_argument("--output", required=True, help="folder for train.jsonl, dev.jsonl, manifest.json")
    p.add_argument("--judge", choices=["reference", "local"], default="reference", help="whose verdicts: the grader or the local_grader")
    p.add_argument("--dev-share", type=float, default=0.1, help="share of cases held out as dev")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/dev split")


def main(args: argparse.Namespace) -> int:
    manifest = export_sft(args.logs, args.output, args.judge, args.dev_share, args.seed)
    print(json_output.dumps(manifest))
    return 0


def export_sft(logs: Sequence[str], output: str | Path, judge: str = "reference", dev_share: float = 0.1, seed: int = 0) -> dict[str, Any]:
    """Turn one judge's verdicts into chat-format SFT records for training a local judge.

    Each record is the exact per-criterion prompt the local judge is run with, plus the verdict
    JSON as the assistant turn. Failed judgments are skipped (and counted), identical records are
    kept once, and cases are split into train and dev by a hash of the case id, so no case is in
    both. Writes ``train.jsonl``, ``dev.jsonl`` and ``manifest.json``.
    """
    if judge not in ("reference", "local"):
        raise ValueError("judge must be 'reference' or 'local'")
    if not 0 <= dev_share < 1:
        raise ValueError("dev_share must lie in [0, 1)")
    from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_logs

    logs = benchmark_logs(logs, CLINCONSENSUS)  # a folder or URL prefix: the ClinConsensus logs in it
    output = output_location(output)  # a local folder or a URL prefix
    make_folder(output)
    seen: set[str] = set()
    splits: dict[str, list[str]] = {"train": [], "dev": []}
    cases: dict[str, set[str]] = {"train": set(), "dev": set()}
    skipped = duplicates = 0
    judges: set[str] = set()
    templates: dict[tuple[str, str], Any] = {}
    for log in logs:
        for record in read_case_records(log):
            graded = record.graded
            template = judged_with(record, templates)
            verdicts = graded.roles.get(SECOND_ROLE) if judge == "local" else graded.headline
            judgments = verdicts.judgments if verdicts else ()
            judges.add(verdicts.judge if verdicts else "")
            case_id = graded.case_id
            bucket = int(hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
            split = "dev" if bucket < dev_share else "train"
            criteria = dict(record.rubrics)
            for j in judgments:
                if j.met is None or j.attempts == 0:  # failed, or an empty answer nobody judged
                    skipped += 1
                    continue
                text = criteria[j.criterion_id]
                messages = template.messages(record.question, record.answer, text) if template else per_criterion_messages(record.question, record.answer, text)
                verdict = json.dumps({"explanation": j.explanation, "criteria_met": j.met}, ensure_ascii=False)
                line = json.dumps({"case_id": case_id, "criterion_id": j.criterion_id,
                                   "messages": messages + [{"role": "assistant", "content": verdict}]}, ensure_ascii=False)
                digest = hashlib.sha256(json.dumps(messages + [verdict], ensure_ascii=False).encode()).hexdigest()
                if digest in seen:
                    duplicates += 1
                    continue
                seen.add(digest)
                splits[split].append(line)
                cases[split].add(case_id)
    files = {}
    for split, lines in splits.items():
        path, text = output / f"{split}.jsonl", "".join(line + "\n" for line in lines)
        write_text(path, text)
        files[split] = {"path": str(path), "records": len(lines), "cases": len(cases[split]), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}
    manifest = {
        "format": "chat messages (the per-criterion judge prompt each case was judged with, then the verdict JSON)",
        "judge_prompts": sorted({f"{name} sha256 {sha}" for name, sha in templates}),
        "judge": judge,
        "judge_models": sorted(j for j in judges if j),
        "sources": [{"path": str(p), "sha256": file_sha256(p)} for p in logs],
        "dev_share": dev_share,
        "seed": seed,
        "files": files,
        "skipped_failed_judgments": skipped,
        "duplicates_dropped": duplicates,
    }
    write_text(output / "manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    return manifest
