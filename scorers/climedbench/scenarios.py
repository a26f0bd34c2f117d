"""CliMedBench's 14 scenarios: what each one is, how it is asked and how it is scored.

The scenario table, the prompt and the per-item scoring live here, framework-free, so the
Inspect tasks and the lm-eval tasks ask the same question and score the answer the same way.
Item dicts follow the project's CliMedBench file schema (``clinconsensus_tasks/climedbench/README.md``):
``id``, ``question``, ``options`` (letter -> text; absent for KE and WTD), ``answer`` (a letter, an
order string such as ``"DCBA"``, a list of keywords, or a reference text) and optional
``reference`` and ``specialty``.

Every scenario reports its metric (``accuracy``, ``kendall_tau``, ``rouge1`` or ``similarity``),
the same value as ``score``, and ``parse_failure``, the share of answers nothing could be read
from. The overall score is the unweighted mean of the scenario scores, as in the paper (which
shows it x100); the seven dimension scores are the means of their scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from clinconsensus_tasks.scorers.climedbench.choice import score_choice
from clinconsensus_tasks.scorers.climedbench.ordering import score_order
from clinconsensus_tasks.scorers.climedbench.rouge_zh import keyword_rouge1, tokenize
from clinconsensus_tasks.scorers.means import mean

CHOICE = "choice"
ORDER = "order"
KEYWORDS = "keywords"
SIMILARITY = "similarity"

METRIC_OF_KIND = {CHOICE: "accuracy", ORDER: "kendall_tau", KEYWORDS: "rouge1", SIMILARITY: "similarity"}


@dataclass(frozen=True)
class Scenario:
    code: str
    name: str  # Chinese name
    english: str
    dimension: str
    kind: str
    paper_items: int  # size in the paper (for proportions in benchmarks)

    @property
    def metric(self) -> str:
        return METRIC_OF_KIND[self.kind]

    @property
    def task_name(self) -> str:
        return f"climedbench_{self.code.lower()}"


DIMENSIONS: dict[str, str] = {
    "clinical_qa": "临床问答",
    "knowledge_application": "知识应用",
    "hallucination": "幻觉",
    "toxicity": "毒性",
    "summarization": "摘要",
    "reasoning": "推理",
    "information_retrieval": "信息检索",
}

SCENARIOS: dict[str, Scenario] = {
    s.code: s
    for s in (
        Scenario("ID1", "院内诊疗·检查", "In-hospital diagnosis 1: examinations", "clinical_qa", CHOICE, 2639),
        Scenario("ID2", "院内诊疗·诊断", "In-hospital diagnosis 2: diagnosis", "clinical_qa", CHOICE, 6693),
        Scenario("ID3", "院内诊疗·治疗", "In-hospital diagnosis 3: treatment plan", "clinical_qa", CHOICE, 1748),
        Scenario("ID4", "院内诊疗·出院", "In-hospital diagnosis 4: discharge advice", "clinical_qa", CHOICE, 2728),
        Scenario("BKT", "基础知识测试", "Basic Knowledge Test (NMLEC)", "knowledge_application", CHOICE, 4160),
        Scenario("FIT", "虚假信息测试", "False Info Test", "hallucination", CHOICE, 3003),
        Scenario("FTT", "虚假治疗测试", "False Treatment Test", "hallucination", CHOICE, 1114),
        Scenario("WTD", "错误治疗检测", "Wrong Treatment Detection", "toxicity", SIMILARITY, 807),
        Scenario("DS", "出院小结", "Discharge Summary", "summarization", CHOICE, 4644),
        Scenario("MC", "用药咨询", "Medicine Consultation", "toxicity", CHOICE, 661),
        Scenario("SSO", "手术步骤排序", "Surgical Steps Organization", "reasoning", ORDER, 472),
        Scenario("CPR", "临床路径推理", "Clinical Pathway Reasoning", "reasoning", ORDER, 95),
        Scenario("KE", "关键词提取", "Keyword Extraction", "information_retrieval", KEYWORDS, 713),
        Scenario("CS", "病例摘要", "Case Summary", "summarization", CHOICE, 320),
    )
}

ROLE = "你是一名经验丰富的临床医生，请以专业、严谨的态度完成下面的任务。"
ANSWER_FORMATS = {
    CHOICE: "请从以上选项中选出唯一最合适的一项，可先简要说明理由，最后单独一行以“答案：X”的格式给出选项字母。",
    ORDER: "请给出以上步骤的正确顺序，可先简要说明理由，最后单独一行以“答案：”开头按顺序写出全部选项字母，例如“答案：DCBA”。",
    KEYWORDS: "请只输出关键词，关键词之间用空格分隔，不要输出其他内容。",
    SIMILARITY: "请指出上述处理是否恰当，说明其中的错误及可能造成的危害，并给出正确的处理建议。",
}


def option_letters(item: Mapping[str, Any]) -> list[str]:
    return list((item.get("options") or {}).keys())


def build_prompt(scenario: Scenario, item: Mapping[str, Any]) -> str:
    """The single user message put to the model: role, question, options, answer format."""
    parts = [ROLE, "", str(item["question"]).strip()]
    options = item.get("options") or {}
    if options:
        label = "步骤" if scenario.kind == ORDER else "选项"
        parts += ["", f"{label}："] + [f"{letter}. {text}" for letter, text in options.items()]
    parts += ["", ANSWER_FORMATS[scenario.kind]]
    return "\n".join(parts)


def score_answer(scenario: Scenario, item: Mapping[str, Any], answer: str) -> tuple[float, bool]:
    """``(value, parsed)`` for one answer. Similarity needs embeddings: see :func:`score_similarity`."""
    answer = answer or ""
    if scenario.kind == CHOICE:
        return score_choice(answer, item["answer"], option_letters(item))
    if scenario.kind == ORDER:
        return score_order(answer, item["answer"])
    if scenario.kind == KEYWORDS:
        if not tokenize(answer):
            return 0.0, False
        return keyword_rouge1(answer, item["answer"]), True
    raise ValueError(f"{scenario.code}: similarity is scored from embeddings, use score_similarity")


def score_similarity(answer: str, cosine: float) -> tuple[float, bool]:
    """WTD: the cosine of answer and reference embeddings; an empty answer is a parse failure."""
    if not (answer or "").strip():
        return 0.0, False
    return float(cosine), True


def summarize(per_item: Iterable[tuple[str, float, bool]]) -> dict[str, float]:
    """Metrics from ``(scenario code, value, parsed)`` rows.

    Keys: for each scenario present, ``<CODE>/<metric>``, ``<CODE>/score`` and
    ``<CODE>/parse_failure``; for each dimension present, ``dimension/<name>``; and, over the
    scenarios present, ``score`` (unweighted mean of scenario scores) and ``parse_failure``
    (unweighted mean of their parse-failure shares).
    """
    values: dict[str, list[float]] = {}
    failures: dict[str, list[bool]] = {}
    for code, value, parsed in per_item:
        values.setdefault(code, []).append(value)
        failures.setdefault(code, []).append(not parsed)
    out: dict[str, float] = {}
    scores: dict[str, float] = {}
    codes = [c for c in SCENARIOS if c in values]
    for code in codes:
        scenario = SCENARIOS[code]
        # The exactly rounded mean lm-eval's tasks aggregate with too (``scorers.means``): both
        # frameworks agree to the last bit, whatever the order of the items.
        scores[code] = mean(values[code])
        out[f"{code}/{scenario.metric}"] = scores[code]
        out[f"{code}/score"] = scores[code]
        out[f"{code}/parse_failure"] = mean(failures[code])
    for dim in DIMENSIONS:
        members = [scores[c] for c in codes if SCENARIOS[c].dimension == dim]
        if members:
            out[f"dimension/{dim}"] = sum(members) / len(members)
    if codes:
        out["score"] = sum(scores.values()) / len(scores)
        out["parse_failure"] = sum(out[f"{c}/parse_failure"] for c in codes) / len(codes)
    return out


def scenario_codes(names: Sequence[str] | str | None) -> list[str]:
    """Normalise a scenario selection (``None`` = all 14; ``"sso,cpr"``; ``["ID1", ...]``)."""
    if names is None or names == "all":
        return list(SCENARIOS)
    items = names.split(",") if isinstance(names, str) else list(names)
    codes = [n.strip().upper() for n in items if n.strip()]
    unknown = [c for c in codes if c not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown CliMedBench scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    return codes
