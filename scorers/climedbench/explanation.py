"""A scored CliMedBench item as a reader sees it: what was read from the answer beside what is right.

Why: Inspect View shows a score's explanation as Markdown on the sample's Scoring tab;
"accuracy=0.0000" said neither what the model chose nor what was correct. Here each kind of
scenario says what its rule read and against what: a choice and the correct option (with their
texts), two orders, the keywords beside the reference, the reference refutation beside a
similarity. Texts come from the data and the model, so each is flattened, cut to
:data:`TEXT_CHARS` characters and escaped (the same cell rule as ClinConsensus's table).
Framework-free; linear in its input; never raises on any text.
"""

from __future__ import annotations

from typing import Any, Mapping

from clinconsensus_tasks.scorers.climedbench.choice import extract_choice
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult
from clinconsensus_tasks.scorers.climedbench.ordering import extract_order, gold_steps
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, KEYWORDS, ORDER, SCENARIOS, option_letters
from clinconsensus_tasks.scorers.markdown import cell

TEXT_CHARS = 160
METRIC_NAMES = {"accuracy": "accuracy", "kendall_tau": "Kendall's tau", "rouge1": "ROUGE-1 F1", "similarity": "similarity"}


def item_explanation(item: Mapping[str, Any], result: ItemResult) -> str:
    """The Markdown a reader sees for one scored item (``item`` as the data gives it)."""
    scenario = SCENARIOS[result.scenario]
    name = METRIC_NAMES.get(scenario.metric, scenario.metric)
    head = f"**{name} {result.value:.4f}** ({result.scenario})"
    if not result.parsed:
        return f"{head}: nothing the rule reads was found in the answer; it counts in `parse_failure`, scored 0."
    answer, gold = result.answer, item.get("answer", "")
    if scenario.kind == CHOICE:
        letters = option_letters(item)
        chose = extract_choice(answer, letters) or "?"
        right = str(gold).strip().upper()
        options = item.get("options") or {}
        verdict = "right" if chose == right else "wrong"
        return (f"{head}: the answer chose **{cell(chose, 8)}** ({cell(options.get(chose, ''), TEXT_CHARS)}), {verdict}; "
                f"the correct option is **{cell(right, 8)}** ({cell(options.get(right, ''), TEXT_CHARS)}).")
    if scenario.kind == ORDER:
        steps = gold_steps(gold)
        read = extract_order(answer, steps)
        missing = [s for s in steps if s not in read]
        return (f"{head}: the answer's order **{cell(' '.join(read), 80)}**; the correct order **{cell(' '.join(steps), 80)}**"
                + (f"; steps missing from the answer: {cell(' '.join(missing), 80)} (a pair with a missing step scores 0)" if missing else "")
                + ".")
    if scenario.kind == KEYWORDS:
        reference = " ".join(map(str, gold)) if isinstance(gold, (list, tuple)) else gold
        return f"{head}: the answer's keywords: {cell(answer, TEXT_CHARS)}; the reference's: {cell(reference, TEXT_CHARS)}."
    model = f", model {cell(result.similarity_model, 80)}" if result.similarity_model else ""
    return (f"{head}{model}: cosine of the answer's and the reference's embeddings. The reference refutation: "
            f"{cell(gold, TEXT_CHARS)}")
