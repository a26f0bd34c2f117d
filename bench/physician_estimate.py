"""Is the physicians' estimate of a run's rubric accuracy honest: does its 95% interval hold the truth?

The question: a ClinConsensus run grades every criterion of every case with an LLM judge, and
physicians label all criteria of a sample of the cases. ``physicians_estimate``
(``scorers/physician_review.py``) turns the judge's census and the physicians' sample into the
rubric accuracy the PHYSICIANS would give over every case (the stratified difference estimator of
``scorers/audit_estimate.py``: the judge's mean over all cases plus the mean physicians-minus-judge
difference over the reviewed cases, with a normal interval) and the judge's bias (judge minus
physicians). This bench checks that the 95% intervals hold the finite run's true figures in about
95% of simulated runs, how wide they are, how much narrower than the physicians' sample alone, and
how many reviewed cases give +-2 points on the bias.

What is simulated (every assumption is printed with the results):

* A run of ``--cases`` (900) cases, ``--criteria`` (30) binary criteria each, in ``--subjects`` (36)
  subject strata of uneven sizes: one draw, with a fixed seed independent of ``--seed``, of
  1 + Multinomial(cases - subjects, Dirichlet(``--subject-alpha`` = 2, ...)) (sizes about 5 to 64).
  The strata are the ones ``physicians_estimate`` is given; the met probability does not depend on
  the subject, so stratifying gains nothing here and only its bookkeeping is exercised.
* Physicians: each case's met probability p_c ~ Beta(2.16, 2.64) (mean ``--met-share`` 0.45,
  concentration ``--concentration`` 4.8, as ``bench/review_sample_size.py``), each criterion met
  with probability p_c independently. A case's value is its share of criteria met; the run's
  rubric accuracy is the mean over cases. The TRUTH of a replicate is the physicians' census: the
  mean over all the run's cases of their per-case share (the finite run's value, not 0.45).
* Judge: flips a physicians' met label to not met with probability f_met and a not met label to met
  with probability f_not. Two conditions fix them: a disagreement share
  D = m f_met + (1 - m) f_not of the rows, and the bias b = (1 - m) f_not - m f_met (judge's met
  share minus the physicians', in expectation; ``--bias`` 0, +5, -10 points), with m the met share.
  D is solved so that the pooled judge-physician Cohen's kappa is ``--kappa`` (0.7) at b = 0:
  with both met shares m, chance agreement p_e = m^2 + (1 - m)^2 and D = (1 - kappa)(1 - p_e) =
  0.1485 (agreement 0.8515). D is kept for every b, so f_met = (D - b) / 2m and
  f_not = (D + b) / 2(1 - m): b = 0 gives 0.165 / 0.135, +5 gives 0.109 / 0.180, -10 gives
  0.276 / 0.044, pooled kappa 0.700, 0.703, 0.694 (|b| <= D is needed).
* ``--judge-spread`` chooses how the judge's errors fall over cases, as ``bench/review_sample_size.py``.
  0: every row flips independently at the rates above (errors spread evenly over cases). s > 0:
  each case's two flip rates are drawn independently from Beta(f s, (1 - f) s), means f_met and
  f_not, so the judge misreads some cases badly and most hardly at all (errors clustered in cases;
  4 by default). Both keep D, b and kappa in expectation; clustering makes the per-case
  differences far more variable and skewed, which is what the interval must survive.
* Review: ``n`` cases (``--sizes`` 30, 50, 100, 200) drawn with ``sample_cases(strata, n, seed)``,
  the project's stratified, proportional export draw, all criteria of each. ``physicians_estimate``
  uses the strata when every stratum has at least two reviewed cases, else the run as one stratum;
  with these uneven sizes that first happens at n = 261 (printed; not at every larger n, the
  allocation rounds: 270 is one stratum, 400 stratified), so the fixed sizes use one stratum and
  the ``design`` column says so (``--sizes 400`` exercises the stratified design).

For each setting (bias x judge spread x n), over ``--reps`` replicates: the coverage of the
physicians' 95% interval (share of replicates whose interval holds the truth) and of the bias
interval (holding the true bias, judge census mean minus physicians' census mean; the judge's census
is known exactly, so this is the same event, printed as a check), the mean error of the estimate
(estimate - truth, points), the mean interval width (high - low, points), the width WITHOUT the
judge's census (the physicians' mean over the reviewed cases alone, SE = sqrt((1 - n/N) s^2 / n)
with s^2 the sample variance of their per-case shares, 95% normal interval) and the ratio of the
two (the gain from the census). Replicates share the physicians' labels across settings and the
review draws across biases and spreads (common random numbers), so settings compare cleanly.
The Monte Carlo standard error of a coverage near 0.95 is about 0.007 at 1,000 reps.

Then, for each bias x judge spread, the fewest reviewed cases whose mean 95% half-width on the
bias is <= ``--target`` (0.02, +-2 points): the fixed sizes bracket it (widened if need be), then
bisection on n to within 2% (the half-width goes as about 1/sqrt(n), and its Monte Carlo error is
well under 1%, so the figure is good to about 5%).

Usage:
    .venv/bin/python bench/physician_estimate.py
    .venv/bin/python bench/physician_estimate.py --bias 0 5 -10 --judge-spread 0 4 --sizes 30 50 100 200 \\
        --reps 1000 --seed 1 --kappa 0.7 --target 0.02
Settings run in ``--jobs`` (2) processes; each has its own seeded streams, so the output does not
depend on the number of jobs. The defaults take about half a minute on two cores. The last line
printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from clinconsensus_tasks.scorers.agreement import Z_95, allocate
from clinconsensus_tasks.scorers.physician_review import physicians_estimate, sample_cases

STRATA_SEED = 2024  # the run's subject sizes: one fixed draw, whatever --seed is
PHYSICIANS, JUDGE = 0, 1  # stream keys


def subject_strata(cases: int, subjects: int, alpha: float) -> dict[str, str]:
    """Case id -> subject; every subject holds at least one case, sizes uneven (Dirichlet shares)."""
    rng = np.random.default_rng(STRATA_SEED)
    sizes = 1 + rng.multinomial(cases - subjects, rng.dirichlet(np.full(subjects, alpha)))
    labels = np.repeat(np.arange(subjects), sizes)
    return {f"case-{i:04d}": f"subject-{s:02d}" for i, s in enumerate(labels)}


def first_stratified(strata: dict[str, str]) -> int:
    """The fewest reviewed cases for which the export draw gives every stratum two cases (or all)."""
    sizes: dict[str, int] = {}
    for s in strata.values():
        sizes[s] = sizes.get(s, 0) + 1
    return next(n for n in range(2, len(strata) + 1)
                if all(k >= min(2, sizes[s]) for s, k in allocate(sizes, n).items()))


def disagreement_for(kappa: float, met: float) -> float:
    """Share of rows judge and physicians disagree on for a pooled kappa ``kappa`` when both met shares are ``met``."""
    return (1 - kappa) * (1 - (met**2 + (1 - met) ** 2))


def flip_rates(disagreement: float, bias: float, met: float) -> tuple[float, float]:
    """(P(judge not met | physicians met), P(judge met | physicians not met)) for disagreement D and bias b."""
    f_met, f_not = (disagreement - bias) / (2 * met), (disagreement + bias) / (2 * (1 - met))
    if not (0 <= f_met <= 1 and 0 <= f_not <= 1):
        raise ValueError(f"bias {bias:+.3f} is not reachable with disagreement {disagreement:.4f} (|bias| <= D needed)")
    return f_met, f_not


def pooled_kappa(disagreement: float, bias: float, met: float) -> float:
    """Population Cohen's kappa of the judge against the physicians over pooled rows."""
    judge_met = met + bias
    chance = met * judge_met + (1 - met) * (1 - judge_met)
    return (1 - disagreement - chance) / (1 - chance)


