"""CliMedBench's analysis variants: perturbed questions, none-of-the-above options, chain of thought.

The CliMedBench paper (section 5) re-asks its scenarios in altered forms to find where a model
breaks. Each variant here turns a clean item into what is asked and how the answer is read, in
one place, so the Inspect and lm-eval tasks ask exactly the same thing:

- ``perturbed``: the question perturbed by :mod:`clinconsensus_tasks.scorers.climedbench.perturbation`
  (12% of its characters by default; options and the answer key untouched).
- ``nota``: in a multiple-choice item the correct option's text becomes 以上都不对 ("none of the
  above is correct"); the answer letter stays. Items whose options already hold such an option
  are left out (asking would leave two right answers) and counted. FTT, whose correct option is
  always "none of the above", has no NOTA variant.
- ``cot``: our own chain-of-thought instruction per scenario family; the model reasons inside
  ``<思考>…</思考>`` and answers after it. The scenario's usual extraction rules read only the text
  after the last closing reasoning tag (``</思考>``, ``</think>`` or ``</reasoning>``, so reasoning
  models' own blocks are skipped too); an opened block that never closes leaves no answer, which
  is reported as a parse failure rather than read from the reasoning.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.scorers.climedbench.length_deciles import length_deciles
from clinconsensus_tasks.scorers.climedbench.perturbation import DEFAULT_RATE, KINDS, parse_kinds, perturb
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, KEYWORDS, ORDER, SIMILARITY, Scenario, build_prompt, score_answer

CLEAN = "clean"
PERTURBED = "perturbed"
NOTA = "nota"
COT = "cot"
VARIANTS = (CLEAN, PERTURBED, NOTA, COT)

NOTA_TEXT = "以上都不对"
_NOTA_ALREADY = re.compile(
    r"以上(?:选项|各项|答案)?(?:都|均|皆|全)?(?:不对|不正确|错误|不是|不符合|非)|以上皆非|none of the above", re.IGNORECASE
)

_THINK = "<思考>和</思考>之间"
COT_FORMATS = {
    CHOICE: f"请先在{_THINK}逐步分析：梳理题干中的关键信息，逐一判断每个选项是否正确。"
    "分析结束后，在</思考>之后单独一行以“答案：X”的格式给出唯一最合适的选项字母。",
    ORDER: f"请先在{_THINK}逐步分析各步骤之间的先后依据，"
    "然后在</思考>之后单独一行以“答案：”开头按顺序写出全部步骤字母，例如“答案：DCBA”。",
    KEYWORDS: f"请先在{_THINK}分析这段摘要的研究对象、方法和主要结论，"
    "然后在</思考>之后只输出关键词，关键词之间用空格分隔，不要输出其他内容。",
    SIMILARITY: f"请先在{_THINK}逐步分析上述处理的依据和问题，"
    "然后在</思考>之后写出结论：指出处理是否恰当、其中的错误及可能造成的危害，并给出正确的处理建议。",
}
_CLOSE = re.compile(r"</\s*(?:思考|think|reasoning)\s*>", re.IGNORECASE)
_OPEN = re.compile(r"<\s*(?:思考|think|reasoning)\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class VariantSettings:
    """Which variant to ask and, for ``perturbed``, how (kinds, rate, seed)."""

    variant: str = CLEAN
    kinds: tuple[str, ...] = KINDS
    rate: float = DEFAULT_RATE
    seed: int = 0

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown CliMedBench variant {self.variant!r}; known: {', '.join(VARIANTS)}")
        object.__setattr__(self, "kinds", parse_kinds(tuple(self.kinds) if not isinstance(self.kinds, str) else self.kinds))
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"perturbation_rate must be within 0 and 1, got {self.rate}")


@dataclass(frozen=True)
class AskedItem:
    """An item as put to the model under a variant: the item scored against, the prompt, log fields."""

    item: dict[str, Any]
    prompt: str
    log: dict[str, Any] = field(default_factory=dict)  # what the run records beside the answer
    length_decile: int = 0  # of the clean item within its scenario's full file (0: not computed)


def has_nota_option(item: Mapping[str, Any]) -> bool:
    """Whether an option already says "none of the above" (以上都不对, 以上均不是, 以上皆非 ...)."""
    return any(_NOTA_ALREADY.search(unicodedata.normalize("NFKC", str(t))) for t in (item.get("options") or {}).values())


# FTT's right option is "none of the above" by design: under NOTA every item would be left out.
NOTA_BY_DESIGN = frozenset({"FTT"})


def applies(scenario: Scenario, variant: str) -> bool:
    """NOTA needs options with one right letter (and not FTT); the other variants apply to every scenario."""
    return variant != NOTA or (scenario.kind == CHOICE and scenario.code not in NOTA_BY_DESIGN)


def ask(scenario: Scenario, item: Mapping[str, Any], settings: VariantSettings) -> AskedItem | None:
    """The item as asked under ``settings``, or None when NOTA must leave it out."""
    variant = settings.variant
    asked = dict(item)
    log: dict[str, Any] = {"variant": variant}
    if variant == PERTURBED:
        result = perturb(str(item["question"]), str(item["id"]), settings.seed, settings.kinds, settings.rate)
        asked["question"] = result.text
        log.update(perturbed_question=result.text, share_changed=result.share, characters_changed=result.changed,
                   perturbation_kinds=dict(result.by_kind), perturbation_seed=settings.seed)
    elif variant == NOTA:
        if not applies(scenario, variant) or has_nota_option(item):
            return None
        asked["options"] = {**item["options"], item["answer"]: NOTA_TEXT}
        log["replaced_option"] = item["answer"]
    prompt = build_prompt(scenario, asked)
    if variant == COT:
        prompt = prompt.rsplit("\n\n", 1)[0] + "\n\n" + COT_FORMATS[scenario.kind]
    return AskedItem(asked, prompt, log)


def ask_scenario(
    scenario: Scenario, items: Sequence[Mapping[str, Any]], settings: VariantSettings
) -> tuple[list[AskedItem], list[str]]:
    """A scenario's full item list as asked, each with its length decile, and the ids left out.

    ``items`` must be the scenario's whole file: deciles are computed over it, so they do not move
    when a framework later runs a subset. A scenario NOTA does not apply to leaves out every item.
    """
    deciles = length_deciles(items)
    asked, left_out = [], []
    for item in items:
        result = ask(scenario, item, settings)
        if result is None:
            left_out.append(str(item["id"]))
        else:
            asked.append(replace(result, length_decile=deciles[str(item["id"])]))
    return asked, left_out


def final_answer(answer: str, variant: str) -> str:
    """What the extraction rules read: under CoT, only the text after the last closing reasoning tag."""
    answer = answer or ""
    if variant != COT:
        return answer
    closes = list(_CLOSE.finditer(answer))
    if closes:
        return answer[closes[-1].end():]
    return "" if _OPEN.search(answer) else answer


def score_variant_answer(scenario: Scenario, item: Mapping[str, Any], answer: str, variant: str) -> tuple[float, bool]:
    """``score_answer`` on the final answer of a (choice, order or keyword) scenario under a variant."""
    return score_answer(scenario, item, final_answer(answer, variant))
