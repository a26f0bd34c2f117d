"""``clinconsensus-eval``: what the frameworks' own commands do not do.

* ``demo``: everything end to end on the bundled samples against a built-in stand-in model and
  judge (no endpoint needed): both benchmarks, every installed framework, the report.
* ``summarize LOG...``: headline metrics and breakdowns (difficulty, subject, task label,
  audience) recomputed from an Inspect log or an lm-eval sample file, with any thresholds;
  ``--strict``: the release gate (see ``report.release_gate``), exit 1 unless every run is a release run.
* ``validate [DATA]``: validate a ClinConsensus data file (or ``sample``/``hub``) and print counts;
  ``validate --release FILE`` applies the public release's own checks.
* ``export-official LOG...``: verdicts as ``<model>_judge.json`` files for the official scorer.
* ``include-path``: the folder of the lm-eval YAMLs, for ``lm_eval --include_path``.
* ``train-simcse``: unsupervised SimCSE fine-tuning of a sentence-transformers model on a text
  corpus, to build CliMedBench's WTD similarity model.
* ``serve-stand-in``: the stand-in model and judge the demo and the tests use, as a server of its own.
* ``report``: one self-contained HTML report with charts, and a Markdown summary, from the logs of
  several models (see ``report``).
* ``estimate [DATA]``: judge calls and tokens of a run before it starts (see ``commands.estimate``).
* ``audit LOG``: an API judge grades a stratified sample of a local judge's run (see ``commands.audit``).
* ``compare-models BASELINE CANDIDATE``: the regression gate (see ``report.compare_models``).
* ``robustness CLEAN_RUN VARIANT_RUN``: CliMedBench's score drop under a variant (perturbed, NOTA,
  CoT), per scenario and overall, items paired, with paired bootstrap intervals.
* ``compare``, ``agreement``, ``rescore``, ``export-sft``: judge agreement (two judges or two judge
  modes; judges against human labels), re-grading stored answers with another judge or mode, and
  SFT data for training a local judge (see ``commands.tools``).
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections import Counter
from typing import Any, Sequence

from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import JudgeFailureError, JudgeUnavailableError
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import JUDGE_MODES, PER_CRITERION


def _thresholds(text: str) -> tuple[int, ...]:
    from clinconsensus_tasks.scorers.clinconsensus.cacs import parse_thresholds

    try:
        return parse_thresholds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _number(x: float, percent: bool) -> str:
    """A metric as the frameworks show it (a fraction), or in percent when asked."""
    return f"{100 * x:.2f}" if percent else f"{x:.4f}"


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 0 if unicodedata.combining(ch) else 1 for ch in text)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "   ") -> list[str]:
    """Lines of a table: first column left-aligned, the others right-aligned, each as wide as its
    widest cell in terminal columns, so rows stay aligned with Chinese labels."""
    table = [list(header), *(list(row) for row in rows)]
    widths = [max(display_width(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for row in table:
        cells = [cell + " " * (widths[i] - display_width(cell)) if i == 0 else " " * (widths[i] - display_width(cell)) + cell
                 for i, cell in enumerate(row)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _summarize(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.scorers.clinconsensus.cacs import breakdowns, summarize
    from clinconsensus_tasks.scorers.clinconsensus.metric_table import mean_names

    from clinconsensus_tasks.commands.tools import compare_records

    from clinconsensus_tasks.report.costs import judge_usage, usage_rows
    from clinconsensus_tasks.scorers.usage import parse_prices
    from clinconsensus_tasks.scorers.clinconsensus.jury import jury_summary
    from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE

    if args.strict:
        return _release_gate(args)
    prices = parse_prices(args.prices)
    report = {}
    all_records = {}
    for path in args.logs:
        records = all_records[path] = read_case_records(path)
        rows = [r.graded.result() for r in records]
        report[path] = {
            "overall": summarize(rows, args.thresholds, args.n_criteria),
            "breakdowns": breakdowns(rows, args.thresholds, args.n_criteria),
            "judge_usage": usage_rows(judge_usage([r.graded for r in records]), prices),
        }
        if any(r.graded.dual for r in records):
            local_rows = [r.graded.role_result(SECOND_ROLE) for r in records]
            report[path]["local_judge"] = summarize(local_rows, args.thresholds, args.n_criteria)
            report[path]["local_judge_breakdowns"] = breakdowns(local_rows, args.thresholds, args.n_criteria)
            compared = compare_records(records, None, args.thresholds, args.n_criteria, where=path)  # the records read above, once
            report[path]["agreement"] = {k: v for k, v in compared.items() if not k.startswith("other/")}
        panel = jury_summary([r.graded for r in records], args.thresholds, args.n_criteria)
        if panel:
            report[path]["jury"] = panel
    if args.csv:
        from clinconsensus_tasks.report.csv_export import write_csv

        written = write_csv(args.csv, all_records, args.thresholds, args.n_criteria, prices)
        print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    num = lambda x: _number(x, args.percent)  # noqa: E731
    for path, result in report.items():
        overall = result["overall"]
        print(f"== {path}  ({int(overall['cases'])} cases, {int(overall['judge_failures'])} judge failures)")
        names = mean_names(args.thresholds)
        print("\n".join(format_table(["", *names], [["overall", *(num(overall[n]) for n in names)]])))
        for dim, labels in result["breakdowns"].items():
            print(f"-- by {dim}")
            rows = [[label, str(int(stats["cases"])), *(num(stats[c]) for c in names)] for label, stats in labels.items()]
            print("\n".join(format_table(["label", "cases", *names], rows)))
        if "agreement" in result:
            print("-- two judges: local judge " + "  ".join(f"{n} {num(result['local_judge'][n])}" for n in names))
            print("\n".join(format_table(["agreement", "value"], [[k, f"{v:.4f}"] for k, v in result["agreement"].items()])))
        if "jury" in result:
            print("\n".join(_jury_lines(result["jury"], names, num)))
        for row in result["judge_usage"]:
            cost = "" if row["cost"] is None else f", cost {row['cost']:.4f}"
            print(f"-- judge {row['judge']}: {row['calls']} calls, {row['prompt_tokens']} prompt tokens "
                  f"({row['cached_prompt_tokens']} cached), {row['completion_tokens']} completion tokens{cost}")
        print("(values in %)" if args.percent else "(fractions, as the frameworks report them; --percent for %)")
    return 0


def _jury_lines(jury: dict, names: Sequence[str], num) -> list[str]:
    interval = lambda k: f"{k['estimate']:.3f} [{k['low']:.3f}, {k['high']:.3f}]"  # noqa: E731
    lines = [f"-- jury of {len(jury['jurors'])} (strict majority, at least {jury['min_votes']} usable votes): the headline is "
             f"the panel's verdicts, not the single-judge official protocol; fleiss_kappa {interval(jury['fleiss_kappa'])}"]
    rows = [[f"{j['role']} {j['judge']}", *(num(j[n]) for n in names), str(int(j["judge_failures"]))] for j in jury["jurors"]]
    lines += format_table(["juror", *names, "failures"], rows)
    lines += [f"   kappa {pair} {interval(k)}" for pair, k in jury["pairwise_kappa"].items()]
    return lines


def _release_gate(args: argparse.Namespace) -> int:
    """``summarize --strict``: one line per problem, naming the run; exit 1 if there is any.
    The bar is the release profile (``report.release_gate``), loosened only by this command's own
    flags, never by the environment; each verdict line says what it accepted."""
    from clinconsensus_tasks.errors import ConfigurationError
    from clinconsensus_tasks.report.release_gate import RELEASE_FAILURE_SHARE, ReleaseBar, gate_runs, run_problems
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import parse_failure_share
    from clinconsensus_tasks.scorers.redact import redact

    share = RELEASE_FAILURE_SHARE if args.judge_failure_threshold is None else parse_failure_share(
        args.judge_failure_threshold, "--judge-failure-threshold")
    try:
        bar = ReleaseBar(share, (args.data_sha256 or "").strip().lower(), tuple(args.allow_prompt))
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    runs = gate_runs(args.logs)
    if not runs:
        print(f"no run to check in {', '.join(args.logs)} (Inspect logs or lm-eval results/samples files)", file=sys.stderr)
        return 1
    failed = 0
    for read in runs:
        facts = read()
        problems = run_problems(facts, bar)
        failed += bool(problems)
        for problem in problems:
            print(f"FAIL {facts.where}: {redact(problem)}")
        if not problems:
            print(f"ok   {facts.where}: {bar.accepts()}")
    print(f"{len(runs) - failed} of {len(runs)} run(s) pass the {bar.accepts()}", file=sys.stderr)
    return 1 if failed else 0


def _validate_release(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.release import release_errors, release_report

    report = release_report(args.release)
    text = json.dumps(report, ensure_ascii=False, indent=2)
    print(text)
    if args.report:
        from pathlib import Path

        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(text + "\n", encoding="utf-8")
    errors = release_errors(report, args.strict_contact)
    if errors:
        print("release validation FAILED: " + "; ".join(errors), file=sys.stderr)
        return 1
    print("release validation passed", file=sys.stderr)
    return 0


def _export_official(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.official_export import export_official

    written = export_official(args.logs, args.output, args.data, args.epoch, args.n_criteria)
    print(json.dumps(written, ensure_ascii=False, indent=2))
    return 0


def _validate(args: argparse.Namespace) -> int:
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


def _include_path(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.lmeval_glue import task_configs_dir

    print(task_configs_dir())
    return 0


def _train_simcse(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.climedbench.simcse import train_simcse

    manifest = train_simcse(
        args.model, args.corpus, args.output, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.learning_rate, max_seq_length=args.max_seq_length, temperature=args.temperature, seed=args.seed,
    )
    print(json.dumps(manifest, ensure_ascii=False, indent=2))
    print(f"saved to {args.output}; use it with -T similarity_model={args.output} or CLIMEDBENCH_SIMILARITY_MODEL={args.output}")
    return 0


def _judge_settings(args: argparse.Namespace):
    import os

    from clinconsensus_tasks.judge.client import JudgeSettings

    env = dict(os.environ)
    for name in ("base_url", "model", "api_key", "concurrency", "failure_threshold"):
        value = getattr(args, f"judge_{name}", None)
        if value is not None:
            env[f"CLINCONSENSUS_JUDGE_{name.upper()}"] = str(value)
    return JudgeSettings.from_env(env=env)


def _compare(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.commands.tools import compare_logs

    report = compare_logs(args.reference, args.other, args.thresholds, args.n_criteria)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        print("\n".join(format_table(["metric", "value"], [[k, f"{v:.4f}"] for k, v in report.items()], indent="")))
    return 0


def _agreement(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.commands.tools import label_agreement

    report = label_agreement(args.labels, args.logs)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    for name, entry in report.items():
        print(f"== {name}: judge {entry['judge']}, {entry['labelled_criteria']} labelled criteria, {entry['judge_failures']} judge failures")
        cols = ["accuracy", "kappa", "macro_f1", "precision_met", "recall_met"]
        rows = [[label, *(f"{stats[c]:.4f}" for c in cols)] for label, stats in [("overall", entry["overall"]), *entry["by_subject"].items()]]
        print("\n".join(format_table(["", *cols], rows)))
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.commands.tools import rescore

    metrics = rescore(args.log, args.output, _judge_settings(args), args.judge_mode)
    print(json.dumps({"output": args.output, **metrics}, ensure_ascii=False, indent=2))
    return 0


def _export_sft(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.commands.tools import export_sft

    manifest = export_sft(args.logs, args.output, args.judge, args.dev_share, args.seed)
    print(json.dumps(manifest, ensure_ascii=False, indent=2))
    return 0


def _cat(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.adaptive import commands as cat_commands

    if args.cat_command == "calibrate":
        bank = cat_commands.calibrate(args.logs, args.output, args.irt_model)
        print(json.dumps({"output": args.output, "items": len(bank), "model": bank.model,
                          "models": bank.provenance.get("models")}, ensure_ascii=False, indent=2))
    elif args.cat_command == "run":
        result = cat_commands.run_adaptive(
            args.model, args.bank, args.output, data_dir=args.data_dir, similarity_model=args.similarity_model,
            estimator=args.estimator, max_items=args.max_items, se_threshold=args.se_threshold,
            randomesque=args.randomesque, seed=args.seed,
        )
        print(json.dumps({k: result[k] for k in ("model", "theta", "se", "items_used", "stop_reason", "predicted_overall", "predicted_scores")},
                         ensure_ascii=False, indent=2))
    else:
        counts = cat_commands.synthesize(args.generator, args.debater, args.output, data_dir=args.data_dir,
                                         scenarios=args.scenarios.split(",") if args.scenarios else None, limit=args.limit,
                                         similarity_model=args.similarity_model)
        print(json.dumps({"output": args.output, **counts}, indent=2))
    return 0


def _robustness(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.climedbench.robustness import format_robustness, robustness

    report = robustness(args.clean_run, args.variant_run, args.iterations, args.seed)
    print(json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_robustness(report))
    return 0


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default. Options whose default is ``None`` say in their own
    words what happens when they are left out (an environment variable, "all", ...)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or action.default in (None, argparse.SUPPRESS) or action.required:
            return text
        if not action.option_strings and action.nargs not in ("?", "*"):
            return text
        if action.default is False:
            return f"{text} (default: off)"
        if isinstance(action.default, (list, tuple)):
            return f"{text} (default: {','.join(map(str, action.default))})"
        return f"{text} (default: %(default)s)"


def plain(text: str) -> str:
    """Docstring text for a terminal: reST backticks removed."""
    return text.replace("``", "").replace("`", "")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clinconsensus-eval", description=plain(__doc__.split("\n\n")[0]), formatter_class=HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(parent: Any, name: str, text: str) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".", formatter_class=HelpFormatter)

    def thresholds(p: argparse.ArgumentParser) -> None:
        p.add_argument("--thresholds", type=_thresholds, default="7,10", help="k values for Pass@k and CACS@k, comma-separated")

    p = command(sub, "demo", "run both benchmarks in every installed framework against a built-in stand-in model and judge "
                             "(no endpoint needed), write the report and print the commands for a real model")
    from clinconsensus_tasks.demo import add_demo_arguments, main_demo

    add_demo_arguments(p)
    p.set_defaults(func=main_demo)

    p = command(sub, "summarize", "ClinConsensus metrics and breakdowns from Inspect logs or lm-eval sample files")
    p.add_argument("logs", nargs="+", help="Inspect .eval/.json logs or lm-eval samples_clinconsensus_*.jsonl files")
    thresholds(p)
    p.add_argument("--n-criteria", type=int, default=30, help="expected criteria per case, N")
    p.add_argument("--percent", action="store_true", help="print metrics in percent instead of fractions (the frameworks' scale)")
    p.add_argument("--json", action="store_true", help="print JSON (fractions) instead of tables")
    p.add_argument("--prices", action="append", default=[], metavar="[JUDGE=]IN,CACHED,OUT",
                   help="judge prices per million tokens (input, cached input, output), per judge or for all; repeatable "
                        "(default: tokens only, no cost)")
    p.add_argument("--csv", metavar="DIR", help="also write cases.csv and summary.csv to DIR (default: none)")
    p.add_argument("--strict", action="store_true",
                   help="the release gate instead of tables: exit 1 unless every run is a release run: finished, the current "
                        "task version, the public data at the pinned revision, every case, an independent judge named by the run, "
                        "the official prompt per criterion, at most 1%% failed judgments (CliMedBench: unparseable answers), no "
                        "suspect answer, header numbers equal to the records' (inspect eval itself exits 0 whatever the status). "
                        "No environment variable changes the bar; the flags below do, and the verdict line prints them")
    p.add_argument("--judge-failure-threshold", metavar="SHARE",
                   help="with --strict: accept this share of failed judgments (default 0.01; another value is printed as an exception)")
    p.add_argument("--allow-prompt", action="append", default=[], metavar="NAME",
                   help="with --strict: accept this judge prompt or judge mode besides the official prompt per criterion, or "
                        "'jury' for a jury's majority (repeatable; printed as an exception; default: the official one only)")
    p.add_argument("--data-sha256", metavar="SHA",
                   help="with --strict: the run read a copy of the public file with this sha256 instead of the hub at the "
                        "pinned revision (printed on the verdict line; default: the hub data at the pinned revision)")
    p.set_defaults(func=_summarize)

    p = command(sub, "validate", "validate a ClinConsensus data file and print its counts")
    p.add_argument("data", nargs="?", default="sample", help="a .jsonl/.parquet path, sample or hub")
    p.add_argument("--n-criteria", type=int, default=30, help="expected criteria per case")
    p.add_argument("--release", metavar="FILE", help="check FILE (.jsonl) as the public release: 900 unique low-tier cases, "
                   "30 rubric items each, the ten published fields, no reference-answer or internal-looking fields; "
                   "contact-like strings listed for review (default: off, plain validation)")
    p.add_argument("--strict-contact", action="store_true", help="with --release: fail on contact-like strings too")
    p.add_argument("--report", metavar="PATH", help="with --release: also write the JSON report to PATH (default: none)")
    p.set_defaults(func=_validate)

    p = command(sub, "export-official", "verdicts as <model>_judge.json files for the official eval_cacs.py")
    p.add_argument("logs", nargs="+", help="Inspect .eval/.json logs or lm-eval samples_clinconsensus_*.jsonl files, one per model")
    p.add_argument("--output", required=True, help="folder for the <model>_judge.json files (eval_cacs.py --judgements-dir)")
    p.add_argument("--data", help="the data file given to eval_cacs.py --data: entries follow its case order and must cover "
                   "all its cases (default: the run's own case order)")
    p.add_argument("--epoch", type=int, default=1, help="which epoch of a multi-epoch run to export")
    p.add_argument("--n-criteria", type=int, default=30, help="expected criteria per case in --data")
    p.set_defaults(func=_export_official)

    p = command(sub, "include-path", "print the folder of the lm-eval task YAMLs (for lm_eval --include_path)")
    p.set_defaults(func=_include_path)

    p = command(sub, "compare", "agreement of two judges (a dual-judge log) or of two logs of the same answers")
    p.add_argument("reference", help="Inspect log or lm-eval samples file (the reference judge)")
    p.add_argument("other", nargs="?", help="a second log of the same answers (another judge or judge mode); "
                                           "default: the second judge of a dual-judge reference log")
    thresholds(p)
    p.add_argument("--n-criteria", type=int, default=30, help="criteria per case (N in CACS@k)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_compare)

    p = command(sub, "agreement", "judges against reference (e.g. physician) verdicts")
    p.add_argument("--labels", required=True, help="JSONL of {case_id, criterion_id, criteria_met}")
    p.add_argument("logs", nargs="+", help="Inspect logs or lm-eval samples files graded by the judges to check")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_agreement)

    p = command(sub, "rescore", "grade the answers in a log again with another judge or judge mode; the judge failure "
                                "policy applies as in the frameworks (exit 1 and no output when too many judgments fail)")
    p.add_argument("log", help="Inspect log (.eval/.json) or lm-eval samples file (.jsonl)")
    p.add_argument("--output", required=True, help="the new log, of the same kind")
    p.add_argument("--judge-mode", choices=JUDGE_MODES, default=PER_CRITERION, help="one judge call per criterion, or one per case")
    p.add_argument("--judge-base-url", help="OpenAI-compatible judge endpoint; default $CLINCONSENSUS_JUDGE_BASE_URL")
    p.add_argument("--judge-model", help="judge model name; default $CLINCONSENSUS_JUDGE_MODEL")
    p.add_argument("--judge-api-key", help="judge API key; default $CLINCONSENSUS_JUDGE_API_KEY, else EMPTY")
    p.add_argument("--judge-concurrency", type=int, help="judge requests in flight; default $CLINCONSENSUS_JUDGE_CONCURRENCY, else 32")
    p.add_argument("--judge-failure-threshold", help="share of failed judgments that stops the command (0.01 or 1%%; 0 = never); "
                                                     "default $CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD, else 0.01")
    p.set_defaults(func=_rescore)

    p = command(sub, "export-sft", "one judge's verdicts as chat SFT data (train/dev split by case)")
    p.add_argument("logs", nargs="+", help="Inspect logs or lm-eval samples files")
    p.add_argument("--output", required=True, help="folder for train.jsonl, dev.jsonl, manifest.json")
    p.add_argument("--judge", choices=["reference", "local"], default="reference", help="whose verdicts: the grader or the local_grader")
    p.add_argument("--dev-share", type=float, default=0.1, help="share of cases held out as dev")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/dev split")
    p.set_defaults(func=_export_sft)

    p = command(sub, "cat", "adaptive testing on CliMedBench: calibrate a bank, run a model, synthesize examinees")
    cat = p.add_subparsers(dest="cat_command", required=True, metavar="STEP")
    q = command(cat, "calibrate", "fit an item bank from per-item results of several models")
    q.add_argument("logs", nargs="+", help="Inspect climedbench logs, lm-eval samples_climedbench_*.jsonl files, synthesize records")
    q.add_argument("--output", required=True, help="the bank (JSON)")
    q.add_argument("--irt-model", choices=["3PL", "2PL", "1PL"], default="3PL", help="item response model")
    q.set_defaults(func=_cat)
    q = command(cat, "run", "test one model adaptively (resumes from --output)")
    q.add_argument("--model", required=True, help="an Inspect model, e.g. openai/gpt-4.1 or vllm/Qwen/Qwen3-8B")
    q.add_argument("--bank", required=True, help="the item bank from cat calibrate")
    q.add_argument("--output", required=True, help="folder for state.json (resume) and result.json")
    q.add_argument("--data-dir", help="CliMedBench data directory (default: the bundled sample)")
    q.add_argument("--similarity-model", help="sentence-transformers model for WTD items; default $CLIMEDBENCH_SIMILARITY_MODEL")
    q.add_argument("--estimator", choices=["EAP", "MLE"], default="EAP", help="ability estimator")
    q.add_argument("--max-items", type=int, default=243, help="item budget (243 in the paper)")
    q.add_argument("--se-threshold", type=float, help="stop once the ability's standard error is at most this (default: no such stop)")
    q.add_argument("--randomesque", type=int, default=1, help="exposure control: pick at random among the k most informative items")
    q.add_argument("--seed", type=int, default=0, help="seed of the randomesque choice")
    q.set_defaults(func=_cat)
    q = command(cat, "synthesize", "synthetic examinees: generation, debate and reflection between two models")
    q.add_argument("--generator", required=True, help="Inspect model that answers and reflects")
    q.add_argument("--debater", required=True, help="Inspect model that challenges the answer")
    q.add_argument("--output", required=True, help="records (JSONL) for cat calibrate")
    q.add_argument("--data-dir", help="CliMedBench data directory (default: the bundled sample)")
    q.add_argument("--scenarios", help="comma-separated codes (default: all 14)")
    q.add_argument("--limit", type=int, help="items per scenario (default: all)")
    q.add_argument("--similarity-model", help="sentence-transformers model for WTD items; default $CLIMEDBENCH_SIMILARITY_MODEL")
    q.set_defaults(func=_cat)

    from clinconsensus_tasks.report.html_report import add_report_arguments, main_report

    p = command(sub, "robustness", "CliMedBench: paired score drop of a variant run (perturbed, nota, cot) against a clean run")
    p.add_argument("clean_run", help="clean run: Inspect log, lm-eval samples_climedbench_*.jsonl, or a folder of them")
    p.add_argument("variant_run", help="variant run of the same items and model, in the same forms")
    p.add_argument("--iterations", type=int, default=2000, help="paired bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_robustness)

    p = command(sub, "report", "one self-contained HTML report with charts (and report.md) from the logs of several models")
    add_report_arguments(p)
    p.set_defaults(func=main_report)

    from clinconsensus_tasks.report.compare_models import add_arguments as add_compare_arguments, main_compare

    p = command(sub, "compare-models", "regression gate: two runs case by case, paired intervals and p-values, exit 1 if worse")
    add_compare_arguments(p)
    p.set_defaults(func=main_compare)

    from clinconsensus_tasks.stand_in import MODEL_NAMES_HELP, add_server_arguments, serve

    p = command(sub, "serve-stand-in", "serve the project's stand-in model and judge (an OpenAI-compatible server on "
                                       "127.0.0.1, the one the demo and the tests use) to try commands without an endpoint")
    add_server_arguments(p)
    p.epilog = MODEL_NAMES_HELP
    p.formatter_class = type("Formatter", (HelpFormatter, argparse.RawDescriptionHelpFormatter), {})
    p.set_defaults(func=serve)

    from clinconsensus_tasks.commands.estimate import add_arguments as add_estimate_arguments, main_estimate

    p = command(sub, "estimate", "judge calls and tokens (and cost with --prices) of a ClinConsensus run, before running it")
    add_estimate_arguments(p)
    p.set_defaults(func=main_estimate)

    from clinconsensus_tasks.commands.audit import add_arguments as add_audit_arguments, main_audit

    p = command(sub, "audit", "an API judge grades a stratified sample of a local judge's run: kappa, and the API judge's metrics estimated")
    add_audit_arguments(p)
    p.add_argument("--judge-base-url", help="the API judge's endpoint; default $CLINCONSENSUS_JUDGE_BASE_URL")
    p.add_argument("--judge-model", help="the API judge's model name; default $CLINCONSENSUS_JUDGE_MODEL")
    p.set_defaults(func=lambda args: main_audit(args, lambda: _judge_settings(args)))

    p = command(sub, "train-simcse", "unsupervised SimCSE fine-tuning of a sentence-transformers model (for WTD similarity)")
    p.add_argument("--model", required=True, help="base model: hub id or folder (sentence-transformers or plain transformer)")
    p.add_argument("--corpus", required=True, help="text file, one passage per line")
    p.add_argument("--output", required=True, help="folder to save the fine-tuned model in")
    p.add_argument("--epochs", type=int, default=1, help="passes over the corpus")
    p.add_argument("--batch-size", type=int, default=64, help="passages per batch (in-batch negatives)")
    p.add_argument("--learning-rate", type=float, default=3e-5, help="AdamW learning rate")
    p.add_argument("--max-seq-length", type=int, default=128, help="tokens per passage")
    p.add_argument("--temperature", type=float, default=0.05, help="contrastive loss temperature")
    p.add_argument("--seed", type=int, default=42, help="random seed")
    p.set_defaults(func=_train_simcse)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ClinConsensusError, FileNotFoundError, ValueError) as exc:
        print(f"clinconsensus-eval: error: {exc}", file=sys.stderr)
        return 2
    except (JudgeFailureError, JudgeUnavailableError) as exc:  # the failure policy stopped a command that judges
        print(f"clinconsensus-eval: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
