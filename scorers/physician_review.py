"""Judges against physicians: the rules of a physician review, framework-free.

ClinConsensus rests its numbers on its judges agreeing with physicians. A review puts a sample of
(answer, criterion) pairs in front of physicians, blind to every judge, and compares the labels
that come back with each judge's verdicts. The rules, one place each:

* **Labels** (:func:`read_label`): exactly ``met`` / ``not met`` / ``cannot tell`` or
  ``符合`` / ``不符合`` / ``无法判断``, after NFKC, case folding and collapsing blanks (so ``" Met "``
  and ``"NOT  MET"`` are read, ``"yes"`` is not). Anything else is no label, with the reason.
* **The physicians' reference** (:func:`reference`): with several physicians on a row, their
  majority of ``met`` against ``not met``; ``cannot tell`` is no vote. A tie, or no vote at all, is
  no reference: the row is counted as such and left out of every comparison, never guessed.
* **The sample** (:func:`allocate`, :func:`assign`): cases drawn per stratum (subject x
  difficulty) in proportion to the stratum's size, largest remainders first; a share of the cases
  (``overlap``) goes to every physician (their agreement with each other is measured there), the
  rest to one physician each, whole cases, the least loaded first.
* **Agreement** (:func:`agreement`): percent agreement, Cohen's kappa, macro F1 over met / not met
  (HealthBench's meta-evaluation metric), precision and recall of met, each with a percentile
  interval from a bootstrap that resamples CASES: the 30 criteria of a case are judged on one
  answer, so its rows are not independent. Every resample is scored by the same functions as the
  estimate (``scorers.agreement``), so there is one definition of each statistic.
* **Physicians with each other** (:func:`rater_agreement`): Cohen's kappa of every pair on the rows
  both decided, Fleiss' kappa on the rows every one of them decided, the same bootstrap.
"""

from __future__ import annotations

import math
import random
import unicodedata
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations

import numpy as np

from clinconsensus_tasks.scorers.agreement import (
    Confusion, cohen_kappa, fleiss_from_parts, fleiss_parts, verdict_report,
)
from clinconsensus_tasks.scorers.audit_estimate import Interval

MET, NOT_MET, CANNOT_TELL = "met", "not met", "cannot tell"
LABELS = {"met": MET, "not met": NOT_MET, "cannot tell": CANNOT_TELL, "符合": MET, "不符合": NOT_MET, "无法判断": CANNOT_TELL}
ACCEPTED = "met / not met / cannot tell, 符合 / 不符合 / 无法判断"
NO_LABEL = "no label"
TIE, NO_VOTE = "tie", "cannot tell"  # why a row has no reference
RESAMPLES, LEVEL = 1000, 0.95
AGREEMENT_METRICS = ("percent_agreement", "kappa", "macro_f1", "precision_met", "recall_met")


def read_label(raw: object) -> tuple[str | None, str]:
    """``(label, "")`` for an accepted label, ``(None, why)`` otherwise (``why`` is :data:`NO_LABEL`
    for an empty cell). Blanks, full-width forms and case are forgiven; nothing else is."""
    text = "" if raw is None else " ".join(unicodedata.normalize("NFKC", str(raw)).split()).casefold()
    if not text:
        return None, NO_LABEL
    label = LABELS.get(text)
    return (label, "") if label else (None, f"label {str(raw)[:40]!r} is not one of {ACCEPTED}")


def reference(labels: Sequence[str]) -> tuple[bool | None, str]:
    """The physicians' verdict on a row from their labels: ``(True|False, "")`` by strict majority of
    met against not met, ``(None, TIE | NO_VOTE)`` when there is none."""
    met = sum(1 for x in labels if x == MET)
    not_met = sum(1 for x in labels if x == NOT_MET)
    if met == not_met:
        return None, NO_VOTE if met == 0 else TIE
    return met > not_met, ""


# -- the sample ------------------------------------------------------------------------------------


def allocate(sizes: Mapping[Hashable, int], n: int) -> dict[Hashable, int]:
    """``n`` draws shared among strata in proportion to their ``sizes`` (largest remainders, ties by
    the stratum's order), none above a stratum's size. ``n`` above the total takes every case."""
    total = sum(sizes.values())
    n = min(n, total)
    if n <= 0 or total == 0:
        return {s: 0 for s in sizes}
    quotas = {s: n * size / total for s, size in sizes.items()}
    out = {s: math.floor(q) for s, q in quotas.items()}
    order = sorted(sizes, key=lambda s: (-(quotas[s] - out[s]), repr(s)))
    short = n - sum(out.values())
    for s in order:
        if short == 0:
            break
        if out[s] < sizes[s]:
            out[s] += 1
            short -= 1
    return out


def sample_cases(strata: Mapping[str, Hashable], n: int, seed: int) -> list[str]:
    """``n`` case ids drawn without replacement, stratified (:func:`allocate`); the draw depends on
    the ids, strata, ``n`` and ``seed`` only, not on their order. Returned sorted."""
    groups: dict[Hashable, list[str]] = defaultdict(list)
    for case_id, stratum in strata.items():
        groups[stratum].append(case_id)
    counts = allocate({s: len(ids) for s, ids in groups.items()}, n)
    rng = random.Random(seed)
    chosen: list[str] = []
    for stratum in sorted(groups, key=repr):
        chosen += rng.sample(sorted(groups[stratum]), counts[stratum])
    return sorted(chosen)


