"""CliMedBench's analysis variants in the framework-free core: perturbation, NOTA, CoT parsing,
length deciles and paired robustness drops, on the bundled sample and on hand-made items."""

from __future__ import annotations

import subprocess
import sys

import pytest

from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.scorers.climedbench import perturbation as P
from clinconsensus_tasks.scorers.climedbench.length_deciles import decile_scores, length_deciles
from clinconsensus_tasks.scorers.climedbench.robustness import paired_drops
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, SCENARIOS, build_prompt
from clinconsensus_tasks.scorers.climedbench.variants import (
    COT,
    COT_FORMATS,
    NOTA,
    NOTA_TEXT,
    PERTURBED,
    VariantSettings,
    ask,
    final_answer,
    score_variant_answer,
)

ALL_ITEMS = [(code, item) for code in SCENARIOS for item in load_scenario(code, announce=False).items]


@pytest.mark.slow
def test_rate_holds_within_one_character_on_every_sample_item():
    for seed in (0, 1, 7):
        for code, item in ALL_ITEMS:
            question = item["question"]
            result = P.perturb(question, item["id"], seed)
            assert abs(result.changed - 0.12 * len(question)) <= 1, (code, item["id"], seed)
            assert result.share == result.changed / len(question)
            assert sum(result.by_kind.values()) == result.changed
            assert len(result.text) == len(question) + result.by_kind["symbol"]


