"""``clinconsensus-eval publish RUN... --output DIR``: a model's release in the forms the Hugging Face Hub
reads, from runs the release gate passes (``gates.publication``).

The command runs the release gate itself, with the bar and the flags of ``summarize --strict``
(``commands.gate_options``, ``gates.release_gate``) and prints its lines; a run it refuses refuses the
whole release (exit 1, the gate's reasons, nothing written). Otherwise it writes, under DIR (a
folder or a URL prefix), ``.eval_results/<benchmark>-<metric>.yaml`` for each headline metric of a
benchmark with a Hub dataset, ``model-index.yaml`` (the card's front matter block) and
``provenance.json``, each file whole or not at all, and lists them.
"""

from __future__ import annotations

import argparse
import sys

from clinconsensus_tasks.commands.gate_options import add_gate_arguments, gate_bar, shown_problems


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="the release's runs: Inspect logs, lm-eval output folders or files, or folders holding them (one model, "
                        "one run per benchmark); local paths or URLs")
    p.add_argument("--output", required=True, metavar="DIR",
                   help="folder or URL prefix for .eval_results/*.yaml, model-index.yaml and provenance.json")
    p.add_argument("--source-url", metavar="URL", default="",
                   help="where the runs' logs can be read (the Hub's source.url: a dataset of logs, a bucket's browser page; "
                        "default: no source)")
    p.add_argument("--source-name", metavar="NAME", default="",
                   help=f"the source's display name (default: '{_source_name()}' when --source-url is given)")
    p.add_argument("--dataset-id", action="append", default=[], metavar="BENCHMARK=ID",
                   help="the Hub dataset of a benchmark (repeatable; default: clinconsensus=skylenage/ClinConsensus; CliMedBench "
                        "has none, so it gets model-index only unless named, e.g. climedbench=ORG/NAME)")
    p.add_argument("--task-id", action="append", default=[], metavar="BENCHMARK=ID",
                   help="the task id within a benchmark's Hub dataset (repeatable; default: the benchmark's name, as eval.yaml names it)")
    p.add_argument("--date", metavar="ISO", default="",
                   help="the evaluation's date, ISO 8601 (default: when each run started, as its files record it)")
    p.add_argument("--model-name", metavar="NAME", default="",
                   help="the model's name in model-index (default: the runs' model, as the gate names it)")
    add_gate_arguments(p)


def _source_name() -> str:
    from clinconsensus_tasks.gates.publication import SOURCE_NAME

    return SOURCE_NAME


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.gates.publication import TITLES

    out = {}
    for value in values:
        benchmark, sep, ident = value.partition("=")
        benchmark = benchmark.strip().lower()
        if not sep or not ident.strip() or benchmark not in TITLES:
            raise ConfigurationError(f"{flag} {value!r}: expected BENCHMARK=ID, BENCHMARK one of {', '.join(TITLES)}")
        out[benchmark] = ident.strip()
    return out


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.gates.publication import PublishRefused, parse_date, publication, run_date
    from clinconsensus_tasks.gates.release_gate import release_gate
    from clinconsensus_tasks.gates.release_outputs import write_output
    from clinconsensus_tasks.storage import output_location

    if args.source_name and not args.source_url:
        raise ConfigurationError("--source-name needs --source-url (the Hub requires a source's url)")
    if args.source_url and "://" not in args.source_url:
        raise ConfigurationError(f"--source-url {args.source_url!r}: a URL (https://...)")
    dataset_ids, task_ids = _pairs(args.dataset_id, "--dataset-id"), _pairs(args.task_id, "--task-id")
    date = parse_date(args.date) if args.date else ""
    bar = gate_bar(args)
    result = release_gate(args.runs, bar, args.review, args.reliability, say=print, shown_problems=shown_problems())
    print(result.summary(), file=sys.stderr)
    if not result.passed:
        if result.runs:
            print("publish: nothing written: a release is published only from runs the release gate passes (the FAIL "
                  "lines above say what to run instead)", file=sys.stderr)
        return 1
    dates = {} if date else {run.verdict["run"]: run_date(run.verdict["run"], run.verdict["framework"]) for run in result.runs}
    try:
        made = publication(result, dataset_ids=dataset_ids, task_ids=task_ids, source_url=args.source_url,
                           source_name=args.source_name, date=date, model_name=args.model_name, dates=dates)
    except PublishRefused as exc:
        print(f"publish: nothing written: {exc}", file=sys.stderr)
        return 1
    folder = output_location(args.output)
    for relative, text in made.files.items():
        target = folder.joinpath(*relative.split("/"))
        write_output(target, text)
        print(f"wrote {target}")
    return 0
