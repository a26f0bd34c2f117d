"""Inspect's entry point (``[project.entry-points.inspect_ai]``).

Every ``inspect eval`` imports this module, whatever task it runs, so it must stay light: no torch,
sentence-transformers or jieba here or in what it imports at module level. Importing the two
benchmarks' task modules registers their tasks; the names are the ones each benchmark package
exports (``clinconsensus_tasks.clinconsensus.__all__``, ``clinconsensus_tasks.climedbench.__all__``).

Inspect names a plugin's task ``package/task`` only when it finds the package installed: under a
folder whose path holds ``site-packages``, or installed editable. A package put on ``PYTHONPATH``
(``pip install --target DIR``) is neither, so its tasks are registered under their bare names and
``inspect eval clinconsensus_tasks/clinconsensus`` finds none (docs/backends.md). Each task whose
name came out bare is registered again, as Inspect's own ``@task`` registers it, under the
package's name: the name users type, and the one a log records, wherever the package lies.
"""

from inspect_ai import task as _task
from inspect_ai.util import registry_info as _registry_info

from clinconsensus_tasks import climedbench as _climedbench
from clinconsensus_tasks import clinconsensus as _clinconsensus
from clinconsensus_tasks.climedbench import inspect_task as _climedbench_tasks
from clinconsensus_tasks.clinconsensus import inspect_task as _clinconsensus_tasks

PACKAGE = __name__.split(".")[0]

__all__ = [*_clinconsensus.__all__, *_climedbench.__all__]
globals().update({name: getattr(_clinconsensus_tasks, name) for name in _clinconsensus.__all__})
globals().update({name: getattr(_climedbench_tasks, name) for name in _climedbench.__all__})

for _name in __all__:
    _info = _registry_info(globals()[_name])
    if "/" not in _info.name:  # registered bare: the package was not found installed (PYTHONPATH, --target)
        globals()[_name] = _task(name=f"{PACKAGE}/{_info.name}", **_info.metadata.get("attribs", {}))(globals()[_name].__wrapped__)
