"""The architecture's checks that import-linter does not make: no module imports another module's
private name (read from the source, every import statement, function-local ones included), the
package as the wheel lays it out, strict JSON. The layers, circles, the core's and the benchmarks'
independence and Inspect's private modules are import-linter's contracts (pyproject.toml,
``bash .ci/lint_imports``); ``tests/test_import_contracts.py`` shows each of them catching what it forbids."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def test_no_module_imports_a_private_name_of_another():
    found = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in package_files()
             for line, name in private_imports(path.read_text(encoding="utf-8"), module_of(path))]
    assert not found, "private names imported across modules (make them public where they are shared):\n" + "\n".join(found)


def test_the_check_catches_a_private_import():
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
