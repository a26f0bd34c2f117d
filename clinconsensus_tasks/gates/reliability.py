"""The reliability check of the release gate (``summarize --strict --reliability DIR --max-flip-rate X``):
the run's judge asked again (``clinconsensus-eval reliability``) flips at most X of its rows, at the
UPPER END of the flip rate's 95% interval (a one-sided test: a check too small to show it is refused
as such, naming the rows it would need).

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


def _rows_needed(rate: Mapping[str, float], rows: int, bar: float) -> str:
    estimate, high = rate["estimate"], rate["high"]
    if undefined(high) or undefined(estimate):
        return f"the gate reads an interval from at least {GATE_MIN_CASES} asked cases and {GATE_MIN_ROWS} rows"
    if estimate >= bar:
        return f"the estimate itself is not below {bar:g}: more rows narrow the interval, they do not lower it"
    needed = needed_for(rows, estimate, high, bar)
    return f"at this rate and spread about {needed} rows ({max(needed - rows, 1)} more) would bring the upper end to {bar:g}"


def max_flip_rate(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """With ``--max-flip-rate X``: the headline judge's flip-rate interval lies at or below X."""
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
        return [f"{flip_text(found)}: too small a check to show a flip rate <= {x:g} "
                f"({_rows_needed({**rate, 'high': math.nan}, rows, x)})"]
    if rate["high"] > x:
        return [f"{flip_text(found)}: the interval's upper end {rate['high']:.3f} is above --max-flip-rate {x:g} "
                f"({_rows_needed(rate, rows, x)})"]
    return []
