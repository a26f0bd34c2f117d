"""ClinConsensus and CliMedBench for Inspect and lm-evaluation-harness.

Importing the package is cheap: frameworks and heavy libraries are imported only by the modules
that need them (``clinconsensus.inspect_task`` for Inspect, ``clinconsensus.lmeval_task`` for lm-eval).
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

# ``scorers/`` and ``task_configs/`` sit at the top of the repository and are installed inside this
# package (as ``clinconsensus_tasks.scorers`` and ``.task_configs``). When this folder is imported
# straight from a checkout (``python -m clinconsensus_tasks...`` run in the repository root puts
# the checkout ahead of the installed copy), let those submodules resolve to the top-level folders.
_here = _Path(__file__).resolve().parent
if not (_here / "scorers").is_dir() and (_here.parent / "scorers" / "__init__.py").is_file():
    __path__.append(str(_here.parent))  # type: ignore[name-defined]
