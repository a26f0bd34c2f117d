"""Judge calls and tokens for the public ClinConsensus release (900 cases x 30 criteria), both modes.

The real file cannot be downloaded on an offline machine, so this writes a synthetic 900-case
file shaped like it: the bundled sample's 12 cases (30 criteria each, their question and rubric
lengths) repeated under new case ids, then runs ``clinconsensus-eval estimate`` on it. Usage:

    python bench/estimate_public.py [--answer-chars 1500] [--tokenizer o200k_base] [--prices 2,0.5,8]

Prints the estimate's own output. With the real file, run ``clinconsensus-eval estimate hub``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import read_jsonl, sample_path


def synthetic_public_file(folder: Path, cases: int = 900) -> Path:
    rows = [record for _, record in read_jsonl(sample_path())]
    path = folder / "clinconsensus_900_synthetic.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for i in range(cases):
            handle.write(json.dumps({**rows[i % len(rows)], "case_id": f"SYN900-{i:04d}"}, ensure_ascii=False) + "\n")
    questions = [len(r["clinical_context"]) + len(r["user_request"]) for r in rows]
    criteria = [len(c["criterion"]) for r in rows for c in r["rubrics"]]
    print(f"synthetic file: {cases} cases; question {statistics.mean(questions):.0f} characters on average, "
          f"criterion {statistics.mean(criteria):.0f}; {len(rows[0]['rubrics'])} criteria per case")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answer-chars", default="1500")
    parser.add_argument("--tokenizer")
    parser.add_argument("--prices", action="append", default=[])
    parser.add_argument("--judge-prompt", help="official, project or a template file (default: as the run, official)")
    parser.add_argument("--models", default="1", help="models in the campaign (default 1)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = synthetic_public_file(Path(tmp))
        extra = (["--tokenizer", args.tokenizer] if args.tokenizer else []) + [x for p in args.prices for x in ("--prices", p)]
        extra += (["--judge-prompt", args.judge_prompt] if args.judge_prompt else []) + ["--models", args.models]
        cli_main(["estimate", str(data), "--answer-chars", args.answer_chars, *extra])


if __name__ == "__main__":
    main()
