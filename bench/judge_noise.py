"""Does a headline's interval hold the judge's own noise? Coverage of the intervals ``reliability`` reports.

The question: a ClinConsensus judge asked the same request again can change its verdict. A run asks
each (answer, criterion) once; ``clinconsensus-eval reliability`` asks a sample of cases again, every
criterion, ``R`` times, and ``scorers.reliability.headline_noise`` splits the variance of a
headline's per-case values into the judge's part (the variance of a case's value over its asks,
averaged over the cases asked) and the cases' part. This bench simulates runs with a judge whose flip
probability is known and checks, over ``--reps`` simulated runs and checks per setting:

* **judge alone**: the interval ``H +- 1.96 sqrt(U / n)`` (``U`` the upper end of the judge's part's
  interval) holds the run's expected headline over the judge's noise on the same cases (the cases
  fixed, the judge asked anew: what a re-run of the judge on the benchmark's cases would move);
  ``judge_alone_point`` is the same from the part's point estimate, which the check knows too
  loosely at small flip rates (shown to say why the upper end is used);
* **cases and judge**: the project's case bootstrap (``scorers.agreement.mean_intervals``, what the
  report draws) holds the expected headline of the population of cases (cases drawn anew too):
  its variance is that of values each judged once, the judge's noise included, which is why it is
  the complete interval; ``+ judge on top`` shows what adding the judge's part to it again would
  give (wider, over-covering: the part would be counted twice);
* **physicians' estimate**: the stratified difference estimator (``physicians_estimate``) with a
  noisy judge's census and a review of ``--review`` cases labelled by the truth (the judge's
  expected opinion with no noise), holding the physicians' census.

And the rows a check needs for +-2 points on a 5% flip rate (two asks a row), with the judge's
flips spread evenly over cases and clustered in some cases.

The simulation: ``--cases`` (900) cases of 30 criteria; a case's met probability ~ Beta(0.45 k,
0.55 k), k = 4.8, and its criteria's base verdicts (the judge's opinion) drawn from it; on each ask a
criterion's verdict is the base flipped with probability q, the same q for every criterion, set so
that two asks of a row disagree with probability ``--flip-rates`` (2%, 10%, 30%): 2 q (1 - q). The
expected per-case values over the judge's noise are exact (the met count is a sum of two binomials).
Metrics: every mean metric of ``metric_table`` at k = 7 and 10 (CACS@k, Pass@k, rubric accuracy).

Usage:
    .venv/bin/python bench/judge_noise.py                      # 400 reps a setting, about 3 minutes
    .venv/bin/python bench/judge_noise.py --reps 200 --check-cases 30 --repeat 2 --flip-rates 0.02 0.1 0.3
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from scipy.stats import binom

from clinconsensus_tasks.scorers.agreement import mean_intervals
from clinconsensus_tasks.scorers.clinconsensus.metric_table import case_terms, mean_names
from clinconsensus_tasks.scorers.physician_review import physicians_estimate
from clinconsensus_tasks.scorers.reliability import headline_noise

N_CRITERIA = 30
THRESHOLDS = (7, 10)
METRICS = tuple(mean_names(THRESHOLDS))
MET_SHARE, CONCENTRATION = 0.45, 4.8


# The metric values of every met count 0..30, from the metric table's own terms.
TABLE = np.array([[case_terms(m, N_CRITERIA, THRESHOLDS, N_CRITERIA)[name] for name in METRICS] for m in range(N_CRITERIA + 1)])


def values(met: np.ndarray) -> np.ndarray:
    """Per-case values of each metric from met counts (cases x metrics)."""
    return TABLE[np.asarray(met, dtype=int)]


def expected_values(base_met: np.ndarray, q: float) -> np.ndarray:
    """Each case's expected value of each metric over the judge's noise: met count = Bin(b, 1 - q) + Bin(30 - b, q)."""
    table = TABLE
    out = np.empty((len(base_met), len(METRICS)))
    cache: dict[int, np.ndarray] = {}
    for i, b in enumerate(base_met):
        b = int(b)
        if b not in cache:
            dist = np.convolve(binom.pmf(np.arange(b + 1), b, 1 - q), binom.pmf(np.arange(N_CRITERIA - b + 1), N_CRITERIA - b, q))
            cache[b] = dist @ table
        out[i] = cache[b]
    return out


def draw_cases(rng: np.random.Generator, n: int) -> np.ndarray:
    """Base verdicts (cases x criteria)."""
    p = rng.beta(MET_SHARE * CONCENTRATION, (1 - MET_SHARE) * CONCENTRATION, size=n)
    return rng.random((n, N_CRITERIA)) < p[:, None]


def ask(rng: np.random.Generator, base: np.ndarray, q: np.ndarray | float) -> np.ndarray:
    """One ask of every row of ``base``: each verdict flipped with probability ``q``."""
    return base ^ (rng.random(base.shape) < q)


def q_for(rate: float) -> float:
    """The per-ask flip probability that makes two asks of a row disagree with probability ``rate``."""
    return (1 - math.sqrt(1 - 2 * rate)) / 2


def population_truth(q: float, seed: int, size: int = 200_000) -> np.ndarray:
    """The population's expected value of each metric (a large sample's mean of the exact per-case expectations)."""
    rng = np.random.default_rng(seed)
    return expected_values(draw_cases(rng, size).sum(axis=1), q).mean(axis=0)


def one_replicate(rng: np.random.Generator, base: np.ndarray, q: float, check_cases: int, repeat: int, resamples: int,
                  seed: int) -> dict[str, np.ndarray]:
    n = len(base)
    run_met = ask(rng, base, q).sum(axis=1)
    run = values(run_met)
    boot = mean_intervals(run, resamples, seed)
    asked = rng.choice(n, size=check_cases, replace=False)
    asks = np.stack([ask(rng, base[asked], q).sum(axis=1) for _ in range(repeat)], axis=1)  # cases x R met counts
    records = [f"c{i}" for i in range(n)]
    out = {k: np.empty(len(METRICS)) for k in ("estimate", "boot_low", "boot_high", "alone_low", "alone_high", "judge_part", "judge_high", "share")}
    for j in range(len(METRICS)):
        noise = headline_noise(dict(zip(records, run_met.tolist())), {records[c]: asks[k].tolist() for k, c in enumerate(asked)},
                               {r: r for r in records}, lambda m, j=j: float(TABLE[m, j]), boot[j], N_CRITERIA, resamples, seed)
        out["estimate"][j] = noise["estimate"]
        out["boot_low"][j], out["boot_high"][j] = boot[j].low, boot[j].high
        out["alone_low"][j], out["alone_high"][j] = noise["judge_alone"]["low"], noise["judge_alone"]["high"]
        out["judge_part"][j] = noise["variance"]["judge"]["estimate"]
        out["judge_high"][j] = noise["variance"]["judge"]["high"]
        out["share"][j] = noise["judge_share"]
    return out


def coverage_setting(rate: float, mode: str, args: argparse.Namespace, seed: int) -> dict[str, object]:
    q = q_for(rate)
    rng = np.random.default_rng(seed)
    fixed = draw_cases(np.random.default_rng(seed + 1), args.cases)
    truth_pop = population_truth(q, seed + 2) if mode == "population" else None
    hits = {k: np.zeros(len(METRICS)) for k in ("judge_alone", "judge_alone_point", "cases_and_judge", "judge_on_top")}
    widths = {k: np.zeros(len(METRICS)) for k in hits}
    share = np.zeros(len(METRICS))
    for rep in range(args.reps):
        base = fixed if mode == "fixed" else draw_cases(rng, args.cases)
        target = expected_values(base.sum(axis=1), q).mean(axis=0) if mode == "fixed" else truth_pop
        r = one_replicate(rng, base, q, args.check_cases, args.repeat, args.resamples, seed + rep)
        n = len(base)
        on_top_half = np.sqrt(((r["boot_high"] - r["boot_low"]) / (2 * 1.959963984540054)) ** 2 + r["judge_part"] / n) * 1.959963984540054
        point = 1.959963984540054 * np.sqrt(np.nan_to_num(r["judge_part"]) / n)
        bounds = {"judge_alone": (r["alone_low"], r["alone_high"]), "judge_alone_point": (r["estimate"] - point, r["estimate"] + point), "cases_and_judge": (r["boot_low"], r["boot_high"]),
                  "judge_on_top": (r["estimate"] - on_top_half, r["estimate"] + on_top_half)}
        for k, (lo, hi) in bounds.items():
            hits[k] += (lo <= target) & (target <= hi)
            widths[k] += hi - lo
        share += np.nan_to_num(r["share"])
    reps = args.reps
    return {"flip_rate": rate, "q": round(q, 4), "mode": mode,
            "coverage": {k: dict(zip(METRICS, np.round(v / reps, 3).tolist())) for k, v in hits.items()},
            "width": {k: dict(zip(METRICS, np.round(v / reps, 4).tolist())) for k, v in widths.items()},
            "judge_share": dict(zip(METRICS, np.round(share / reps, 3).tolist()))}


def physicians_setting(rate: float, args: argparse.Namespace, seed: int) -> dict[str, object]:
    """The physicians' estimate of rubric accuracy with a noisy judge: labels are the judge's base
    verdicts with a tenth of them reversed (the judge's error), the census one noisy ask."""
    q = q_for(rate)
    rng = np.random.default_rng(seed)
    base = draw_cases(np.random.default_rng(seed + 1), args.cases)
    physicians = base ^ (np.random.default_rng(seed + 3).random(base.shape) < 0.1)
    truth = float(physicians.mean())
    strata = {f"c{i}": f"s{i % 12}" for i in range(args.cases)}
    ids = list(strata)
    hits = width = 0.0
    for _ in range(args.reps):
        judged = ask(rng, base, q)
        census = dict(zip(ids, judged.mean(axis=1)))
        reviewed = rng.choice(args.cases, size=args.review, replace=False)
        est = physicians_estimate(census, {ids[i]: (float(physicians[i].mean()), float(judged[i].mean())) for i in reviewed}, strata)
        p = est["physicians"]
        hits += p["low"] <= truth <= p["high"]
        width += p["high"] - p["low"]
    return {"flip_rate": rate, "review_cases": args.review, "coverage": round(hits / args.reps, 3), "width": round(width / args.reps, 4)}


def rows_needed(rate: float, spread: float, args: argparse.Namespace, seed: int) -> dict[str, object]:
    """Fewest rows (whole cases of 30, two asks) whose mean 95% half-width on the flip rate is <= ``--target``;
    ``spread`` > 0: each case's flip probability ~ Beta(q s, (1 - q) s) (flips clustered in cases)."""
    from clinconsensus_tasks.scorers.reliability import AskedRow, repeatability

    q = q_for(rate)

    def half_width(cases: int, reps: int = 60) -> float:
        rng = np.random.default_rng(seed + cases)
        total = 0.0
        for _ in range(reps):
            base = draw_cases(rng, cases)
            qc = np.full(cases, q) if spread == 0 else rng.beta(q * spread, (1 - q) * spread, size=cases)
            a, b = ask(rng, base, qc[:, None]), ask(rng, base, qc[:, None])
            rows = [AskedRow(f"c{i}", f"c{i}", f"r{j}", "-", "-", (bool(a[i, j]), bool(b[i, j]))) for i in range(cases) for j in range(N_CRITERIA)]
            f = repeatability(rows, 2, resamples=300, seed=0)["flip_rate"]
            total += (f["high"] - f["low"]) / 2
        return total / reps

    lo, hi = 2, 8
    while half_width(hi) > args.target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if half_width(mid) > args.target else (lo, mid)
    return {"flip_rate": rate, "spread": spread, "cases": hi, "rows": hi * N_CRITERIA}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=900)
    parser.add_argument("--check-cases", type=int, default=30, help="cases asked again whole")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--flip-rates", type=float, nargs="+", default=[0.02, 0.10, 0.30])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--review", type=int, default=100, help="cases the physicians review (physicians' estimate)")
    parser.add_argument("--target", type=float, default=0.02, help="half-width for the rows-needed search")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"{args.cases} cases x {N_CRITERIA} criteria; a check of {args.check_cases} cases asked {args.repeat} times; "
          f"{args.reps} simulated runs and checks a setting; case bootstrap {args.resamples} resamples")
    results = []
    for mode in ("fixed", "population"):
        for rate in args.flip_rates:
            results.append(coverage_setting(rate, mode, args, args.seed))
    hits_order = ("judge_alone", "judge_alone_point", "cases_and_judge", "judge_on_top")
    print(f"\n{'target':<11}{'flip':>6}  {'interval':<16}" + "".join(f"{m:>16}" for m in METRICS))
    for r in results:
        target = "same cases" if r["mode"] == "fixed" else "population"
        for k in hits_order:
            cells = "".join(f"{r['coverage'][k][m]:>9.3f} ±{r['width'][k][m] / 2:.4f}" for m in METRICS)
            print(f"{target:<11}{r['flip_rate']:>6.2f}  {k:<16}{cells}")
        print(f"{'':<11}{'':>6}  {'judge share':<16}" + "".join(f"{r['judge_share'][m]:>16.3f}" for m in METRICS))
    physicians = [physicians_setting(rate, args, args.seed) for rate in args.flip_rates]
    print(f"\nphysicians' estimate of rubric accuracy ({args.review} cases reviewed), noisy judge: coverage, half-width")
    for p in physicians:
        print(f"  flip {p['flip_rate']:.2f}: {p['coverage']:.3f} ±{p['width'] / 2:.4f}")
    needed = [rows_needed(0.05, spread, args, args.seed) for spread in (0, 4)]
    print(f"\nrows for ±{args.target:.2f} on a 5% flip rate (two asks, whole cases of 30): "
          + "; ".join(f"{'spread evenly' if n['spread'] == 0 else 'clustered in cases'} {n['rows']} rows ({n['cases']} cases)" for n in needed))
    print(f"\n{time.perf_counter() - start:.0f} s")
    print(json.dumps({"coverage": results, "physicians": physicians, "rows_needed": needed, "args": vars(args)}))


if __name__ == "__main__":
    main()
