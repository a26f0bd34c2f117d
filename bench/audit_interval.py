"""How wide the audited recipe's interval is: the cheap judge on all 900 cases, the official
per-criterion judge on a stratified sample, the headline as the difference estimate.

Why: the API-only recipe (batched mode on every case, the per-criterion judge on 10% of them) is
0.18 of the synchronous bill (``bench/judge_bill.py``), and what it buys is an interval, not a
number. The interval on real data cannot be measured here (no hub, no API judge), so this script
measures it on simulated runs whose every assumption is printed, with the project's own sampler and
estimator (``scorers/audit_estimate.py``) and metric terms (``metric_table.case_terms``):

* 900 cases (the public set's size) in 36 subject strata (its number of specialties) whose sizes
  fall off as 1/rank (the public shares are not known here; a stratum has at least 5 cases);
* each case has a quality q drawn from Beta(a, b) (``--beta``, default 2.2, 2.6: rubric accuracy
  about 0.46 and CACS@10 about 0.26, inside the paper's range for current models), and the
  official judge finds each of its 30 criteria met with probability q;
* the cheap judge disagrees with the official one on a share of each case's criteria drawn from a
  Beta distribution with mean ``1 - agreement`` and concentration ``--spread`` (default 4: a
  judge's mistakes cluster in the cases it misreads, which widens the interval against mistakes
  spread evenly); of its disagreements a share ``--lenient`` are "met" where the official says not
  met (a cheap judge that errs lenient moves the cheap score, which the estimator must correct).

For each agreement level it draws ``--runs`` runs and in each a stratified sample of ``--share``
(``stratified_sample``, at least two cases per stratum), and prints: the cases the official judge
grades, Cohen's kappa of the two judges on them, the mean half-width of the 95% interval of rubric
accuracy, CACS@10 and Pass@10 in percentage points, and how often the interval held the official
judge's score over all 900 cases (coverage; 0.95 expected). A sample whose differences show no
spread gives no interval (``difference_estimate``: a Pass@10 sample where the two judges agree on
every sampled case's yes/no, at high agreement); the half-width and the coverage are over the runs
that gave an interval, and ``none`` says how many of the row's runs gave none.

Usage: python bench/audit_interval.py [--share 0.1] [--runs 200] [--agreement 0.8 0.85 0.9 0.95]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import random

from clinconsensus_tasks.scorers.agreement import Confusion, cohen_kappa
from clinconsensus_tasks.scorers.audit_estimate import difference_estimate, stratified_sample
from clinconsensus_tasks.scorers.clinconsensus.metric_table import case_terms, headline_names

CASES, STRATA, CRITERIA, MIN_STRATUM = 900, 36, 30, 5
HEADLINE = tuple(headline_names((10,)))  # cacs@10, pass@10, rubric_accuracy


def stratum_sizes(cases: int = CASES, strata: int = STRATA) -> list[int]:
    """``cases`` split over ``strata`` in proportion to 1/rank, each at least :data:`MIN_STRATUM`."""
    weights = [1 / rank for rank in range(1, strata + 1)]
    spare = cases - MIN_STRATUM * strata
    sizes = [MIN_STRATUM + int(spare * w / sum(weights)) for w in weights]
    sizes[0] += cases - sum(sizes)
    return sizes


def simulate(rng: random.Random, agreement: float, lenient: float, beta: tuple[float, float], spread: float) -> tuple[dict, dict, dict]:
    """(strata, official verdicts, cheap verdicts) of one simulated run, by case id."""
    strata, official, cheap = {}, {}, {}
    case = 0
    for stratum, size in enumerate(stratum_sizes()):
        for _ in range(size):
            case_id = f"c{case:04d}"
            case += 1
            strata[case_id] = f"subject-{stratum:02d}"
            quality = rng.betavariate(*beta)
            truth = [rng.random() < quality for _ in range(CRITERIA)]
            wrong = rng.betavariate((1 - agreement) * spread, agreement * spread)
            seen = []
            for met in truth:
                if rng.random() >= wrong:
                    seen.append(met)
                else:  # a disagreement: lenient ones only where the official says not met, and the reverse
                    flip_up = rng.random() < lenient
                    seen.append(True if (flip_up and not met) else False if (not flip_up and met) else met)
            official[case_id], cheap[case_id] = truth, seen
    return strata, official, cheap


def terms(verdicts: list[bool]) -> dict[str, float]:
    return case_terms(sum(verdicts), len(verdicts))


def one_level(agreement: float, share: float, runs: int, lenient: float, beta: tuple[float, float], spread: float, seed: int) -> dict:
    rng = random.Random(seed)
    width = {m: 0.0 for m in HEADLINE}  # summed over the runs whose interval is defined
    covered = {m: 0 for m in HEADLINE}
    none = {m: 0 for m in HEADLINE}  # runs whose sample gave no interval (no spread): left out of width and coverage
    kappas, sampled, scores = [], [], {m: 0.0 for m in HEADLINE}
    for run in range(runs):
        strata, official, cheap = simulate(rng, agreement, lenient, beta, spread)
        sample = stratified_sample(strata, share, seed=run)
        sampled.append(len(sample))
        kappas.append(cohen_kappa(Confusion.of(pair for c in sample for pair in zip(official[c], cheap[c]))))
        cheap_terms = {c: terms(v) for c, v in cheap.items()}
        official_terms = {c: terms(v) for c, v in official.items()}
        for m in HEADLINE:
            truth = sum(t[m] for t in official_terms.values()) / len(official_terms)
            scores[m] += truth / runs
            interval = difference_estimate({c: t[m] for c, t in cheap_terms.items()}, {c: official_terms[c][m] for c in sample}, strata)
            if math.isnan(interval.low):
                none[m] += 1
                continue
            width[m] += (interval.high - interval.low) / 2
            covered[m] += interval.low <= truth <= interval.high
    given = {m: runs - none[m] for m in HEADLINE}
    return {"agreement": agreement, "sampled_cases": round(sum(sampled) / runs, 1), "kappa": round(sum(kappas) / runs, 3),
            "official_score": {m: round(scores[m], 4) for m in HEADLINE},
            "half_width_pp": {m: round(100 * width[m] / given[m], 2) if given[m] else None for m in HEADLINE},
            "coverage": {m: round(covered[m] / given[m], 3) if given[m] else None for m in HEADLINE},
            "no_interval": none}


def _of(value: float | None, width: int, places: int) -> str:
    """A figure right-aligned in ``width``, ``n/a`` where no run gave an interval."""
    return f"{'n/a':>{width}}" if value is None else f"{value:{width}.{places}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--agreement", type=float, nargs="+", default=[0.8, 0.85, 0.9, 0.95])
    parser.add_argument("--lenient", type=float, default=0.6)
    parser.add_argument("--beta", type=float, nargs=2, default=[2.2, 2.6])
    parser.add_argument("--spread", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{CASES} cases in {STRATA} strata (sizes {stratum_sizes()[0]} to {stratum_sizes()[-1]}), "
          f"quality Beta{tuple(args.beta)}, "
          f"disagreement spread {args.spread}, {args.lenient:.0%} of disagreements lenient, share {args.share}, {args.runs} runs")
    print("agreement  sampled  kappa   +/- pp: rubric_acc  cacs@10  pass@10   coverage: rubric_acc  cacs@10  pass@10   "
          "no interval: rubric_acc  cacs@10  pass@10")
    levels = []
    for agreement in args.agreement:
        level = one_level(agreement, args.share, args.runs, args.lenient, tuple(args.beta), args.spread, args.seed)
        levels.append(level)
        w, c, none = level["half_width_pp"], level["coverage"], level["no_interval"]
        print(f"{agreement:9.2f}  {level['sampled_cases']:7.1f}  {level['kappa']:5.3f}  {_of(w['rubric_accuracy'], 19, 2)}  "
              f"{_of(w['cacs@10'], 7, 2)}  {_of(w['pass@10'], 7, 2)}   {_of(c['rubric_accuracy'], 19, 3)}  {_of(c['cacs@10'], 7, 3)}  "
              f"{_of(c['pass@10'], 7, 3)}   {none['rubric_accuracy']:22d}  {none['cacs@10']:7d}  {none['pass@10']:7d}")
    none = sum(sum(level["no_interval"].values()) for level in levels)
    print(f"no interval (a sample without spread): {none} of {args.runs * len(levels) * len(HEADLINE)} simulated audits "
          f"({args.runs} runs x {len(levels)} agreement levels x {len(HEADLINE)} metrics); half-width and coverage are over the rest")
    print(json.dumps({"share": args.share, "runs": args.runs, "lenient": args.lenient, "beta": args.beta, "spread": args.spread,
                      "levels": levels}))


if __name__ == "__main__":
    main()
