"""CliMedBench items in framework logs: how an item is written into each framework's log, and read back.

Writing: the Inspect scorer logs :func:`score_fields` as its ``Score``; lm-eval's
``process_results`` returns :func:`lmeval_metrics`. Reading: :func:`read_item_log`, the one reader
that calibration, the report, ``compare-models`` and ``robustness`` share (which files make a run:
``clinconsensus_tasks.log_files``).

An Inspect log (``.eval`` or ``.json`` of a ``climedbench*`` task) and an lm-eval sample file
(``samples_climedbench_*.jsonl`` written by ``--log_samples``) both hold, per item, the scenario,
the answer and its score. :func:`read_item_log` turns either into an :class:`ItemLog` of
:class:`~clinconsensus_tasks.scorers.climedbench.item_result.ItemResult`, which adaptive-testing
calibration and the report both use.

Unscored samples. Inspect leaves a sample without a score when it errored (for example under
``--no-fail-on-error``); a hand-edited or truncated lm-eval file can lack a metric value. Such a
sample is never dropped silently: the reader lists it in :attr:`ItemLog.unscored` (file, sample,
epoch, why), and each caller decides by what a missing item does to its numbers:

* calibration (``cat calibrate``) keeps the item as a missing response (IRT needs no complete
  matrix) and prints one warning per unscored sample naming file and sample
  (:meth:`ItemLog.warn_unscored`);
* the report raises :class:`~clinconsensus_tasks.errors.DataValidationError` listing them
  (:meth:`ItemLog.require_scored`): a scenario score over fewer items than were asked is not the
  score of the run, and would not be comparable with other runs.

A file that is not a CliMedBench log, or a record with a malformed field, is an error naming file,
line or sample, and field.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from clinconsensus_tasks.record_files import read_jsonl
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.log_files import is_lmeval_samples, read_inspect_log as read_eval
from clinconsensus_tasks.storage import is_url, location, storage_errors
from clinconsensus_tasks.scorers.climedbench.explanation import item_explanation
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult, item_key
from clinconsensus_tasks.scorers.climedbench.length_deciles import decile_metric
from clinconsensus_tasks.scorers.climedbench.metric_table import item_metric_names
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY
from clinconsensus_tasks.scorers.climedbench.variants import CLEAN, final_answer

INSPECT_SCORER = "climedbench_scorer"


@dataclass(frozen=True)
class Unscored:
    """A sample with no score: where it is and why."""

    path: str
    sample: str  # Inspect sample id, or ``line N`` of an lm-eval file
    epoch: int
    reason: str
    scenario: str
    item_id: str

    @property
    def key(self) -> str:
        return item_key(self.scenario, self.item_id)

    def __str__(self) -> str:
        epoch = f" (epoch {self.epoch})" if self.epoch != 1 else ""
        return f"{self.path}: sample {self.sample}{epoch} has no CliMedBench score: {self.reason}"


@dataclass
class ItemLog:
    """The scored items of one log file, the model that answered, and the samples left unscored."""

    path: str
    model: str
    framework: str  # "inspect" or "lm-eval"
    results: list[ItemResult] = field(default_factory=list)
    unscored: list[Unscored] = field(default_factory=list)
    items: dict[str, Any] = field(default_factory=dict)  # item key -> the item as asked (compare-models checks both runs asked the same)

    def warn_unscored(self) -> None:
        """One line on stderr per unscored sample, naming file and sample."""
        for entry in self.unscored:
            print(f"[climedbench] warning: {entry}", file=sys.stderr)

    def require_scored(self) -> None:
        """Raise :class:`DataValidationError` listing every unscored sample, if there is one."""
        if self.unscored:
            raise DataValidationError([str(entry) for entry in self.unscored])


# -- the two frameworks' log shapes of one item --------------------------------------------------


def score_fields(result: ItemResult, item: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Keyword arguments of the Inspect ``Score`` the scorer logs for ``result``; with the ``item``
    (as the data gives it), the explanation a reader sees: what the rule read beside what is right
    (``scorers.climedbench.explanation``)."""
    metadata: dict[str, Any] = {"scenario": result.scenario, "metric": result.metric}
    if result.similarity_model is not None:
        metadata["similarity_model"] = result.similarity_model
    if result.variant != CLEAN:
        metadata["variant"] = result.variant
    if result.length_decile:
        metadata["length_decile"] = result.length_decile
    return {
        "value": {"value": result.value, "parsed": 1.0 if result.parsed else 0.0},
        "answer": result.answer,
        "explanation": item_explanation(item, result) if item is not None else result.explanation,
        "metadata": metadata,
    }


def from_score_fields(item_id: str, scenario: str, value: Mapping[str, Any], answer: str | None,
                      metadata: Mapping[str, Any] | None, epoch: int = 1) -> ItemResult:
    """Inverse of :func:`score_fields` (for one logged, unreduced sample score)."""
    metadata = metadata or {}
    return ItemResult(item_id, scenario, float(value["value"]), float(value["parsed"]) >= 0.5, answer or "", epoch,
                      metadata.get("similarity_model"), str(metadata.get("variant", CLEAN)), int(metadata.get("length_decile", 0)))


def lmeval_metrics(result: ItemResult) -> dict[str, float]:
    """What ``process_results`` returns, under the metric table's names (``scorers.climedbench.metric_table``):
    the scenario's metric, ``score``, ``parse_failure`` and, when the decile is known, the
    ``length_decile_<d>`` of its decile (the scenario YAMLs list all ten)."""
    values = {result.metric: result.value, "score": result.value, "parse_failure": 0.0 if result.parsed else 1.0}
    if result.length_decile:
        values[decile_metric(result.length_decile)] = result.value
    return {name: values[name] for name in item_metric_names(result.metric) if name in values}


