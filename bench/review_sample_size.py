"""How many physician-labelled rows give a 95% interval of +-0.05 on Cohen's kappa (judge vs physicians).

The question: a physician review labels (case, criterion) rows as met / not met, the judge grades the
same rows, and the project reports Cohen's kappa of the judge against the physicians with a 95%
percentile bootstrap interval. How many labelled rows does the review need for that interval to be
+-0.05 (half-width <= 0.05) at a given true kappa?

What is simulated (every assumption is printed with the results):

* The review labels ``n`` cases, all ``M`` criteria of each (``--per-case``, 10 and 30 by default:
  ClinConsensus has 30 criteria per case; 10 is a review that labels a third of each case's
  criteria, criteria being exchangeable here). Rows are ``n * M``.
* Each case's answer has its own met probability, drawn from a Beta distribution with mean
  ``--met-share`` (0.45: ClinConsensus models meet 40-52% of criteria) and concentration
  ``--concentration`` (a + b, 4.8 by default: the spread ``bench/audit_interval.py`` uses, Beta(2.2,
  2.6)). The physician labels the case's M criteria met independently with that probability, so
  labels within a case are correlated (intra-case correlation 1 / (concentration + 1)).
* The judge agrees with the physician label with probability ``a``, the same for a met and a
  not-met label (symmetric errors), with ``a`` solved so that the population kappa equals the
  target: physician met share p, judge met share q = a p + (1 - a)(1 - p), kappa = (a - p_e) /
  (1 - p_e) with p_e = p q + (1 - p)(1 - q).
* ``--judge-spread`` chooses how the judge's errors fall over cases. 0: every row is an independent
  coin with agreement ``a`` (no case effect on agreement). s > 0: each case's disagreement rate is
  drawn from Beta((1 - a) s, a s), mean 1 - a, so mistakes cluster in the cases the judge misreads
  (intra-case correlation of disagreements 1 / (s + 1)); 4 is ``bench/audit_interval.py``'s
  default. Both keep the population kappa at the target; they differ only in clustering. Both are
  printed by default because the answer depends mostly on this choice.

Why cases, not rows, are resampled: the M criteria of a case are graded on one answer, so their
labels share that answer's quality (and, with a judge spread, the judge's reading of it). Rows of a
case are not independent draws; resampling rows would treat 30 correlated labels as 30 independent
ones and give an interval that is too narrow. The project's agreement intervals resample whole
cases for the same reason (``scorers/audit_estimate.py``, ``scorers/physician_review.py``). Here
each simulated labelling is summarised as one 2x2 table per case (both met, physician met / judge
not, physician not / judge met, both not met); a bootstrap resample is a vector of case
multiplicities (n cases drawn with replacement: Multinomial(n, 1/n), the distribution of
``physician_review``'s case weights), so a resample's pooled table is one matrix product, and the
kappa of every resample is computed at once. The interval is the 2.5th and 97.5th percentiles of ``--resamples`` (1,000)
resampled kappas; the half-width is half its length.

For each setting (target kappa x criteria per case x judge spread) the script finds the smallest
number of cases whose mean half-width over ``--reps`` simulated labellings is <= ``--target``
(0.05), to within 1% of the number of cases (rounded up): the fixed sizes below are evaluated
first, the two that straddle the target give a secant guess on log half-width against log cases,
and bisection on the number of cases finishes.
Labellings of different sizes in one setting share their first cases (common random numbers), so
the half-width falls smoothly with size and the bisection is stable; the Monte Carlo standard error
of the mean half-width is printed (1-2% of it at 100 reps; the size goes as the inverse square of
the half-width, so the sizes found are good to about 2-4%).
It also prints the half-width at fixed sizes (``--sizes``, rows), the mean estimated kappa and the
share of intervals that hold the true kappa (coverage; 0.95 expected).

Usage:
    .venv/bin/python bench/review_sample_size.py
    .venv/bin/python bench/review_sample_size.py --kappa 0.6 0.7 0.8 --per-case 10 30 \\
        --judge-spread 0 4 --reps 100 --resamples 1000 --seed 1 --met-share 0.45
Settings run in ``--jobs`` (2) processes; each setting has its own seeded streams, so the output
does not depend on the number of jobs. The defaults take under a minute on two cores. The last line
printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

STREAMS = ("case", "met", "spread", "judge_met", "judge_not")


def population_kappa(agree: float, met: float) -> float:
    """Kappa of a judge that agrees with the physician with probability ``agree`` on either label."""
    judge_met = agree * met + (1 - agree) * (1 - met)
    chance = met * judge_met + (1 - met) * (1 - judge_met)
    return (agree - chance) / (1 - chance)


def agreement_for(kappa: float, met: float) -> float:
    """The agreement ``a`` in (0.5, 1) whose population kappa is ``kappa`` (bisection; kappa rises with a)."""
    lo, hi = 0.5, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if population_kappa(mid, met) < kappa else (lo, mid)
    return (lo + hi) / 2


def kappas(tables: np.ndarray) -> np.ndarray:
    """Cohen's kappa of 2x2 tables in the last axis (tp, fn, fp, tn; physician first), as
    ``scorers/agreement.cohen_kappa`` (NaN when chance agreement is 1)."""
    tp, fn, fp, tn = np.moveaxis(tables, -1, 0)
    n = tp + fn + fp + tn
    ref_met, other_met = (tp + fn) / n, (tp + fp) / n
    chance = ref_met * other_met + (1 - ref_met) * (1 - other_met)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance < 1, ((tp + tn) / n - chance) / (1 - chance), np.nan)


class Setting:
    """One target kappa x criteria per case x judge spread, with its own random streams."""

    def __init__(self, index: int, kappa: float, per_case: int, spread: float, args: argparse.Namespace):
        self.index, self.kappa, self.per_case, self.spread = index, kappa, per_case, spread
        self.met_share, self.concentration = args.met_share, args.concentration
        self.agree = agreement_for(kappa, args.met_share)
        self.reps, self.resamples, self.seed = args.reps, args.resamples, args.seed
        self.cache: dict[int, dict] = {}

    def _rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(self.index, *key)))

    def tables(self, cases: int) -> np.ndarray:
        """Per-case 2x2 counts, shape (reps, cases, 4). Drawn case-major, each quantity from its own
        stream, so a smaller size's labellings are the first cases of a larger size's."""
        shape, m = (cases, self.reps), self.per_case
        case, met_rng, spread_rng, judge_met, judge_not = (self._rng(k) for k in range(len(STREAMS)))
        a, b = self.met_share * self.concentration, (1 - self.met_share) * self.concentration
        met = met_rng.binomial(m, case.beta(a, b, size=shape))
        if self.spread > 0:
            agree = 1 - spread_rng.beta((1 - self.agree) * self.spread, self.agree * self.spread, size=shape)
        else:
            agree = np.full(shape, self.agree)
        tp = judge_met.binomial(met, agree)  # physician met, judge met
        tn = judge_not.binomial(m - met, agree)  # physician not met, judge not met
        out = np.stack([tp, met - tp, (m - met) - tn, tn], axis=-1).astype(np.float64)
        return out.transpose(1, 0, 2)

    def evaluate(self, cases: int) -> dict:
        """Mean bootstrap half-width (and its Monte Carlo SE), mean kappa and coverage at ``cases``."""
        if cases in self.cache:
            return self.cache[cases]
        tables = self.tables(cases)
        boot_rng = self._rng(99, cases)
        b = self.resamples
        chunk = max(1, 4_000_000 // (b * cases))
        offsets = (np.arange(b) * cases)[:, None]
        halves, estimates, covered = [], [], 0
        for start in range(0, self.reps, chunk):
            part = tables[start:start + chunk]
            weights = np.empty((len(part), b, cases))
            for i in range(len(part)):
                draws = boot_rng.integers(0, cases, size=(b, cases))
                weights[i] = np.bincount((draws + offsets).ravel(), minlength=b * cases).reshape(b, cases)
            boot = kappas(np.matmul(weights, part))  # (chunk, resamples)
            pct = np.nanpercentile if np.isnan(boot).any() else np.percentile
            lo, hi = pct(boot, [2.5, 97.5], axis=1)
            halves.extend((hi - lo) / 2)
            estimates.extend(kappas(part.sum(axis=1)))
            covered += int(np.sum((lo <= self.kappa) & (self.kappa <= hi)))
        halves = np.asarray(halves)
        result = {"cases": cases, "rows": cases * self.per_case, "half_width": float(halves.mean()),
                  "mc_se": float(halves.std(ddof=1) / math.sqrt(len(halves))),
                  "mean_kappa": float(np.nanmean(estimates)), "coverage": covered / self.reps}
        self.cache[cases] = result
        return result

    def smallest(self, target: float) -> dict:
        """Fewest cases whose mean half-width is <= target, to within 1% (rounded up). Starts from the
        sizes already evaluated: widens them into a bracket, then one secant step on log(half-width)
        against log(cases) with probes 2% either side of it, then bisection."""
        if not self.cache:
            self.evaluate(max(4, math.ceil(600 / self.per_case)))
        while min(r["half_width"] for r in self.cache.values()) > target:
            top = max(self.cache)
            self.evaluate(max(top + 1, math.ceil(top * 1.1 * (self.cache[top]["half_width"] / target) ** 2)))
        while max(r["half_width"] for r in self.cache.values()) <= target and min(self.cache) > 2:
            self.evaluate(max(2, min(self.cache) // 2))
        secant = True
        while True:
            lo = max((c for c, r in self.cache.items() if r["half_width"] > target), default=1)
            hi = min(c for c in self.cache if c > lo)
            if hi - lo <= max(1, hi // 100):
                return self.cache[hi]
            if secant and lo > 1:
                secant = False
                h_lo, h_hi = self.cache[lo]["half_width"], self.cache[hi]["half_width"]
                slope = math.log(h_hi / h_lo) / math.log(hi / lo) if h_hi < h_lo else -0.5
                guess = lo * math.exp(math.log(target / h_lo) / slope)
                for probe in (math.floor(0.98 * guess), math.ceil(1.02 * guess)):
                    if lo < probe < hi:
                        self.evaluate(probe)
                continue
            self.evaluate((lo + hi) // 2)


def run_setting(st: Setting, args: argparse.Namespace) -> dict:
    """The smallest size for the target and the half-width at the fixed sizes, for one setting."""
    fixed = {}
    for size in args.sizes:
        cases = max(2, math.ceil(size / st.per_case))
        fixed[cases * st.per_case] = st.evaluate(cases)["half_width"]
    found = st.smallest(args.target)
    return {"kappa": st.kappa, "per_case": st.per_case, "judge_spread": st.spread, "agreement": round(st.agree, 4),
            **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in found.items()},
            "half_width_at_rows": {str(r): round(h, 4) for r, h in fixed.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kappa", type=float, nargs="+", default=[0.6, 0.7, 0.8])
    parser.add_argument("--per-case", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--judge-spread", type=float, nargs="+", default=[0.0, 4.0],
                        help="0: judge errors independent of the case; s > 0: per-case disagreement ~ Beta, concentration s")
    parser.add_argument("--reps", type=int, default=100, help="simulated labellings per size")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of cases per labelling")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--met-share", type=float, default=0.45, help="mean share of rows physicians label met")
    parser.add_argument("--concentration", type=float, default=4.8, help="a + b of the per-case Beta of the met probability")
    parser.add_argument("--target", type=float, default=0.05, help="half-width wanted")
    parser.add_argument("--jobs", type=int, default=2, help="settings run in parallel processes")
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 600, 1200, 2400, 4800], help="fixed sizes, in rows")
    args = parser.parse_args()
    started = time.perf_counter()

    a, b = args.met_share * args.concentration, (1 - args.met_share) * args.concentration
    print(f"Physician labels: case met probability Beta({a:.2f}, {b:.2f}) (mean {args.met_share}, intra-case correlation "
          f"{1 / (args.concentration + 1):.3f}); judge errors symmetric; percentile bootstrap over cases, "
          f"{args.resamples} resamples; {args.reps} labellings per size; seed {args.seed}; target half-width {args.target}")
    print("judge spread 0 = errors independent of the case; s > 0 = per-case disagreement rate ~ Beta with concentration s "
          "(intra-case correlation of disagreements 1/(s+1))")

    settings = [Setting(i, k, m, s, args) for i, (s, k, m) in enumerate(
        (s, k, m) for s in args.judge_spread for k in args.kappa for m in args.per_case)]
    header = (f"{'kappa':>5} {'per case':>8} {'spread':>6} {'agree':>6} | {'rows':>6} {'cases':>5} {'+/-':>6} {'MC se':>6} "
              f"{'mean k':>6} {'cover':>5} | " + " ".join(f"{size:>6}" for size in args.sizes))
    print(f"\nSize for a mean 95% half-width <= {args.target}, then the half-width at fixed sizes (rows):")
    print(header)
    print("-" * len(header))
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run_setting, settings, [args] * len(settings)))
    for r in results:
        print(f"{r['kappa']:5.2f} {r['per_case']:8d} {r['judge_spread']:6g} {r['agreement']:6.3f} | {r['rows']:6d} {r['cases']:5d} "
              f"{r['half_width']:6.4f} {r['mc_se']:6.4f} {r['mean_kappa']:6.3f} {r['coverage']:5.2f} | "
              + " ".join(f"{h:6.3f}" for h in r["half_width_at_rows"].values()))

    print(f"\nConclusions (mean 95% half-width <= {args.target:g}; found to 1%, rounded up; Monte Carlo error on a size about 2-4%):")
    for r in results:
        errors = "judge errors independent of case" if r["judge_spread"] == 0 else f"judge errors clustered by case (spread {r['judge_spread']:g})"
        print(f"kappa {r['kappa']:.2f}, {r['per_case']} criteria per case, {errors}: "
              f"{r['rows']:,} labelled rows ({r['cases']} cases) for +-{args.target:g}")
    elapsed = time.perf_counter() - started
    print(f"\nelapsed {elapsed:.1f} s")
    print(json.dumps({"met_share": args.met_share, "concentration": args.concentration, "reps": args.reps,
                      "resamples": args.resamples, "seed": args.seed, "target": args.target, "results": results,
                      "elapsed_s": round(elapsed, 1)}))


if __name__ == "__main__":
    main()
