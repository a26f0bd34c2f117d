"""A release's numbers in the forms the Hugging Face Hub reads (``clinconsensus-eval publish``), made
only from runs the release gate passed (``gates.release_gate``) and only from the numbers it passed.

* ``.eval_results/<benchmark>-<metric>.yaml``: one file per headline metric (the Hub shows one
  variant of a score per file), each a list of one entry with the Hub's documented fields:
  ``dataset`` (``id``, the benchmark's Hub dataset; ``task_id``, its task as this project's
  ``eval.yaml`` names it; ``revision``, the hub commit the run read), ``value`` (the number
  ``summarize`` gives, the same float: :func:`gates.release_gate.headline_figures`), ``date`` (when
  the run started, ISO 8601), ``source`` (``url`` of the logs and a ``name``, when given) and
  ``notes`` (the metric and its scale, the 95% interval, k, the judge, its prompt's sha256, the task
  version, the data's revision and sha256, the gate's bar). Never ``verifyToken``: the Hub gives
  that to runs of its own jobs. A benchmark with no Hub dataset (CliMedBench, whose data is not
  public) gets no file unless a dataset id is named for it.
* ``model-index.yaml``: the ``model-index`` block of a model card's front matter (what the Hub shows
  for a benchmark it has not registered): per benchmark a result with ``task``, ``dataset`` and
  ``metrics``, to paste between the card's ``---`` lines.
* ``provenance.json``: what the numbers rest on: the gate's verdicts as ``summarize --strict --json``
  gives them, each run's provenance, and each number written with its interval and its file.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.dataset import HF_DATASET, is_commit
from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.gates.release_gate import BOOTSTRAP_RESAMPLES, GateResult, GateRun
from clinconsensus_tasks.log_files import CLIMEDBENCH, CLINCONSENSUS

EVAL_RESULTS = ".eval_results"
MODEL_INDEX_FILE = "model-index.yaml"
PROVENANCE_FILE = "provenance.json"
# The Hub datasets of the benchmarks (CliMedBench's data is not public: none), and each task's id as
# this project's eval.yaml names it (the Register entry: tasks clinconsensus, climedbench).
DATASET_IDS = {CLINCONSENSUS: HF_DATASET}
TASK_IDS = {CLINCONSENSUS: "clinconsensus", CLIMEDBENCH: "climedbench"}
TITLES = {CLINCONSENSUS: "ClinConsensus", CLIMEDBENCH: "CliMedBench"}
# What a reader of the model card must know of the set a number is on.
DATASET_NAMES = {CLINCONSENSUS: "ClinConsensus (public set: 900 low-difficulty cases)", CLIMEDBENCH: "CliMedBench"}
TASK_TYPE = "text-generation"
SOURCE_NAME = "Evaluation logs"


class PublishRefused(ClinConsensusError):
    """The runs cannot be published as one model's release (the gate's own refusals are its lines)."""


def metric_title(name: str) -> str:
    """``cacs@10`` -> ``CACS@10``, ``pass@7`` -> ``Pass@7``, ``rubric_accuracy`` -> ``rubric accuracy``."""
    if name.startswith("cacs@"):
        return name.upper()
    if name.startswith("pass@"):
        return "Pass@" + name.split("@", 1)[1]
    if name == "score":
        return "overall score"
    return name.replace("_", " ")


def file_name(benchmark: str, metric: str) -> str:
    """``clinconsensus-cacs-at-10.yaml``: the benchmark and the metric, in letters a URL keeps."""
    return f"{benchmark}-{re.sub(r'[^a-z0-9_]+', '-', metric.replace('@', '-at-')).strip('-')}.yaml"


@dataclass
class Number:
    """One number to publish: a headline metric of one run."""

    benchmark: str
    metric: str
    value: float
    low: float | None = None
    high: float | None = None
    file: str = ""  # under .eval_results/, when the benchmark has a Hub dataset


@dataclass
class Publication:
    """The files of one model's release, by path under the output folder, and the numbers in them."""

    files: dict[str, str] = field(default_factory=dict)
    numbers: list[Number] = field(default_factory=list)
    model: str = ""


def parse_date(text: str) -> str:
    """An ISO 8601 date or date and time as the user wrote it (``2026-01-15``, ``2026-01-15T10:30:00Z``);
    anything else a :class:`ClinConsensusError`."""
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00")) if "T" in text or " " in text else dt.date.fromisoformat(text)
    except ValueError:
        raise ClinConsensusError(f"--date {text!r}: not an ISO 8601 date or date and time (2026-01-15, "
                                 "2026-01-15T10:30:00Z)") from None
    return text


