"""Adaptive CliMedBench on simulated models: does 243 items rank models like the full 33,735?

CliMedBench (arXiv 2410.03502) claims its 243-item adaptive test ranks models as the full bank
does. This bench checks the adaptive engine (``clinconsensus_tasks.adaptive.engine``) against that
claim where the truth is known: a simulated bank of 33,735 items in the paper's scenario
proportions with known 3PL parameters (``a ~ LogNormal(0, 0.3)``, ``b ~ Normal(0, 1)``,
``c ~ Uniform(0, 0.25)`` for choice scenarios and ``c = 0`` for the continuously scored ones) and
60 simulated models with abilities ``theta ~ Normal(0, 1)``. Each model answers the adaptive test
(EAP, maximum information, 243 items) and, for comparison, 243 random items; both estimates are
turned into a predicted full-bank score (expected proportion correct over all items) and compared
with the model's real full-bank score. Both designs see the same simulated answers.

It then reports parameter recovery for a smaller calibration (2,000 items x 200 examinees, 3PL),
the figures the project documents as "how well parameters are recovered".

Reference points: tinyBenchmarks ~100 items for ~2% score error; metabench <3% of items for 1.24%
RMSE. The bank's parameters are known here; with a bank calibrated from a few dozen real models
the errors are larger (calibration error adds to measurement error).

Usage: python bench/cat_simulation.py [--models 60] [--budget 243] [--seed 2410] [--no-recovery]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from clinconsensus_tasks.adaptive.engine import AdaptiveSession, ItemBank
from clinconsensus_tasks.scorers import irt
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, SCENARIOS

TOTAL = 33735
CHECKPOINTS = (15, 30, 60, 120, 243)


def scenario_counts(total: int = TOTAL) -> dict[str, int]:
    """Items per scenario: the paper's proportions scaled to ``total`` (largest remainder)."""
    paper = {code: s.paper_items for code, s in SCENARIOS.items()}
    exact = {code: total * n / sum(paper.values()) for code, n in paper.items()}
    counts = {code: int(x) for code, x in exact.items()}
    for code in sorted(exact, key=lambda k: exact[k] - counts[k], reverse=True)[: total - sum(counts.values())]:
        counts[code] += 1
    return counts


