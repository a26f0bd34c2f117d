"""Nothing lost when the README is rewritten: compare the facts of an old README with the docs now.

A rewrite of the root README moves text into ``docs/`` and the benchmark READMEs. This script
takes the README of a git revision (default ``main``), pulls out the facts a reader types or
relies on, and lists those that no Markdown file of the working tree holds any more:

* commands: every line of a fenced code block (continuation lines joined, comments dropped),
* environment variable names (``CLINCONSENSUS_JUDGE_MODEL``),
* command-line flags (``--judge-mode``, ``--model_args``) and Inspect task parameters (``-T data=``),
* numbers (``0.41``, ``27,000``, ``2603.02097``),
* inline code spans (``cacs@10_stderr``, ``judge_prompt_sha256``).

Whitespace is collapsed before comparing, so a command rewrapped over two lines still counts.
Usage: ``python .ci/readme_facts.py [--base REV] [--show-present]``; exit 1 when a fact is missing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", "node_modules", "dist", "build"}

ENV = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9_-]*[a-z0-9]")
TASK_PARAM = re.compile(r"-T ([a-z_]+)=")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def old_readme(base: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{base}:README.md"], check=True,
                          capture_output=True, text=True).stdout


def new_corpus() -> str:
    """Every Markdown file of the working tree, one text."""
    texts = []
    for path in sorted(ROOT.rglob("*.md")):
        if not SKIP_DIRS.intersection(path.relative_to(ROOT).parts):
            texts.append(path.read_text(encoding="utf-8"))
    return "\n".join(texts)


def squash(text: str) -> str:
    """Whitespace collapsed, shell continuations and Markdown table pipes ignored."""
    return " ".join(text.replace("\\\n", " ").split())


def code_lines(text: str) -> list[str]:
    """The commands of the fenced code blocks: continuation lines joined, comments dropped."""
    commands, inside, lang = [], False, ""
    for block_line in text.replace("\\\n", " ").splitlines():
        if block_line.startswith("```"):
            inside, lang = (not inside), block_line[3:].strip()
            continue
        if not inside or lang == "bibtex":
            continue
        command = block_line.split("   #")[0].split("  #")[0].strip()
        if command and not command.startswith("#"):
            commands.append(" ".join(command.split()))
    return commands


def facts(text: str) -> dict[str, set[str]]:
    return {
        "commands": set(code_lines(text)),
        "env variables": set(ENV.findall(text)),
        "flags": set(FLAG.findall(text)) | {f"-T {p}=" for p in TASK_PARAM.findall(text)},
        "numbers": set(NUMBER.findall(text)),
        "code spans": {" ".join(span.split()) for span in CODE_SPAN.findall(text)},
    }


def missing(old: dict[str, set[str]], corpus: str) -> dict[str, list[str]]:
    flat = squash(corpus)
    found_numbers = set(NUMBER.findall(corpus))
    found_params = {f"-T {p}=" for p in TASK_PARAM.findall(corpus)} | {f"-T {p}=" for p in re.findall(r"`([a-z_]+)`", corpus)}
    out = {}
    for kind, items in old.items():
        if kind == "numbers":
            gone = items - found_numbers
        elif kind == "flags":
            gone = {i for i in items if (i not in found_params if i.startswith("-T ") else not re.search(re.escape(i) + r"(?![\w-])", flat))}
        else:
            gone = {i for i in items if i not in flat}
        out[kind] = sorted(gone)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git revision of the old README (default main)")
    parser.add_argument("--show-present", action="store_true", help="also count what was found")
    args = parser.parse_args(argv)
    old = facts(old_readme(args.base))
    gone = missing(old, new_corpus())
    total_missing = 0
    for kind, items in old.items():
        print(f"{kind}: {len(items)} in the old README, {len(gone[kind])} missing now")
        for item in gone[kind]:
            print(f"    {item}")
        total_missing += len(gone[kind])
    return 1 if total_missing else 0


if __name__ == "__main__":
    sys.exit(main())
