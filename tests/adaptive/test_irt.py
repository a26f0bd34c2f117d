"""IRT maths and the adaptive engine: hand-worked values, estimator and calibration checks, resume."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from clinconsensus_tasks.adaptive.engine import (
    AdaptiveSession,
    ItemBank,
    ItemBankError,
    build_response_matrix,
    calibrate_bank,
)
from clinconsensus_tasks.scorers import irt
from clinconsensus_tasks.scorers.irt import (
    dichotomize,
    estimate_theta,
    expected_score,
    fit_items,
    icc,
    information,
    recovery_report,
    select_next_item,
    simulate_responses,
)


def random_items(n: int, seed: int, c_max: float = 0.25):
    rng = np.random.default_rng(seed)
    return rng.lognormal(0.0, 0.3, n), rng.normal(0.0, 1.0, n), rng.uniform(0.0, c_max, n)


def small_bank(n: int = 200, seed: int = 0) -> ItemBank:
    a, b, c = random_items(n, seed)
    scenarios = ["ID1" if k % 3 else "KE" for k in range(n)]
    c = np.where(np.array(scenarios) == "ID1", c, 0.0)
    return ItemBank([f"q{k:03d}" for k in range(n)], scenarios, a, b, c, provenance={"source": "test"})


# --------------------------------------------------------------------------- ICC and information


@pytest.mark.parametrize(
    ("theta", "a", "b", "c", "p", "info"),
    [
        # L = 1/2: P = 0.2 + 0.8 * 0.5 = 0.6; I = 2.25 * 0.4^2 * 0.4 / (0.8^2 * 0.6) = 0.144 / 0.384 = 0.375.
        (0.0, 1.5, 0.0, 0.2, 0.6, 0.375),
        # L = 3/4: P = 0.25 + 0.75 * 0.75 = 13/16; I = (9/16)^2 (3/16) / ((3/4)^2 (13/16)) = 27/208.
        (math.log(3), 1.0, 0.0, 0.25, 13 / 16, 27 / 208),
        # 2PL at theta = b: P = 1/2, I = a^2 / 4 = 1.
        (1.0, 2.0, 1.0, 0.0, 0.5, 1.0),
        # z = a (theta - b) = ln 3: P = 3/4, I = 4 * 3/4 * 1/4 = 0.75.
        (math.log(3) / 2, 2.0, 0.0, 0.0, 0.75, 0.75),
    ],
)
def test_icc_and_information_hand_worked(theta, a, b, c, p, info):
    assert icc(theta, a, b, c) == pytest.approx(p, abs=1e-15)
    assert information(theta, a, b, c) == pytest.approx(info, abs=1e-15)


def test_information_equals_slope_squared_over_variance():
    # I = P'(theta)^2 / (P (1 - P)) for a dichotomous item, P' by central differences.
    a, b, c = random_items(30, seed=1)
    for theta in (-2.5, -0.3, 0.0, 1.7):
        h = 1e-5
        slope = (np.asarray(icc(theta + h, a, b, c)) - np.asarray(icc(theta - h, a, b, c))) / (2 * h)
        p = np.asarray(icc(theta, a, b, c))
        np.testing.assert_allclose(information(theta, a, b, c), slope**2 / (p * (1 - p)), rtol=1e-7)


def test_3pl_information_peaks_where_birnbaum_says():
    # theta_max = b + ln((1 + sqrt(1 + 8c)) / 2) / a.
    a, b, c = 1.3, 0.4, 0.2
    grid = np.linspace(-2, 3, 500_001)
    peak = grid[np.argmax(information(grid, a, b, c))]
    assert peak == pytest.approx(b + math.log((1 + math.sqrt(1 + 8 * c)) / 2) / a, abs=1e-4)


def test_vectorised_shapes_and_extremes():
    a, b, c = random_items(4, seed=2)
    thetas = np.array([-1.0, 0.0, 2.0])
    assert np.shape(icc(thetas, a, b, c)) == (3, 4)
    assert np.shape(information(thetas, a, b, c)) == (3, 4)
    assert np.shape(icc(0.5, a, b, c)) == (4,)
    assert isinstance(icc(0.5, 1.0, 0.0, 0.0), float)
    np.testing.assert_allclose(np.asarray(icc(thetas, a, b, c))[1], icc(0.0, a, b, c))
    # Far tails: no NaN (at -800 the logistic underflows to 0, P = 0 for c = 0), information -> 0.
    assert information(-800.0, 1.0, 0.0, 0.0) == 0.0
    assert information(-60.0, 1.0, 0.0, 0.0) == pytest.approx(0.0, abs=1e-20)
    assert information(-60.0, 1.0, 0.0, 0.2) == pytest.approx(0.0, abs=1e-20)
    assert icc(-60.0, 1.0, 0.0, 0.2) == pytest.approx(0.2)
    assert information(60.0, 1.0, 0.0, 0.2) == pytest.approx(0.0, abs=1e-20)


def test_expected_score_is_mean_probability():
    a, b, c = random_items(50, seed=3)
    assert expected_score(0.7, a, b, c) == pytest.approx(float(np.mean(icc(0.7, a, b, c))))
    np.testing.assert_allclose(expected_score(np.array([-1.0, 1.0]), a, b, c),
                               [expected_score(-1.0, a, b, c), expected_score(1.0, a, b, c)])
    # Increasing in theta.
    assert expected_score(1.0, a, b, c) > expected_score(0.0, a, b, c)


# --------------------------------------------------------------------------- dichotomisation


def test_dichotomize_thresholds():
    assert irt.DICHOTOMY_THRESHOLDS == {"kendall_tau": 0.5, "rouge1": 0.5, "similarity": 0.8}
    assert dichotomize("kendall_tau", 0.5) == 1.0 and dichotomize("kendall_tau", 0.4999) == 0.0
    assert dichotomize("kendall_tau", -1.0) == 0.0
    assert dichotomize("rouge1", 0.5) == 1.0 and dichotomize("rouge1", 0.49) == 0.0
    assert dichotomize("similarity", 0.8) == 1.0 and dichotomize("similarity", 0.79) == 0.0
    assert dichotomize("accuracy", 1) == 1.0 and dichotomize("accuracy", 0.0) == 0.0
    assert math.isnan(dichotomize("rouge1", None)) and math.isnan(dichotomize("accuracy", float("nan")))
    with pytest.raises(ValueError, match="0 or 1"):
        dichotomize("accuracy", 0.5)
    with pytest.raises(ValueError, match="bleu"):
        dichotomize("bleu", 0.9)


def test_build_response_matrix():
    records = [
        ("m1", "ID1-1", "accuracy", 1),
        ("m1", "SSO-1", "kendall_tau", 0.5),
        ("m2", "ID1-1", "accuracy", 0),
        ("m2", "KE-1", "rouge1", 0.3),
        ("m1", "WTD-1", "similarity", 0.81),
        ("m2", "SSO-1", "kendall_tau", None),
    ]
    models, items, matrix = build_response_matrix(records)
    assert models == ["m1", "m2"]
    assert items == ["ID1-1", "SSO-1", "KE-1", "WTD-1"]
    np.testing.assert_array_equal(matrix, [[1, 1, np.nan, 1], [0, np.nan, 0, np.nan]])
    with pytest.raises(ValueError, match="second value"):
        build_response_matrix(records + [("m1", "ID1-1", "accuracy", 0)])
    with pytest.raises(ValueError, match="record 0"):
        build_response_matrix([("m1", "ID1-1", "accuracy", 0.7)])


# --------------------------------------------------------------------------- ability estimation


def test_eap_of_an_empty_test_is_the_prior():
    theta, se = estimate_theta([], [], [], [], prior_mean=0.5, prior_sd=1.2)
    assert theta == pytest.approx(0.5, abs=1e-6) and se == pytest.approx(1.2, abs=1e-6)
    a, b, c = random_items(5, seed=4)
    theta, se = estimate_theta([np.nan] * 5, a, b, c)
    assert theta == pytest.approx(0.0, abs=1e-6) and se == pytest.approx(1.0, abs=1e-6)
    assert estimate_theta([], [], [], [], method="MLE") == (0.0, math.inf)


@pytest.mark.parametrize("true_theta", [-1.8, 0.4, 2.2])
def test_eap_and_mle_recover_theta_on_a_long_test(true_theta):
    a, b, c = random_items(3000, seed=5)
    u = simulate_responses(true_theta, a, b, c, np.random.default_rng(6))[0]
    for method in ("EAP", "MLE"):
        theta, se = estimate_theta(u, a, b, c, method=method)
        assert se < 0.08
        assert abs(theta - true_theta) < 3.5 * se, method


@pytest.mark.slow
def test_eap_agrees_with_dense_quadrature():
    # The zoomed second grid must not bias the posterior mean of a long test.
    a, b, c = random_items(2000, seed=7)
    u = simulate_responses(0.83, a, b, c, np.random.default_rng(8))[0]
    grid = np.linspace(0.0, 1.7, 8_501)  # the posterior sits within 0.83 +- 0.3; step 2e-4
    p = np.clip(np.asarray(icc(grid, a, b, c)), 1e-12, 1 - 1e-12)
    logpost = np.log(p) @ u + np.log1p(-p) @ (1 - u) - grid**2 / 2
    w = np.exp(logpost - logpost.max())
    w /= w.sum()
    mean = w @ grid
    sd = math.sqrt(w @ (grid - mean) ** 2)
    theta, se = estimate_theta(u, a, b, c)
    assert theta == pytest.approx(mean, abs=1e-4)
    assert se == pytest.approx(sd, rel=1e-3)


def test_mle_is_clamped_and_matrix_input_is_row_by_row():
    a, b, c = random_items(20, seed=9)
    assert estimate_theta(np.ones(20), a, b, c, method="MLE")[0] == 4.0
    assert estimate_theta(np.zeros(20), a, b, c, method="MLE")[0] == -4.0
    rows = simulate_responses(np.array([-1.0, 0.0, 1.0]), a, b, c, np.random.default_rng(10), missing=0.2)
    thetas, ses = estimate_theta(rows, a, b, c)
    for row, t, s in zip(rows, thetas, ses):
        assert estimate_theta(row, a, b, c) == (t, s)


# --------------------------------------------------------------------------- item selection


def test_selection_order_on_a_fixed_bank():
    # Equal slopes, no guessing: the closest b to theta = 0.3 is most informative
    # (distances 2.3, 1.3, 0.3, 0.7, 1.7), so the order is 2, 3, 1, 4, 0.
    b = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    used: set[int] = set()
    order = []
    for _ in range(5):
        k = select_next_item(0.3, 1.0, b, 0.0, used)
        order.append(k)
        used.add(k)
    assert order == [2, 3, 1, 4, 0]
    with pytest.raises(ValueError, match="every item"):
        select_next_item(0.3, 1.0, b, 0.0, used)
    # At theta = 0: I = 0.25 for (1, 0, 0); 0.8 * 0.25 * 0.5 / 0.6 = 1/6 for (1, 0, 0.2);
    # 4 * L (1 - L) with L = expit(-2) = 0.41997 for (2, 1, 0). Order 2, 0, 1.
    a, bb, c = np.array([1.0, 1.0, 2.0]), np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.2, 0.0])
    np.testing.assert_allclose(information(0.0, a, bb, c), [0.25, 1 / 6, 0.41997434], atol=1e-8)
    mask = np.zeros(3, dtype=bool)
    picks = []
    for _ in range(3):
        k = select_next_item(0.0, a, bb, c, mask)
        picks.append(k)
        mask[k] = True
    assert picks == [2, 0, 1]


def test_randomesque_picks_only_among_the_top_k():
    a, b, c = random_items(100, seed=11)
    info = np.asarray(information(0.2, a, b, c))
    used = {int(np.argmax(info))}
    info[list(used)] = -np.inf
    top3 = set(np.argsort(-info)[:3].tolist())
    rng = np.random.default_rng(12)
    picks = {select_next_item(0.2, a, b, c, used, randomesque=3, rng=rng) for _ in range(200)}
    assert picks == top3
    with pytest.raises(ValueError, match="rng"):
        select_next_item(0.2, a, b, c, randomesque=3)


# --------------------------------------------------------------------------- calibration


def test_fit_2pl_and_1pl_recover_parameters():
    rng = np.random.default_rng(13)
    a, b, _ = random_items(150, seed=14)
    theta = rng.normal(size=1000)
    fitted = fit_items(simulate_responses(theta, a, b, 0.0, rng), model="2PL")
    report = recovery_report((a, b, np.zeros(150)), fitted)
    assert fitted.converged and np.all(fitted.c == 0)
    assert report["a"]["corr"] > 0.85 and report["b"]["corr"] > 0.98 and report["b"]["rmse"] < 0.2
    rasch = fit_items(simulate_responses(theta, 1.0, b, 0.0, rng), model="1PL")
    assert np.all(rasch.a == 1.0)
    assert np.corrcoef(rasch.b, b)[0, 1] > 0.98


@pytest.mark.slow
def test_fit_3pl_recovers_parameters_with_missing_responses():
    rng = np.random.default_rng(15)
    a, b, c = random_items(200, seed=16)
    theta = rng.normal(size=1500)
    responses = simulate_responses(theta, a, b, c, rng, missing=0.3)
    fitted = fit_items(responses, model="3PL")
    report = recovery_report((a, b, c), fitted)
    assert report["b"]["corr"] > 0.93
    assert report["a"]["corr"] > 0.6
    assert report["c"]["rmse"] < 0.1
    assert np.all((fitted.c > 0) & (fitted.c < 0.6)) and np.all(fitted.a > 0)


def test_fit_rejects_non_binary_responses():
    with pytest.raises(ValueError, match="dichotomise"):
        fit_items(np.array([[0.0, 0.7], [1.0, 0.0]]))


@pytest.mark.slow
def test_calibrate_bank_frees_guessing_for_choice_items_only():
    rng = np.random.default_rng(17)
    n = 120
    scenarios = ["BKT" if k % 2 else "KE" for k in range(n)]
    a, b, c = random_items(n, seed=18)
    c = np.where(np.array(scenarios) == "BKT", c, 0.0)
    matrix = simulate_responses(rng.normal(size=600), a, b, c, rng)
    bank = calibrate_bank(matrix, [f"i{k}" for k in range(n)], scenarios, provenance={"models": "simulated"})
    ke = np.array(scenarios) == "KE"
    assert np.all(bank.c[ke] == 0) and np.all(bank.c[~ke] > 0)
    assert np.corrcoef(bank.b, b)[0, 1] > 0.9
    assert bank.provenance["models"] == "simulated"
    assert bank.provenance["calibration"]["items"] == n
    with pytest.raises(ValueError, match="unknown scenario"):
        calibrate_bank(matrix, [f"i{k}" for k in range(n)], ["XYZ"] * n)


# --------------------------------------------------------------------------- item bank files


def test_bank_save_load_round_trip(tmp_path):
    bank = small_bank()
    path = bank.save(tmp_path / "bank.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "clinconsensus-cat-bank" and data["version"] == 1 and data["model"] == "3PL"
    assert set(data["items"][0]) == {"id", "scenario", "a", "b", "c"}
    loaded = ItemBank.load(path)
    assert loaded.item_ids == bank.item_ids and loaded.scenarios == bank.scenarios
    for name in "abc":
        np.testing.assert_array_equal(getattr(loaded, name), getattr(bank, name))
    assert loaded.provenance == {"source": "test"}
    assert loaded.dichotomy_thresholds == irt.DICHOTOMY_THRESHOLDS
    assert loaded.fingerprint() == bank.fingerprint()


def _bank_file(tmp_path, mutate) -> str:
    data = small_bank(3).to_dict()
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["items"][1].update(a=-0.5), r"items\[1\]\.a: must be a finite number > 0"),
        (lambda d: d["items"][0].pop("b"), r"items\[0\]\.b: expected a finite number"),
        (lambda d: d["items"][2].update(c=1.2), r"items\[2\]\.c"),
        (lambda d: d["items"][2].update(id="q000"), r"duplicated ids \['q000'\]"),
        (lambda d: d.update(format="something-else"), r"format: expected 'clinconsensus-cat-bank'"),
        (lambda d: d.update(version=2), r"version: 2 is newer"),
        (lambda d: d.update(model="4PL"), r"model: must be one of"),
        (lambda d: d.update(items=[]), r"items: expected a non-empty list"),
    ],
)
def test_bank_load_names_file_and_field(tmp_path, mutate, message):
    path = _bank_file(tmp_path, mutate)
    with pytest.raises(ItemBankError, match=message) as err:
        ItemBank.load(path)
    assert path in str(err.value)


def test_bank_load_unreadable_files(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "clinconsensus-cat-bank",\n "items": [', encoding="utf-8")
    with pytest.raises(ItemBankError, match=r"broken\.json: line 2 .*not valid JSON"):
        ItemBank.load(broken)
    with pytest.raises(ItemBankError, match="cannot read"):
        ItemBank.load(tmp_path / "missing.json")


# --------------------------------------------------------------------------- adaptive session


def answer(bank: ItemBank, item: str, theta: float, rng: np.random.Generator) -> bool:
    k = bank.index[item]
    return bool(rng.random() < icc(theta, bank.a[k], bank.b[k], bank.c[k]))


def test_session_first_item_and_step_log():
    bank = small_bank()
    session = AdaptiveSession(bank, max_items=10)
    first = session.next_item()
    assert first == bank.item_ids[select_next_item(0.0, bank.a, bank.b, bank.c)]
    assert session.next_item() == first  # asking again does not move on
    entry = session.record(first, True)
    assert entry == {"step": 1, "item_id": first, "scenario": bank.scenarios[bank.index[first]], "correct": True,
                     "theta": session.theta, "se": session.se}
    k = bank.index[first]
    assert (session.theta, session.se) == estimate_theta([1.0], bank.a[[k]], bank.b[[k]], bank.c[[k]])
    assert session.theta > 0
    with pytest.raises(ValueError, match="already answered"):
        session.record(first, False)
    with pytest.raises(KeyError, match="nope"):
        session.record("nope", False)


def test_stopping_on_budget():
    bank = small_bank()
    rng = np.random.default_rng(19)
    session = AdaptiveSession(bank, max_items=5)
    while (item := session.next_item()) is not None:
        session.record(item, answer(bank, item, 0.5, rng))
    assert len(session.answered) == 5 and session.stop_reason == "max_items"
    with pytest.raises(ValueError, match="stopped"):
        session.record(next(i for i in bank.item_ids if i not in dict(session.answered)), True)


def test_stopping_on_standard_error():
    bank = small_bank()
    rng = np.random.default_rng(20)
    session = AdaptiveSession(bank, se_threshold=0.4, max_items=150)
    while (item := session.next_item()) is not None:
        session.record(item, answer(bank, item, -0.3, rng))
    assert session.stop_reason == "se_threshold"
    assert session.se <= 0.4 < session.step_log[-2]["se"]
    assert len(session.answered) < 150


def test_bank_exhaustion_and_mle_session():
    bank = small_bank(6)
    session = AdaptiveSession(bank, estimator="MLE")
    assert session.se == math.inf
    rng = np.random.default_rng(21)
    while (item := session.next_item()) is not None:
        session.record(item, answer(bank, item, 0.0, rng))
    assert session.stop_reason == "bank_exhausted" and len(session.answered) == 6
    assert all(-4 <= e["theta"] <= 4 for e in session.step_log)


def test_resume_reproduces_state_and_next_items():
    bank = small_bank()
    rng = np.random.default_rng(22)
    session = AdaptiveSession(bank, max_items=40, randomesque=4, seed=7)
    for _ in range(12):
        item = session.next_item()
        session.record(item, answer(bank, item, 0.8, rng))
    saved = json.loads(json.dumps(session.to_dict()))
    resumed = AdaptiveSession.from_dict(saved, bank)
    assert resumed.step_log == session.step_log and resumed.answered == session.answered
    assert (resumed.theta, resumed.se) == (session.theta, session.se)
    for _ in range(10):  # both continue identically, randomesque draws included
        item = session.next_item()
        assert resumed.next_item() == item
        correct = answer(bank, item, 0.8, rng)
        session.record(item, correct)
        resumed.record(item, correct)
    assert resumed.to_dict() == session.to_dict()

    with pytest.raises(ValueError, match="bank"):
        AdaptiveSession.from_dict(saved, small_bank(seed=1))
    saved["steps"][3]["theta"] += 0.1
    with pytest.raises(ValueError, match=r"steps\[3\]\.theta"):
        AdaptiveSession.from_dict(saved, bank)


def test_predicted_scores_per_scenario():
    bank = small_bank()
    session = AdaptiveSession(bank, max_items=20)
    rng = np.random.default_rng(23)
    while (item := session.next_item()) is not None:
        session.record(item, answer(bank, item, 1.0, rng))
    scores = session.predicted_scores()
    assert list(scores) == ["KE", "ID1"]
    for code, value in scores.items():
        idx = np.array(bank.scenarios) == code
        assert value == pytest.approx(expected_score(session.theta, bank.a[idx], bank.b[idx], bank.c[idx]))
    assert session.predicted_overall() == pytest.approx((scores["KE"] + scores["ID1"]) / 2)


def test_engine_imports_no_framework_and_no_scipy(tmp_path):
    code = ("import sys, clinconsensus_tasks.adaptive.engine; "
            "print(sorted(m for m in ('scipy', 'inspect_ai', 'lm_eval', 'torch') if m in sys.modules))")
    # Run outside the checkout, so the installed package is what gets imported.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- catsim cross-check


def test_information_matches_catsim():
    catsim_irt = pytest.importorskip("catsim.irt")
    a, b, c = random_items(60, seed=24)
    items = np.column_stack([a, b, c, np.ones_like(a)])
    for theta in np.linspace(-3, 3, 13):
        np.testing.assert_allclose(information(theta, a, b, c), catsim_irt.inf_hpc(theta, items), rtol=1e-10)
        np.testing.assert_allclose(icc(theta, a, b, c), catsim_irt.icc_hpc(theta, items), rtol=1e-12)


def test_max_info_selection_matches_catsim():
    pytest.importorskip("catsim")
    from catsim.item_bank import ItemBank as CatsimBank
    from catsim.selection import MaxInfoSelector

    a, b, c = random_items(80, seed=25)
    catsim_bank = CatsimBank(np.column_stack([a, b, c]))
    selector = MaxInfoSelector()
    administered: list[int] = []
    for theta in np.linspace(-2.5, 2.5, 30):
        ours = select_next_item(theta, a, b, c, administered)
        assert ours == selector.select(item_bank=catsim_bank, administered_items=administered, est_theta=theta)
        administered.append(ours)
