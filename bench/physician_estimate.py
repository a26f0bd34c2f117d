"""Is the physicians' estimate of a run's rubric accuracy honest: does its 95% interval hold the truth?

The question: a ClinConsensus run grades every criterion of every case with an LLM judge, and
physicians label all criteria of a sample of the cases. ``physicians_estimate``
(``scorers/physician_review.py``) turns the judge's census and the physicians' sample into the
rubric accuracy the PHYSICIANS would give over every case (the stratified difference estimator of
``scorers/audit_estimate.py``: the judge's mean over all cases plus the mean physicians-minus-judge
difference over the reviewed cases, with a Student's t interval) and the judge's bias (judge minus
physicians). This bench checks that the 95% intervals hold the finite run's true figures in about
95% of simulated runs, how wide they are, how much narrower than the physicians' sample alone, and
how many reviewed cases give +-2 points on the bias.

What is simulated (every assumption is printed with the results):

* A run of ``--cases`` (900) cases, ``--criteria`` (30) binary criteria each, in ``--subjects`` (36)
  subject strata of uneven sizes: one draw, with a fixed seed independent of ``--seed``, of
  1 + Multinomial(cases - subjects, Dirichlet(``--subject-alpha`` = 2, ...)) (sizes 5 to 64).
  The strata are the ones ``physicians_estimate`` is given.
* Subjects differ (one draw, fixed seed ``SUBJECT_SEED``, independent of ``--seed``): subject h has
  its own mean met share m_h = ``--met-share`` (0.45) + ``--subject-sd`` (0.07) x z_h, the z_h
  the 36 normal scores (quantiles at (i - 1/2) / 36) in a random order, centred and scaled over the
  cases (case-weighted mean 0, sd 1), so m_h spans about 0.30-0.60 and the run's mean is 0.45
  exactly. The judge's two flip rates (below) are multiplied in subject h by g_h = 1 +
  ``--judge-subject-sd`` (0.15) x u_h, u_h other normal scores in another random order, made
  case-weighted orthogonal to 1 and to m_h and scaled to sd 1 (g_h about 0.7-1.3): the run's
  expected disagreement, bias and kappa stay exactly the targets below. A subject's expected judge
  bias is g_h ((1 - m_h) f_not - m_h f_met), so it varies by subject by several points (a judge
  that errs both ways over-reads subjects where physicians find little met and under-reads the
  others) and the physicians-minus-judge difference the estimator samples depends on the subject:
  which subjects the review reaches now matters. ``--subject-sd 0 --judge-subject-sd 0`` gives the
  old homogeneous run.
* Physicians: each case's met probability p_c ~ Beta(m_h k, (1 - m_h) k), k = ``--concentration``
  4.8 (as ``bench/review_sample_size.py``, there with one mean 0.45), each criterion met with
  probability p_c independently. A case's value is its share of criteria met; the run's rubric
  accuracy is the mean over cases. The TRUTH of a replicate is the physicians' census: the mean
  over all the run's cases of their per-case share (the finite run's value, not 0.45).
* Judge: flips a physicians' met label to not met with probability g_h f_met and a not met label
  to met with probability g_h f_not. Two conditions fix f_met and f_not: a disagreement share
  D = m f_met + (1 - m) f_not of the rows, and the bias b = (1 - m) f_not - m f_met (judge's met
  share minus the physicians', in expectation over the run; ``--bias`` 0, +5, -10 points), with m
  the met share (the g_h leave both run-level sums unchanged). D is solved so that the pooled
  judge-physician Cohen's kappa is ``--kappa`` (0.7) at b = 0: with both met shares m, chance
  agreement p_e = m^2 + (1 - m)^2 and D = (1 - kappa)(1 - p_e) = 0.1485 (agreement 0.8515). D is
  kept for every b, so f_met = (D - b) / 2m and f_not = (D + b) / 2(1 - m): b = 0 gives
  0.165 / 0.135, +5 gives 0.109 / 0.180, -10 gives 0.276 / 0.044, pooled kappa 0.700, 0.703,
  0.694 (|b| <= D is needed).
* ``--judge-spread`` chooses how the judge's errors fall over cases, as ``bench/review_sample_size.py``.
  0: every row flips independently at its subject's rates (errors spread evenly over cases). s > 0:
  each case's two flip rates are drawn independently from Beta(f s, (1 - f) s), f its subject's
  rate, so the judge misreads some cases badly and most hardly at all (errors clustered in cases;
  4 by default). Both keep D, b and kappa in expectation; clustering makes the per-case
  differences far more variable and skewed, which is what the interval must survive.
* Review: ``n`` cases (``--sizes`` 30, 50, 100, 200) drawn with ``sample_cases(strata, n, seed)``,
  the project's export draw, all criteria of each: each subject gets the whole part of its quota
  n N_h / N, and the spare draws go to subjects AT RANDOM with probabilities the quotas' fractional
  parts (``allocate(sizes, n, rng)``, Madow's systematic selection), so every case has the same
  chance n / N and a subject whose quota is below 1 is still reviewed sometimes.
  ``--fixed-allocation`` draws with the OLD rule instead (``allocate(sizes, n)``: the spare draws to
  the largest fractional parts, ties by subject name): the same subjects every time, and at small n
  some small subjects never, so the one-stratum mean over-weights some subjects and leaves others
  out (a bias when the subjects differ).
* Design: ``physicians_estimate`` uses the strata when every stratum has at least two reviewed
  cases, else the run as one stratum. Under the random allocation that depends on the draw; the
  header prints its exact probability for each size (the allocation depends on one uniform start,
  so the probability is a sum of intervals) and the n from which it is possible and certain, and
  the table the share of replicates that used it (from the estimator's ``design``). Under the old
  rule it first happens at n = 261 with these sizes (and not at every larger n: 270 is one stratum).

For each setting (bias x judge spread x n), over ``--reps`` replicates: the coverage of the
physicians' 95% interval (share of replicates whose interval holds the truth) and of the bias
interval (holding the true bias, judge census mean minus physicians' census mean; the judge's census
is known exactly, so this is the same event, printed as a check), the share of replicates whose
estimate used the subject strata, the mean error of the estimate (estimate - truth, points), the
mean interval width (high - low, points), the width WITHOUT the judge's census (the physicians'
mean over the reviewed cases alone, SE = sqrt((1 - n/N) s^2 / n) with s^2 the sample variance of
their per-case shares, 95% normal interval) and the ratio of the two (the gain from the census).
Replicates share the physicians' labels across settings and the review draws' seeds across biases,
spreads and allocation rules (common random numbers), so settings compare cleanly. The Monte Carlo
standard error of a coverage near 0.95 is about 0.007 at 1,000 reps.

Then, for ``--contrast-bias`` (0) x each judge spread at ``--contrast-sizes`` (30, 50, 100), the
random allocation against the old fixed one: coverage, mean error (with its Monte Carlo standard
error, and for the fixed rule the design bias expected from the subjects' expected differences,
sum over h of (n_h / n - N_h / N) times the subject's expected physicians-minus-judge difference),
RMSE, the subjects a review leaves out (mean per replicate) and the subjects no review can reach.

Then, for each bias x judge spread, the fewest reviewed cases whose mean 95% half-width on the
bias is <= ``--target`` (0.02, +-2 points): the fixed sizes bracket it (widened if need be), then
bisection on n to within 2% (the half-width goes as about 1/sqrt(n), and its Monte Carlo error is
well under 1%, so the figure is good to about 5%).

``--small-campaign`` measures instead the design an issue found short (a third of a small campaign's
cases reviewed, tiny strata, the quotas rounded at random): 90 cases made by
``bench/judge_cost.write_cases`` (the bundled sample's 12 cases repeated, 11 subject x difficulty
strata of 7, 8 and 15 cases), the stand-in's own verdicts on its answers (``oracle_verdict``) as the
physicians' labels, the ``alt`` judge (disagrees on a fifth of the criteria) and a judge that never
says met; reviews of 20, 30 and 45 cases drawn with the export's sampler for seeds 1..``--reps``;
and the same sizes on ``--populations`` random 90-case populations whose strata differ (met shares
0.3-0.8, judge error rates 0.06-0.24 clustered in cases). Coverage of the physicians' census by the
interval (Student's t with the n - H design degrees of freedom: the variance rests on n reviewed
cases in H strata), mean half-width and the spread of the estimates.

Usage:
    .venv/bin/python bench/physician_estimate.py
    .venv/bin/python bench/physician_estimate.py --small-campaign --reps 2000 --populations 100
    .venv/bin/python bench/physician_estimate.py --bias 0 5 -10 --judge-spread 0 4 --sizes 30 50 100 200 \\
        --reps 1000 --seed 1 --kappa 0.7 --target 0.02 --contrast-bias 0 --contrast-sizes 30 50 100
    .venv/bin/python bench/physician_estimate.py --fixed-allocation   # the whole bench with the old draw
Settings run in ``--jobs`` (2) processes; each has its own seeded streams, so the output does not
depend on the number of jobs. The defaults take under a minute on two cores. The last line
printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from statistics import NormalDist

import numpy as np

from clinconsensus_tasks.scorers.agreement import Z_95, allocate, stratified_draw
from clinconsensus_tasks.scorers.physician_review import physicians_estimate, sample_cases

STRATA_SEED = 2024  # the run's subject sizes: one fixed draw, whatever --seed is
SUBJECT_SEED = 2025  # the subjects' met shares and judge factors: one fixed draw, whatever --seed is
PHYSICIANS, JUDGE = 0, 1  # stream keys
STRATUM_NAMES = "subject"


def subject_strata(cases: int, subjects: int, alpha: float) -> dict[str, str]:
    """Case id -> subject; every subject holds at least one case, sizes uneven (Dirichlet shares)."""
    rng = np.random.default_rng(STRATA_SEED)
    sizes = 1 + rng.multinomial(cases - subjects, rng.dirichlet(np.full(subjects, alpha)))
    labels = np.repeat(np.arange(subjects), sizes)
    return {f"case-{i:04d}": f"subject-{s:02d}" for i, s in enumerate(labels)}


def subject_effects(sizes: np.ndarray, args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """(m_h, g_h) per subject: its physicians' mean met share and the factor on the judge's flip rates.

    Normal scores in a seeded random order, case-weighted: m_h has weighted mean ``--met-share`` and
    sd ``--subject-sd``; g_h has weighted mean 1, sd ``--judge-subject-sd`` and no weighted
    covariance with m_h, so the run-level disagreement and bias are exactly the targets."""
    rng = np.random.default_rng(SUBJECT_SEED)
    h = len(sizes)
    w = sizes / sizes.sum()
    scores = np.array([NormalDist().inv_cdf((i + 0.5) / h) for i in range(h)])

    def scaled(x: np.ndarray) -> np.ndarray:
        sd = math.sqrt(float(w @ x**2))
        return x / sd if sd > 0 else x

    z = rng.permutation(scores)
    z = scaled(z - w @ z)
    met = args.met_share + args.subject_sd * z
    u = rng.permutation(scores)
    basis = np.column_stack([np.ones(h), met])  # weighted least squares residual of u on (1, m_h)
    coef = np.linalg.solve(basis.T @ (w[:, None] * basis), basis.T @ (w * u))
    u = scaled(u - basis @ coef)
    factor = 1 + args.judge_subject_sd * u
    if not (np.all((met > 0) & (met < 1)) and np.all(factor > 0)):
        raise ValueError("--subject-sd / --judge-subject-sd too large: a subject's met share or judge factor leaves (0, 1) / (0, inf)")
    return met, factor


def stratified_probability(sizes: dict[str, int], n: int) -> float:
    """Exact probability that the random allocation gives every stratum two cases (or all of it).

    ``allocate(sizes, n, rng)`` reads one uniform start; its allocation changes only where the start
    crosses a cumulative fractional part, so the probability is a sum of interval lengths."""
    total = sum(sizes.values())
    quotas = [min(n, total) * sizes[s] / total for s in sorted(sizes, key=repr)]
    cuts = sorted({0.0, 1.0, *(float(c) % 1.0 for c in np.cumsum([q - math.floor(q) for q in quotas]))})

    class Start:
        def __init__(self, u: float):
            self.u = u

        def random(self) -> float:
            return self.u

    share = 0.0
    for lo, hi in zip(cuts, cuts[1:]):
        if hi > lo:
            got = allocate(sizes, n, Start((lo + hi) / 2))  # type: ignore[arg-type]
            share += (hi - lo) * all(k >= min(2, sizes[s]) for s, k in got.items())
    return share


def first_stratified_fixed(sizes: dict[str, int]) -> int:
    """The fewest reviewed cases for which the OLD fixed allocation gives every stratum two cases (or all)."""
    return next(n for n in range(2, sum(sizes.values()) + 1)
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


class Run:
    """The fixed run: strata, subject of each case, subject sizes, subject met shares and judge factors."""

    def __init__(self, args: argparse.Namespace):
        self.strata = subject_strata(args.cases, args.subjects, args.subject_alpha)
        self.ids = list(self.strata)
        self.subject = np.array([int(self.strata[c].split("-")[1]) for c in self.ids])
        self.sizes = np.bincount(self.subject, minlength=args.subjects)
        self.size_of = {f"subject-{h:02d}": int(k) for h, k in enumerate(self.sizes)}
        self.met, self.factor = subject_effects(self.sizes, args)

    def draw(self, n: int, seed: int, fixed: bool) -> list[str]:
        """The review's case ids: the export draw (random allocation) or the old fixed rule."""
        if fixed:
            return stratified_draw(self.strata, lambda sizes: allocate(sizes, n), seed)
        return sample_cases(self.strata, n, seed)


