"""Every metric ClinConsensus reports, named once, and the task version.

Why one table: a metric used to be spelled in seven files (the core, both framework adapters, the
lm-eval YAML generator, the report, the command line, the comparison and CSV tools) and the
headline list in four, so adding one meant finding them all. Every one of those now reads
:data:`METRICS`: the lm-eval ``metric_list`` (and so the generated YAMLs), the Inspect metric's
order, the report's leaderboard, ``summarize``, ``compare-models`` and the CSV export. Adding a
metric is one row here (plus regenerating the YAMLs).

A row says how a case contributes and how the run's value is made from the cases:

* ``mean``: ``term(met, judged, N, k)`` is the case's term; the metric is the mean of the terms
  (so lm-eval reports its standard error; see :mod:`.cacs`). A name with ``{k}`` is one metric
  per threshold k (``cacs@{k}`` -> ``cacs@7``, ``cacs@10``).
* ``total``: ``count(record)`` is the case's count (a :class:`~.records.GradedCase`); the metric
  is their sum.
* ``slice_mean``: the mean of a ``mean`` metric over the cases of one audience (lm-eval's
  ``rubric_accuracy(audience=lay)`` ...); ``by_audience`` rows get one per audience.
* ``agreement``: a statistic of two judges' verdicts on the same answers (dual-judge runs).

``without_failed`` rows are also reported over the cases whose every judgment gave a verdict
(``cacs@10(judgments=complete)`` ...). The official rule, and the headline, counts a failed
judgment as "not met"; Inspect's guidance treats a grader failure as an instrument failure, not a
zero (``Score.unscored()``): a case with a failed judgment is left out of these numbers instead.

``headline`` rows are the task's score, in this order (CACS@10, the paper's current headline,
first: results tables and Inspect View show the first metric as the score). ``display`` says how
people read the value: ``fraction`` (0..1, printed with four decimals everywhere, as both
frameworks print it) or ``count``.

Framework-free: no Inspect or lm-eval import here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

# Bumped on any change of prompt, verdict parsing or scoring; CHANGELOG.md gets a line for every
# bump. The Inspect task's version and the generated lm-eval YAMLs' metadata.version read it.
TASK_VERSION = "1.8"

DEFAULT_N_CRITERIA = 30
DEFAULT_THRESHOLDS: tuple[int, ...] = (7, 10)

MEAN, TOTAL, SLICE_MEAN, AGREEMENT = "mean", "total", "slice_mean", "agreement"
FRACTION, COUNT = "fraction", "count"


def accuracy_term(met: int, judged: int) -> float:
    """A case's share of criteria met (0.0 when nothing was judged)."""
    return met / judged if judged else 0.0


def pass_term(met: int, k: int) -> float:
    """1.0 when a case meets at least ``k`` criteria, else 0.0."""
    return 1.0 if met >= k else 0.0


def cacs_term(met: int, k: int, n_criteria: int = DEFAULT_N_CRITERIA) -> float:
    """A case's CACS@k term, ``max(0, s - k + 1) / (N - k + 1)``; a met count above N is capped at N."""
    if not 1 <= k <= n_criteria:
        raise ValueError(f"CACS threshold k={k} must lie in 1..{n_criteria}")
    return max(0, min(met, n_criteria) - k + 1) / (n_criteria - k + 1)


def _judge_tokens(field: str) -> Callable[[Any], float]:
    """A case's judge tokens of one kind, every judge role's together."""
    def count(record: Any) -> float:
        return sum(int(verdicts.usage.get(field, 0)) for verdicts in record.roles.values())
    return count


