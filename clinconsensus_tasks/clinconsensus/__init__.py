"""ClinConsensus: data, the Inspect task, the lm-eval glue and log readers.

The Inspect task is exported here (``from clinconsensus_tasks.clinconsensus import clinconsensus``)
and imported only when asked for (PEP 562): the lm-eval glue, the command line and the scoring
tools import this package without loading Inspect.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, for readers and type checkers; imported at run time by __getattr__
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

__all__ = ["clinconsensus"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from clinconsensus_tasks.clinconsensus import inspect_task

        return getattr(inspect_task, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
