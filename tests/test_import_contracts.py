"""import-linter's contracts (pyproject.toml [tool.importlinter], run by ``bash .ci/lint_imports`` in
CI's first tier) hold on the package, and each catches what it forbids: the same script run on a copy
of the tree with one wrong import planted per contract reports exactly those contracts broken,
naming the planted import. docs/architecture.md lists the layers as the contract states them."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "lint_imports"
LINT = ROOT / ".venv" / "bin" / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT.exists() and not shutil.which("lint-imports"), reason="import-linter is in the test extra")


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def lint(repo: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "LINT_IMPORTS": str(LINT if LINT.exists() else shutil.which("lint-imports"))}
    return subprocess.run(["bash", str(repo / ".ci" / "lint_imports")], capture_output=True, text=True, timeout=120, env=env)


def verdicts(output: str) -> dict[str, str]:
    """Each contract's name and KEPT / BROKEN, from lint-imports' summary (it folds long names)."""
    text = " ".join(output.split())
    return {c["name"]: ("BROKEN" if f"{' '.join(c['name'].split())} BROKEN" in text else
                        "KEPT" if re.search(re.escape(" ".join(c["name"].split())) + r" ?KEPT", text) else "?") for c in contracts()}


def test_every_contract_is_kept():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(verdicts(done.stdout).values()) == {"KEPT"}, done.stdout


def test_each_contract_catches_what_it_forbids(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("clinconsensus_tasks", "scorers", "task_configs", ".ci"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    planted = {
        # an import up the layers (a gate reaching the report that renders it), which also breaks
        # the report's protection
        "clinconsensus_tasks/gates/bar.py": "from clinconsensus_tasks.report import svg\n",
        # a circle inside one package, held together by an import inside a function, as the report's was
        "clinconsensus_tasks/commands/tables.py": "def _later():\n    from clinconsensus_tasks.commands import summarize\n",
        # the core reaching for an HTTP client
        "scorers/means.py": "import httpx\n",
        # one benchmark's adapter using the other's
        "clinconsensus_tasks/climedbench/logs.py": "from clinconsensus_tasks.clinconsensus import dataset as _other\n",
        # one benchmark's scoring rules using the other's
        "scorers/climedbench/choice.py": "from clinconsensus_tasks.scorers.clinconsensus import audience as _other\n",
        # Inspect's private module outside inspect_compat
        "clinconsensus_tasks/storage.py": "def _private():\n    from inspect_ai._util.constants import PKG_NAME\n",
    }
    for path, line in planted.items():
        target = repo / path
        target.write_text(target.read_text(encoding="utf-8") + "\n" + line, encoding="utf-8")
    # a new part of the package in no layer
    (repo / "clinconsensus_tasks" / "stray.py").write_text('"""A module nobody placed."""\n', encoding="utf-8")
    done = lint(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    found = verdicts(done.stdout)
    assert set(found.values()) == {"BROKEN"}, found
    for expected in ("clinconsensus_tasks.gates.bar -> clinconsensus_tasks.report.svg", "clinconsensus_tasks.stray",
                     "clinconsensus_tasks.scorers.means -> httpx", "clinconsensus_tasks.storage -> inspect_ai._util.constants",
                     ".tables -> .summarize", "clinconsensus_tasks.climedbench.logs -> clinconsensus_tasks.clinconsensus.dataset",
                     "clinconsensus_tasks.scorers.climedbench.choice -> clinconsensus_tasks.scorers.clinconsensus.audience"):
        assert expected in " ".join(done.stdout.split()), expected


def test_the_architecture_doc_lists_the_layers_as_the_contract_states_them():
    layers = next(c for c in contracts() if c["type"] == "layers")
    stated = [sorted(p.strip() for p in re.split(r"[|:]", layer)) for layer in layers["layers"]]
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = [sorted(re.findall(r"`([\w.]+)`", line.split(":")[0])) for line in re.findall(r"^\d+\. (.*)$", text, flags=re.M)]
    assert listed == stated
