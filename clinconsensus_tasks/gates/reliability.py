"""The reliability check of the release gate (``summarize --strict --reliability DIR --max-flip-rate X``):
the run's judge asked again (``clinconsensus-eval reliability``) flips at most X of its rows, at the
UPPER END of the flip rate's 95% interval (a one-sided test: a check too small to show it is refused
as such, naming the rows it would need). A judge that never flipped in the check is read at the
exact bound for no flip in its n cases (``1 - 0.05 ** (1 / n)``, ``scorers.agreement.zero_event_bound``),
not the bootstrap's zero-width 0.000 [0.000, 0.000], and a refusal says how many such cases would pass.

The check's figures are computed again from its asks (``run_records.reliability_check``), never read
from a summary a hand could edit, and belong to this run only when the check read this run (same
file) and asked the judge(s) this run names: a run re-judged since is another judge.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from clinconsensus_tasks.gates.bar import ReleaseBar, needed_for
from clinconsensus_tasks.gates.facts import RunFacts
from clinconsensus_tasks.gates.texts import interval_text, undefined
from clinconsensus_tasks.log_files import CLIMEDBENCH
from clinconsensus_tasks.run_records.reliability_check import Check, match_run, run_figures
from clinconsensus_tasks.scorers.agreement import zero_event_units

GATE_MIN_CASES = 10  # the fewest asked cases whose percentile interval the gate reads
GATE_MIN_ROWS = 100  # and rows counted (two usable asks each)


def check_of_run(check: Check, facts: RunFacts) -> dict[str, Any]:
    """What the check in ``check`` says of the run of ``facts``: its headline judge's figures, or a
    ``mismatch`` naming why the check is not this run's (another file, another judge, not finished)."""
    match = match_run(check, facts.where, facts.records)
    if match.why_not:
        return {"mismatch": match.why_not}
    if match.missing:
        return {"mismatch": f"the reliability check in {check.folder} stopped before {match.missing} of its {match.planned} asks "
                            "of this run: run the same reliability command again to finish it (what it has is kept; only the "
                            "rest is asked)"}
    figures = run_figures(check.plan, match.index, facts.records, check.asks, facts.thresholds)
    headline = next(j for j in figures["judges"] if j["role"] == figures["headline_role"])
    return {**headline, "figures": figures}


def flip_text(found: Mapping[str, Any]) -> str:
    """The headline judge's flip rate in one line: interval, rows and cases, asks."""
    r = found["repeatability"]
    return (f"judge {found['judge']} flips {interval_text(r['flip_rate'])} of its rows asked {r['repeat']} times "
            f"({r['rows_counted']} rows of {r['cases']} cases; self-kappa {interval_text(r['self_kappa'])})")


def _cases_without_flips(zero: Mapping[str, Any], bar: float) -> str:
    """How many cases, none with a flipped row, bring the exact bound to ``bar`` (the bound solved
    for the cases: ``scorers.agreement.zero_event_units``)."""
    needed = zero_event_units(bar)
    if needed is None:
        return f"no check of any size shows a flip rate <= {bar:g} at its interval's upper end: a sample leaves room for a flip"
    needed = max(needed, GATE_MIN_CASES)
    more = f" ({needed - zero['cases']} more)" if needed > zero["cases"] else ""
    return f"with no flip, {needed} cases{more} would bring the exact bound's upper end to {bar:g}"


def _rows_needed(rate: Mapping[str, Any], rows: int, bar: float) -> str:
    estimate, high = rate["estimate"], rate["high"]
    if rate.get("zero_events"):
        return _cases_without_flips(rate["zero_events"], bar)
    if undefined(high) or undefined(estimate):
        return f"the gate reads an interval from at least {GATE_MIN_CASES} asked cases and {GATE_MIN_ROWS} rows"
    if estimate >= bar:
        return f"the estimate itself is not below {bar:g}: more rows narrow the interval, they do not lower it"
    needed = needed_for(rows, estimate, high, bar)
    return f"at this rate and spread about {needed} rows ({max(needed - rows, 1)} more) would bring the upper end to {bar:g}"


def max_flip_rate(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """With ``--max-flip-rate X``: the headline judge's flip-rate interval lies at or below X (for a
    judge that never flipped, its upper end is the exact bound the scoring core put there,
    ``zero_events``: read as any other upper end)."""
    if bar.max_flip_rate is None or run.benchmark == CLIMEDBENCH:
        return []
    found = run.reliability
    if found is None:
        return ["--max-flip-rate needs the judge asked again for this run (--reliability DIR, made by "
                "clinconsensus-eval reliability RUN --output DIR)"]
    if found.get("mismatch"):
        return [found["mismatch"]]
    rate = found["repeatability"]["flip_rate"]
    rows, cases, x = found["repeatability"]["rows_counted"], found["repeatability"]["cases"], bar.max_flip_rate
    if not undefined(rate["low"]) and rate["low"] > x:
        return [f"{flip_text(found)}: the judge falls short: its whole interval lies above --max-flip-rate {x:g}, so no "
                "check of any size would pass it; use a steadier judge (a local judge served without batching, a "
                "non-reasoning model at temperature 0) or a jury"]
    if cases < GATE_MIN_CASES or rows < GATE_MIN_ROWS or undefined(rate["high"]):
        why = _rows_needed({**rate, "high": math.nan, "zero_events": None}, rows, x)
        if rate.get("zero_events"):
            why += f"; {_rows_needed(rate, rows, x)}"
        return [f"{flip_text(found)}: too small a check to show a flip rate <= {x:g} ({why})"]
    if rate["high"] > x:
        return [f"{flip_text(found)}: the interval's upper end {rate['high']:.3f} is above --max-flip-rate {x:g} "
                f"({_rows_needed(rate, rows, x)})"]
    return []
