"""``clinconsensus-eval validate``: a ClinConsensus data file's counts; ``--release``: the public release's checks."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", nargs="?", default="sample", help="a .jsonl/.parquet path, sample or hub")
    p.add_argument("--n-criteria", type=int, default=30, help="expected criteria per case")
    p.add_argument("--release", metavar="FILE", help="check FILE (.jsonl) as the public release: 900 unique low-tier cases, "
                   "30 rubric items each, the ten published fields, no reference-answer or internal-looking fields; "
                   "contact-like strings listed for review (default: off, plain validation)")
    p.add_argument("--strict-contact", action="store_true", help="with --release: fail on contact-like strings too")
    p.add_argument("--report", metavar="PATH", help="with --release: also write the JSON report to PATH, a file or a URL (default: none)")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.dataset import load_cases

    if args.release:
        return _validate_release(args)

    loaded = load_cases(args.data, args.n_criteria)
    audience = Counter(c.audience for c in loaded.cases)
    print(f"{loaded.source}: {len(loaded.cases)} valid cases, {sum(len(c.rubrics) for c in loaded.cases)} criteria")
    print(f"  difficulty: {dict(Counter(c.difficulty for c in loaded.cases))}")
    print(f"  audience:   {dict(audience)}")
    print(f"  subjects:   {len({c.subject for c in loaded.cases})}, tasks: {len({c.task for c in loaded.cases})}")
    if loaded.sha256:
        print(f"  sha256:     {loaded.sha256}")
    return 0


def _validate_release(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.release import release_errors, release_report

    report = release_report(args.release)
    text = json.dumps(report, ensure_ascii=False, indent=2)
    print(text)
    if args.report:
        from clinconsensus_tasks.storage import output_location, write_text

        write_text(output_location(args.report), text + "\n")  # a local file or a URL
    errors = release_errors(report, args.strict_contact)
    if errors:
        print("release validation FAILED: " + "; ".join(errors), file=sys.stderr)
        return 1
    print("release validation passed", file=sys.stderr)
    return 0
