"""CliMedBench: data, the Inspect tasks, the lm-eval glue and the similarity model.

The Inspect tasks are exported here (``from clinconsensus_tasks.climedbench import climedbench_sso``)
and imported only when asked for (PEP 562): the lm-eval glue, the command line and the scoring
tools import this package without loading Inspect.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for readers and type checkers; imported at run time by __getattr__
    from clinconsensus_tasks.climedbench.inspect_task import (
        climedbench,
        climedbench_id1,
        climedbench_id2,
        climedbench_id3,
        climedbench_id4,
        climedbench_bkt,
        climedbench_fit,
        climedbench_ftt,
        climedbench_wtd,
        climedbench_ds,
        climedbench_mc,
        climedbench_sso,
        climedbench_cpr,
        climedbench_ke,
        climedbench_cs,
    )

__all__ = [
    "climedbench",
    "climedbench_id1",
    "climedbench_id2",
    "climedbench_id3",
    "climedbench_id4",
    "climedbench_bkt",
    "climedbench_fit",
    "climedbench_ftt",
    "climedbench_wtd",
    "climedbench_ds",
    "climedbench_mc",
    "climedbench_sso",
    "climedbench_cpr",
    "climedbench_ke",
    "climedbench_cs",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from clinconsensus_tasks.climedbench import inspect_task

        return getattr(inspect_task, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
