"""One scored CliMedBench item, the record every layer passes around.

Why one type: the same scored answer is written by the Inspect scorer (as a ``Score``), by lm-eval's
``process_results`` (as per-document metric values in ``samples_*.jsonl``) and read back by the
adaptive-testing calibration, the report, ``compare-models`` and ``robustness``. :class:`ItemResult`
is produced by :func:`score_item` (the only place that dispatches an answer to its scenario's
rule). How it is written into and read from each framework's log is one module,
``clinconsensus_tasks.climedbench.logs``, so a field is added there once for both.

Framework-free: no Inspect or lm-eval import here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, score_answer, score_similarity
from clinconsensus_tasks.scorers.climedbench.variants import CLEAN, VARIANTS


def item_key(code: str, item_id: str) -> str:
    """``"<CODE>:<item id>"``: the Inspect sample id and the adaptive-testing item key."""
    return f"{code}:{item_id}"


@dataclass(frozen=True)
class ItemResult:
    """The score of one answer to one CliMedBench item.

    ``value`` is the scenario's metric (accuracy 0/1, Kendall's tau, ROUGE-1 F1 or cosine
    similarity); ``parsed`` is False when nothing could be read from the answer (the value is then
    0 and the answer counts in ``parse_failure``). ``similarity_model`` names the embedding model
    of a WTD score and is ``None`` for every other scenario. ``variant`` is how the item was asked
    (``clean``, ``perturbed``, ``nota`` or ``cot``; ``answer`` is then the final answer the rules
    read) and ``length_decile`` its input-length decile within its scenario (1..10; 0: unknown).
    """

    item_id: str
    scenario: str
    value: float
    parsed: bool
    answer: str = ""
    epoch: int = 1
    similarity_model: str | None = None
    variant: str = CLEAN
    length_decile: int = 0

    def __post_init__(self) -> None:
        if self.scenario not in SCENARIOS:
            raise ValueError(f"unknown CliMedBench scenario {self.scenario!r}; known: {', '.join(SCENARIOS)}")
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown CliMedBench variant {self.variant!r}; known: {', '.join(VARIANTS)}")
        if not 0 <= self.length_decile <= 10:
            raise ValueError(f"length_decile must be within 0 and 10, got {self.length_decile}")

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
        return cls(**{**data, "value": float(data["value"]), "epoch": int(data.get("epoch", 1)),
                      "length_decile": int(data.get("length_decile", 0))})


def score_item(code: str, item: Mapping[str, Any], answer: str | None, *, cosine: float | None = None,
               similarity_model: str | None = None, epoch: int = 1, variant: str = CLEAN,
               length_decile: int = 0) -> ItemResult:
    """Score ``answer`` to ``item`` of scenario ``code`` with its rule.

    ``answer`` is what the extraction rules read: under a variant, the caller passes
    ``variants.final_answer(completion, variant)`` (WTD's caller embeds that same text).
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
    return ItemResult(str(item["id"]), code, value, parsed, answer, epoch, similarity_model, variant, length_decile)
