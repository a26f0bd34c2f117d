"""Hand-worked values for the CliMedBench scorers: choice letters, ordering tau, Chinese ROUGE-1."""

import random

import pytest

from clinconsensus_tasks.scorers.climedbench.choice import extract_choice, score_choice
from clinconsensus_tasks.scorers.climedbench.ordering import extract_order, kendall_tau_partial, score_order
from clinconsensus_tasks.scorers.climedbench.rouge_zh import (
    ChineseTokenizer,
    keyword_rouge1,
    rouge1_f1,
    tokenize,
)

# --------------------------------------------------------------------------- choice

ABCD = "ABCD"
ABCDE = ["A", "B", "C", "D", "E"]


@pytest.mark.parametrize(
    ("answer", "letters", "expected"),
    [
        ("答案：B", ABCD, "B"),
        ("答案:B", ABCD, "B"),
        ("正确答案是 C。", ABCD, "C"),
        ("我选D", ABCD, "D"),
        ("Answer: A", ABCD, "A"),
        ("ANSWER:B", ABCD, "B"),
        ("answer is e", ABCDE, None),  # lowercase letters never count
        ("答案：b", ABCD, None),  # documented: uppercase only
        ("Ｂ．肺炎链球菌", ABCD, "B"),  # full-width, rule 2
        ("B", ABCD, "B"),
        ("(C) 阿司匹林", ABCD, "C"),
        ("（C）阿司匹林", ABCD, "C"),
        ("【D】", ABCD, "D"),
        ("**A**", ABCD, "A"),
        ("首选CT检查，答案为A", ABCD, "A"),  # marker wins, CT ignored
        ("应该做CT，选项B更合适", ABCD, "B"),
        ("CT和MRI都可以", ABCD, None),  # no standalone letter
        ("A或者C都可以", ABCD, "A"),  # rule 2: begins with A
        ("可能是A也可能是C", ABCD, None),  # two distinct standalone letters, no marker
        ("根据指南，患者应选择B；答案：C", ABCD, "C"),  # last marker
        ("答案是E", ABCD, None),  # E is not an option letter
        ("答案是E", ABCDE, "E"),
        ("D是正确的，因为D选项...", ABCD, "D"),  # rule 2
        ("答案是CT", ABCD, None),  # "CT" is a word, not a choice
        ("答案是CT检查，即B", ABCD, "B"),  # rule 3: only B stands alone
        ("答案：B。选项D的说法错误", ABCD, "D"),  # the last valid marker decides, whatever the prose means
        ("患者应做ICU监护，最合适的是C", ABCD, "C"),  # rule 3
        ("答案是E，不对，答案：A", ABCDE, "A"),
        ("答案：（B）", ABCD, "B"),
        ("体温39℃，最可能的诊断是B", ABCD, "B"),  # ℃ -> °C after NFKC; a degree sign's C is no option
        ("体温38.5°C，最可能的诊断是B", ABCD, "B"),
        ("补充维生素B12", ABCD, "B"),  # digits may touch a standalone letter
        ("", ABCD, None),
        ("不知道", ABCD, None),
    ],
)
def test_extract_choice(answer, letters, expected):
    assert extract_choice(answer, letters) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # What SmolLM2-135M-Instruct wrote for ID1 (tests/real_server): the option list, again and again.
        ("A. 18导联心电图及心肌肌钙蛋白检测\nB. 胃镜检查\nC. 腹部超声检查\nD. 肺功能检查\nA. 18导联心电图", None),
        ("A. 胃镜 B. 超声 C. CT D. 肺功能", None),
        ("(A) 胃镜 (B) 超声", None),
        ("（A）胃镜；（B）超声", None),
        ("A、胃镜 B、超声", None),
        ("Ａ．胃镜。Ｂ．超声。", None),  # full-width labels after Chinese punctuation
        ("选项：A. 胃镜 B. 超声", None),  # a marker heading the list is no choice
        ("A. 胃镜 B. 超声 C. CT\n答案：C", "C"),  # the list, then a marker: the marker decides
        ("A. 胃镜 B. 超声\n我选B", "B"),
        ("答案：B. 超声", "B"),  # one label is an answer, not a list
        # SmolLM2 on ID1-004: the list, then the list again from D on, headed 选项: no choice.
        ("选项：A. 肺功能检查\nB. 纤维支气管镜检查\nC. CTPA\nD. CTPA；CTTA\n\n选项：D. CTPA；CTTA\nD. CTPA；CTTA", None),
        ("选项：A. 18导联心电图\n\n请以上选项中最合适的一项", "A"),  # one option named, nothing else: rule 3
        ("应选选项D，因为...", "D"),
        ("A. 胃镜 B. 超声\n正确选项：B. 超声", "B"),
        ("B. 超声。A项不对", "B"),  # "A项" is no label: one label, rule 2
        ("A. 胃镜 A. 胃镜", "A"),  # the same label twice lists nothing else: rule 2
    ],
)
def test_an_answer_that_lists_options_chooses_only_by_a_marker(answer, expected):
    assert extract_choice(answer, ABCD) == expected


