"""The checkout's wheel, built as ``.ci/run`` builds it, for the tests that install the package.

``.ci/run`` leaves the wheel in ``dist/``; in a developer's editable checkout there is none (or an
old one), so the wheel is built here from a copy of the checkout (building writes ``build/`` and
``*.egg-info`` beside the sources).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(workdir: Path) -> Path:
    """Build the checkout's wheel under ``workdir`` and return its path."""
    source = workdir / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "dist", "build", "*.egg-info", "__pycache__"))
    # No isolation (offline): this environment's setuptools, which builds wheels without `wheel`.
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check",
                            "--outdir", str(workdir / "dist"), str(source)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, "building the wheel of the checkout failed:\n" + built.stderr[-3000:]
    (wheel,) = (workdir / "dist").glob("clinconsensus_tasks-*.whl")
    return wheel
