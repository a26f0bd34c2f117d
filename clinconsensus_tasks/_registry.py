"""Inspect's entry point (``[project.entry-points.inspect_ai]``).

Every ``inspect eval`` imports this module, whatever task it runs, so it must stay light: no torch,
sentence-transformers or jieba here or in what it imports at module level. Importing the two
benchmarks' task modules registers their tasks; the names are the ones each benchmark package
exports (``clinconsensus_tasks.clinconsensus.__all__``, ``clinconsensus_tasks.climedbench.__all__``).
"""

from clinconsensus_tasks import climedbench as _climedbench
from clinconsensus_tasks import clinconsensus as _clinconsensus
from clinconsensus_tasks.climedbench import inspect_task as _climedbench_tasks
from clinconsensus_tasks.clinconsensus import inspect_task as _clinconsensus_tasks

__all__ = [*_clinconsensus.__all__, *_climedbench.__all__]
globals().update({name: getattr(_clinconsensus_tasks, name) for name in _clinconsensus.__all__})
globals().update({name: getattr(_climedbench_tasks, name) for name in _climedbench.__all__})
