"""One scored CliMedBench item, the record every layer passes around.

Why one type: the same scored answer is written by the Inspect scorer (as a ``Score``), by lm-eval's
``process_results`` (as per-document metric values in ``samples_*.jsonl``) and read back by the
adaptive-testing calibration and the report. :class:`ItemResult` is produced by :func:`score_item`
(the only place that dispatches an answer to its scenario's rule) and knows both log shapes, so a
field is added in one place and the two frameworks cannot drift apart.

Framework-free: the Inspect and lm-eval shapes are plain dicts here; the adapters wrap them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, score_answer, score_similarity


def item_key(code: str, item_id: str) -> str:
    """``"<CODE>:<item id>"``: the Inspect sample id and the adaptive-testing item key."""
    return f"{code}:{item_id}"


@dataclass(frozen=True)
class ItemResult:
    """The score of one answer to one CliMedBench item.

    ``value`` is the scenario's metric (accuracy 0/1, Kendall's tau, ROUGE-1 F1 or cosine
    similarity); ``parsed`` is False when nothing could be read from the answer (the value is then
    0 and the answer counts in ``parse_failure``). ``similarity_model`` names the embedding model
    of a WTD score and is ``None`` for every other scenario.
    """

    item_id: str
    scenario: str
    value: float
    parsed: bool
    answer: str = ""
    epoch: int = 1
    similarity_model: str | None = None

    def __post_init__(self) -> None:
        if self.scenario not in SCENARIOS:
            raise ValueError(f"unknown CliMedBench scenario {self.scenario!r}; known: {', '.join(SCENARIOS)}")

    @property
    def metric(self) -> str:
        return SCENARIOS[self.scenario].metric

    @property
    def key(self) -> str:
        return item_key(self.scenario, self.item_id)

    @property
    def row(self) -> tuple[str, float, bool]:
        """``(scenario, value, parsed)``: what :func:`~.scenarios.summarize` takes."""
        return self.scenario, self.value, self.parsed

    @property
    def explanation(self) -> str:
        return f"{self.metric}={self.value:.4f}" + ("" if self.parsed else " (unparseable answer)")

    # -- plain dicts (JSON) --------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "item result") -> ItemResult:
        """Inverse of :meth:`to_dict`; a missing or mistyped field is a ``ValueError`` naming it."""
        required = ("item_id", "scenario", "value", "parsed")
        missing = [name for name in required if name not in data]
        if missing:
            raise ValueError(f"{where}: field(s) {', '.join(map(repr, missing))} missing")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(map(repr, unknown))}")
        if not isinstance(data["parsed"], bool):
            raise ValueError(f"{where}: field 'parsed': expected true or false, got {data['parsed']!r}")
        return cls(**{**data, "value": float(data["value"]), "epoch": int(data.get("epoch", 1))})

    # -- the Inspect Score -----------------------------------------------------------------------

    def score_fields(self) -> dict[str, Any]:
        """Keyword arguments of the Inspect ``Score`` the scorer logs for this item."""
        metadata: dict[str, Any] = {"scenario": self.scenario, "metric": self.metric}
        if self.similarity_model is not None:
            metadata["similarity_model"] = self.similarity_model
        return {
            "value": {"value": self.value, "parsed": 1.0 if self.parsed else 0.0},
            "answer": self.answer,
            "explanation": self.explanation,
            "metadata": metadata,
        }

    @classmethod
    def from_score_fields(cls, item_id: str, scenario: str, value: Mapping[str, Any], answer: str | None,
                          metadata: Mapping[str, Any] | None, epoch: int = 1) -> ItemResult:
        """Inverse of :meth:`score_fields` (for one logged, unreduced sample score)."""
        return cls(item_id, scenario, float(value["value"]), float(value["parsed"]) >= 0.5, answer or "", epoch,
                   (metadata or {}).get("similarity_model"))

    # -- lm-eval per-document values -----------------------------------------------------------

    def lmeval_metrics(self) -> dict[str, float]:
        """What ``process_results`` returns: the scenario's metric, ``score`` and ``parse_failure``."""
        return {self.metric: self.value, "score": self.value, "parse_failure": 0.0 if self.parsed else 1.0}

    @classmethod
    def from_lmeval_sample(cls, sample: Mapping[str, Any], where: str) -> ItemResult | None:
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
        answer, model = _lmeval_answer(sample, code)
        try:
            value, failure = float(sample[metric]), float(sample["parse_failure"])
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: field {metric!r} or 'parse_failure': not a number ({exc})") from exc
        return cls(str(doc["id"]), code, value, failure < 0.5, answer, similarity_model=model)


def _lmeval_answer(sample: Mapping[str, Any], code: str) -> tuple[str, str | None]:
    """The answer text of an lm-eval sample; WTD's filter wraps it with its cosine and model."""
    responses = sample.get("filtered_resps") or [""]
    first = responses[0] if isinstance(responses, list) else responses
    text = first if isinstance(first, str) else str(first)
    if SCENARIOS[code].kind != SIMILARITY:
        return text, None
    try:
        record = json.loads(text)
        return str(record["answer"]), record.get("similarity_model")
    except (ValueError, KeyError, TypeError):
        return text, None


def score_item(code: str, item: Mapping[str, Any], answer: str | None, *, cosine: float | None = None,
               similarity_model: str | None = None, epoch: int = 1) -> ItemResult:
    """Score ``answer`` to ``item`` of scenario ``code`` with its rule.

    WTD is scored from ``cosine``, the similarity of answer and reference embeddings, which the
    caller computes with its own batching (an empty answer needs none and is a parse failure).
    """
    scenario = SCENARIOS[code]
    answer = answer or ""
    if scenario.kind == SIMILARITY:
        if cosine is None and answer.strip():
            raise ValueError(f"{code}: a similarity score needs the cosine of answer and reference embeddings")
        value, parsed = score_similarity(answer, cosine if cosine is not None else 0.0)
    else:
        value, parsed = score_answer(scenario, item, answer)
    return ItemResult(str(item["id"]), code, value, parsed, answer, epoch, similarity_model)