def assign(case_rows: Mapping[str, int], reviewers: int, overlap: float, seed: int) -> dict[str, tuple[int, ...]]:
    """Which physicians (1-based) label each case's rows: ``round(overlap * cases)`` cases go to all
    of them, every other case to one, the one with the fewest rows so far (ties: the lowest number).
    ``case_rows`` gives each case's row count."""
    if reviewers < 1:
        raise ValueError(f"reviewers must be at least 1, got {reviewers}")
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be a share in [0, 1], got {overlap}")
    rng = random.Random(seed)
    cases = sorted(case_rows)
    rng.shuffle(cases)
    shared = round(overlap * len(cases)) if reviewers > 1 else len(cases)
    everyone = tuple(range(1, reviewers + 1))
    out = {case: everyone for case in cases[:shared]}
    load = {r: sum(case_rows[c] for c in cases[:shared]) for r in everyone}
    for case in cases[shared:]:
        physician = min(everyone, key=lambda r: (load[r], r))
        out[case] = (physician,)
        load[physician] += case_rows[case]
    return out


# -- agreement with a case bootstrap -----------------------------------------------------------------


def agreement_stats(c: Confusion) -> dict[str, float]:
    """The statistics of one confusion (physicians first, the judge second); NaN with no pairs."""
    report = verdict_report(c)
    return {m: report[m] if c.n else math.nan for m in AGREEMENT_METRICS}


def _percentiles(values: Sequence[float], estimate: float, level: float, cases: int) -> Interval:
    """The percentile interval of the resampled ``values``; none (NaN) from fewer than 2 cases,
    where every resample is the one case again and the interval would look exact."""
    finite = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    if cases < 2 or len(finite) < 2 or math.isnan(estimate):
        return Interval(estimate, math.nan, math.nan, math.nan)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Interval(estimate, float(finite.std(ddof=1)), float(low), float(high))


def _case_weights(cases: int, resamples: int, seed: int) -> np.ndarray:
    """How often each case is drawn in each resample (cases with replacement, ``resamples`` x ``cases``)."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(cases, np.full(cases, 1 / cases), size=resamples) if cases else np.zeros((resamples, 0), dtype=int)


def agreement(pairs_by_case: Mapping[str, Sequence[tuple[bool, bool]]], resamples: int = RESAMPLES, seed: int = 0,
              level: float = LEVEL) -> dict[str, Interval]:
    """Each of :data:`AGREEMENT_METRICS` of (physicians, judge) verdict pairs pooled over cases, with
    a percentile interval from ``resamples`` bootstrap draws of whole cases (``seed``: the same
    figures every time)."""
    keys = sorted(pairs_by_case)
    per_case = np.array([[c.tp, c.tn, c.fp, c.fn] for c in (Confusion.of(pairs_by_case[k]) for k in keys)], dtype=int).reshape(-1, 4)
    pooled = Confusion(*(int(x) for x in per_case.sum(axis=0)))
    estimate = agreement_stats(pooled)
    drawn = [agreement_stats(Confusion(*(int(x) for x in row))) for row in _case_weights(len(keys), resamples, seed) @ per_case]
    return {m: _percentiles([d[m] for d in drawn], estimate[m], level, len(keys)) for m in AGREEMENT_METRICS}


def rater_agreement(labels_by_case: Mapping[str, Sequence[Mapping[str, bool]]], raters: Sequence[str], resamples: int = RESAMPLES,
                    seed: int = 0, level: float = LEVEL) -> dict[str, object]:
    """Physicians with each other. ``labels_by_case`` maps a case to its rows, each row the decided
    labels (``True`` met, ``False`` not met) of the raters who decided it. Cohen's kappa of every
    pair on the rows both decided; Fleiss' kappa on the rows all ``raters`` decided; case bootstrap."""
    keys = sorted(labels_by_case)
    weights = _case_weights(len(keys), resamples, seed)
    pairwise: dict[str, dict[str, object]] = {}
    for a, b in combinations(raters, 2):
        per_case = np.array([[c.tp, c.tn, c.fp, c.fn] for c in (
            Confusion.of((row[a], row[b]) for row in labels_by_case[k] if a in row and b in row) for k in keys)], dtype=int).reshape(-1, 4)
        pooled = Confusion(*(int(x) for x in per_case.sum(axis=0)))
        drawn = [cohen_kappa(Confusion(*(int(x) for x in row))) for row in weights @ per_case]
        pairwise[f"{a}-{b}"] = {"rows": pooled.n, "kappa": _percentiles(drawn, cohen_kappa(pooled), level, len(keys)).to_dict()}
    fleiss = Interval(math.nan, math.nan, math.nan, math.nan)
    full = [[sum(row[r] for r in raters) for row in labels_by_case[k] if all(r in row for r in raters)] for k in keys]
    if len(raters) >= 2:
        parts = np.array([fleiss_parts(rows, len(raters)) for rows in full], dtype=float).reshape(-1, 3)
        drawn = [fleiss_from_parts(*row, len(raters)) for row in weights @ parts]
        fleiss = _percentiles(drawn, fleiss_from_parts(*parts.sum(axis=0), len(raters)), level, len(keys))
    return {"raters": list(raters), "pairwise": pairwise, "fleiss_rows": sum(len(rows) for rows in full), "fleiss_kappa": fleiss.to_dict()}