def physicians_labels(args: argparse.Namespace, run: Run) -> np.ndarray:
    """Physicians' met counts, shape (reps, cases); the same for every setting (its own stream)."""
    rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(PHYSICIANS,)))
    mean = run.met[run.subject]
    return rng.binomial(args.criteria, rng.beta(mean * args.concentration, (1 - mean) * args.concentration,
                                                size=(args.reps, args.cases)))


def sample_seed(seed: int, rep: int) -> int:
    """The export draw's seed for a replicate (shared by every setting and rule: common random numbers)."""
    return seed * 1_000_003 + rep


class Setting:
    """One bias x judge spread: the replicates' physicians and judge per-case shares, evaluated at any n."""

    def __init__(self, index: int, bias: float, spread: float, args: argparse.Namespace):
        self.index, self.bias, self.spread, self.args = index, bias, spread, args
        self.disagreement = disagreement_for(args.kappa, args.met_share)
        self.f_met, self.f_not = flip_rates(self.disagreement, bias, args.met_share)
        self.kappa = pooled_kappa(self.disagreement, bias, args.met_share)
        self.run = Run(args)
        run = self.run
        if np.any(run.factor * max(self.f_met, self.f_not) > 1):
            raise ValueError("a subject's flip rate exceeds 1: lower --judge-subject-sd")
        # each subject's expected judge bias (judge minus physicians) and physicians-minus-judge difference
        self.subject_bias = run.factor * ((1 - run.met) * self.f_not - run.met * self.f_met)
        self.cache: dict[tuple[int, bool], dict] = {}

    def simulate(self) -> None:
        args, m, run = self.args, self.args.criteria, self.run
        met = physicians_labels(args, run)
        rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(JUDGE, self.index)))
        shape = met.shape
        case_met = np.broadcast_to(self.f_met * run.factor[run.subject], shape)
        case_not = np.broadcast_to(self.f_not * run.factor[run.subject], shape)
        if self.spread > 0:
            s = self.spread
            f_met = rng.beta(case_met * s, (1 - case_met) * s) if self.f_met > 0 else np.zeros(shape)
            f_not = rng.beta(case_not * s, (1 - case_not) * s) if self.f_not > 0 else np.zeros(shape)
        else:
            f_met, f_not = case_met, case_not
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

    def expected_design_error(self, n: int) -> float:
        """Expected error of the OLD fixed rule's estimate from its allocation (0 when it is stratified):
        sum over subjects of (n_h / n - N_h / N) x the subject's expected physicians-minus-judge difference."""
        run = self.run
        got = allocate(run.size_of, n)
        if all(k >= min(2, run.size_of[s]) for s, k in got.items()):
            return 0.0
        taken = np.array([got[f"subject-{h:02d}"] for h in range(len(run.sizes))])
        return float((taken / taken.sum() - run.sizes / run.sizes.sum()) @ -self.subject_bias)

    def evaluate(self, n: int, fixed: bool | None = None) -> dict:
        """Coverage, error and widths of the physicians' estimate (and of the physicians alone) at ``n``
        reviewed cases, drawn with the random allocation or (``fixed``) the old rule; default ``--fixed-allocation``."""
        fixed = self.args.fixed_allocation if fixed is None else fixed
        if (n, fixed) in self.cache:
            return self.cache[n, fixed]
        args, run = self.args, self.run
        ids = run.ids
        position = {c: i for i, c in enumerate(ids)}
        cover = cover_bias = cover_alone = low_miss = high_miss = stratified = left_out = 0
        errors, widths, halves, alone_widths = [], [], [], []
        for r in range(args.reps):
            phys, judge = self.physicians[r], self.judge[r]
            chosen = run.draw(n, sample_seed(args.seed, r), fixed)
            rows = [position[c] for c in chosen]
            census = dict(zip(ids, judge.tolist()))
            reviewed = {c: (float(phys[i]), float(judge[i])) for c, i in zip(chosen, rows)}
            out = physicians_estimate(census, reviewed, run.strata, stratum_names=STRATUM_NAMES)
            est, bias = out["physicians"], out["bias"]
            truth, true_bias = self.truth[r], self.true_bias[r]
            cover += est["low"] <= truth <= est["high"]
            low_miss += truth < est["low"]
            high_miss += truth > est["high"]
            cover_bias += bias["low"] <= true_bias <= bias["high"]
            stratified += out["design"] == STRATUM_NAMES
            left_out += len(run.sizes) - len(set(run.subject[rows].tolist()))
            errors.append(est["estimate"] - truth)
            widths.append(est["high"] - est["low"])
            halves.append((bias["high"] - bias["low"]) / 2)
            sample = phys[rows]
            se = math.sqrt((1 - n / args.cases) * sample.var(ddof=1) / n)
            alone_widths.append(2 * Z_95 * se)
            cover_alone += abs(sample.mean() - truth) <= Z_95 * se
        reps = args.reps
        width, alone = float(np.mean(widths)), float(np.mean(alone_widths))
        halves_arr, errors_arr = np.asarray(halves), np.asarray(errors)
        result = {"bias_points": round(100 * self.bias, 3), "judge_spread": self.spread, "n": n,
                  "allocation": "fixed" if fixed else "random", "stratified_share": stratified / reps,
                  "coverage": cover / reps, "coverage_bias": cover_bias / reps,
                  "truth_below_interval": low_miss / reps, "truth_above_interval": high_miss / reps,
                  "mean_error_points": 100 * float(errors_arr.mean()),
                  "mean_error_mc_se_points": 100 * float(errors_arr.std(ddof=1) / math.sqrt(reps)),
                  "rmse_points": 100 * float(np.sqrt(np.mean(np.square(errors_arr)))),
                  "subjects_left_out_mean": left_out / reps,
                  "width_points": 100 * width, "half_width": float(halves_arr.mean()),
                  "half_width_mc_se": float(halves_arr.std(ddof=1) / math.sqrt(reps)),
                  "width_without_census_points": 100 * alone, "gain": alone / width, "coverage_without_census": cover_alone / reps}
        if fixed:
            result["expected_design_error_points"] = 100 * self.expected_design_error(n)
        self.cache[n, fixed] = result
        return result

    def needed(self, target: float) -> dict:
        """Fewest reviewed cases whose mean bias half-width is <= target, to within 2% (bisection), main rule."""
        cap, rule = self.args.cases, self.args.fixed_allocation

        def done() -> dict[int, dict]:
            return {n: r for (n, f), r in self.cache.items() if f == rule}

        while min(r["half_width"] for r in done().values()) > target and max(done()) < cap:
            top = max(done())
            self.evaluate(min(cap, max(top + 1, math.ceil(top * 1.1 * (done()[top]["half_width"] / target) ** 2))))
        while max(r["half_width"] for r in done().values()) <= target and min(done()) > 2:
            self.evaluate(max(2, min(done()) // 2))
        cache = done()
        lo = max((c for c, r in cache.items() if r["half_width"] > target), default=1)
        above = [c for c in cache if c > lo]
        if not above:
            return {"n": None, "half_width": cache[lo]["half_width"], "why": f"above {target} even with all {cap} cases"}
        hi = min(above)
        while hi - lo > max(1, math.ceil(0.02 * hi)):
            mid = (lo + hi) // 2
            if self.evaluate(mid)["half_width"] > target:
                lo = mid
            else:
                hi = mid
        found = self.evaluate(hi)
        return {"n": hi, "bracket": [lo, hi], "half_width": round(found["half_width"], 5),
                "coverage": found["coverage"], "stratified_share": found["stratified_share"]}


def rounded(row: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}


def run_setting(st: Setting, args: argparse.Namespace) -> dict:
    """The fixed sizes, the size for the target and (for the contrast biases) random vs fixed allocation."""
    st.simulate()
    rows = [st.evaluate(n) for n in args.sizes]
    needed = st.needed(args.target)
    contrast = []
    if any(math.isclose(100 * st.bias, b) for b in args.contrast_bias):
        contrast = [rounded(st.evaluate(n, fixed)) for n in args.contrast_sizes for fixed in (False, True)]
    return {"bias_points": round(100 * st.bias, 3), "judge_spread": st.spread, "f_met": round(st.f_met, 4),
            "f_not": round(st.f_not, 4), "pooled_kappa": round(st.kappa, 4), "realised_kappa": round(st.realised_kappa, 4),
            "realised_disagreement": round(st.realised_disagreement, 4),
            "mean_true_bias_points": round(100 * float(st.true_bias.mean()), 3),
            "subject_bias_points": [round(100 * float(st.subject_bias.min()), 2), round(100 * float(st.subject_bias.max()), 2)],
            "rows": [rounded(r) for r in rows], "needed_for_target": needed, "contrast": contrast}


def layout_of(spread: float) -> str:
    return "spread" if spread == 0 else f"clustered ({spread:g})"


def campaign_population(cases: int) -> tuple[dict[str, tuple[str, str]], dict[str, float], dict[str, dict[str, float]]]:
    """The small campaign: ``cases`` cases by ``bench/judge_cost.write_cases``, the stand-in's answers,
    its reference verdicts as the physicians' labels; per case the reference's share and each judge's."""
    import importlib.util
    import tempfile
    from pathlib import Path

    from clinconsensus_tasks.clinconsensus.dataset import load_cases
    from clinconsensus_tasks.stand_in import candidate_answer, oracle_verdict

    spec = importlib.util.spec_from_file_location("judge_cost", Path(__file__).with_name("judge_cost.py"))
    judge_cost = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(judge_cost)  # type: ignore[union-attr]
    path = Path(tempfile.mkdtemp()) / "cases.jsonl"
    raw = judge_cost.write_cases(cases, path)
    strata, reference, alt = {}, {}, {}
    for row, case in zip(raw, load_cases(str(path)).cases):
        answer, criteria = candidate_answer(case.question), [text for _, text in case.rubrics]
        strata[case.case_id] = (row["subject"], row["difficulty"])
        reference[case.case_id] = sum(oracle_verdict(answer, t, "judge-model") for t in criteria) / len(criteria)
        alt[case.case_id] = sum(oracle_verdict(answer, t, "judge-alt") for t in criteria) / len(criteria)
    return strata, reference, {"alt": alt, "never": dict.fromkeys(reference, 0.0)}


def random_population(strata: dict[str, tuple[str, str]], seed: int, criteria: int = 30) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Per case a physicians' share and an ``alt`` judge's on the campaign's strata: strata differ in
    met share (0.3-0.8) and in the judge's error rate (0.06-0.24, clustered in cases)."""
    rng = np.random.default_rng(seed)
    keys = sorted(set(strata.values()))
    met_share, factor = dict(zip(keys, rng.uniform(0.3, 0.8, len(keys)))), dict(zip(keys, rng.uniform(0.4, 1.6, len(keys))))
    reference, alt = {}, {}
    for case, where in strata.items():
        labels = rng.random(criteria) < rng.beta(met_share[where] * 4.8, (1 - met_share[where]) * 4.8)
        rate = 0.15 * factor[where]
        flips = rng.random(criteria) < rng.beta(rate * 4, (1 - rate) * 4)
        reference[case], alt[case] = labels.mean(), (labels ^ flips).mean()
    return reference, {"alt": alt, "never": dict.fromkeys(reference, 0.0)}


def small_campaign(args: argparse.Namespace) -> None:
    """``--small-campaign``: see the module docstring."""
    started = time.perf_counter()
    strata, reference, judges = campaign_population(90)
    sizes: dict[tuple[str, str], int] = {}
    for where in strata.values():
        sizes[where] = sizes.get(where, 0) + 1
    print(f"Small campaign: {len(strata)} cases in {len(sizes)} subject x difficulty strata of {sorted(set(sizes.values()))} cases; "
          f"reviews drawn with the export's sampler (random rounding), seeds 1..{args.reps}")

    def measure(reference: dict[str, float], judge: dict[str, float], n: int, seeds: range) -> tuple[int, int, float, list[float], int]:
        truth = sum(reference.values()) / len(reference)
        hits = defined = 0
        half, estimates, stratified = 0.0, [], 0
        for seed in seeds:
            drawn = sample_cases(strata, n, seed)
            est = physicians_estimate(judge, {c: (reference[c], judge[c]) for c in drawn}, strata)
            p = est["physicians"]
            estimates.append(p["estimate"])
            stratified += est["design"] != "the run as one stratum"
            if math.isfinite(p["low"]):
                defined += 1
                hits += p["low"] <= truth <= p["high"]
                half += (p["high"] - p["low"]) / 2
        return hits, defined, half, estimates, stratified

    rows = []
    for n in (20, 30, 45):
        for name, judge in judges.items():
            hits, defined, half, estimates, stratified = measure(reference, judge, n, range(1, args.reps + 1))
            rows.append(("the campaign", name, n, hits / len(estimates), 100 * half / max(defined, 1), 100 * float(np.std(estimates, ddof=1)),
                         stratified / len(estimates)))
        for name in ("alt", "never"):
            hits_all = count = 0
            half_all, spread = 0.0, []
            for i in range(args.populations):
                population, others = random_population(strata, 1000 + i)
                hits, defined, half, estimates, _ = measure(population, others[name], n, range(i * 50 + 1, i * 50 + 51))
                hits_all, count, half_all = hits_all + hits, count + len(estimates), half_all + half
                spread.append(float(np.std(estimates, ddof=1)))
            rows.append((f"{args.populations} random populations", name, n, hits_all / count, 100 * half_all / count,
                         100 * float(np.mean(spread)), math.nan))
    print("\n| population | judge | reviewed | coverage | mean half-width (pts) | sd of estimates (pts) | stratified share |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for population, judge, n, coverage, half, sd, share in rows:
        print(f"| {population} | {judge} | {n} | {coverage:.3f} | {half:.2f} | {sd:.2f} | {'' if math.isnan(share) else f'{share:.2f}'} |")
    print(f"\n{time.perf_counter() - started:.0f} s")
    print(json.dumps({"small_campaign": [dict(zip(("population", "judge", "reviewed", "coverage", "half_width_points", "sd_points",
                                                   "stratified_share"), (p, j, n, c, h, sd, None if math.isnan(sh) else sh)))
                                         for p, j, n, c, h, sd, sh in rows]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small-campaign", action="store_true",
                        help="measure the small campaign's design instead (90 cases, tiny strata; see the module docstring)")
    parser.add_argument("--populations", type=int, default=100, help="--small-campaign: random populations besides the campaign")
    parser.add_argument("--bias", type=float, nargs="+", default=[0.0, 5.0, -10.0], help="judge minus physicians, points")
    parser.add_argument("--judge-spread", type=float, nargs="+", default=[0.0, 4.0],
                        help="0: judge errors independent of the case; s > 0: per-case flip rates ~ Beta, concentration s")
    parser.add_argument("--sizes", type=int, nargs="+", default=[30, 50, 100, 200], help="reviewed cases")
    parser.add_argument("--reps", type=int, default=1000, help="simulated runs per setting")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kappa", type=float, default=0.7, help="pooled judge-physicians kappa at bias 0 (sets the disagreement)")
    parser.add_argument("--met-share", type=float, default=0.45, help="mean share of criteria physicians label met")
    parser.add_argument("--subject-sd", type=float, default=0.07, help="case-weighted sd of the subjects' mean met shares")
    parser.add_argument("--judge-subject-sd", type=float, default=0.15,
                        help="case-weighted sd of the subjects' factors on the judge's flip rates (mean 1)")
    parser.add_argument("--concentration", type=float, default=4.8, help="a + b of the per-case Beta of the met probability")
    parser.add_argument("--cases", type=int, default=900)
    parser.add_argument("--criteria", type=int, default=30)
    parser.add_argument("--subjects", type=int, default=36)
    parser.add_argument("--subject-alpha", type=float, default=2.0, help="Dirichlet concentration of the subject sizes")
    parser.add_argument("--target", type=float, default=0.02, help="95%% half-width wanted on the bias")
    parser.add_argument("--fixed-allocation", action="store_true",
                        help="draw the review with the OLD fixed allocation (largest remainders) instead of the export's random one")
    parser.add_argument("--contrast-bias", type=float, nargs="*", default=[0.0],
                        help="biases (points) at which random and fixed allocation are compared")
    parser.add_argument("--contrast-sizes", type=int, nargs="*", default=[30, 50, 100], help="reviewed cases for the comparison")
    parser.add_argument("--jobs", type=int, default=2, help="settings run in parallel processes")
    args = parser.parse_args()
    if args.small_campaign:
        small_campaign(args)
        return
    started = time.perf_counter()

    run = Run(args)
    sizes = run.sizes
    d = disagreement_for(args.kappa, args.met_share)
    k = args.concentration
    probability = {n: stratified_probability(run.size_of, n) for n in range(2, args.cases + 1)}
    possible = min((n for n, p in probability.items() if p > 0), default=None)
    certain = None  # the n from which every larger n is stratified in every draw
    for n in sorted(probability, reverse=True):
        if probability[n] < 1 - 1e-9:
            break
        certain = n
    fixed_first = first_stratified_fixed(run.size_of)
    rule = "OLD fixed allocation (--fixed-allocation)" if args.fixed_allocation else "random allocation (the export's)"
    print(f"Run: {args.cases} cases x {args.criteria} criteria; {args.subjects} subjects, sizes {sizes.min()}-{sizes.max()} "
          f"(median {int(np.median(sizes))}; Dirichlet {args.subject_alpha:g}, fixed seed {STRATA_SEED})")
    print(f"Subjects: mean met share m_h {run.met.min():.3f}-{run.met.max():.3f} (case-weighted mean "
          f"{float(run.met @ sizes) / sizes.sum():.3f}, sd {args.subject_sd:g}); judge flip-rate factor g_h "
          f"{run.factor.min():.2f}-{run.factor.max():.2f} (weighted mean 1, sd {args.judge_subject_sd:g}, uncorrelated "
          f"with m_h); fixed seed {SUBJECT_SEED}")
    print(f"Physicians: case met probability Beta(m_h {k:g}, (1 - m_h) {k:g}), criteria independent given it; "
          f"truth = physicians' census mean over the {args.cases} cases")
    print(f"Judge: disagrees on D = {d:.4f} of rows (pooled kappa {args.kappa} at bias 0), flip rates set by D and the bias, "
          f"times g_h; judge spread 0 = rows flip independently, s > 0 = per-case flip rates ~ Beta(f s, (1 - f) s)")
    print(f"Review: {rule}, all criteria of each case; physicians_estimate, 95% interval (Student's t, n - H df); {args.reps} runs per "
          f"setting; seed {args.seed}; coverage MC se ~ {math.sqrt(0.95 * 0.05 / args.reps):.3f}")
    print(f"Stratified design (every subject >= 2 reviewed cases), random allocation: possible from n = {possible}, certain "
          f"from n = {certain}; probability " + ", ".join(f"{probability[n]:.3f} at n = {n}" for n in args.sizes
                                                           if n in probability)
          + f". Old fixed rule: first at n = {fixed_first} (not at every larger n)")

    settings = [Setting(i, bias / 100, s, args) for i, (bias, s) in enumerate(
        (bias, s) for bias in args.bias for s in args.judge_spread)]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run_setting, settings, [args] * len(settings)))

    print("\nJudge per setting (f_met = P(judge not met | physicians met), f_not = P(judge met | physicians not met), "
          "before g_h; subject bias = a subject's expected judge minus physicians):")
    for r in results:
        lo, hi = r["subject_bias_points"]
        print(f"bias {r['bias_points']:+g} pts, spread {r['judge_spread']:g}: f_met {r['f_met']:.4f}, f_not {r['f_not']:.4f}, "
              f"pooled kappa {r['pooled_kappa']:.3f} (realised {r['realised_kappa']:.3f}), realised disagreement "
              f"{r['realised_disagreement']:.4f}, mean true bias {r['mean_true_bias_points']:+.2f} pts, "
              f"subject bias {lo:+.1f} to {hi:+.1f} pts")

    print(f"\n{rule}:")
    print("\n| bias (pts) | judge errors | n | stratified share | coverage | bias coverage | mean error (pts) | width (pts) "
          "| width without census (pts) | gain |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    short = []
    for r in results:
        for row in r["rows"]:
            print(f"| {row['bias_points']:+g} | {layout_of(r['judge_spread'])} | {row['n']} | {row['stratified_share']:.3f} | "
                  f"{row['coverage']:.3f} | {row['coverage_bias']:.3f} | {row['mean_error_points']:+.2f} | "
                  f"{row['width_points']:.2f} | {row['width_without_census_points']:.2f} | {row['gain']:.2f} |")
            if row["coverage"] < 0.93:
                short.append(row)

    contrast = [(r, row) for r in results for row in r["contrast"]]
    if contrast:
        print("\nRandom allocation (the export's) vs the OLD fixed one (largest remainders), same physicians, judge and "
              "draw seeds; expected error = the fixed rule's design bias from the subjects' expected differences:")
        print("\n| bias (pts) | judge errors | n | allocation | coverage | mean error (pts) | MC se (pts) "
              "| expected error (pts) | RMSE (pts) | subjects left out (mean) | never reachable |")
        print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
        for r, row in contrast:
            fixed = row["allocation"] == "fixed"
            expected = f"{row['expected_design_error_points']:+.2f}" if fixed else "0"
            never = sum(v == 0 for v in allocate(run.size_of, row["n"]).values()) if fixed else 0
            print(f"| {row['bias_points']:+g} | {layout_of(r['judge_spread'])} | {row['n']} | {row['allocation']} | "
                  f"{row['coverage']:.3f} | {row['mean_error_points']:+.2f} | {row['mean_error_mc_se_points']:.2f} | "
                  f"{expected} | {row['rmse_points']:.2f} | {row['subjects_left_out_mean']:.1f} | {never} |")
            if row["coverage"] < 0.93 and fixed != args.fixed_allocation:
                short.append(row)

    print(f"\nReviewed cases for a mean 95% half-width <= {args.target:g} on the bias (bisection to 2%; {rule}):")
    for r in results:
        layout = "errors spread over rows" if r["judge_spread"] == 0 else f"errors clustered in cases (spread {r['judge_spread']:g})"
        need = r["needed_for_target"]
        if need["n"] is None:
            print(f"bias {r['bias_points']:+g} pts, {layout}: {need['why']}")
        else:
            print(f"bias {r['bias_points']:+g} pts, {layout}: {need['n']} cases (between {need['bracket'][0]} and "
                  f"{need['bracket'][1]}; half-width {need['half_width']:.4f}, coverage {need['coverage']:.3f}, "
                  f"stratified share {need['stratified_share']:.3f})")
    if short:
        print("\nSettings below 0.93 coverage (truth below / above the interval):")
        for row in short:
            print(f"bias {row['bias_points']:+g}, spread {row['judge_spread']:g}, n {row['n']}, {row['allocation']} allocation: "
                  f"{row['coverage']:.3f} ({row['truth_below_interval']:.3f} / {row['truth_above_interval']:.3f})")
    else:
        print("\nEvery setting covers at least 0.93.")
    elapsed = time.perf_counter() - started
    print(f"\nelapsed {elapsed:.1f} s")
    print(json.dumps({"cases": args.cases, "criteria": args.criteria, "subjects": args.subjects,
                      "subject_sizes": sizes.tolist(), "subject_met_shares": np.round(run.met, 4).tolist(),
                      "subject_judge_factors": np.round(run.factor, 4).tolist(),
                      "allocation": "fixed" if args.fixed_allocation else "random",
                      "stratified_probability_random": {n: round(probability[n], 4) for n in args.sizes if n in probability},
                      "stratified_possible_from_n_random": possible, "stratified_certain_from_n_random": certain,
                      "first_stratified_n_fixed": fixed_first,
                      "met_share": args.met_share, "subject_sd": args.subject_sd, "judge_subject_sd": args.judge_subject_sd,
                      "concentration": args.concentration, "kappa": args.kappa,
                      "disagreement": round(d, 5), "reps": args.reps, "seed": args.seed, "target": args.target,
                      "results": results, "elapsed_s": round(elapsed, 1)}))


if __name__ == "__main__":
    main()
