"""What a reader sees of a scored CliMedBench item (the Inspect score's explanation): what the rule
read from the answer beside what is right, for every kind of scenario, on the bundled items."""

from __future__ import annotations

import json

from clinconsensus_tasks.climedbench.dataset import sample_dir
from clinconsensus_tasks.scorers.climedbench.explanation import item_explanation
from clinconsensus_tasks.scorers.climedbench.item_result import score_item


def first_item(code: str) -> dict:
    return json.loads((sample_dir() / f"{code}.jsonl").read_text(encoding="utf-8").splitlines()[0])


def test_each_kind_says_what_was_read_and_what_is_right():
    id1, sso, ke, wtd = (first_item(c) for c in ("ID1", "SSO", "KE", "WTD"))
    assert item_explanation(id1, score_item("ID1", id1, "根据病史，答案：B")) == (
        "**accuracy 0.0000** (ID1): the answer chose **B** (胃镜检查), wrong; the correct option is **A** "
        "(18导联心电图及心肌肌钙蛋白检测).")
    assert item_explanation(id1, score_item("ID1", id1, "A")).startswith("**accuracy 1.0000** (ID1): the answer chose **A** (")
    assert item_explanation(sso, score_item("SSO", sso, "B E")) == (
        "**Kendall's tau 0.1000** (SSO): the answer's order **B E**; the correct order **B E A D C**; steps missing from the "
        "answer: A D C (a pair with a missing step scores 0).")
    assert item_explanation(ke, score_item("KE", ke, "PD-1 非小细胞肺癌")) == (
        "**ROUGE-1 F1 0.5161** (KE): the answer's keywords: PD-1 非小细胞肺癌; the reference's: 非小细胞肺癌 PD-1抑制剂 化疗 "
        "无进展生存期 不良反应.")
    text = item_explanation(wtd, score_item("WTD", wtd, "该治疗方案有误。", cosine=0.8125, similarity_model="simcse"))
    assert text.startswith("**similarity 0.8125** (WTD), model simcse: cosine of the answer's and the reference's embeddings. "
                           "The reference refutation: ")
    assert item_explanation(id1, score_item("ID1", id1, "不知道")) == (
        "**accuracy 0.0000** (ID1): nothing the rule reads was found in the answer; it counts in `parse_failure`, scored 0.")


def test_an_answer_of_any_size_and_shape_stays_one_bounded_line():
    ke = first_item("KE")
    text = item_explanation(ke, score_item("KE", ke, "| **伪造** |\n\n# 标题 " + "关键词 " * 100_000))
    assert "\n" not in text and len(text) < 1_000 and "\\| \\*\\*伪造\\*\\* \\| \\# 标题" in text
