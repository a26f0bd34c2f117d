"""A judge asked again: how far it agrees with itself, and how much of a headline is its noise.

Temperature 0 does not make a hosted judge deterministic, a reasoning judge ignores temperature, and
a local judge served with batching is not bit-stable: the same request can come back with another
verdict. ``clinconsensus-eval reliability`` asks a sample of a run's rows (an answer and one
criterion) again, ``R`` times each, each ask a fresh request; the rules here turn the asks into
figures, framework-free:

* **Repeatability** (:func:`repeatability`): the flip rate, the share of rows whose asks are not all
  equal (a row with fewer than two usable asks is not counted; with ``R = 2`` it is the chance that
  two asks of a row disagree, and it grows with ``R``), the pairwise disagreement (the share of
  pairs of asks of a row that disagree, the same for every ``R``), the judge's agreement with
  itself (Fleiss' kappa with each ask as a rater, over the rows every ask decided), each by subject
  and difficulty, and the rows that flipped.
* **Invariance** (:func:`invariance`): the same rows with an answer-irrelevant edit of the answer
  (``scorers.clinconsensus.answer_forms``), each asked once: the share of rows whose verdict on the
  edited answer differs from the first ask on the answer as it was, and the direction: not met to
  met (``up``), met to not met (``down``), and ``net`` = up - down. A judge whose own noise flips
  rows flips edited rows as often, in both directions; a judge kinder to a politer answer shows
  ``up`` far above ``down``.
* **The headline's two sources of noise** (:func:`headline_noise`): a mean over cases varies with
  which cases were drawn and with what the judge said on each ask. A case's value on one ask is
  ``v_c + e_c`` (its value in expectation over the judge's asks, and the judge's noise). For cases
  asked again whole (every criterion, ``R`` asks), the variance of the case's value over its asks
  estimates ``Var(e_c)`` without a model, for every per-case metric at once (rubric accuracy's
  share, a Pass@k indicator, a CACS@k term); its mean over the asked cases is the judge's part of
  the variance of one case's value. The run's per-case values, each from one ask, vary by both
  parts at once (``Var = Var(v) + E[Var(e)]``), so the case bootstrap the project has always drawn
  over them already holds both: it is the interval for the benchmark's population of cases with the
  judge's noise in it. What the check adds is the split: the judge's share of that variance, the
  cases' part without it, and the judge-alone interval, how far the same cases' headline moves when
  the judge is asked again (``H +- z * sqrt(U / n)``, ``U`` the upper end of the judge's part's
  own interval: the check's uncertainty about the part is allowed for).

Every interval resamples cases (the rows of a case share an answer), with the project's one case
bootstrap (``scorers.agreement``); an undefined figure is NaN (``null`` in JSON, ``n/a`` printed).
A judge that never flipped (counted: no row whose asks differ) has no flip for the bootstrap to
resample, and its 0.000 [0.000, 0.000] would read as a judge known to be steady: the flip rate's
upper end, the pairwise disagreement's, the self-kappa's lower end and an edit's shares are then the
exact bound for no flip in the n cases asked (``agreement.zero_event_bound``: ``1 - 0.05 ** (1 / n)``,
about 3 / n), marked ``zero_events``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from clinconsensus_tasks.scorers.agreement import (
    LEVEL, NET, RESAMPLES, Z_95, Interval, bootstrap, case_draws, fleiss_interval, shows_spread, without_events,
)

BY = ("subject", "difficulty")
UP, DOWN = "up", "down"
FLIP = "flip"  # the event whose absence gives the exact bound (``agreement.without_events``)
EVENTS = {"flip_rate": FLIP, UP: "flip to met", DOWN: "flip to not met"}  # an edit's shares, by what each counts


@dataclass(frozen=True)
class AskedRow:
    """One row asked again: the case (the unit resampled), the answer's record (case and epoch), the
    criterion, the case's subject and difficulty, and the verdict of each ask (``None``: the ask
    failed: no verdict after the protocol's own re-asks)."""

    case_id: str
    record: str
    criterion_id: str
    subject: str
    difficulty: str
    asks: tuple[bool | None, ...]

    def usable(self) -> tuple[bool, ...]:
        return tuple(a for a in self.asks if a is not None)

    def flipped(self) -> bool | None:
        """Whether the usable asks are not all equal (``None``: fewer than two usable asks)."""
        asks = self.usable()
        return None if len(asks) < 2 else len(set(asks)) > 1


def _ratio(parts: np.ndarray) -> float:
    return float(parts[1] / parts[0]) if parts[0] else math.nan


