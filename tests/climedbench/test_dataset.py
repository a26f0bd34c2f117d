"""CliMedBench items: the bundled sample, prompts, validation errors, and the summary metrics."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.climedbench.dataset import load_scenario, sample_dir
from clinconsensus_tasks.errors import DataSourceError, DataValidationError
from clinconsensus_tasks.scorers.climedbench.scenarios import (
    DIMENSIONS,
    SCENARIOS,
    build_prompt,
    scenario_codes,
    score_answer,
    summarize,
)


def test_sample_has_every_scenario_in_its_paper_form():
    for code, scenario in SCENARIOS.items():
        loaded = load_scenario(code, "sample", announce=False)
        assert loaded.is_sample and len(loaded.items) >= 8, code
    ftt = load_scenario("FTT", announce=False).items
    assert all(item["options"][item["answer"]] == "以上均不对" for item in ftt)
    fit = load_scenario("FIT", announce=False).items
    assert all("参考答案：" in item["question"] and item["reference"] for item in fit)
    assert len(DIMENSIONS) == 7 and {s.dimension for s in SCENARIOS.values()} == set(DIMENSIONS)


def test_sample_run_says_it_is_the_sample(capsys):
    load_scenario("SSO", "sample")
    assert capsys.readouterr().err == ("[climedbench] SSO: the synthetic sample bundled with clinconsensus-tasks "
                                       "(not CliMedBench data), as asked (10 items)\n")


def test_prompt_shape():
    item = {"id": "x", "question": "【主诉】胸痛2小时。\n首选检查是？", "options": {"A": "心电图", "B": "胸片"}, "answer": "A"}
    assert build_prompt(SCENARIOS["ID1"], item) == (
        "你是一名经验丰富的临床医生，请以专业、严谨的态度完成下面的任务。\n\n【主诉】胸痛2小时。\n首选检查是？\n\n选项：\nA. 心电图\nB. 胸片\n\n"
        "请从以上选项中选出唯一最合适的一项，可先简要说明理由，最后单独一行以“答案：X”的格式给出选项字母。"
    )
    ke = {"id": "k", "question": "请从以下论文摘要中提取关键词：\n摘要", "answer": ["摘要"]}
    assert build_prompt(SCENARIOS["KE"], ke).endswith("\n\n请只输出关键词，关键词之间用空格分隔，不要输出其他内容。")


def write(directory, code, records):
    (directory / f"{code}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return directory / f"{code}.jsonl"


def test_validation_names_file_line_id_and_field(tmp_path):
    ok = {"id": "ID1-1", "question": "问题", "options": {"A": "甲", "B": "乙"}, "answer": "A"}
    path = write(tmp_path, "ID1", [
        ok,
        {**ok, "id": "ID1-2", "answer": "E"},
        {**ok, "id": "ID1-3", "options": {"A": "甲", "C": "丙"}, "answer": "A"},
        {**ok, "id": "ID1-1"},
        {**ok, "id": "ID1-5", "question": ""},
    ])
    with pytest.raises(DataValidationError) as info:
        load_scenario("ID1", str(tmp_path))
    assert info.value.problems == [
        f"{path}:2: id 'ID1-2': field 'answer': 'E' is not one of the option letters AB",
        f"{path}:3: id 'ID1-3': field 'options': letters must run AB in order, got AC",
        f"{path}:4: id 'ID1-1': field 'id': duplicate of {path}:1",
        f"{path}:5: id 'ID1-5': field 'question': missing or not a non-empty string",
    ]


def test_validation_of_orders_keywords_and_references(tmp_path):
    steps = {"A": "一", "B": "二", "C": "三"}
    sso = write(tmp_path, "SSO", [{"id": "s1", "question": "排序", "options": steps, "answer": "CBD"}])
    ke = write(tmp_path, "KE", [{"id": "k1", "question": "摘要", "options": {"A": "x", "B": "y"}, "answer": "肺癌"}])
    wtd = write(tmp_path, "WTD", [{"id": "w1", "question": "处理", "answer": " "}])
    with pytest.raises(DataValidationError, match=rf"{sso}:1: id 's1': field 'answer': 'CBD' is not a permutation of the step letters ABC"):
        load_scenario("SSO", str(tmp_path))
    with pytest.raises(DataValidationError) as info:
        load_scenario("KE", str(tmp_path))
    assert info.value.problems == [
        f"{ke}:1: id 'k1': field 'options': KE items have no options",
        f"{ke}:1: id 'k1': field 'answer': expected a non-empty list of keyword strings",
    ]
    with pytest.raises(DataValidationError, match=rf"{wtd}:1: id 'w1': field 'answer': expected the reference text"):
        load_scenario("WTD", str(tmp_path))


def test_missing_directory_and_file(tmp_path):
    with pytest.raises(DataSourceError, match="CliMedBench data directory not found: .*; give 'sample' for the bundled"):
        load_scenario("ID1", str(tmp_path / "nope"))
    with pytest.raises(DataSourceError, match=r"scenario file missing: .*CS\.jsonl"):
        load_scenario("CS", str(tmp_path))


def test_score_answer_dispatch():
    item = {"options": {"A": "x", "B": "y", "C": "z", "D": "w"}, "answer": "C"}
    assert score_answer(SCENARIOS["BKT"], item, "答案：C") == (1.0, True)
    assert score_answer(SCENARIOS["BKT"], item, "都不对") == (0.0, False)
    assert score_answer(SCENARIOS["SSO"], {"answer": "DCBA"}, "答案：DCAB") == (pytest.approx(4 / 6), True)
    assert score_answer(SCENARIOS["KE"], {"answer": ["高血压"]}, "高血压 糖尿病") == (pytest.approx(2 / 3), True)
    assert score_answer(SCENARIOS["KE"], {"answer": ["高血压"]}, "，。") == (0.0, False)


def test_summarize_scenarios_dimensions_and_overall():
    rows = [("ID1", 1.0, True), ("ID1", 0.0, False), ("ID2", 1.0, True), ("SSO", 0.5, True), ("SSO", -1.0, True), ("KE", 0.25, True)]
    out = summarize(rows)
    assert out["ID1/accuracy"] == out["ID1/score"] == 0.5 and out["ID1/parse_failure"] == 0.5
    assert out["SSO/kendall_tau"] == -0.25 and out["KE/rouge1"] == 0.25
    assert out["dimension/clinical_qa"] == 0.75 and out["dimension/reasoning"] == -0.25
    assert out["dimension/information_retrieval"] == 0.25 and "dimension/toxicity" not in out
    assert out["score"] == pytest.approx((0.5 + 1.0 - 0.25 + 0.25) / 4)
    assert out["parse_failure"] == pytest.approx(0.5 / 4)
    # The mean is the one lm-eval's tasks aggregate with (case_mean): an exactly rounded sum, so
    # the items' order (file order, data-parallel ranks) cannot change it where float addition
    # one by one loses digits (a plain sum gives 0.25 or 0.5 for these, by order).
    from clinconsensus_tasks.lmeval_glue import case_mean

    for values in ((1e16, 1.0, -1e16, 1.0), (1.0, 1.0, 1e16, -1e16), (1e16, -1e16, 1.0, 1.0)):
        assert summarize([("KE", v, True) for v in values])["KE/rouge1"] == case_mean(values) == 0.5
    assert sum((1e16, 1.0, -1e16, 1.0)) / 4 == 0.25  # what the order-dependent sum gave


def test_scenario_selection():
    assert scenario_codes(None) == list(SCENARIOS)
    assert scenario_codes("sso, cpr") == ["SSO", "CPR"]
    with pytest.raises(ValueError, match="unknown CliMedBench scenario"):
        scenario_codes(["ID9"])
    assert sample_dir().joinpath("DATA_CARD.md").is_file()