def physicians_labels(args: argparse.Namespace) -> np.ndarray:
    """Physicians' met counts, shape (reps, cases); the same for every setting (its own stream)."""
    rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(PHYSICIANS,)))
    a, b = args.met_share * args.concentration, (1 - args.met_share) * args.concentration
    return rng.binomial(args.criteria, rng.beta(a, b, size=(args.reps, args.cases)))


def sample_seed(seed: int, rep: int) -> int:
    """The export draw's seed for a replicate (shared by every setting: common random numbers)."""
    return seed * 1_000_003 + rep


class Setting:
    """One bias x judge spread: the replicates' physicians and judge per-case shares, evaluated at any n."""

    def __init__(self, index: int, bias: float, spread: float, args: argparse.Namespace):
        self.index, self.bias, self.spread, self.args = index, bias, spread, args
        self.disagreement = disagreement_for(args.kappa, args.met_share)
        self.f_met, self.f_not = flip_rates(self.disagreement, bias, args.met_share)
        self.kappa = pooled_kappa(self.disagreement, bias, args.met_share)
        self.strata = subject_strata(args.cases, args.subjects, args.subject_alpha)
        self.cache: dict[int, dict] = {}

    def simulate(self) -> None:
        args, m = self.args, self.args.criteria
        met = physicians_labels(args)
        rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(JUDGE, self.index)))
        shape = met.shape
        if self.spread > 0:
            s = self.spread
            f_met = rng.beta(self.f_met * s, (1 - self.f_met) * s, size=shape) if self.f_met > 0 else np.zeros(shape)
            f_not = rng.beta(self.f_not * s, (1 - self.f_not) * s, size=shape) if self.f_not > 0 else np.zeros(shape)
        else:
            f_met, f_not = np.full(shape, self.f_met), np.full(shape, self.f_not)
        missed = rng.binomial(met, f_met)  # physicians met, judge not met
        added = rng.binomial(m - met, f_not)  # physicians not met, judge met
        self.physicians = met / m
        self.judge = (met - missed + added) / m
        self.truth = self.physicians.mean(axis=1)
        self.true_bias = self.judge.mean(axis=1) - self.truth
        agree = 1 - (missed + added).sum(axis=1) / (m * shape[1])
        p, q = met.sum(axis=1) / (m * shape[1]), self.judge.mean(axis=1)
        chance = p * q + (1 - p) * (1 - q)
        self.realised_kappa = float(np.mean((agree - chance) / (1 - chance)))
        self.realised_disagreement = float(np.mean(1 - agree))

    def evaluate(self, n: int) -> dict:
        """Coverage, error and widths of the physicians' estimate (and of the physicians alone) at ``n`` reviewed cases."""
        if n in self.cache:
            return self.cache[n]
        args, strata = self.args, self.strata
        ids = list(strata)
        position = {c: i for i, c in enumerate(ids)}
        cover = cover_bias = cover_alone = low_miss = high_miss = 0
        errors, widths, halves, alone_widths = [], [], [], []
        designs: set[str] = set()
        for r in range(args.reps):
            phys, judge = self.physicians[r], self.judge[r]
            chosen = sample_cases(strata, n, sample_seed(args.seed, r))
            rows = [position[c] for c in chosen]
            census = dict(zip(ids, judge.tolist()))
            reviewed = {c: (float(phys[i]), float(judge[i])) for c, i in zip(chosen, rows)}
            out = physicians_estimate(census, reviewed, strata, stratum_names="subject")
            est, bias = out["physicians"], out["bias"]
            truth, true_bias = self.truth[r], self.true_bias[r]
            cover += est["low"] <= truth <= est["high"]
            low_miss += truth < est["low"]
            high_miss += truth > est["high"]
            cover_bias += bias["low"] <= true_bias <= bias["high"]
            errors.append(est["estimate"] - truth)
            widths.append(est["high"] - est["low"])
            halves.append((bias["high"] - bias["low"]) / 2)
            designs.add(out["design"])
            sample = phys[rows]
            se = math.sqrt((1 - n / args.cases) * sample.var(ddof=1) / n)
            alone_widths.append(2 * Z_95 * se)
            cover_alone += abs(sample.mean() - truth) <= Z_95 * se
        reps = args.reps
        width, alone = float(np.mean(widths)), float(np.mean(alone_widths))
        halves_arr = np.asarray(halves)
        result = {"bias_points": round(100 * self.bias, 3), "judge_spread": self.spread, "n": n,
                  "design": " / ".join(sorted(designs)), "coverage": cover / reps, "coverage_bias": cover_bias / reps,
                  "truth_below_interval": low_miss / reps, "truth_above_interval": high_miss / reps,
                  "mean_error_points": 100 * float(np.mean(errors)),
                  "rmse_points": 100 * float(np.sqrt(np.mean(np.square(errors)))),
                  "width_points": 100 * width, "half_width": float(halves_arr.mean()),
                  "half_width_mc_se": float(halves_arr.std(ddof=1) / math.sqrt(reps)),
                  "width_without_census_points": 100 * alone, "gain": alone / width, "coverage_without_census": cover_alone / reps}
        self.cache[n] = result
        return result

    def needed(self, target: float) -> dict:
        """Fewest reviewed cases whose mean bias half-width is <= target, to within 2% (bisection)."""
        cap = self.args.cases
        while min(r["half_width"] for r in self.cache.values()) > target and max(self.cache) < cap:
            top = max(self.cache)
            self.evaluate(min(cap, max(top + 1, math.ceil(top * 1.1 * (self.cache[top]["half_width"] / target) ** 2))))
        while max(r["half_width"] for r in self.cache.values()) <= target and min(self.cache) > 2:
            self.evaluate(max(2, min(self.cache) // 2))
        lo = max((c for c, r in self.cache.items() if r["half_width"] > target), default=1)
        above = [c for c in self.cache if c > lo]
        if not above:
            return {"n": None, "half_width": self.cache[lo]["half_width"], "why": f"above {target} even with all {cap} cases"}
        hi = min(above)
        while hi - lo > max(1, math.ceil(0.02 * hi)):
            mid = (lo + hi) // 2
            if self.evaluate(mid)["half_width"] > target:
                lo = mid
            else:
                hi = mid
        found = self.cache[hi]
        return {"n": hi, "bracket": [lo, hi], "half_width": round(found["half_width"], 5),
                "coverage": found["coverage"], "design": found["design"]}


def run_setting(st: Setting, args: argparse.Namespace) -> dict:
    """The fixed sizes and the size for the target, for one bias x judge spread."""
    st.simulate()
    rows = [st.evaluate(n) for n in args.sizes]
    needed = st.needed(args.target)
    return {"bias_points": round(100 * st.bias, 3), "judge_spread": st.spread, "f_met": round(st.f_met, 4),
            "f_not": round(st.f_not, 4), "pooled_kappa": round(st.kappa, 4), "realised_kappa": round(st.realised_kappa, 4),
            "realised_disagreement": round(st.realised_disagreement, 4),
            "mean_true_bias_points": round(100 * float(st.true_bias.mean()), 3),
            "rows": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()} for r in rows],
            "needed_for_target": needed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bias", type=float, nargs="+", default=[0.0, 5.0, -10.0], help="judge minus physicians, points")
    parser.add_argument("--judge-spread", type=float, nargs="+", default=[0.0, 4.0],
                        help="0: judge errors independent of the case; s > 0: per-case flip rates ~ Beta, concentration s")
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 50, 100, 200], help="reviewed cases")
    parser.add_argument("--reps", type=int, default=1000, help="simulated runs per setting")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kappa", type=float, default=0.7, help="pooled judge-physicians kappa at bias 0 (sets the disagreement)")
    parser.add_argument("--met-share", type=float, default=0.45, help="mean share of criteria physicians label met")
    parser.add_argument("--concentration", type=float, default=4.8, help="a + b of the per-case Beta of the met probability")
    parser.add_argument("--cases", type=int, default=900)
    parser.add_argument("--criteria", type=int, default=30)
    parser.add_argument("--subjects", type=int, default=36)
    parser.add_argument("--subject-alpha", type=float, default=2.0, help="Dirichlet concentration of the subject sizes")
    parser.add_argument("--target", type=float, default=0.02, help="95%% half-width wanted on the bias")
    parser.add_argument("--jobs", type=int, default=2, help="settings run in parallel processes")
    args = parser.parse_args()
    started = time.perf_counter()

    strata = subject_strata(args.cases, args.subjects, args.subject_alpha)
    sizes = np.bincount([int(s.split("-")[1]) for s in strata.values()])
    d = disagreement_for(args.kappa, args.met_share)
    a, b = args.met_share * args.concentration, (1 - args.met_share) * args.concentration
    print(f"Run: {args.cases} cases x {args.criteria} criteria; {args.subjects} subjects, sizes {sizes.min()}-{sizes.max()} "
          f"(median {int(np.median(sizes))}; Dirichlet {args.subject_alpha:g}, fixed seed {STRATA_SEED}); stratified design "
          f"first at n = {first_stratified(strata)} reviewed cases (below it one stratum; above, as the allocation rounds)")
    print(f"Physicians: case met probability Beta({a:.2f}, {b:.2f}) (mean {args.met_share}), criteria independent given it; "
          f"truth = physicians' census mean over the {args.cases} cases")
    print(f"Judge: disagrees on D = {d:.4f} of rows (pooled kappa {args.kappa} at bias 0), flip rates set by D and the bias; "
          f"judge spread 0 = rows flip independently, s > 0 = per-case flip rates ~ Beta(f s, (1 - f) s)")
    print(f"Review: sample_cases (stratified, proportional), all criteria of each case; physicians_estimate, 95% normal "
          f"interval; {args.reps} runs per setting; seed {args.seed}; coverage MC se ~ {math.sqrt(0.95 * 0.05 / args.reps):.3f}")

    settings = [Setting(i, bias / 100, s, args) for i, (bias, s) in enumerate(
        (bias, s) for bias in args.bias for s in args.judge_spread)]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run_setting, settings, [args] * len(settings)))

    print("\nJudge per setting (f_met = P(judge not met | physicians met), f_not = P(judge met | physicians not met)):")
    for r in results:
        print(f"bias {r['bias_points']:+g} pts, spread {r['judge_spread']:g}: f_met {r['f_met']:.4f}, f_not {r['f_not']:.4f}, "
              f"pooled kappa {r['pooled_kappa']:.3f} (realised {r['realised_kappa']:.3f}), realised disagreement "
              f"{r['realised_disagreement']:.4f}, mean true bias {r['mean_true_bias_points']:+.2f} pts")

    print("\n| bias (pts) | judge errors | n | design | coverage | bias coverage | mean error (pts) | width (pts) "
          "| width without census (pts) | gain |")
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|")
    short = []
    for r in results:
        layout = "spread" if r["judge_spread"] == 0 else f"clustered ({r['judge_spread']:g})"
        for row in r["rows"]:
            print(f"| {row['bias_points']:+g} | {layout} | {row['n']} | {row['design']} | {row['coverage']:.3f} | "
                  f"{row['coverage_bias']:.3f} | {row['mean_error_points']:+.2f} | {row['width_points']:.2f} | "
                  f"{row['width_without_census_points']:.2f} | {row['gain']:.2f} |")
            if row["coverage"] < 0.93:
                short.append(row)

    print(f"\nReviewed cases for a mean 95% half-width <= {args.target:g} on the bias (bisection to 2%):")
    for r in results:
        layout = "errors spread over rows" if r["judge_spread"] == 0 else f"errors clustered in cases (spread {r['judge_spread']:g})"
        need = r["needed_for_target"]
        if need["n"] is None:
            print(f"bias {r['bias_points']:+g} pts, {layout}: {need['why']}")
        else:
            print(f"bias {r['bias_points']:+g} pts, {layout}: {need['n']} cases (between {need['bracket'][0]} and "
                  f"{need['bracket'][1]}; half-width {need['half_width']:.4f}, coverage {need['coverage']:.3f}, {need['design']})")
    if short:
        print("\nSettings below 0.93 coverage (truth below / above the interval):")
        for row in short:
            print(f"bias {row['bias_points']:+g}, spread {row['judge_spread']:g}, n {row['n']}: {row['coverage']:.3f} "
                  f"({row['truth_below_interval']:.3f} / {row['truth_above_interval']:.3f})")
    else:
        print("\nEvery setting covers at least 0.93.")
    elapsed = time.perf_counter() - started
    print(f"\nelapsed {elapsed:.1f} s")
    print(json.dumps({"cases": args.cases, "criteria": args.criteria, "subjects": args.subjects,
                      "subject_sizes": sizes.tolist(), "first_stratified_n": first_stratified(strata),
                      "met_share": args.met_share, "concentration": args.concentration, "kappa": args.kappa,
                      "disagreement": round(d, 5), "reps": args.reps, "seed": args.seed, "target": args.target,
                      "results": results, "elapsed_s": round(elapsed, 1)}))


if __name__ == "__main__":
    main()