def test_marker_not_followed_by_valid_letter_falls_back_to_earlier_marker():
    assert extract_choice("答案：B。以上答案仅供参考", ABCD) == "B"
    assert extract_choice("我选C，答案是E", ABCD) == "C"


def test_full_width_letters_argument_is_normalised():
    assert extract_choice("答案：B", ["Ａ", "Ｂ"]) == "B"


def test_score_choice():
    assert score_choice("答案：B", "B", ABCD) == (1.0, True)
    assert score_choice("答案：B", "C", ABCD) == (0.0, True)
    assert score_choice("答案：B", " b ", ABCD) == (1.0, True)
    assert score_choice("不知道", "B", ABCD) == (0.0, False)


# --------------------------------------------------------------------------- ordering


@pytest.mark.parametrize(
    ("answer", "gold", "expected"),
    [
        ("DCBA", "DCBA", 1.0),
        ("ABCD", "DCBA", -1.0),
        ("DCAB", "DCBA", 2 / 3),  # one adjacent swap of four: (5 - 1) / 6
        ("DC", "DCBA", 1 / 6),  # only (D, C) scored
        ("DDCBA", "DCBA", 1.0),  # duplicates keep their first position
        ("顺序：D→C→B→A", "DCBA", 1.0),
        ("D,C,B,A", "DCBA", 1.0),
        ("D-C-B-A", "DCBA", 1.0),
        ("D > C > B > A", "DCBA", 1.0),
        ("D、C、B、A", "DCBA", 1.0),
        ("D C B A E", "DCBA", 1.0),  # letters outside the gold are dropped
        ("D→C→B→A→E", "DCBA", 1.0),
        ("先做CT，然后排序为 B A D C", "ABCD", 1 / 3),  # after the marker: B A D C
        ("排序：DCBA。这个排序的依据是指南", "DCBA", 1.0),  # empty last marker falls back
        ("应先行ICU监护，D→C→B→A", "DCBA", 1.0),  # ICU skipped whole (I, U not steps)
        ("顺序：D→B→A（体温39℃时）", "DCBA", 1 / 2),  # "°C" skipped; (D,B),(D,A),(B,A) = +3 of 6
        ("答案：D→C→B→A", ["D", "C", "B", "A"], 1.0),
        ("答案：D→C→B→A", "D→C→B→A", 1.0),
    ],
)
def test_score_order(answer, gold, expected):
    score, parsed = score_order(answer, gold)
    assert parsed
    assert score == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("answer", ["不知道", "", "CT和MRI", "dcba"])
def test_score_order_unparseable(answer):
    assert score_order(answer, "DCBA") == (0.0, False)


def test_word_with_a_non_step_letter_is_skipped_whole():
    # Documented decision: a contiguous run is a word; "DCBAE" holds E, so it is skipped like "CT".
    assert extract_order("DCBAE", "DCBA") == []
    assert score_order("DCBAE", "DCBA") == (0.0, False)
    assert extract_order("CT检查后 B A", "ABCD") == ["B", "A"]
    assert extract_order("ABC", "ABCD") == ["A", "B", "C"]


