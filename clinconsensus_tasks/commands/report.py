"""``clinconsensus-eval report LOG...``: the HTML report and its Markdown summary
(``report.html_report.build_report``) from the runs of any number of models."""

from __future__ import annotations

import argparse

from clinconsensus_tasks import json_output
from clinconsensus_tasks.report.html_report import build_report
from clinconsensus_tasks.scorers.usage import parse_prices


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("logs", nargs="+", help="Inspect .eval/.json logs, lm-eval samples_clinconsensus*/samples_climedbench_*.jsonl "
                                                "and results_*.json files, or folders holding them (an Inspect log dir, an "
                                                "lm-eval output dir), of any number of models")
    parser.add_argument("--output", required=True, help="the HTML file to write (report.md is written beside it)")
    parser.add_argument("--markdown", help="where to write the Markdown summary (default: report.md beside --output)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of cases")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--title", default="ClinConsensus / CliMedBench results", help="the page title")
    parser.add_argument("--prices", action="append", default=[], metavar="[JUDGE=]IN,CACHED,OUT",
                        help="judge prices per million tokens (input, cached input, output), per judge or for all; repeatable (default: tokens only)")
    parser.add_argument("--baseline", help="a run (log file or folder) to compare every other run of its benchmark against, "
                                           "case by case as compare-models does (default: none)")
    parser.add_argument("--review", metavar="DIR", help="a physicians' review folder (review export, filled sheets): a section "
                                                        "with each judge against the physicians (default: none)")
    parser.add_argument("--runs-cache", metavar="DIR",
                        help="where the report keeps what it read of each run file, served again while the file is unchanged "
                             "(default: runs/ in the project's cache folder, $CLINCONSENSUS_CACHE_DIR or ~/.cache/clinconsensus_tasks)")
    parser.add_argument("--no-runs-cache", action="store_true", help="read every run file, keep nothing")
    parser.add_argument("--reliability", metavar="DIR", help="a check of the judges asked again (clinconsensus-eval reliability): "
                                                             "a section with each judge's flips and each headline's noise (default: none)")


def main(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.report.run_cache import RunCache, default_folder

    cache = None if getattr(args, "no_runs_cache", False) else RunCache(getattr(args, "runs_cache", None) or default_folder())
    info = build_report(args.logs, args.output, args.markdown, args.resamples, args.seed, args.title, getattr(args, "baseline", None),
                        parse_prices(getattr(args, "prices", None) or []), getattr(args, "review", None),
                        getattr(args, "reliability", None), cache)
    if cache is not None:  # how many run files were read, how many served unchanged from an earlier report
        info["runs_cache"] = {"folder": str(cache.folder), "read": cache.misses, "served": cache.hits}
    print(json_output.dumps(info))
    return 0
