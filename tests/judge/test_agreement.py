"""Agreement statistics equal scikit-learn's on hand-built confusion matrices.

Undefined is undefined: scikit-learn is asked with ``zero_division=nan`` (its default, 0 or a
warning, would read as a verdict on the rater), and macro F1 is the mean of both classes' F1, so
undefined when either is (scikit-learn's own macro average drops an undefined class instead).
"""

from __future__ import annotations

import math

import pytest
from sklearn.metrics import cohen_kappa_score, f1_score, precision_score, recall_score

from clinconsensus_tasks.scorers.agreement import (
    Confusion,
    cohen_kappa,
    macro_f1,
    pearson,
    percent_agreement,
    precision_recall_f1,
    shows_spread,
    verdict_report,
)


def labels(c: Confusion) -> tuple[list[int], list[int]]:
    ref = [1] * c.tp + [0] * c.tn + [0] * c.fp + [1] * c.fn
    other = [1] * c.tp + [0] * c.tn + [1] * c.fp + [0] * c.fn
    return ref, other


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


MATRICES = [
    Confusion(tp=40, tn=30, fp=10, fn=20),  # ordinary
    Confusion(tp=5, tn=5, fp=0, fn=0),  # all agree, both classes
    Confusion(tp=12, tn=0, fp=0, fn=0),  # all agree, one class only: kappa undefined
    Confusion(tp=0, tn=9, fp=0, fn=0),  # all "not met"
    Confusion(tp=0, tn=0, fp=6, fn=4),  # never agree
    Confusion(tp=0, tn=7, fp=3, fn=0),  # reference never met
    Confusion(tp=3, tn=0, fp=0, fn=5),  # other never "not met" wrong way round
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("c", MATRICES)
def test_equal_to_scikit_learn(c):
    ref, other = labels(c)
    assert same(cohen_kappa(c), cohen_kappa_score(ref, other))
    precision, recall, f1 = precision_recall_f1(c)
    assert same(precision, precision_score(ref, other, zero_division=math.nan))
    assert same(recall, recall_score(ref, other, zero_division=math.nan))
    assert same(f1, f1_score(ref, other, zero_division=math.nan))
    per_class = f1_score(ref, other, average=None, labels=[0, 1], zero_division=math.nan)
    assert same(macro_f1(c), float(per_class.mean()))
    assert percent_agreement(c) == sum(r == o for r, o in zip(ref, other)) / len(ref)


def test_hand_worked_kappa():
    # p_o = 0.7; reference met 0.6, other met 0.5: p_e = 0.3 + 0.2 = 0.5; kappa = 0.2 / 0.5 = 0.4
    c = Confusion(tp=40, tn=30, fp=10, fn=20)
    assert cohen_kappa(c) == pytest.approx(0.4, abs=1e-15)
    assert verdict_report(c)["pairs"] == 100.0


def test_confusion_from_pairs_and_sum():
    c = Confusion.of([(True, True), (True, False), (False, True), (False, False), (False, False)])
    assert c == Confusion(tp=1, tn=2, fp=1, fn=1)
    assert c + c == Confusion(tp=2, tn=4, fp=2, fn=2)
    assert math.isnan(percent_agreement(Confusion())) and math.isnan(cohen_kappa(Confusion()))


def test_pearson():
    from scipy.stats import pearsonr

    x, y = [3, 10, 17, 22, 30], [5, 9, 18, 20, 27]
    assert pearson(x, y) == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3])) and math.isnan(pearson([1], [2]))


def test_a_sample_without_spread_is_told_from_its_values_not_from_rounding():
    import numpy as np

    # Equal values whose variance rounding makes non-zero: numpy's mean of seven 0.1's is not 0.1.
    tenths = np.full(7, 0.1)
    assert tenths.var(ddof=1) == 2.2469182684517753e-34 and tenths.std(ddof=1) > 0
    assert not shows_spread(tenths) and not shows_spread([0.553] * 12)
    # Differences of equal shares taken through a sum: (0.553 + 0.3) - 0.3 - 0.553 is -1.1e-16, not 0. Alone
    # they are far apart for their own size; at the scale of the shares they came from they are one number.
    noise = [(c + 0.3) - 0.3 - c for c in (0.7, 0.1, 0.9, 0.553)]
    assert noise == [0.0, 2.7755575615628914e-17, -1.1102230246251565e-16, -1.1102230246251565e-16]
    assert shows_spread(noise) and not shows_spread(noise, scale=1.0)
    # Real differences, down to one row in thousands, and fewer than two values
    assert shows_spread([0.1, 0.2]) and shows_spread([0.5, 0.5 + 1 / 3000], scale=1.0) and shows_spread([-1e-3, 0.0])
    assert not shows_spread([0.553]) and not shows_spread([]) and not shows_spread([0.0, 0.0, -0.0])
    # Pearson's correlation with a constant side is undefined, however its sum of squares rounds
    assert math.isnan(pearson([0.7] * 3, [1, 2, 4])) and math.isnan(pearson([0.1] * 7, [1, 2, 3, 4, 5, 6, 9]))
