"""The layers of docs/architecture.md: each part of the package imports only its own layer and those
below it, no two parts import each other (directly or round a longer loop), and no module imports
another's private name (read from the source, every import statement, function-local ones included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Bottom first. A part is a subpackage or a top-level module of clinconsensus_tasks (scorers/ is
# installed as clinconsensus_tasks.scorers). Keep in step with docs/architecture.md.
LAYERS: list[tuple[str, set[str]]] = [
    ("core", {"scorers"}),
    ("base", {"errors", "settings_table", "record_files", "log_files", "storage", "text_checks", "generation", "inspect_compat", "json_output",
              "lmeval_glue", "lmeval_run_check", "data", "task_configs"}),
    ("judge", {"judge"}),
    ("benchmarks", {"clinconsensus", "climedbench"}),
    ("run records", {"run_records"}),
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


def package_files() -> list[Path]:
    return [*(ROOT / "clinconsensus_tasks").rglob("*.py"), *(ROOT / "scorers").rglob("*.py")]


def module_of(path: Path) -> str:
    """The dotted name ``path`` is imported as (``scorers/`` is ``clinconsensus_tasks.scorers``)."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "scorers":
        parts.insert(0, "clinconsensus_tasks")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every loop in a graph of parts (``part -> parts it imports``), each as the parts round it,
    starting from its least name and ending back there; a part importing itself is no loop."""
    loops = set()

    def walk(start: str, node: str, trail: list[str]) -> None:
        for nxt in sorted(edges.get(node, ())):
            if nxt == start and len(trail) > 1:
                loops.add(tuple(trail + [start]))
            elif nxt > start and nxt not in trail:  # each loop found once, from its least part
                walk(start, nxt, trail + [nxt])

    for start in sorted(edges):
        walk(start, start, [start])
    return [list(loop) for loop in sorted(loops)]


def private_imports(source: str, module: str) -> list[tuple[int, str]]:
    """(line, name) of each private name (one leading underscore, not a dunder) that the module
    ``module`` (its dotted name, for relative imports) imports from another module of the package:
    ``from x import _y``, or a name inside a private module of another package (``from x._m import y``)."""
    out = []
    package = module.split(".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level] if node.level else []  # "from . import" in a module: its package
            target = [*base, *(node.module.split(".") if node.module else [])]
            if not target or target[0] != "clinconsensus_tasks":
                continue
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            target, names = [], []
            for alias in node.names:
                if alias.name.split(".")[0] == "clinconsensus_tasks":
                    names.append(alias.name)
        else:
            continue
        private = lambda name: name.startswith("_") and not name.endswith("__")  # noqa: E731
        where = ".".join(target)
        for name in names:
            dotted = f"{where}.{name}" if where else name
            parts = dotted.split(".")
            hidden = [i for i, part in enumerate(parts) if private(part)]
            # A private module may be used inside its own package (its package's name is the importer's prefix).
            if any(not module.startswith(".".join(parts[:i]) + ".") for i in hidden):
                out.append((node.lineno, dotted))
    return out


def test_every_part_is_in_a_layer():
    parts = {part_of(p) for p in package_files()}
    assert parts - set(LEVEL) == set(), "add the new part to a layer (here and in docs/architecture.md)"


def test_imports_go_down_only():
    upward = []
    for path in package_files():
        part = part_of(path)
        for target, line in imported_parts(path):
            if target in LEVEL and LEVEL[target] > LEVEL[part]:
                upward.append(f"{path.relative_to(ROOT)}:{line}: {part} ({LAYERS[LEVEL[part]][0]}) imports {target} "
                              f"({LAYERS[LEVEL[target]][0]})")
    assert not upward, "imports against the layers:\n" + "\n".join(sorted(upward))


def test_no_two_parts_import_each_other():
    """A loop between parts (two packages of one layer, say ``report`` and ``commands``) makes
    neither the lower: what both need belongs in one place below them."""
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for path in package_files():
        part = part_of(path)
        for target, line in imported_parts(path):
            if target in LEVEL and target != part:
                edges.setdefault(part, set()).add(target)
                where.setdefault((part, target), f"{path.relative_to(ROOT)}:{line}")
    loops = [" -> ".join(loop) + " (" + ", ".join(where[a, b] for a, b in zip(loop, loop[1:])) + ")" for loop in import_loops(edges)]
    assert not loops, "parts that import each other:\n" + "\n".join(loops)


def test_no_module_imports_a_private_name_of_another():
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in package_files()
             for line, name in private_imports(path.read_text(encoding="utf-8"), module_of(path))]
    assert not found, "private names imported across modules (make them public where they are shared):\n" + "\n".join(found)


def test_the_checks_catch_a_loop_and_a_private_import():
    # Two parts of one layer importing each other (the report and the commands, as they were), and a
    # longer loop; a part importing itself and a chain going down are no loop.
    assert import_loops({"report": {"commands", "scorers"}, "commands": {"report"}, "scorers": set()}) == [
        ["commands", "report", "commands"]]
    assert import_loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d", "a"}}) == [["a", "b", "c", "a"]]
    assert import_loops({"cli": {"commands", "report"}, "commands": {"report"}, "report": {"report", "scorers"}}) == []
    # The audit command reaching into the tools' private re-grading, as it did.
    audit = "clinconsensus_tasks.commands.audit"
    assert private_imports("def f():\n    from clinconsensus_tasks.commands.tools import _regrade, compare_logs\n", audit) == [
        (2, "clinconsensus_tasks.commands.tools._regrade")]
    assert private_imports("from .tools import _regrade\n", audit) == [(1, "clinconsensus_tasks.commands.tools._regrade")]
    assert private_imports("from clinconsensus_tasks.report._layout import grid\n", audit) == [
        (1, "clinconsensus_tasks.report._layout.grid")]
    assert private_imports("import clinconsensus_tasks.report._layout\n", audit) == [(1, "clinconsensus_tasks.report._layout")]
    # Public names, dunders, another project's names, a private alias and a private module inside its own package are fine.
    fine = ("from clinconsensus_tasks.commands.tools import regrade\nfrom clinconsensus_tasks import __version__\n"
            "from inspect_ai.log import _private\nfrom clinconsensus_tasks import climedbench as _climedbench\n"
            "from clinconsensus_tasks.commands._shared import x\n")
    assert private_imports(fine, audit) == []


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


def test_every_package_of_the_tree_is_in_the_wheel():
    # A new folder of the package missing from pyproject.toml's explicit list installs from a
    # checkout (editable) but not from the wheel CI and users install: run_records/ was.
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "clinconsensus_tasks").rglob("__init__.py")}
    found |= {"clinconsensus_tasks.scorers" + "".join("." + p for p in path.parent.relative_to(ROOT / "scorers").parts)
              for path in (ROOT / "scorers").rglob("__init__.py")}
    assert sorted(found - listed) == []


def test_every_printed_json_is_strict():
    # Python writes NaN as a bare word that JSON.parse and jq refuse; an undefined figure is null.
    printed = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sorted((ROOT / "clinconsensus_tasks").rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print" and node.args
               and isinstance(node.args[0], ast.Call) and ast.unparse(node.args[0].func) == "json.dumps"]
    assert printed == [], f"print json_output.dumps(...) instead: {printed}"
    from clinconsensus_tasks import json_output

    assert json_output.dumps({"kappa": float("nan"), "low": [float("inf"), 0.5]}, indent=None) == '{"kappa": null, "low": [null, 0.5]}'
