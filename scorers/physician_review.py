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
  (HealthBench's meta-evaluation metric), precision and recall of met, each with the project's
  case bootstrap interval (``scorers.agreement``: one definition of each statistic and interval,
  undefined statistics NaN, no interval from fewer than two contributing cases). A review where the
  judge and the physicians agree on every row has no disagreement to resample: each interval's end
  is then the exact bound for no disagreement in n cases (``agreement.zero_event_bound``), not the
  bootstrap's zero width (kappa 1.000 [1.000, 1.000] from ten cases is no evidence of 1.0).
* **Physicians with each other** (:func:`rater_agreement`): Cohen's kappa of every pair on the rows
  both decided (its interval from the cases that pair decided), Fleiss' kappa on the rows every one
  of them decided, the same bootstrap and the same bound where they never disagree.
"""

from __future__ import annotations

import math
import random
import unicodedata
from collections.abc import Hashable, Mapping, Sequence
from itertools import combinations

from clinconsensus_tasks.scorers.agreement import (
    LEVEL, RESAMPLES, Interval, allocate, confusion_intervals, fleiss_interval, kappa_interval, stratified_draw,
)
from clinconsensus_tasks.scorers.audit_estimate import MIN_PER_STRATUM, difference_estimate

MET, NOT_MET, CANNOT_TELL = "met", "not met", "cannot tell"
LABELS = {"met": MET, "not met": NOT_MET, "cannot tell": CANNOT_TELL, "符合": MET, "不符合": NOT_MET, "无法判断": CANNOT_TELL}
ACCEPTED = "met / not met / cannot tell, 符合 / 不符合 / 无法判断"
NO_LABEL = "no label"
TIE, NO_VOTE = "tie", "cannot tell"  # why a row has no reference
AGREEMENT_METRICS = ("percent_agreement", "kappa", "macro_f1", "precision_met", "recall_met")
DISAGREEMENT = "disagreement"  # the event whose absence gives the exact bound (``agreement.without_events``)


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


def sample_cases(strata: Mapping[str, Hashable], n: int, seed: int) -> list[str]:
    """``n`` case ids drawn without replacement, stratified (:func:`allocate`); the draw depends on
    the ids, strata, ``n`` and ``seed`` only, not on their order. Returned sorted."""
    return stratified_draw(strata, lambda sizes: allocate(sizes, n, random.Random(f"{seed}:allocate")), seed)


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


def agreement(pairs_by_case: Mapping[str, Sequence[tuple[bool, bool]]], resamples: int = RESAMPLES, seed: int = 0,
              level: float = LEVEL) -> dict[str, Interval]:
    """Each of :data:`AGREEMENT_METRICS` of (physicians, judge) verdict pairs pooled over cases, with
    its case bootstrap interval (``seed``: the same figures every time); with no disagreement on any
    row, the exact bound for none in the contributing cases (``agreement.confusion_intervals``)."""
    return confusion_intervals(pairs_by_case, resamples, seed, level, AGREEMENT_METRICS, DISAGREEMENT)


def rater_agreement(labels_by_case: Mapping[str, Sequence[Mapping[str, bool]]], raters: Sequence[str], resamples: int = RESAMPLES,
                    seed: int = 0, level: float = LEVEL) -> dict[str, object]:
    """Physicians with each other. ``labels_by_case`` maps a case to its rows, each row the decided
    labels (``True`` met, ``False`` not met) of the raters who decided it. Cohen's kappa of every
    pair on the rows both decided; Fleiss' kappa on the rows all ``raters`` decided; case bootstrap
    (each figure's interval from the cases that hold its rows)."""
    pairwise: dict[str, dict[str, object]] = {}
    for a, b in combinations(raters, 2):
        pairs = {k: [(row[a], row[b]) for row in rows if a in row and b in row] for k, rows in labels_by_case.items()}
        pairwise[f"{a}-{b}"] = {"rows": sum(len(v) for v in pairs.values()),
                                "kappa": kappa_interval(pairs, resamples, seed, level, DISAGREEMENT).to_dict()}
    full = {k: [sum(row[r] for r in raters) for row in rows if all(r in row for r in raters)] for k, rows in labels_by_case.items()}
    fleiss = fleiss_interval(full, len(raters), resamples, seed, level, DISAGREEMENT) if len(raters) >= 2 else Interval.undefined()
    return {"raters": list(raters), "pairwise": pairwise, "fleiss_rows": sum(len(rows) for rows in full.values()),
            "fleiss_kappa": fleiss.to_dict()}


# -- the physicians' headline over every case ----------------------------------------------------------

ONE_STRATUM = "the run as one stratum"


MIN_REVIEWED_CASES = 2  # the fewest reviewed cases an estimate is given from (the release gate asks for more)


def physicians_estimate(judge_census: Mapping[str, float], reviewed: Mapping[str, tuple[float, float]],
                        strata: Mapping[str, Hashable], stratum_names: str = "subject x difficulty",
                        whole_cases: bool = True) -> dict[str, object]:
    """A per-case metric over EVERY case of a run as the physicians would grade it, from the judge's
    census and the physicians' sample (the stratified difference estimator, prediction-powered
    inference with the physicians as the reference; ``scorers.audit_estimate``):

    * ``judge_census``: the judge's per-case value on every case of the run (its headline's terms);
    * ``reviewed``: for each reviewed case, (the physicians' value, the judge's value) on the SAME
      rows, those the physicians decided: their difference is the judge's error on the case. With a
      share of a case's criteria reviewed at random, the difference on the share estimates the
      difference on the whole case without bias (rubric accuracy); Pass@k and CACS@k need every
      criterion (their terms are not means of rows);
    * ``strata``: each case's stratum. The strata are used when every stratum holds at least two
      reviewed cases (or is reviewed whole), else the run is one stratum (the export draws in
      proportion to the strata, so the sample is close to self-weighting); ``design`` says which.

    ``whole_cases``: every criterion of every reviewed case has a physicians' reference. When not
    (criteria drawn, ties, cannot tell), a reviewed case's difference is itself a sample, and the
    finite-population factor is dropped (``difference_estimate(finite_population=False)``), so a
    stratum reviewed whole does not read as known exactly; the strata then need two reviewed cases
    each.

    Returns the physicians' estimate and the judge's bias (judge minus physicians) as intervals,
    the judge's own figure, the cases and the design. The interval is undefined (NaN, with ``why``)
    from fewer than :data:`MIN_REVIEWED_CASES` reviewed cases, and when the reviewed cases show no
    spread at all (``no_spread``: within each stratum every case's difference is the same, as
    ``scorers.agreement.shows_spread`` decides from the differences, never from a standard error that
    rounding makes 1e-17) short of a census of whole cases: a variance of 0 from a sample is no
    evidence the judge's error is known."""
    cases = len(judge_census)
    n = len(reviewed)
    judge = math.fsum(judge_census.values()) / cases if cases else math.nan
    out: dict[str, object] = {"judge": judge, "cases": cases, "reviewed_cases": n}
    unknown = sorted(set(reviewed) - set(judge_census))
    if unknown:
        raise ValueError(f"reviewed cases the run does not hold: {', '.join(unknown[:5])}")
    if n < MIN_REVIEWED_CASES:
        return {**out, "design": "", "physicians": Interval.undefined().to_dict(), "bias": Interval.undefined().to_dict(),
                "no_spread": False, "why": f"{n} reviewed case(s): the estimate needs at least {MIN_REVIEWED_CASES}"}
    sizes: dict[Hashable, int] = {}
    for case in judge_census:
        sizes[strata[case]] = sizes.get(strata[case], 0) + 1
    taken: dict[Hashable, int] = {}
    for case in reviewed:
        taken[strata[case]] = taken.get(strata[case], 0) + 1
    stratified = all(taken.get(s, 0) >= (min(MIN_PER_STRATUM, size) if whole_cases else MIN_PER_STRATUM) for s, size in sizes.items())
    used = strata if stratified else dict.fromkeys(judge_census, ONE_STRATUM)
    # difference_estimate takes the reference's value of a case; the judge's census value plus the
    # case's difference on the reviewed rows makes (reference - census) that difference.
    reference = {case: judge_census[case] + phys - judged for case, (phys, judged) in reviewed.items()}
    # A census of whole cases comes back exact; a sample whose differences show no spread comes back
    # without an interval (difference_estimate's only undefined interval).
    physicians = difference_estimate(judge_census, reference, used, finite_population=whole_cases)
    design = stratum_names if stratified else ONE_STRATUM
    if math.isnan(physicians.stderr):
        why = (f"the {n} reviewed cases show no spread in the judge's error (within each stratum every case's "
               "difference is the same): a sample without spread gives no interval; review more cases")
        return {**out, "design": design, "physicians": physicians.to_dict(),
                "bias": Interval.undefined(judge - physicians.estimate).to_dict(), "no_spread": True, "why": why}
    bias = Interval(judge - physicians.estimate, physicians.stderr, judge - physicians.high, judge - physicians.low)  # the same t
    return {**out, "design": design, "physicians": physicians.to_dict(), "bias": bias.to_dict(), "no_spread": False, "why": ""}
