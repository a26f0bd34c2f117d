"""Reading scored CliMedBench items back from framework logs: one reader per log format.

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

import sys
from dataclasses import dataclass, field
from pathlib import Path

from clinconsensus_tasks.clinconsensus.dataset import read_jsonl
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult, item_key

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

    def warn_unscored(self) -> None:
        """One line on stderr per unscored sample, naming file and sample."""
        for entry in self.unscored:
            print(f"[climedbench] warning: {entry}", file=sys.stderr)

    def require_scored(self) -> None:
        """Raise :class:`DataValidationError` listing every unscored sample, if there is one."""
        if self.unscored:
            raise DataValidationError([str(entry) for entry in self.unscored])


def read_inspect_log(path: str | Path) -> ItemLog:
    """Every sample of an Inspect CliMedBench log (all epochs)."""
    from inspect_ai.log import read_eval_log

    path = Path(path)
    log = read_eval_log(str(path))
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
            out.results.append(ItemResult.from_score_fields(
                str(meta["item"]["id"]), str(meta["scenario"]), score.value, score.answer, score.metadata, sample.epoch))
        except (KeyError, TypeError, ValueError) as exc:
            raise DataValidationError([f"{path}: sample {sample.id!r}: malformed {INSPECT_SCORER} score: {exc}"]) from exc
    return out


def read_lmeval_samples(path: str | Path) -> ItemLog:
    """Every record of an lm-eval ``samples_climedbench_*.jsonl`` file.

    lm-eval writes ``<output_path>/<model>/samples_<task>_<time>.jsonl``: the folder names the model.
    """
    path = Path(path)
    out = ItemLog(str(path), path.parent.name, "lm-eval")
    for where, sample in read_jsonl(path):  # invalid JSON: an error naming file and line
        try:
            result = ItemResult.from_lmeval_sample(sample, where)
        except ValueError as exc:
            raise DataValidationError([str(exc)]) from exc
        if result is None:
            doc = sample["doc"]
            out.unscored.append(Unscored(str(path), f"line {where.rsplit(':', 1)[1]}", 1, "no metric value in the record",
                                         str(doc["scenario"]).upper(), str(doc["id"])))
        else:
            out.results.append(result)
    return out


def is_lmeval_samples(path: Path) -> bool:
    return path.name.startswith("samples_") and path.suffix == ".jsonl"


def read_item_log(path: str | Path) -> ItemLog:
    """An Inspect log (``.eval``/``.json``) or an lm-eval ``samples_*.jsonl`` file, by its name."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    if is_lmeval_samples(path):
        return read_lmeval_samples(path)
    if path.suffix in (".eval", ".json"):
        return read_inspect_log(path)
    raise ValueError(f"{path}: expected an Inspect log (.eval/.json) or an lm-eval samples_*.jsonl file")

