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
    bootstrap,
    case_draws,
    cohen_kappa,
    confusion_intervals,
    confusion_matrix,
    fleiss_interval,
    kappa_from,
    macro_f1,
    pearson,
    percent_agreement,
    precision_recall_f1,
    shows_spread,
    verdict_report,
    zero_event_bound,
    zero_event_units,
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


# -- a sample without a discordant event: the exact bound (issue 58, item 6) ------------------------------


def test_the_zero_event_bound_is_clopper_pearson_for_none_of_n_and_solves_back():
    from scipy.stats import beta

    # 1 - 0.05 ** (1 / n): the exact one-sided 95% upper bound for 0 events in n (Clopper-Pearson's
    # Beta(1, n) quantile), about 3 / n
    for n in (1, 2, 10, 12, 19, 59, 60, 300):
        assert zero_event_bound(n) == pytest.approx(beta.ppf(0.95, 1, n), rel=1e-12)
    assert zero_event_bound(10) == pytest.approx(0.2588655508930522, abs=1e-15)
    assert zero_event_bound(60) == pytest.approx(0.0487029133100975, abs=1e-15) and 2.9 < 60 * zero_event_bound(60) < 3
    assert math.isnan(zero_event_bound(0))
    # the fewest units whose bound is at most a share; none brings it to 0
    assert zero_event_units(0.05) == 59 and zero_event_bound(59) <= 0.05 < zero_event_bound(58)
    assert zero_event_units(0.15) == 19 and zero_event_units(0.1) == 29 and zero_event_units(0.95) == 1 and zero_event_units(1.0) == 1
    assert all(zero_event_bound(zero_event_units(b)) <= b < zero_event_bound(zero_event_units(b) - 1) for b in (0.5, 0.2, 0.01, 0.001))
    assert zero_event_units(0.0) is None and zero_event_units(-0.1) is None and zero_event_units(math.nan) is None
    # kappa of an observed and a chance agreement, clamped; undefined when chance is 1
    assert kappa_from(0.9, 0.5) == pytest.approx(0.8) and kappa_from(0.1, 0.9) == -1.0 and math.isnan(kappa_from(1.0, 1.0))


def agreeing_cases(n: int, met: int = 5, rows: int = 10) -> dict[str, list[tuple[bool, bool]]]:
    """``n`` cases on which both raters say met on ``met`` of ``rows`` rows and not met on the rest."""
    return {f"c{k:02d}": [(i < met, i < met) for i in range(rows)] for k in range(n)}


@pytest.mark.parametrize("n", [2, 10, 20])
def test_no_disagreement_in_n_cases_gives_the_exact_bound_not_a_zero_width_interval(n):
    # n cases of 10 rows, both raters met on 5 of each: p_e = 0.5, kappa 1. The case bootstrap gives
    # 1.000 [1.000, 1.000]; asked for it, the interval's end is the bound for no disagreement in n cases.
    pairs = agreeing_cases(n)
    plain = confusion_intervals(pairs, resamples=200)
    assert (plain["kappa"].low, plain["kappa"].high) == (1.0, 1.0)  # what the percentiles give
    exact = confusion_intervals(pairs, resamples=200, zero_event="disagreement")
    b = 1 - 0.05 ** (1 / n)
    kappa = exact["kappa"]
    assert (kappa.estimate, kappa.low, kappa.high, kappa.cases) == (1.0, pytest.approx(1 - b / 0.5), 1.0, n)
    assert math.isnan(kappa.stderr)
    assert kappa.to_dict()["zero_events"] == {"event": "disagreement", "cases": n, "bound": pytest.approx(b), "chance": 0.5}
    for name in ("percent_agreement", "precision_met", "recall_met", "macro_f1"):  # every case holds both classes
        assert (exact[name].estimate, exact[name].low, exact[name].high) == (1.0, pytest.approx(1 - b), 1.0), name
        assert "chance" not in exact[name].to_dict()["zero_events"]


def test_the_exact_bound_is_read_from_the_counts_and_left_alone_with_a_disagreement_or_one_class():
    # One disagreeing row among 200: the bootstrap's interval, as without the rule
    pairs = agreeing_cases(20)
    pairs["c07"][0] = (True, False)
    assert confusion_intervals(pairs, resamples=200, zero_event="disagreement") == confusion_intervals(pairs, resamples=200)
    # one class on both sides: kappa and macro F1 undefined, as before; the shares get the bound
    met = {f"c{k}": [(True, True)] * 4 for k in range(12)}
    found = confusion_intervals(met, resamples=100, zero_event="disagreement")
    assert math.isnan(found["kappa"].estimate) and math.isnan(found["kappa"].low) and found["kappa"].zero_events is None
    assert math.isnan(found["macro_f1"].estimate) and found["macro_f1"].zero_events is None
    for m in ("percent_agreement", "precision_met", "recall_met"):  # 1 - B = 0.05 ** (1 / 12)
        assert (found[m].estimate, found[m].low, found[m].high) == (1.0, pytest.approx(0.05 ** (1 / 12)), 1.0), m
    # one case: no interval, whatever the rule
    one = confusion_intervals(agreeing_cases(1), resamples=100, zero_event="disagreement")["kappa"]
    assert one.estimate == 1.0 and math.isnan(one.low) and one.zero_events is None
    # a kappa whose chance agreement is high has a low lower end, clamped to -1
    skewed = {f"c{k:02d}": [(i < 1 and k == 0, i < 1 and k == 0) for i in range(10)] for k in range(10)}
    low = confusion_intervals(skewed, resamples=100, zero_event="disagreement")["kappa"]
    p_met = 1 / 100
    assert low.estimate == 1.0 and low.low == -1.0 and low.zero_events.chance == pytest.approx(p_met**2 + (1 - p_met) ** 2)


def test_fleiss_kappa_of_unanimous_items_has_the_exact_lower_end():
    # 12 cases, 10 items each, 2 raters, unanimous; met on 4 of 10 items: p_e = 0.4^2 + 0.6^2 = 0.52
    votes = {f"c{k}": [2] * 4 + [0] * 6 for k in range(12)}
    b = 1 - 0.05 ** (1 / 12)
    found = fleiss_interval(votes, 2, resamples=100, zero_event="flip")
    assert (found.estimate, found.low, found.high) == (1.0, pytest.approx(1 - b / 0.48), 1.0) and found.zero_events.event == "flip"
    assert fleiss_interval(votes, 2, resamples=100).low == 1.0  # the percentiles alone
    split = {**votes, "c0": [1] + [2] * 3 + [0] * 6}  # one item split: the bootstrap's interval
    assert fleiss_interval(split, 2, resamples=100, zero_event="flip") == fleiss_interval(split, 2, resamples=100)


def test_a_share_with_spread_keeps_its_bootstrap_interval():
    pairs = {f"c{k}": [(True, k % 3 != 0), (False, False)] for k in range(12)}
    keys = sorted(pairs, key=repr)
    per_case = confusion_matrix(pairs, keys)
    plain = bootstrap(per_case, lambda parts: cohen_kappa(Confusion(*(int(round(x)) for x in parts))), case_draws(12, 300))
    assert confusion_intervals(pairs, resamples=300, zero_event="disagreement")["kappa"] == plain and plain.zero_events is None
