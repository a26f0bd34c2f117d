"""Every per-item value CliMedBench reports, named once, and the task version.

Why: the names an item reports (its scenario's metric, ``score``, ``parse_failure``,
``length_decile_<d>``) were spelled in the lm-eval YAML generator and again where lm-eval's
``process_results`` builds them, and the task version in the Inspect task and the generator
(which disagreed with the docs). Both read this table now: :class:`ItemResult.lmeval_metrics`
(``item_result.py``) and ``task_configs/climedbench/_generate_configs.py``. Every value is a mean
over the items that report it (lm-eval: ``case_mean``, with the standard error of its own ``mean``);
groups and the overall score are unweighted means over scenarios (``scenarios.summarize``).
Values are fractions (Kendall's tau can be negative), printed with four decimals.

Framework-free: no Inspect or lm-eval import here.
"""

from __future__ import annotations

from dataclasses import dataclass

from clinconsensus_tasks.scorers.climedbench.length_deciles import DECILES, decile_metric

# Bumped on any change of prompt, answer parsing or scoring; CHANGELOG.md gets a line for every
# bump. The Inspect tasks' version and the generated lm-eval YAMLs' metadata.version read it.
TASK_VERSION = "1.3"

SCENARIO_METRIC = "{metric}"  # the scenario's own metric: accuracy, kendall_tau, rouge1 or similarity


@dataclass(frozen=True)
class ItemMetric:
    """One per-item value: its name (``{metric}``: the scenario's metric), what an item contributes,
    whether higher is better, and whether groups (dimensions, ``climedbench``) average it too."""

    name: str
    computed: str
    higher_is_better: bool = True
    grouped: bool = True


ITEM_METRICS: tuple[ItemMetric, ...] = (
    ItemMetric(SCENARIO_METRIC, "the scenario's rule: accuracy 0/1, Kendall's tau, ROUGE-1 F1 or cosine similarity", grouped=False),
    ItemMetric("score", "the same value under one name for every scenario"),
    ItemMetric("parse_failure", "1 if nothing could be read from the answer", higher_is_better=False),
    *(ItemMetric(decile_metric(d), f"the item's score, reported only by items of input-length decile {d}") for d in DECILES),
)


def item_metric_names(scenario_metric: str) -> list[str]:
    """The names one scenario's items report, in table order."""
    return [m.name.format(metric=scenario_metric) for m in ITEM_METRICS]


def group_metric_names() -> list[str]:
    """The names the lm-eval groups average over their members."""
    return [m.name for m in ITEM_METRICS if m.grouped]
