"""``clinconsensus-eval``: what the frameworks' own commands do not do.

* ``summarize LOG...``: headline metrics and breakdowns (difficulty, subject, task label,
  audience) recomputed from an Inspect log or an lm-eval sample file, with any thresholds.
* ``validate [DATA]``: validate a ClinConsensus data file (or ``sample``/``hub``) and print counts.
* ``include-path``: the folder of the lm-eval YAMLs, for ``lm_eval --include_path``.
* ``train-simcse``: unsupervised SimCSE fine-tuning of a sentence-transformers model on a text
  corpus, to build CliMedBench's WTD similarity model.
* ``report``: one self-contained HTML report with charts, and a Markdown summary, from the logs of
  several models (see ``report``).
* ``robustness CLEAN_RUN VARIANT_RUN``: CliMedBench's score drop under a variant (perturbed, NOTA,
  CoT), per scenario and overall, items paired, with paired bootstrap intervals.
* ``compare``, ``agreement``, ``rescore``, ``export-sft``: judge agreement (two judges or two judge
  modes; judges against human labels), re-grading stored answers with another judge or mode, and
  SFT data for training a local judge (see ``judge_tools``).
"""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from collections import Counter
from typing import Sequence

from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import JUDGE_MODES, PER_CRITERION


def _thresholds(text: str) -> tuple[int, ...]:
    from clinconsensus_tasks.scorers.clinconsensus.cacs import parse_thresholds

    try:
        return parse_thresholds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _pct(x: float) -> str:
    return f"{100 * x:6.2f}"


def _pad(text: str, width: int) -> str:
    """Left-align ``text`` in ``width`` terminal columns (CJK characters take two)."""
    used = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
    return text + " " * max(1, width - used)