def test_extract_order_marker_handling():
    assert extract_order("先做CT，然后排序为 B A D C", "ABCD") == ["B", "A", "D", "C"]
    assert extract_order("我认为A先，答案：C B", "ABC") == ["C", "B"]
    assert extract_order("Ｄ→Ｃ→Ｂ→Ａ", "ABCD") == ["D", "C", "B", "A"]


def test_kendall_tau_partial_edge_cases():
    assert kendall_tau_partial(["A"], ["A"]) == 1.0
    assert kendall_tau_partial([], ["A"]) == 0.0
    assert kendall_tau_partial(["A"], []) == 0.0
    assert kendall_tau_partial([], ["A", "B"]) == 0.0
    assert kendall_tau_partial(["B", "A", "B"], ["A", "B"]) == -1.0
    assert kendall_tau_partial(["A", "C"], ["A", "B", "C"]) == pytest.approx(1 / 3)


def test_kendall_tau_partial_matches_scipy_on_complete_permutations():
    from scipy.stats import kendalltau

    rng = random.Random(20240611)
    for _ in range(200):
        n = rng.randint(4, 7)
        gold = [chr(ord("A") + i) for i in range(n)]
        predicted = gold[:]
        rng.shuffle(predicted)
        rank = {item: i for i, item in enumerate(predicted)}
        expected = kendalltau(list(range(n)), [rank[g] for g in gold]).statistic
        assert kendall_tau_partial(predicted, gold) == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------- rouge


def test_tokenize():
    assert tokenize("高血压 糖尿病") == ["高", "血", "压", "糖", "尿", "病"]
    assert tokenize("PD-1抑制剂") == ["pd", "1", "抑", "制", "剂"]
    assert tokenize("ＣＯＶＩＤ－１９") == ["covid", "19"]
    assert tokenize("，。！？  \n") == []
    assert tokenize("\U00020000\u3400\uf900") == ["\U00020000", "\u3400", "\u8c48"]  # F900 -> NFKC


def test_chinese_tokenizer_class_matches_function():
    assert ChineseTokenizer().tokenize("PD-1抑制剂") == tokenize("PD-1抑制剂")


@pytest.mark.parametrize(
    ("prediction", "reference", "expected"),
    [
        ("高血压 糖尿病", "高血压", 2 / 3),
        ("PD-1抑制剂", "pd-1 抑制剂 免疫", 10 / 12),
        ("血血血", "血", 0.5),
        ("高血压", "高血压", 1.0),
        ("高血压", "肺炎", 0.0),
        ("", "高血压", 0.0),
        ("高血压", "", 0.0),
        ("", "", 0.0),
        ("。。。", "高血压", 0.0),
    ],
)
def test_rouge1_f1(prediction, reference, expected):
    assert rouge1_f1(prediction, reference) == pytest.approx(expected, abs=1e-12)


def test_keyword_rouge1():
    assert keyword_rouge1("高血压 糖尿病", ["高血压"]) == pytest.approx(2 / 3)
    assert keyword_rouge1("PD-1抑制剂", ["PD-1", "抑制剂", "免疫"]) == pytest.approx(10 / 12)
    assert keyword_rouge1("高血压", []) == 0.0


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("高血压 糖尿病", "高血压"),
        ("PD-1抑制剂", "pd-1 抑制剂 免疫"),
        ("血血血", "血"),
        ("患者CT提示肺部结节，建议PET-CT", "肺结节 PET-CT 随访"),
        ("ＣＯＶＩＤ－１９ 疫苗接种", "covid-19 疫苗"),
        ("2型糖尿病，HbA1c 7.5%", "糖尿病 HbA1c 二甲双胍"),
        ("急性心肌梗死 PCI", "心肌梗死 经皮冠状动脉介入治疗 PCI"),
        ("阿司匹林100mg qd", "阿司匹林 氯吡格雷"),
        ("无关的回答", "高血压 心衰"),
        ("EGFR突变 非小细胞肺癌 靶向治疗", "EGFR 肺癌 奥希替尼 靶向"),
    ],
)
def test_rouge1_matches_rouge_score(prediction, reference):
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1"], tokenizer=ChineseTokenizer())
    expected = scorer.score(reference, prediction)["rouge1"].fmeasure
    assert rouge1_f1(prediction, reference) == pytest.approx(expected, abs=1e-12)