def _rate(rows: Sequence[AskedRow], resamples: int, seed: int, level: float) -> Interval:
    """The flip rate of ``rows`` with its case bootstrap interval (per case: rows counted, rows flipped)."""
    parts: dict[Hashable, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        flipped = row.flipped()
        if flipped is not None:
            parts[row.case_id][0] += 1
            parts[row.case_id][1] += flipped
    keys = sorted(parts, key=repr)
    matrix = np.array([parts[k] for k in keys], dtype=float).reshape(len(keys), 2)
    interval = bootstrap(matrix, _ratio, case_draws(len(keys), resamples, seed), matrix[:, 0] > 0, level)
    return without_events(interval, int(matrix[:, 1].sum()), FLIP, level=level)


def _pairwise(rows: Sequence[AskedRow], resamples: int, seed: int, level: float) -> Interval:
    """The share of pairs of usable asks of a row that disagree, pooled, with its case bootstrap interval."""
    parts: dict[Hashable, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        asks = row.usable()
        pairs = list(combinations(asks, 2))
        if pairs:
            parts[row.case_id][0] += len(pairs)
            parts[row.case_id][1] += sum(a != b for a, b in pairs)
    keys = sorted(parts, key=repr)
    matrix = np.array([parts[k] for k in keys], dtype=float).reshape(len(keys), 2)
    interval = bootstrap(matrix, _ratio, case_draws(len(keys), resamples, seed), matrix[:, 0] > 0, level)
    return without_events(interval, int(matrix[:, 1].sum()), FLIP, level=level)  # no pair disagrees: no row flipped


def repeatability(rows: Sequence[AskedRow], repeat: int, resamples: int = RESAMPLES, seed: int = 0,
                  level: float = LEVEL) -> dict[str, object]:
    """The judge against itself over ``rows``, each asked ``repeat`` times (see the module docstring)."""
    counted = [r for r in rows if r.flipped() is not None]
    whole = [r for r in rows if len(r.usable()) == repeat]
    votes: dict[Hashable, list[int]] = defaultdict(list)
    for r in whole:
        votes[r.case_id].append(sum(r.usable()))
    kappa = fleiss_interval(votes, repeat, resamples, seed, level, FLIP) if repeat >= 2 else Interval.undefined()
    by: dict[str, dict[str, dict[str, float]]] = {}
    for dim in BY:
        groups: dict[str, list[AskedRow]] = defaultdict(list)
        for r in rows:
            groups[getattr(r, dim)].append(r)
        by[dim] = {name: {"rows": sum(1 for r in group if r.flipped() is not None), **_rate(group, resamples, seed, level).to_dict()}
                   for name, group in sorted(groups.items())}
    return {
        "repeat": repeat,
        "rows": len(rows),
        "rows_counted": len(counted),
        "rows_left_out": len(rows) - len(counted),  # fewer than two usable asks
        "failed_asks": sum(1 for r in rows for a in r.asks if a is None),
        "cases": len({r.case_id for r in counted}),
        "flip_rate": _rate(rows, resamples, seed, level).to_dict(),
        "pairwise_disagreement": _pairwise(rows, resamples, seed, level).to_dict(),
        "self_kappa": kappa.to_dict(),
        "self_kappa_rows": len(whole),
        "by": by,
        "flipped": [{"case_id": r.case_id, "record": r.record, "criterion_id": r.criterion_id, "subject": r.subject,
                     "difficulty": r.difficulty, "asks": list(r.asks)} for r in counted if r.flipped()],
    }


def invariance(pairs: Mapping[Hashable, Sequence[tuple[bool, bool]]], resamples: int = RESAMPLES, seed: int = 0,
               level: float = LEVEL) -> dict[str, object]:
    """One transform's figures from (verdict on the answer as it was, verdict on the edited answer)
    pairs by case: the flip rate, ``up`` (not met to met), ``down`` (met to not met) and ``net``
    (up - down), each a share of the pairs with its case bootstrap interval; a share whose event no
    row shows, the exact bound for none in the cases (``net``: within +-it when no row flipped)."""
    keys = sorted(pairs, key=repr)
    matrix = np.array([[len(pairs[k]), sum(a != b for a, b in pairs[k]), sum(b and not a for a, b in pairs[k]),
                        sum(a and not b for a, b in pairs[k])] for k in keys], dtype=float).reshape(len(keys), 4)
    draws = case_draws(len(keys), resamples, seed)
    has = matrix[:, 0] > 0
    share = lambda j: (lambda p: float(p[j] / p[0]) if p[0] else math.nan)  # noqa: E731
    net = lambda p: float((p[2] - p[3]) / p[0]) if p[0] else math.nan  # noqa: E731
    events = matrix[:, 1:].sum(axis=0).astype(int)  # rows flipped, up, down
    shares = {name: without_events(bootstrap(matrix, share(j), draws, has, level), events[j - 1], EVENTS[name], level=level).to_dict()
              for j, name in enumerate(("flip_rate", UP, DOWN), start=1)}
    return {"rows": int(matrix[:, 0].sum()), "cases": int(np.count_nonzero(has)), **shares,
            "net": without_events(bootstrap(matrix, net, draws, has, level), events[0], FLIP, NET, level=level).to_dict()}


def headline_noise(census: Mapping[str, int], asked: Mapping[str, Sequence[int]], case_of: Mapping[str, Hashable],
                   term: Callable[[int], float], cases_and_judge: Interval, n_criteria: int = 30, resamples: int = RESAMPLES,
                   seed: int = 0, level: float = LEVEL, z: float = Z_95) -> dict[str, object]:
    """One per-case metric of a run, its noise split in two (see the module docstring).

    ``census``: the met count of every record of the run (one ask each: the headline is the mean of
    ``term(met)`` over them); ``asked``: for the records asked again whole, the met count of each
    ask; ``case_of``: each record's case (records of a case are resampled together);
    ``cases_and_judge``: the run's case bootstrap interval of the headline (as the report draws it).

    The judge's part of one record's variance, ``E[Var(term(S))]`` over the judge's asks, comes
    from the differences between two asks of the same case: for two independent asks ``S``, ``S'``,
    ``Var(term(S)) = E[(term(S) - term(S'))^2] / 2``. Every pair of asks of an asked case gives a
    difference ``d`` of met counts (both signs); the part is the mean, over those differences and
    over every record of the run, of ``(term(m) - term(m + d))^2 / 2`` with ``m`` the record's met
    count (``m + d`` kept within 0..N). So a threshold metric (Pass@k) learns how the judge's count
    moves from the asked cases and where the run's cases sit from all of them: a few dozen asked
    cases rarely straddle a threshold themselves. Its interval resamples the asked cases.

    Returns the headline, the cases-and-judge interval, the judge's part (with its interval), the
    total and the cases' part of the variance, the judge's share of it and the judge-alone
    interval; NaN where the asks cannot tell (no asked case with two asks; the intervals: fewer than two),
    and the judge's share where the run's values show no spread (``scorers.agreement.shows_spread``:
    a total variance of 0 has no share)."""
    counts = np.array(list(census.values()), dtype=int)
    n = len(counts)
    table = np.array([term(m) for m in range(n_criteria + 1)], dtype=float)
    values = table[np.clip(counts, 0, n_criteria)]
    # The run's headline as the report has it (each case's terms with its own judged count, its epochs
    # averaged): the interval's estimate; the census's mean where the interval has none.
    headline = cases_and_judge.estimate if math.isfinite(cases_and_judge.estimate) else (float(math.fsum(values) / n) if n else math.nan)
    # Equal values have no variance, and no share of it is the judge's: numpy's variance of equal
    # values is rounding (1e-34 for 0.1's), which would make the share 0 or 1.
    spread = shows_spread(values)
    total = (float(values.var(ddof=1)) if spread else 0.0) if n > 1 else math.nan
    # g[d]: the mean over the run's records of (term(m) - term(m + d))^2 / 2, for every difference d
    held = np.bincount(np.clip(counts, 0, n_criteria), minlength=n_criteria + 1) / max(n, 1)
    support = np.arange(n_criteria + 1)
    g = {d: float(held @ ((table - table[np.clip(support + d, 0, n_criteria)]) ** 2) / 2) for d in range(-n_criteria, n_criteria + 1)}
    by_case: dict[Hashable, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for record, asks in asked.items():
        for a, b in combinations(asks, 2):
            by_case[case_of[record]][0] += 2
            by_case[case_of[record]][1] += g[b - a] + g[a - b]
    keys = sorted(by_case, key=repr)
    matrix = np.array([by_case[k] for k in keys], dtype=float).reshape(len(keys), 2)
    judge = bootstrap(matrix, _ratio, case_draws(len(keys), resamples, seed), matrix[:, 0] > 0, level) if keys and n else \
        Interval.undefined(cases=0)
    part = judge.estimate
    defined = math.isfinite(part) and math.isfinite(total)
    share = min(1.0, part / total) if defined and spread else math.nan  # no variance: no share of it
    cases_part = max(0.0, total - part) if defined else math.nan
    # The check knows the judge's part only so well: the judge-alone interval is drawn from the upper
    # end of the part's own interval (bench/judge_noise.py: its point estimate under-covers a 2% judge).
    alone = Interval.around(headline, math.sqrt(judge.high / n), z) if defined and math.isfinite(judge.high) else \
        Interval.undefined(headline)
    if math.isfinite(alone.low):  # a mean of per-case values lies within their range
        alone = Interval(alone.estimate, alone.stderr, max(alone.low, float(table.min())), min(alone.high, float(table.max())))
    return {"estimate": headline, "records": n, "asked_records": sum(1 for a in asked.values() if len(a) >= 2),
            "cases_and_judge": cases_and_judge.to_dict(),
            "judge_alone": alone.to_dict(),
            "variance": {"total": total, "judge": judge.to_dict(), "cases": cases_part},
            "judge_share": share}
