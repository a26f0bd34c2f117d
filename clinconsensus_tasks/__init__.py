"""ClinConsensus and CliMedBench for Inspect and lm-evaluation-harness.

Importing the package is cheap: frameworks and heavy libraries are imported only by the modules
that need them (``clinconsensus.inspect_task`` for Inspect, ``clinconsensus.lmeval_task`` for lm-eval).
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

# ``scorers/`` and ``task_configs/`` sit at the top of the repository and are installed inside this
# package (as ``clinconsensus_tasks.scorers`` and ``.task_configs``). When this folder is imported
# straight from a checkout (``python -m clinconsensus_tasks...`` run in the repository root puts
# the checkout ahead of the installed copy), those two, and nothing else of the checkout, are
# registered as this package's subpackages from the top-level folders.
_here = _Path(__file__).resolve().parent
if not (_here / "scorers").is_dir() and (_here.parent / "scorers" / "__init__.py").is_file():
    import importlib.util as _util
    import sys as _sys

    for _name in ("scorers", "task_configs"):
        _spec = _util.spec_from_file_location(f"{__name__}.{_name}", _here.parent / _name / "__init__.py",
                                              submodule_search_locations=[str(_here.parent / _name)])
        _module = _util.module_from_spec(_spec)  # type: ignore[arg-type]
        _sys.modules[_spec.name] = _module  # type: ignore[union-attr]
        _spec.loader.exec_module(_module)  # type: ignore[union-attr]
        globals()[_name] = _module