def test_perturbation_is_deterministic_for_seed_and_item_and_varies_otherwise():
    question = ALL_ITEMS[0][1]["question"]
    first = P.perturb(question, "ID1-001", seed=3)
    assert P.perturb(question, "ID1-001", seed=3) == first
    assert P.perturb(question, "ID1-001", seed=4).text != first.text
    assert P.perturb(question, "ID1-002", seed=3).text != first.text
    # The same in a fresh interpreter (no reliance on hash randomisation or global random state).
    code = (
        "from clinconsensus_tasks.scorers.climedbench.perturbation import perturb;"
        f"print(perturb({question!r}, 'ID1-001', seed=3).text)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "12345", **__import__("os").environ}).stdout
    assert out.rstrip("\n") == first.text


def test_protected_text_is_never_changed():
    question = "患儿男，3岁，发热三天，体温39.8℃，血压120/80mmHg，予阿莫西林0.25g口服，CT示肺炎。\n参考答案：B"
    for seed in range(40):
        result = P.perturb(question, "x", seed, rate=0.5)
        kept = result.text
        for span in ("3岁", "三天", "39.8℃", "120/80mmHg", "0.25g", "CT", "参考答案：B"):
            assert span in kept, (seed, span, kept)


def test_each_kind_does_what_it_says():
    question = "患者咳嗽咳痰伴发热，听诊双肺湿啰音，胸片提示肺部感染，需要尽快治疗。"
    trad = P.perturb(question, "t", kinds=["traditional"], rate=0.3)
    convertible = sum(question[i] in P.traditional_table() for i in P.eligible_positions(question))
    # Only 8 of its characters have a traditional form: traditional alone falls short of 10, and says so.
    assert trad.by_kind == {"traditional": 8} and convertible == 8 < round(0.3 * len(question)) == 10
    assert trad.share == 8 / len(question)
    assert all(b == a or P.traditional_table().get(a) == b for a, b in zip(question, trad.text))
    shape = P.perturb(question, "s", kinds=["shape"], rate=0.3)
    assert all(b == a or b in P.shape_table()[a] for a, b in zip(question, shape.text))
    sound = P.perturb(question, "h", kinds=["homophone"], rate=0.3)
    assert all(b == a or b in P.homophone_table()[a] for a, b in zip(question, sound.text))
    symbols = P.perturb(question, "y", kinds=["symbol"], rate=0.1)
    assert symbols.text.translate({ord(c): None for c in P.SYMBOLS}) == question
    assert symbols.changed == round(0.1 * len(question)) == len(symbols.text) - len(question)
    # The libraries' data as documented: 清 and 情 share 青; 清 and 轻 sound alike (qing1); 發.
    assert "情" in P.shape_table()["清"] and "轻" in P.homophone_table()["清"] and P.traditional_table()["发"] == "發"
    assert len(P.common_characters()) == 3755


def test_bad_kind_or_rate_is_refused():
    with pytest.raises(ValueError, match="unknown perturbation kind"):
        P.parse_kinds("shape,typo")
    with pytest.raises(ValueError, match="rate"):
        VariantSettings(PERTURBED, rate=1.5)
    with pytest.raises(ValueError, match="unknown CliMedBench variant"):
        VariantSettings("noisy")


def test_perturbed_item_keeps_options_and_answer_and_logs_the_text():
    scenario = SCENARIOS["FIT"]
    item = load_scenario("FIT", announce=False).items[0]
    asked = ask(scenario, item, VariantSettings(PERTURBED, seed=5))
    assert asked.item["options"] == item["options"] and asked.item["answer"] == item["answer"]
    assert asked.item["question"] != item["question"] and asked.item["question"].endswith(item["question"][-6:])
    assert asked.log["perturbed_question"] == asked.item["question"] and asked.prompt == build_prompt(scenario, asked.item)
    assert asked.log["share_changed"] == P.perturb(item["question"], item["id"], 5).share


def test_nota_replaces_the_right_option_text_and_leaves_out_items_that_have_one():
    scenario = SCENARIOS["ID2"]
    items = load_scenario("ID2", announce=False).items
    asked = [ask(scenario, item, VariantSettings(NOTA)) for item in items]
    left_out = [item["id"] for item, a in zip(items, asked) if a is None]
    assert left_out == ["ID2-009"]  # its option E already reads 以上都不是
    first = asked[0]
    assert first.item["options"][items[0]["answer"]] == NOTA_TEXT and first.item["answer"] == items[0]["answer"]
    others = {k: v for k, v in items[0]["options"].items() if k != items[0]["answer"]}
    assert all(first.item["options"][k] == v for k, v in others.items())
    # FTT's right option is always "none of the above": every item is left out. Non-choice: not applicable.
    assert all(ask(SCENARIOS["FTT"], i, VariantSettings(NOTA)) is None for i in load_scenario("FTT", announce=False).items)
    assert ask(SCENARIOS["SSO"], load_scenario("SSO", announce=False).items[0], VariantSettings(NOTA)) is None


def test_cot_prompt_and_final_answer_parsing():
    scenario = SCENARIOS["BKT"]
    item = load_scenario("BKT", announce=False).items[0]  # answer B
    asked = ask(scenario, item, VariantSettings(COT))
    assert asked.prompt.endswith(COT_FORMATS[CHOICE]) and asked.prompt.startswith(build_prompt(scenario, item).rsplit("\n\n", 1)[0])
    reasoning = "<思考>A项氟马西尼拮抗苯二氮䓬类，答案：A 不对。</思考>\n答案：B"
    assert final_answer(reasoning, COT) == "\n答案：B"
    assert score_variant_answer(scenario, item, reasoning, COT) == (1.0, True)
    # The reasoning's "答案：A" is never read, not even when nothing follows the block.
    assert score_variant_answer(scenario, item, "<思考>答案：A</思考>", COT) == (0.0, False)
    # A block that never closes leaves no answer (parse failure), a reasoning model's <think> is skipped too.
    assert score_variant_answer(scenario, item, "<思考>答案：B 还要再想", COT) == (0.0, False)
    assert score_variant_answer(scenario, item, "<think>C?</think><思考>D?</思考>最终答案：B", COT) == (1.0, True)
    # No block at all: the usual rules on the whole answer.
    assert score_variant_answer(scenario, item, "答案：B", COT) == (1.0, True)
    order = SCENARIOS["SSO"]
    sso = load_scenario("SSO", announce=False).items[0]
    assert score_variant_answer(order, sso, f"<思考>先{sso['answer'][::-1]}？</思考>答案：{sso['answer']}", COT) == (1.0, True)


def test_length_deciles_fill_every_decile_and_ignore_subsets():
    items = load_scenario("ID1", announce=False).items
    deciles = length_deciles(items)
    assert sorted(deciles.values()) == list(range(1, 11))
    by_length = sorted(items, key=lambda i: (len(i["question"]) + sum(map(len, i["options"].values())), i["id"]))
    assert [deciles[i["id"]] for i in by_length] == list(range(1, 11))
    many = [{"id": f"x{n:02d}", "question": "问" * (n % 7 + 1)} for n in range(23)]
    sizes = sorted(list(length_deciles(many).values()).count(d) for d in range(1, 11))
    assert sizes == [2] * 7 + [3] * 3


def test_decile_scores_are_per_scenario_then_unweighted_over_scenarios():
    rows = [("ID1", 1, 1.0), ("ID1", 1, 0.0), ("SSO", 1, 0.5), ("SSO", 2, -1.0)]
    assert decile_scores(rows) == {
        "ID1/length_decile_1": 0.5, "SSO/length_decile_1": 0.5, "SSO/length_decile_2": -1.0,
        "length_decile_1": 0.5, "length_decile_2": -1.0,
    }


def test_paired_drops_exact_means_and_seeded_intervals():
    clean = {("ID1", "a"): 1.0, ("ID1", "b"): 1.0, ("ID1", "c"): 0.0, ("SSO", "a"): 1.0, ("SSO", "b"): 0.5, ("KE", "z"): 0.3}
    variant = {("ID1", "a"): 0.0, ("ID1", "b"): 1.0, ("ID1", "c"): 0.0, ("SSO", "a"): 0.0, ("SSO", "b"): 0.5, ("ID1", "d"): 1.0}
    drops, unpaired = paired_drops(clean, variant, iterations=500, seed=1)
    assert unpaired == {"only_clean": 1, "only_variant": 1}
    by = {d.scope: d for d in drops}
    assert [d.scope for d in drops] == ["ID1", "SSO", "overall"]
    assert (by["ID1"].items, by["ID1"].clean, by["ID1"].variant) == (3, 2 / 3, 1 / 3)
    assert by["ID1"].drop == pytest.approx(1 / 3) and by["SSO"].drop == 0.5
    assert by["overall"].drop == pytest.approx((1 / 3 + 0.5) / 2) and by["overall"].items == 5
    # Every resampled ID1 mean of (1, 0, 0) lies in [0, 1]; SSO's of (1, 0) too; seeded = repeatable.
    assert 0.0 <= by["ID1"].low <= by["ID1"].drop <= by["ID1"].high <= 1.0
    assert paired_drops(clean, variant, iterations=500, seed=1)[0] == drops
    assert paired_drops(clean, variant, iterations=500, seed=2)[0] != drops
    # Identical runs: no drop and a zero-width interval.
    same, _ = paired_drops(clean, clean, iterations=200)
    assert all(d.drop == d.low == d.high == 0.0 for d in same)
    with pytest.raises(ValueError, match="share no"):
        paired_drops({("ID1", "a"): 1.0}, {("ID1", "b"): 1.0})


def test_perturbing_the_whole_sample_touches_only_choice_questions_text():
    # Options and answers of every sample item are unchanged under every variant.
    for code, item in ALL_ITEMS:
        scenario = SCENARIOS[code]
        for variant in (PERTURBED, COT):
            asked = ask(scenario, item, VariantSettings(variant))
            assert asked.item.get("options") == item.get("options") and asked.item["answer"] == item["answer"]
        if scenario.kind == CHOICE and ask(scenario, item, VariantSettings(NOTA)) is not None:
            assert ask(scenario, item, VariantSettings(NOTA)).item["question"] == item["question"]
