"""The framework-checks tier: the frameworks' own gates for contributed tasks, pinned.

* lm-eval 0.4.13's ``tests/test_tasks.py`` (what its ``new_tasks`` workflow runs over changed task
  folders), taken from lm-eval's source distribution on PyPI (sha256 pinned below) and run as
  lm-eval's CI runs it, in a fresh environment holding only ``pip install clinconsensus-tasks``
  (the checkout's wheel, no extra) with lm-eval pinned to that release, offline.
* ``inspect-evals-lint`` 0.12.0 (pinned in the ``test`` extra) with the Inspect Evals Register's
  own settings, on the two task files a register entry names.

Nothing of either project is copied into this repository: both come from PyPI when the tier runs.
Every test module here is marked ``framework_checks``; ``.ci/test`` runs them as their own tier.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from wheel_build import ROOT, build_wheel

LMEVAL_VERSION = "0.4.13"
LMEVAL_SDIST_SHA256 = "f592269f21a5e173d7993ae01267f61fc84be393cee1f51779e3e104a70c967e"
RUFF_OF_LMEVAL = "0.16.3"  # the ruff-pre-commit rev of lm-eval's .pre-commit-config.yaml at that release


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="session")
def lmeval_sdist(tmp_path_factory) -> Path:
    """lm-eval's source distribution of the pinned release, unpacked (it holds ``tests/test_tasks.py``)."""
    folder = tmp_path_factory.mktemp("lmeval-sdist")
    run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         f"lm-eval=={LMEVAL_VERSION}", "--dest", str(folder)], timeout=600)
    (archive,) = folder.glob("lm_eval-*.tar.gz")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert digest == LMEVAL_SDIST_SHA256, f"{archive.name} has sha256 {digest}, not the pinned {LMEVAL_SDIST_SHA256}"
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder / f"lm_eval-{LMEVAL_VERSION}"


@pytest.fixture(scope="session")
def core_env(tmp_path_factory) -> Path:
    """A fresh virtual environment with the package as ``pip install clinconsensus-tasks`` gives it
    (the checkout's wheel, no extra: no torch, no sentence-transformers), lm-eval at the pinned
    release, and the tools lm-eval's CI runs its test with (pytest; ruff at lm-eval's pin)."""
    root = tmp_path_factory.mktemp("core-env")
    built = sorted((ROOT / "dist").glob("clinconsensus_tasks-*.whl"))
    wheel = built[-1] if os.environ.get("CI") and built else build_wheel(root)  # .ci/run has just built dist/
    venv = root / "venv"
    run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", str(wheel), f"lm-eval[api]=={LMEVAL_VERSION}",
         f"pytest=={pytest.__version__}", f"ruff=={RUFF_OF_LMEVAL}"], timeout=1800)
    return venv