def simulated_bank(rng: np.random.Generator, total: int = TOTAL) -> ItemBank:
    ids, scenarios = [], []
    for code, n in scenario_counts(total).items():
        ids += [f"{code}-{k:05d}" for k in range(n)]
        scenarios += [code] * n
    guess = np.array([SCENARIOS[s].kind == CHOICE for s in scenarios])
    n = len(ids)
    return ItemBank(
        item_ids=ids,
        scenarios=scenarios,
        a=rng.lognormal(0.0, 0.3, n),
        b=rng.normal(0.0, 1.0, n),
        c=np.where(guess, rng.uniform(0.0, 0.25, n), 0.0),
        provenance={"source": "bench/cat_simulation.py (simulated, known parameters)"},
    )


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson correlation of ranks (ties get their average rank)."""

    def ranks(v: np.ndarray) -> np.ndarray:
        _, inverse, counts = np.unique(v, return_inverse=True, return_counts=True)
        start = np.cumsum(counts) - counts
        return (start + (counts - 1) / 2.0)[inverse]

    return float(np.corrcoef(ranks(np.asarray(x)), ranks(np.asarray(y)))[0, 1])


def summarize(theta_hat: np.ndarray, theta: np.ndarray, predicted: np.ndarray, full: np.ndarray) -> dict[str, float]:
    return {
        "spearman": spearman(predicted, full),
        "theta_rmse": float(np.sqrt(np.mean((theta_hat - theta) ** 2))),
        "score_rmse": float(np.sqrt(np.mean((predicted - full) ** 2))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=60)
    parser.add_argument("--budget", type=int, default=243)
    parser.add_argument("--seed", type=int, default=2410)
    parser.add_argument("--no-recovery", action="store_true", help="skip the parameter-recovery fits")
    args = parser.parse_args()
    checkpoints = sorted({n for n in CHECKPOINTS if n < args.budget} | {args.budget})
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()

    bank = simulated_bank(rng)
    theta = rng.normal(0.0, 1.0, args.models)
    p_full = np.asarray(irt.icc(theta, bank.a, bank.b, bank.c))  # (models, items)
    answers = rng.random(p_full.shape) < p_full  # one set of answers shared by both designs
    full_expected = p_full.mean(axis=1)
    full_observed = answers.mean(axis=1)
    print(f"bank: {len(bank)} items in {len(bank.scenario_codes())} scenarios; {args.models} models; "
          f"budget {args.budget} items ({args.budget / len(bank):.2%} of the bank)")
    print(f"full-bank score (expected proportion correct): {full_expected.min():.3f}..{full_expected.max():.3f}; "
          f"Spearman expected vs simulated full-bank score {spearman(full_expected, full_observed):.4f}")

    # Adaptive: the engine, item by item.
    adaptive_theta = {n: np.empty(args.models) for n in checkpoints}
    adaptive_items = np.empty(args.models)
    t_cat = time.perf_counter()
    for m in range(args.models):
        session = AdaptiveSession(bank, max_items=args.budget, seed=args.seed + m)
        while (item := session.next_item()) is not None:
            session.record(item, bool(answers[m, bank.index[item]]))
        for n in checkpoints:
            adaptive_theta[n][m] = session.step_log[min(n, len(session.step_log)) - 1]["theta"]
        adaptive_items[m] = len(session.answered)
    t_cat = time.perf_counter() - t_cat

    # Random: the first n items of a random permutation per model, same answers, same estimator.
    random_theta = {n: np.empty(args.models) for n in checkpoints}
    for m in range(args.models):
        order = rng.permutation(len(bank))[: args.budget]
        for n in checkpoints:
            idx = order[:n]
            random_theta[n][m], _ = irt.estimate_theta(answers[m, idx].astype(float), bank.a[idx], bank.b[idx], bank.c[idx])

    def predicted(theta_hat: np.ndarray) -> np.ndarray:
        return np.asarray(irt.expected_score(theta_hat, bank.a, bank.b, bank.c))

    rows = []
    for n in checkpoints:
        ad = summarize(adaptive_theta[n], theta, predicted(adaptive_theta[n]), full_expected)
        rd = summarize(random_theta[n], theta, predicted(random_theta[n]), full_expected)
        rows.append((n, ad, rd))
    print()
    print("items | adaptive: Spearman  theta RMSE  score RMSE | random: Spearman  theta RMSE  score RMSE")
    for n, ad, rd in rows:
        print(f"{n:5d} |           {ad['spearman']:.4f}      {ad['theta_rmse']:.3f}      {ad['score_rmse'] * 100:5.2f} pt"
              f" |         {rd['spearman']:.4f}      {rd['theta_rmse']:.3f}      {rd['score_rmse'] * 100:5.2f} pt")
    final_ad, final_rd = rows[-1][1], rows[-1][2]

    # Per-scenario predictions at the full budget (expected pass rate per scenario).
    theta_hat = adaptive_theta[args.budget]
    p_hat = np.asarray(irt.icc(theta_hat, bank.a, bank.b, bank.c))
    codes = np.asarray(bank.scenarios)
    errors = {code: float(np.mean(np.abs(p_hat[:, codes == code].mean(1) - p_full[:, codes == code].mean(1))))
              for code in bank.scenario_codes()}
    observed_sp = spearman(predicted(theta_hat), full_observed)
    print()
    print(f"adaptive, {args.budget} items: Spearman vs simulated (observed) full-bank score {observed_sp:.4f}; "
          f"mean |error| per scenario (pt): " + ", ".join(f"{c} {e * 100:.2f}" for c, e in errors.items()))
    print(f"adaptive test time: {t_cat:.1f} s for {args.models} models ({t_cat / adaptive_items.sum() * 1000:.2f} ms per item)")

    # Parameter recovery of a smaller calibration.
    print()
    print("parameter recovery (fit_items, marginal ML with weak priors; true a~LogNormal(0,0.3), b~N(0,1), c~U(0,0.25)):")
    recovery = {}
    studies = () if args.no_recovery else (("3PL", 2000, 200), ("2PL", 2000, 200), ("3PL", 2000, 1000))
    for model, n_items, n_examinees in studies:
        t = time.perf_counter()
        study = irt.recovery_study(n_items, n_examinees, model=model, seed=args.seed)
        rec = study["recovery"]
        recovery[f"{model}_{n_items}x{n_examinees}"] = rec
        shown = ("a", "b", "c") if model == "3PL" else ("a", "b")
        parts = [f"{p}: r={rec[p]['corr']:.3f} RMSE={rec[p]['rmse']:.3f} bias={rec[p]['bias']:+.3f}" for p in shown]
        print(f"  {model} {n_items} items x {n_examinees} examinees ({study['iterations']} EM cycles, "
              f"{time.perf_counter() - t:.1f} s): " + "; ".join(parts))

    print()
    better = final_ad["theta_rmse"] < final_rd["theta_rmse"]
    print(f"summary: adaptive Spearman {final_ad['spearman']:.4f} with {adaptive_items.mean():.0f} items "
          f"(target >= 0.95: {'met' if final_ad['spearman'] >= 0.95 else 'NOT met'}); random {final_rd['spearman']:.4f}; "
          f"theta RMSE adaptive {final_ad['theta_rmse']:.3f} vs random {final_rd['theta_rmse']:.3f} "
          f"({'adaptive better' if better else 'adaptive NOT better'}); full-bank score RMSE "
          f"{final_ad['score_rmse'] * 100:.2f} pt vs {final_rd['score_rmse'] * 100:.2f} pt "
          f"(tinyBenchmarks ~2% error at ~100 items; metabench 1.24% RMSE at <3% of items); "
          f"total {time.perf_counter() - t0:.0f} s")
    result = {
        "spearman": round(final_ad["spearman"], 4),
        "items": round(float(adaptive_items.mean()), 1),
        "random_spearman": round(final_rd["spearman"], 4),
        "theta_rmse": round(final_ad["theta_rmse"], 4),
        "random_theta_rmse": round(final_rd["theta_rmse"], 4),
        "score_rmse": round(final_ad["score_rmse"], 5),
        "random_score_rmse": round(final_rd["score_rmse"], 5),
    }
    if recovery:
        result["recovery_3pl_2000x200"] = {
            p: {k: round(v, 3) for k, v in recovery["3PL_2000x200"][p].items()} for p in "abc"
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
