"""The layers of docs/architecture.md: each part of the package imports only its own layer and those
below it (read from the source, every import statement, function-local ones included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Bottom first. A part is a subpackage or a top-level module of clinconsensus_tasks (scorers/ is
# installed as clinconsensus_tasks.scorers). Keep in step with docs/architecture.md.
LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"scorers"}),
    ("base", {"errors", "settings_table", "record_files", "log_files", "text_checks", "generation", "inspect_compat",
              "lmeval_glue", "lmeval_run_check", "data", "task_configs"}),
    ("judge", {"judge"}),
    ("benchmarks", {"clinconsensus", "climedbench"}),
    ("tools", {"commands", "report", "adaptive", "stand_in"}),
    ("entry points", {"cli", "demo", "_registry", "__init__"}),
]
LEVEL = {part: i for i, (_, parts) in enumerate(LAYERS) for part in parts}


def part_of(path: Path) -> str:
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "scorers":
        return "scorers"
    inner = rel.parts[1:]
    return inner[0] if len(inner) > 1 else Path(inner[0]).stem


def imported_parts(path: Path) -> set[tuple[str, int]]:
    """(part, line) of every import of the package in ``path``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "clinconsensus_tasks":
                continue
            if len(parts) > 1:
                out.add((parts[1], node.lineno))
            else:  # from clinconsensus_tasks import settings_table
                out.update((alias.name, node.lineno) for alias in node.names if alias.name != "__version__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "clinconsensus_tasks" and len(parts) > 1:
                    out.add((parts[1], node.lineno))
    return out


def test_every_part_is_in_a_layer():
    parts = {part_of(p) for p in [*(ROOT / "clinconsensus_tasks").rglob("*.py"), *(ROOT / "scorers").rglob("*.py")]}
    assert parts - set(LEVEL) == set(), "add the new part to a layer (here and in docs/architecture.md)"


def test_imports_go_down_only():
    upward = []
    for path in [*(ROOT / "clinconsensus_tasks").rglob("*.py"), *(ROOT / "scorers").rglob("*.py")]:
        part = part_of(path)
        for target, line in imported_parts(path):
            if target in LEVEL and LEVEL[target] > LEVEL[part]:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {part} ({LAYERS[LEVEL[part]][0]}) imports {target} "
                              f"({LAYERS[LEVEL[target]][0]})")
    assert not upward, "imports against the layers:\n" + "\n".join(sorted(upward))


def test_the_core_imports_no_framework():
    frameworks = ("inspect_ai", "lm_eval", "openai", "datasets", "torch", "transformers")
    found = []
    for path in (ROOT / "scorers").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in frameworks]
    assert not found


def test_the_architecture_doc_names_every_layer():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name, parts in LAYERS:
        assert f"**{name}**" in text, name
        for part in parts - {"__init__"}:
            assert f"`{part}" in text, part


def test_from_a_checkout_only_the_installed_subpackages_resolve():
    """Run from the repository root (the checkout ahead of any installed copy): ``scorers`` and
    ``task_configs`` resolve inside the package, and ``tests``, ``bench``, ``docs`` do not."""
    import subprocess
    import sys

    code = ("import importlib, clinconsensus_tasks.scorers.clinconsensus.cacs, clinconsensus_tasks.task_configs\n"
            "for name in ('tests', 'bench', 'docs'):\n"
            "    try:\n        importlib.import_module('clinconsensus_tasks.' + name)\n        print('imported', name)\n"
            "    except ImportError:\n        pass\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