@dataclass(frozen=True)
class Metric:
    """One reported metric (see the module docstring for the fields' meaning)."""

    name: str
    computed: str  # how a case's term or count is made, in words (for readers and the docs)
    aggregation: str
    higher_is_better: bool = True
    headline: bool = False
    display: str = FRACTION
    term: Callable[[int, int, int, int], float] | None = None  # mean: (met, judged, N, k) -> term
    count: Callable[[Any], float] | None = None  # total: GradedCase -> count
    by_audience: bool = False  # also reported per audience (slice_mean) by lm-eval
    without_failed: bool = False  # also reported over the cases with no failed judgment (both frameworks)
    dual_only: bool = False  # only in dual-judge runs

    def names(self, thresholds: Sequence[int] = DEFAULT_THRESHOLDS) -> list[str]:
        """The metric's reported names: one per threshold, largest k first, for ``{k}`` rows."""
        if "{k}" not in self.name:
            return [self.name]
        return [self.name.format(k=k) for k in sorted(thresholds, reverse=True)]


METRICS: tuple[Metric, ...] = (
    Metric("cacs@{k}", "max(0, met - k + 1) / (N - k + 1)", MEAN, headline=True, by_audience=True, without_failed=True,
           term=lambda met, judged, n, k: cacs_term(met, k, n)),
    Metric("pass@{k}", "1 if met >= k else 0", MEAN, headline=True, without_failed=True,
           term=lambda met, judged, n, k: pass_term(met, k)),
    Metric("rubric_accuracy", "met / judged", MEAN, headline=True, by_audience=True, without_failed=True,
           term=lambda met, judged, n, k: accuracy_term(met, judged)),
    Metric("judge_failures", "judgments with no parseable verdict (counted as not met)", TOTAL, False, display=COUNT,
           count=lambda r: r.failures),
    Metric("empty_answers", "1 if the answer was empty (no criterion met, nothing sent to the judge)", TOTAL, False,
           display=COUNT, count=lambda r: int(r.answer_empty)),
    Metric("truncated_answers", "1 if the generation limit cut the answer", TOTAL, False, display=COUNT,
           count=lambda r: int(r.answer_truncated)),
    Metric("suspect_answers", "1 if the answer holds verdict-like JSON or judge prompt markers", TOTAL, False,
           display=COUNT, count=lambda r: int(bool(r.suspect))),
    Metric("judge_prompt_tokens", "prompt tokens the judge API reported", TOTAL, False, display=COUNT,
           count=_judge_tokens("prompt_tokens")),
    Metric("judge_cached_prompt_tokens", "cached prompt tokens the judge API reported", TOTAL, False, display=COUNT,
           count=_judge_tokens("cached_prompt_tokens")),
    Metric("judge_completion_tokens", "completion tokens the judge API reported", TOTAL, False, display=COUNT,
           count=_judge_tokens("completion_tokens")),
    Metric("agreement/percent", "share of criteria both judges gave the same verdict", AGREEMENT, dual_only=True),
    Metric("agreement/kappa", "Cohen's kappa of the two judges' verdicts", AGREEMENT, dual_only=True),
    Metric("agreement/macro_f1", "macro F1 of the second judge against the reference", AGREEMENT, dual_only=True),
    Metric("agreement/precision_met", "precision of the second judge's 'met'", AGREEMENT, dual_only=True),
    Metric("agreement/recall_met", "recall of the second judge's 'met'", AGREEMENT, dual_only=True),
    Metric("agreement/met_count_pearson", "Pearson r of the two judges' per-case met counts", AGREEMENT, dual_only=True),
    Metric("agreement/cacs@{k}_diff", "second judge's CACS@k minus the reference's", AGREEMENT, False, dual_only=True),
)

# Counts the frameworks' own usage records also hold (Inspect: stats.model_usage): Inspect's
# metric leaves these to them; lm-eval, which records no judge usage, reports them.
TOKEN_COUNTS: tuple[str, ...] = ("judge_prompt_tokens", "judge_cached_prompt_tokens", "judge_completion_tokens")


def metrics_of(aggregation: str) -> list[Metric]:
    return [m for m in METRICS if m.aggregation == aggregation]


def headline_names(thresholds: Sequence[int] = DEFAULT_THRESHOLDS) -> list[str]:
    """The headline metrics' names in their order: ``cacs@10, cacs@7, pass@10, pass@7, rubric_accuracy``."""
    return [name for m in METRICS if m.headline for name in m.names(thresholds)]


