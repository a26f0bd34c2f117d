"""A jury: several judges grade every criterion on their own; the panel's verdict is their majority.

Why: one judge's taste is the benchmark's noise floor. A panel of diverse judges (MedHELM grades
with three; Inspect binds a list of models to one role) trades that for the panel's majority.

The rule, one place:

* each juror grades the case as a single judge would (same prompt, same verdict rule, same
  re-asks); its verdicts are kept under its own role, ``juror_1`` ... ``juror_n`` in the order
  the panel was given, and its failures count as that juror's failed judgments;
* a criterion's panel verdict is *met* when strictly more usable votes say met than not met, and
  *not met* when strictly more say not met (a failed judgment is no vote);
* fewer usable votes than :func:`min_votes` (a majority of the whole panel), or a tie, is a failed
  judgment of the panel, with the counts in its reason: the panel decided nothing, and a failure
  counts as "not met" in the headline exactly as a single judge's would.

The panel's verdicts are the record's headline role (``grader``), so every metric, reader and tool
reads a jury run as any other. Agreement between jurors: pairwise Cohen's kappa and Fleiss' kappa
over the criteria every juror judged, each with the project's case bootstrap interval
(``scorers.agreement``: the 30 criteria of a case share one answer, so cases are resampled).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import combinations

from clinconsensus_tasks.scorers.agreement import Confusion, Interval, fleiss_interval, kappa_interval
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, GradedCase, RoleVerdicts
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment

JUROR_PREFIX = "juror_"
ERROR_JURY = "jury"  # the error kind of a criterion the panel could not decide


def juror_role(index: int) -> str:
    """The role of the ``index``-th juror (1-based, the panel's order)."""
    return f"{JUROR_PREFIX}{index}"


def juror_roles(record: GradedCase) -> list[str]:
    """The record's juror roles in panel order (none: not a jury record)."""
    roles = [r for r in record.roles if r.startswith(JUROR_PREFIX) and r[len(JUROR_PREFIX):].isdigit()]
    return sorted(roles, key=lambda r: int(r[len(JUROR_PREFIX):]))


def is_jury(record: GradedCase) -> bool:
    return bool(juror_roles(record))


def min_votes(jurors: int) -> int:
    """Usable votes a criterion needs: a majority of the whole panel (2 of 3, 3 of 4, 3 of 5)."""
    return jurors // 2 + 1


def panel_name(judges: Sequence[str]) -> str:
    """The headline judge's name of a jury run: its jurors, in order."""
    return "jury(" + ", ".join(judges) + ")"


def panel_verdict(votes: Sequence[CriterionJudgment], needed: int) -> CriterionJudgment:
    """The panel's verdict on one criterion from its jurors' (see the module docstring)."""
    criterion = votes[0].criterion_id
    usable = [v for v in votes if not v.failed]
    met = sum(1 for v in usable if v.met)
    not_met = len(usable) - met
    if len(usable) < needed:
        reason = (f"jury: {len(usable)} usable vote(s) of {len(votes)} jurors ({met} met, {not_met} not met); "
                  f"the panel needs at least {needed}")
        return CriterionJudgment(criterion, None, error=reason, error_kind=ERROR_JURY)
    if met == not_met:
        return CriterionJudgment(criterion, None, error=f"jury: tie, {met} met and {not_met} not met of {len(usable)} usable votes",
                                 error_kind=ERROR_JURY)
    return CriterionJudgment(criterion, met > not_met, explanation=f"{max(met, not_met)} of {len(usable)} jurors: {'met' if met > not_met else 'not met'}")


def panel_record(jurors: Sequence[GradedCase], needed: int | None = None) -> GradedCase:
    """One case's record of a jury: each juror's headline verdicts under its juror role, the
    panel's verdicts as the headline. ``jurors`` are the same case graded by each juror (one
    judge each), in panel order; the criteria must be the same, in the same order."""
    if len(jurors) < 2:
        raise ValueError("a jury needs at least two jurors")
    first = jurors[0]
    ids = [j.criterion_id for j in first.judgments]
    for other in jurors[1:]:
        if other.case_id != first.case_id or [j.criterion_id for j in other.judgments] != ids:
            raise ValueError(f"case {first.case_id!r}: the jurors did not grade the same criteria of the same case")
    needed = min_votes(len(jurors)) if needed is None else needed
    verdicts = tuple(panel_verdict([j.judgments[i] for j in jurors], needed) for i in range(len(ids)))
    roles = {HEADLINE_ROLE: RoleVerdicts(panel_name([j.judge for j in jurors]), verdicts)}
    roles.update({juror_role(i): j.headline for i, j in enumerate(jurors, start=1)})
    return replace(first, roles={**roles, **first.other_roles})


# -- agreement between jurors ----------------------------------------------------------------


def _case_key(record: GradedCase) -> str:
    return f"{record.case_id}#{record.epoch}"


def fleiss_kappa(records: Sequence[GradedCase]) -> Interval:
    """Fleiss' kappa of the jurors over the criteria every juror judged, with the project's case
    bootstrap interval (``scorers.agreement``; undefined from fewer than two cases)."""
    roles = juror_roles(records[0]) if records else []
    if len(roles) < 2:
        return Interval.undefined()
    votes = {_case_key(r): [sum(1 for v in vs if v.met) for vs in zip(*(r.roles[role].judgments for role in roles))
                            if not any(v.failed for v in vs)] for r in records}
    return fleiss_interval(votes, len(roles))


def pairwise_kappas(records: Sequence[GradedCase]) -> dict[tuple[str, str], Interval]:
    """Cohen's kappa of each pair of jurors, over the criteria both judged, with the same case
    bootstrap interval."""
    roles = juror_roles(records[0]) if records else []
    out: dict[tuple[str, str], Interval] = {}
    for a, b in combinations(roles, 2):
        pairs = {_case_key(r): [(x.met, y.met) for x, y in zip(r.roles[a].judgments, r.roles[b].judgments)
                                if not x.failed and not y.failed] for r in records}
        out[(a, b)] = kappa_interval(pairs)
    return out


def juror_confusion(records: Sequence[GradedCase], role: str) -> Confusion:
    """One juror's verdicts against the panel's, where both decided (panel first)."""
    return Confusion.of((p.met, j.met) for r in records for p, j in zip(r.judgments, r.roles[role].judgments)
                        if not p.failed and not j.failed)


def jury_metrics(records: Sequence[GradedCase], summarize_role: Callable[[str], Mapping[str, float]]) -> dict[str, float]:
    """Every juror's metrics (``juror_i/<metric>``, from ``summarize_role(role)``), each pair's
    kappa and Fleiss' kappa with their 95% intervals (``jury/...``)."""
    if not records or not is_jury(records[0]):
        return {}
    out: dict[str, float] = {"jury/jurors": float(len(juror_roles(records[0])))}
    for role in juror_roles(records[0]):
        out.update({f"{role}/{k}": v for k, v in summarize_role(role).items()})
    fleiss = fleiss_kappa(records)
    out.update({"jury/fleiss_kappa": fleiss.estimate, "jury/fleiss_kappa_low": fleiss.low, "jury/fleiss_kappa_high": fleiss.high})
    for (a, b), interval in pairwise_kappas(records).items():
        name = f"jury/kappa_{a.removeprefix(JUROR_PREFIX)}_{b.removeprefix(JUROR_PREFIX)}"
        out.update({name: interval.estimate, f"{name}_low": interval.low, f"{name}_high": interval.high})
    return out


def jury_summary(records: Sequence[GradedCase], thresholds: Sequence[int], n_criteria: int) -> dict:
    """What ``summarize`` prints of a jury run: the panel's rule, each juror's metrics, and the
    kappas with their intervals (``{}`` for a run without a jury)."""
    from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize

    if not records or not is_jury(records[0]):
        return {}
    roles = juror_roles(records[0])
    jurors = [{"role": role, "judge": records[0].roles[role].judge,
               **summarize([r.role_result(role) for r in records], thresholds, n_criteria)} for role in roles]
    return {"jurors": jurors, "min_votes": min_votes(len(roles)), "fleiss_kappa": fleiss_kappa(records).to_dict(),
            "pairwise_kappa": {f"{a}-{b}": k.to_dict() for (a, b), k in pairwise_kappas(records).items()}}