def from_lmeval_sample(sample: Mapping[str, Any], where: str) -> ItemResult | None:
    """From one ``samples_climedbench_*.jsonl`` record; ``None`` if it carries no metric value.

    Raises ``ValueError`` naming ``where`` and the field when the record is not a CliMedBench
    sample or its values are malformed.
    """
    doc = sample.get("doc") if isinstance(sample, Mapping) else None
    if not isinstance(doc, Mapping) or "scenario" not in doc or "id" not in doc:
        raise ValueError(f"{where}: not a CliMedBench sample record (no doc.scenario / doc.id)")
    code = str(doc["scenario"]).upper()
    if code not in SCENARIOS:
        raise ValueError(f"{where}: field 'doc.scenario': unknown scenario {doc['scenario']!r}")
    metric = SCENARIOS[code].metric
    if sample.get(metric) is None:
        return None
    if "parse_failure" not in sample:
        raise ValueError(f"{where}: field 'parse_failure' missing next to {metric!r}")
    variant = str(doc.get("variant", CLEAN))
    answer, model = _lmeval_answer(sample, code, variant)
    try:
        value, failure = float(sample[metric]), float(sample["parse_failure"])
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: field {metric!r} or 'parse_failure': not a number ({exc})") from exc
    try:
        decile = int(doc.get("length_decile", 0))
        return ItemResult(str(doc["id"]), code, value, failure < 0.5, answer, similarity_model=model, variant=variant,
                          length_decile=decile)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: field 'doc.variant' or 'doc.length_decile': {exc}") from exc


def _lmeval_answer(sample: Mapping[str, Any], code: str, variant: str) -> tuple[str, str | None]:
    """The final answer of an lm-eval sample (as the Inspect scorer logs it); WTD's filter wraps it,
    already final, with its cosine and model."""
    responses = sample.get("filtered_resps") or [""]
    first = responses[0] if isinstance(responses, list) else responses
    text = first if isinstance(first, str) else str(first)
    if SCENARIOS[code].kind != SIMILARITY:
        return final_answer(text, variant), None
    try:
        record = json.loads(text)
        return str(record["answer"]), record.get("similarity_model")
    except (ValueError, KeyError, TypeError):
        return text, None


# -- reading a log file --------------------------------------------------------------------------


def read_inspect_log(path: str | Path, log: Any = None) -> ItemLog:
    """Every sample of an Inspect CliMedBench log (all epochs); ``log``: the log already read."""
    path = location(path)
    log = read_eval(path) if log is None else log
    out = ItemLog(str(path), log.eval.model, "inspect")
    for sample in log.samples or []:
        meta = sample.metadata or {}
        if "scenario" not in meta or not isinstance(meta.get("item"), dict):
            raise DataValidationError([f"{path}: sample {sample.id!r}: not a CliMedBench sample (no metadata 'scenario'/'item')"])
        score = (sample.scores or {}).get(INSPECT_SCORER)
        if score is None or not isinstance(score.value, dict):
            reason = sample.error.message.strip().splitlines()[0] if sample.error else f"no {INSPECT_SCORER} score"
            out.unscored.append(Unscored(str(path), repr(sample.id), sample.epoch, reason, str(meta["scenario"]), str(meta["item"].get("id"))))
            continue
        try:
            out.results.append(from_score_fields(
                str(meta["item"]["id"]), str(meta["scenario"]), score.value, score.answer, score.metadata, sample.epoch))
            out.items[out.results[-1].key] = meta["item"]
        except (KeyError, TypeError, ValueError) as exc:
            raise DataValidationError([f"{path}: sample {sample.id!r}: malformed {INSPECT_SCORER} score: {exc}"]) from exc
    return out


def read_lmeval_samples(path: str | Path) -> ItemLog:
    """Every record of an lm-eval ``samples_climedbench_*.jsonl`` file.

    lm-eval writes ``<output_path>/<model>/samples_<task>_<time>.jsonl``: the folder names the model.
    """
    path = location(path)
    out = ItemLog(str(path), path.parent.name, "lm-eval")
    with storage_errors(path):
        records = read_jsonl(path)
    for where, sample in records:  # invalid JSON: an error naming file and line
        try:
            result = from_lmeval_sample(sample, where)
            item = json.loads(sample["doc"].get("item_json") or "null")
        except ValueError as exc:
            raise DataValidationError([str(exc)]) from exc
        if result is None:
            doc = sample["doc"]
            out.unscored.append(Unscored(str(path), f"line {where.rsplit(':', 1)[1]}", 1, "no metric value in the record",
                                         str(doc["scenario"]).upper(), str(doc["id"])))
        else:
            out.results.append(result)
            out.items[result.key] = item
    return out


def read_item_log(path: str | Path) -> ItemLog:
    """An Inspect log (``.eval``/``.json``) or an lm-eval ``samples_*.jsonl`` file, by its name."""
    path = location(path)
    if not is_url(path) and not path.is_file():  # a URL: its one GET says whether it is there (StorageError naming it)
        raise FileNotFoundError(f"no such file: {path}")
    if is_lmeval_samples(path):
        return read_lmeval_samples(path)
    if path.suffix in (".eval", ".json"):
        return read_inspect_log(path)
    raise ValueError(f"{path}: expected an Inspect log (.eval/.json) or an lm-eval samples_*.jsonl file")