def _summarize(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.logs import read_case_records
    from clinconsensus_tasks.scorers.clinconsensus.cacs import breakdowns, summarize

    from clinconsensus_tasks.judge.tools import compare_logs

    report = {}
    for path in args.logs:
        records = read_case_records(path)
        rows = [r.result for r in records]
        report[path] = {
            "overall": summarize(rows, args.thresholds, args.n_criteria),
            "breakdowns": breakdowns(rows, args.thresholds, args.n_criteria),
        }
        if any(r.local_judgments for r in records):
            local_rows = [r.local_result for r in records]
            report[path]["local_judge"] = summarize(local_rows, args.thresholds, args.n_criteria)
            report[path]["local_judge_breakdowns"] = breakdowns(local_rows, args.thresholds, args.n_criteria)
            report[path]["agreement"] = {k: v for k, v in compare_logs(path, None, args.thresholds).items() if not k.startswith("other/")}
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    for path, result in report.items():
        overall = result["overall"]
        print(f"== {path}  ({int(overall['cases'])} cases, {int(overall['judge_failures'])} judge failures)")
        names = ["rubric_accuracy"] + [f"pass@{k}" for k in args.thresholds] + [f"cacs@{k}" for k in args.thresholds]
        print("   " + "  ".join(f"{n:>15}" for n in names))
        print("   " + "  ".join(f"{_pct(overall[n]):>15}" for n in names))
        for dim, labels in result["breakdowns"].items():
            print(f"-- by {dim}")
            cols = ["rubric_accuracy"] + [f"cacs@{k}" for k in args.thresholds]
            print(f"   {_pad('label', 24)}{'cases':>6}" + "".join(f"{c:>17}" for c in cols))
            for label, stats in labels.items():
                print(f"   {_pad(label, 24)}{int(stats['cases']):>6}" + "".join(f"{_pct(stats[c]):>17}" for c in cols))
        if "agreement" in result:
            print("-- two judges: local judge " + "  ".join(f"{n} {_pct(result['local_judge'][n])}" for n in names))
            for key, value in result["agreement"].items():
                print(f"   {key:<40}{value:10.4f}")
        print("(values in %)")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.clinconsensus.dataset import load_cases

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
    from clinconsensus_tasks.lmeval_tasks import task_configs_dir

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
    for name in ("base_url", "model", "api_key", "concurrency"):
        value = getattr(args, f"judge_{name}", None)
        if value is not None:
            env[f"CLINCONSENSUS_JUDGE_{name.upper()}"] = str(value)
    return JudgeSettings.from_env(env=env)


def _compare(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.judge.tools import compare_logs

    report = compare_logs(args.reference, args.other, args.thresholds)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        for key, value in report.items():
            print(f"{key:<48}{value:10.4f}")
    return 0


def _agreement(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.judge.tools import label_agreement

    report = label_agreement(args.labels, args.logs)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return 0
    for name, entry in report.items():
        print(f"== {name}: judge {entry['judge']}, {entry['labelled_criteria']} labelled criteria, {entry['judge_failures']} judge failures")
        cols = ["accuracy", "kappa", "macro_f1", "precision_met", "recall_met"]
        print(f"   {_pad('', 24)}" + "".join(f"{c:>14}" for c in cols))
        for label, stats in [("overall", entry["overall"]), *entry["by_subject"].items()]:
            print(f"   {_pad(label, 24)}" + "".join(f"{stats[c]:14.4f}" for c in cols))
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.judge.tools import rescore

    metrics = rescore(args.log, args.output, _judge_settings(args), args.judge_mode)
    print(json.dumps({"output": args.output, **metrics}, ensure_ascii=False, indent=2))
    return 0


def _export_sft(args: argparse.Namespace) -> int:
    from clinconsensus_tasks.judge.tools import export_sft

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="clinconsensus-eval", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("summarize", help="metrics and breakdowns from Inspect logs or lm-eval sample files")
    p.add_argument("logs", nargs="+", help="Inspect .eval/.json logs or lm-eval samples_clinconsensus_*.jsonl files")
    p.add_argument("--thresholds", type=_thresholds, default=(7, 10), help="k values for Pass@k and CACS@k (default 7,10)")
    p.add_argument("--n-criteria", type=int, default=30, help="expected criteria per case, N (default 30)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=_summarize)

    p = sub.add_parser("validate", help="validate a ClinConsensus data file")
    p.add_argument("data", nargs="?", default="sample", help="a .jsonl/.parquet path, 'sample' or 'hub' (default sample)")
    p.add_argument("--n-criteria", type=int, default=30)
    p.set_defaults(func=_validate)

    p = sub.add_parser("include-path", help="print the folder of the lm-eval task YAMLs")
    p.set_defaults(func=_include_path)

    p = sub.add_parser("compare", help="agreement of two judges (a dual-judge log) or of two logs of the same answers")
    p.add_argument("reference", help="Inspect log or lm-eval samples file (the reference judge)")
    p.add_argument("other", nargs="?", help="a second log of the same answers (another judge or judge mode)")
    p.add_argument("--thresholds", type=_thresholds, default=(7, 10))
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_compare)

    p = sub.add_parser("agreement", help="judges against reference (e.g. physician) verdicts")
    p.add_argument("--labels", required=True, help="JSONL of {case_id, criterion_id, criteria_met}")
    p.add_argument("logs", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_agreement)

    p = sub.add_parser("rescore", help="grade the answers in a log again with another judge or judge mode")
    p.add_argument("log", help="Inspect log (.eval/.json) or lm-eval samples file (.jsonl)")
    p.add_argument("--output", required=True, help="the new log, of the same kind")
    p.add_argument("--judge-mode", choices=JUDGE_MODES, default=PER_CRITERION)
    p.add_argument("--judge-base-url", help="default $CLINCONSENSUS_JUDGE_BASE_URL")
    p.add_argument("--judge-model", help="default $CLINCONSENSUS_JUDGE_MODEL")
    p.add_argument("--judge-api-key", help="default $CLINCONSENSUS_JUDGE_API_KEY")
    p.add_argument("--judge-concurrency", type=int)
    p.set_defaults(func=_rescore)

    p = sub.add_parser("export-sft", help="one judge's verdicts as chat SFT data (train/dev split by case)")
    p.add_argument("logs", nargs="+")
    p.add_argument("--output", required=True, help="folder for train.jsonl, dev.jsonl, manifest.json")
    p.add_argument("--judge", choices=["reference", "local"], default="reference")
    p.add_argument("--dev-share", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_export_sft)

    p = sub.add_parser("cat", help="adaptive testing on CliMedBench: calibrate a bank, run a model, synthesize examinees")
    cat = p.add_subparsers(dest="cat_command", required=True)
    q = cat.add_parser("calibrate", help="fit an item bank from per-item results of several models")
    q.add_argument("logs", nargs="+", help="Inspect climedbench logs, lm-eval samples_climedbench_*.jsonl files, synthesize records")
    q.add_argument("--output", required=True, help="the bank (JSON)")
    q.add_argument("--irt-model", choices=["3PL", "2PL", "1PL"], default="3PL")
    q.set_defaults(func=_cat)
    q = cat.add_parser("run", help="test one model adaptively (resumes from --output)")
    q.add_argument("--model", required=True, help="an Inspect model, e.g. openai/gpt-4.1 or vllm/Qwen/Qwen3-8B")
    q.add_argument("--bank", required=True)
    q.add_argument("--output", required=True, help="folder for state.json (resume) and result.json")
    q.add_argument("--data-dir", help="CliMedBench data directory (default: the bundled sample)")
    q.add_argument("--similarity-model", help="sentence-transformers model for WTD items")
    q.add_argument("--estimator", choices=["EAP", "MLE"], default="EAP")
    q.add_argument("--max-items", type=int, default=243, help="item budget (default 243, as in the paper)")
    q.add_argument("--se-threshold", type=float, help="stop once the ability's standard error is at most this")
    q.add_argument("--randomesque", type=int, default=1, help="exposure control: pick at random among the k most informative")
    q.add_argument("--seed", type=int, default=0)
    q.set_defaults(func=_cat)
    q = cat.add_parser("synthesize", help="synthetic examinees: generation -> debate -> reflection between two models")
    q.add_argument("--generator", required=True, help="Inspect model that answers and reflects")
    q.add_argument("--debater", required=True, help="Inspect model that challenges the answer")
    q.add_argument("--output", required=True, help="records (JSONL) for cat calibrate")
    q.add_argument("--data-dir")
    q.add_argument("--scenarios", help="comma-separated codes (default all)")
    q.add_argument("--limit", type=int, help="items per scenario")
    q.add_argument("--similarity-model")
    q.set_defaults(func=_cat)

    p = sub.add_parser("robustness", help="CliMedBench: paired score drop of a variant run (perturbed, nota, cot) against a clean run")
    p.add_argument("clean_run", help="clean run: Inspect log, lm-eval samples_climedbench_*.jsonl, or a folder of them")
    p.add_argument("variant_run", help="variant run of the same items and model, in the same forms")
    p.add_argument("--iterations", type=int, default=2000, help="paired bootstrap resamples (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table (default: table)")
    p.set_defaults(func=_robustness)

    from clinconsensus_tasks.report.html_report import add_report_arguments, main_report

    p = sub.add_parser("report", help="one self-contained HTML report with charts (and report.md) from logs of several models")
    add_report_arguments(p)  # logs..., --output (required), --markdown, --resamples 1000, --seed 0, --title
    p.set_defaults(func=main_report)

    p = sub.add_parser("train-simcse", help="unsupervised SimCSE fine-tuning of a sentence-transformers model")
    p.add_argument("--model", required=True, help="base model: hub id or folder (sentence-transformers or plain transformer)")
    p.add_argument("--corpus", required=True, help="text file, one passage per line")
    p.add_argument("--output", required=True, help="folder to save the fine-tuned model in")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=3e-5)
    p.add_argument("--max-seq-length", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=42)
    p.set_defaults(func=_train_simcse)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ClinConsensusError, FileNotFoundError, ValueError) as exc:
        print(f"clinconsensus-eval: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