def run_date(where: str, framework: str) -> str | None:
    """When the run started, ISO 8601 (UTC for lm-eval): Inspect's ``eval.created``, lm-eval's
    results file's ``date``; ``None`` when the run's files do not say."""
    from clinconsensus_tasks.log_files import is_lmeval_results, lmeval_run_key, read_inspect_log
    from clinconsensus_tasks.storage import location, storage_errors

    path = location(where)
    if framework == "inspect":
        created = read_inspect_log(path, header_only=True).eval.created
        return str(created) if created else None
    results = path if is_lmeval_results(path) else path.with_name(f"results_{lmeval_run_key(path)[1]}.json")
    try:
        with storage_errors(results):
            stamp = json.loads(results.read_text(encoding="utf-8")).get("date")
    except (OSError, ValueError):
        return None
    if not isinstance(stamp, (int, float)):
        return None
    return dt.datetime.fromtimestamp(stamp, dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def publication(result: GateResult, *, dataset_ids: Mapping[str, str] | None = None, task_ids: Mapping[str, str] | None = None,
                source_url: str = "", source_name: str = "", date: str = "", model_name: str = "",
                dates: Mapping[str, str | None] | None = None) -> Publication:
    """The Hub's files for the runs of ``result``, every one of which the gate passed: one model, at
    most one run per benchmark. ``dataset_ids``/``task_ids`` by benchmark over the defaults;
    ``date`` over each run's own (``dates``, by run); ``model_name`` over the runs' model."""
    if not result.passed:
        failed = [run.verdict["run"] for run in result.runs if not run.passed]
        raise PublishRefused(f"nothing to publish: {len(failed)} of {len(result.runs)} run(s) fail the release gate "
                             f"({', '.join(failed[:3])}{', ...' if len(failed) > 3 else ''})")
    runs = _one_release(result.runs)
    datasets = {**DATASET_IDS, **(dataset_ids or {})}
    tasks = {**TASK_IDS, **(task_ids or {})}
    model = model_name or runs[0].provenance["model"]
    out = Publication(model=model)
    index_results = []
    for run in runs:
        benchmark = run.verdict["benchmark"]
        when = date or (dates or {}).get(run.verdict["run"]) or None
        numbers = _numbers(run)
        # The hub commit the run read (the Hub's revision is a commit hash; a local copy has none).
        revision = run.provenance.get("data_revision", "") if benchmark == CLINCONSENSUS else ""
        revision = revision if is_commit(revision) else ""
        dataset_id = datasets.get(benchmark, "")
        for number in numbers:
            if dataset_id:
                number.file = f"{EVAL_RESULTS}/{file_name(benchmark, number.metric)}"
                entry = eval_result_entry(dataset_id, tasks[benchmark], number.value, revision=revision or "", date=when or "",
                                          source_url=source_url, source_name=source_name, notes=notes(run, number, result.document))
                out.files[number.file] = yaml_text([entry])
        out.numbers += numbers
        index_results.append(model_index_result(run, numbers, dataset_id or benchmark, revision or "", source_url, source_name))
    out.files[MODEL_INDEX_FILE] = yaml_text({"model-index": [{"name": model, "results": index_results}]})
    out.files[PROVENANCE_FILE] = provenance_json(result, out, dates or {})
    return out


def _one_release(runs: Sequence[GateRun]) -> list[GateRun]:
    """The runs of one model's release: one model, one run per benchmark (the Hub holds one value of
    a score per model), else :class:`PublishRefused` naming them."""
    models = sorted({run.provenance["model"] for run in runs})
    if len(models) > 1:
        raise PublishRefused(f"runs of {len(models)} models ({', '.join(models)}): a model card holds one model's numbers; "
                             "publish each model's runs on their own")
    by_benchmark: dict[str, list[str]] = {}
    for run in runs:
        by_benchmark.setdefault(run.verdict["benchmark"], []).append(run.verdict["run"])
    several = {b: paths for b, paths in by_benchmark.items() if len(paths) > 1}
    if several:
        benchmark, paths = next(iter(several.items()))
        raise PublishRefused(f"{len(paths)} runs of {TITLES.get(benchmark, benchmark)} ({', '.join(paths)}): a model card holds "
                             "one value of each score; name the one run to publish (the Inspect log or the lm-eval output, "
                             "not both)")
    return sorted(runs, key=lambda run: list(TITLES).index(run.verdict["benchmark"]) if run.verdict["benchmark"] in TITLES else 99)


def _numbers(run: GateRun) -> list[Number]:
    """The headline numbers the gate passed the run with, as they are (the same floats)."""
    headline = run.verdict["headline"] or {}
    benchmark = run.verdict["benchmark"]
    return [Number(benchmark, name, figure["estimate"], figure.get("low"), figure.get("high")) for name, figure in headline.items()]


def eval_result_entry(dataset_id: str, task_id: str, value: float, *, revision: str = "", date: str = "", source_url: str = "",
                      source_name: str = "", notes: str = "") -> dict[str, Any]:
    """One entry of an ``.eval_results/*.yaml`` file, its fields in the Hub's documented order."""
    dataset = {"id": dataset_id, "task_id": task_id}
    if revision:
        dataset["revision"] = revision
    entry: dict[str, Any] = {"dataset": dataset, "value": value}
    if date:
        entry["date"] = date
    if source_url:
        entry["source"] = {"url": source_url, "name": source_name or SOURCE_NAME}
    if notes:
        entry["notes"] = notes
    return entry


def model_index_result(run: GateRun, numbers: Sequence[Number], dataset_type: str, revision: str, source_url: str,
                       source_name: str) -> dict[str, Any]:
    """One result of the card's ``model-index``: the task, the dataset and every headline metric."""
    benchmark = run.verdict["benchmark"]
    dataset: dict[str, Any] = {"name": DATASET_NAMES.get(benchmark, benchmark), "type": dataset_type}
    if revision:
        dataset["revision"] = revision
    out: dict[str, Any] = {
        "task": {"type": TASK_TYPE, "name": f"{TITLES.get(benchmark, benchmark)} ({run.provenance.get('task') or benchmark})"},
        "dataset": dataset,
        "metrics": [{"name": metric_title(n.metric), "type": n.metric, "value": n.value} for n in numbers],
    }
    if source_url:
        out["source"] = {"name": source_name or SOURCE_NAME, "url": source_url}
    return out


def notes(run: GateRun, number: Number, document: Mapping[str, Any]) -> str:
    """What a reader of the number must know: the metric and its scale, its interval, k, the judge and
    its prompt's sha256, the task version, the data's revision and sha256, and the gate it passed."""
    from clinconsensus_tasks import __version__

    p = run.provenance
    parts = []
    if number.benchmark == CLIMEDBENCH:
        parts.append(f"CliMedBench overall score (the unweighted mean of {len(p.get('scenarios') or [])} scenario scores, "
                     f"{p.get('items')} items, 0 to 1; no interval)")
    else:
        k = re.search(r"@(\d+)", number.metric)
        what = f"{metric_title(number.metric)}, k={k.group(1)} of N=30 criteria" if k else metric_title(number.metric)
        interval = ("no interval" if number.low is None or math.isnan(number.low) else
                    f"95% CI [{number.low:.4f}, {number.high:.4f}], case bootstrap, {BOOTSTRAP_RESAMPLES} resamples")
        parts.append(f"{what}; a fraction from 0 to 1 (the paper's tables: x100); {interval}; {p.get('cases')} cases")
        prompt = p.get("judge_prompt") or "not recorded"
        parts.append(f"judge {', '.join(p.get('judges') or []) or 'not recorded'} ({p.get('judge_mode')}, prompt {prompt}, "
                     f"sha256 {p.get('judge_prompt_sha256') or 'not recorded'})")
        revision = f" at revision {p['data_revision']}" if p.get("data_revision") else ""
        source = p.get("data_source") or "not recorded"
        if "://" not in source and source != "not recorded":  # a file of the machine that ran: its name, not the machine's paths
            source = re.split(r"[/\\]", source)[-1] + " (a local copy)"
        parts.append(f"data {source}{revision}, sha256 {p.get('data_sha256') or 'not recorded'}")
    framework = {"inspect": "Inspect", "lm-eval": "lm-evaluation-harness"}.get(p["framework"], p["framework"])
    parts.append(f"task {p.get('task')} version {p.get('task_version')} (clinconsensus-tasks {__version__}, {framework})")
    # The bar as the gate's verdict line prints it: a loosening flag shows there after EXCEPTIONS.
    parts.append(f"passed the release gate (clinconsensus-eval summarize --strict: {document['profile']})")
    return "; ".join(parts)


def provenance_json(result: GateResult, out: Publication, dates: Mapping[str, str | None]) -> str:
    """What the numbers rest on, as strict JSON."""
    from clinconsensus_tasks import __version__, json_output

    return json_output.dumps({
        "model": out.model,
        "package": {"clinconsensus-tasks": __version__},
        "gate": result.document,
        "runs": [{**run.provenance, "date": dates.get(run.verdict["run"])} for run in result.runs],
        "published": [{"benchmark": n.benchmark, "metric": n.metric, "value": n.value, "low": n.low, "high": n.high,
                       "file": n.file or None} for n in out.numbers],
    }) + "\n"


def yaml_text(data: Any) -> str:
    """YAML as the Hub's examples write it: keys in their order, UTF-8 text as it is, floats as
    Python writes them (the same float read back)."""
    import yaml

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