def mean_names(thresholds: Sequence[int] = DEFAULT_THRESHOLDS) -> list[str]:
    """Every metric that is a mean of per-case terms, headline or not, in table order."""
    return [name for m in metrics_of(MEAN) for name in m.names(thresholds)]


# The cases a ``without_failed`` metric is reported over, as a slice name: ``cacs@10(judgments=complete)``.
COMPLETE_DIMENSION, COMPLETE_LABEL = "judgments", "complete"


def without_failed_name(name: str) -> str:
    """``cacs@10`` -> ``cacs@10(judgments=complete)``: the metric over the cases with no failed judgment."""
    return f"{name}({COMPLETE_DIMENSION}={COMPLETE_LABEL})"


def without_failed_names(thresholds: Sequence[int] = DEFAULT_THRESHOLDS) -> list[str]:
    """The ``without_failed`` rows' names (``cacs@10``, ...), in table order."""
    return [name for m in metrics_of(MEAN) if m.without_failed for name in m.names(thresholds)]


def count_names() -> list[str]:
    return [name for m in metrics_of(TOTAL) for name in m.names()]


def case_terms(met: int, judged: int, thresholds: Sequence[int] = DEFAULT_THRESHOLDS,
               n_criteria: int = DEFAULT_N_CRITERIA) -> dict[str, float]:
    """One case's term of every ``mean`` metric, keyed by name, in table order. Each metric is the
    mean of its term over cases."""
    out: dict[str, float] = {}
    for m in metrics_of(MEAN):
        assert m.term is not None, f"mean metric {m.name} needs a term"
        if "{k}" in m.name:
            out.update({m.name.format(k=k): m.term(met, judged, n_criteria, k) for k in sorted(thresholds, reverse=True)})
        else:
            out[m.name] = m.term(met, judged, n_criteria, 0)
    return out


def case_counts(record: Any) -> dict[str, float]:
    """One case's value of every ``total`` metric (a :class:`~.records.GradedCase`)."""
    return {m.name: m.count(record) for m in metrics_of(TOTAL) if m.count is not None}


def display(name: str) -> str:
    """``fraction`` or ``count``: how the metric ``name`` (``cacs@10``, ``local/cacs@10``,
    ``cacs@10(subject=...)``, ``judge_failures``) is shown."""
    base = name.split("(", 1)[0].removeprefix("local/")
    for m in METRICS:
        if base in m.names(_thresholds_in(base)):
            return m.display
    return FRACTION


def reported_thresholds(names: Iterable[str]) -> tuple[int, ...]:
    """The k of every ``cacs@k`` among metric ``names`` (an lm-eval ``name,filter`` key too),
    largest first; breakdowns (``cacs@10(subject=...)``) and standard errors are not read."""
    bases = {name.split(",", 1)[0] for name in names}
    return tuple(sorted({int(n[5:]) for n in bases if n.startswith("cacs@") and n[5:].isdigit()}, reverse=True))


def _thresholds_in(name: str) -> tuple[int, ...]:
    """The k a per-threshold metric name carries (``cacs@7`` -> 7), so any k matches its row."""
    digits = "".join(ch for ch in name.split("@", 1)[-1] if ch.isdigit()) if "@" in name else ""
    return (int(digits),) if digits else DEFAULT_THRESHOLDS


def format_value(name: str, value: float | None) -> str:
    """A metric's value as every command and the report print it: a count as an integer, a
    fraction with four decimals (the frameworks' scale); ``–`` when missing."""
    if value is None or value != value:
        return "–"
    return str(int(value)) if display(name) == COUNT else f"{value:.4f}"


def totals(records: Sequence[Any], leave_out: Sequence[str] = ()) -> dict[str, float]:
    """Every ``total`` metric of a run: the sum of its cases' counts (``GradedCase`` records)."""
    out = {name: 0.0 for name in count_names() if name not in leave_out}
    for record in records:
        for name, value in case_counts(record).items():
            if name in out:
                out[name] += value
    return out
