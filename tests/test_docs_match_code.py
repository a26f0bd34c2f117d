"""The docs say what the code does (issue 58, item 7). Every Markdown file of the repository is read
and checked against the code it describes, imported, never against a list written here:

* links: every relative link names a file of the checkout, and every ``#anchor`` (in the page or in
  another file) is a heading of its target under GitHub's anchor rules;
* commands: every ``clinconsensus-eval <command>`` written in code (a code block or inline code) is
  a command of ``cli.commands()`` (its steps those of its parser); every ``--flag`` written after
  it, or after a bare command in inline code (`` `summarize --strict` ``), is an option of that
  command; docs/command-line.md lists every command and step; and a synopsis ``[--flag value]``
  shows the parser's default (an UPPERCASE word or the option's metavar stands for a value you
  give, ``a|b`` for the choices);
* ``-T`` tables (a table whose first header cell is ``-T`` parameter): each lists every parameter
  of each Inspect task of its benchmark (``_registry``) with the default the task's signature has,
  names no parameter the task lacks, and states no default that differs from the settings table's;
  every ``-T name`` written in a doc is a parameter of some task;
* task versions: every "task version X.Y" written in a doc, and each benchmark README's newest
  changelog entry, is that benchmark's ``TASK_VERSION`` (the YAMLs' ``metadata.version`` and the
  CHANGELOG's newest section: tests/test_metric_table.py; docs/settings.md against the settings
  table: tests/test_settings_table.py).

Each check returns one line per problem naming the file, the line and what differs; each is shown
catching a bad snippet, and each counts what it checked so that it cannot pass by reading nothing.
"""

from __future__ import annotations

import argparse
import importlib
import inspect as pyinspect
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import pytest

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.cli import build_parser, commands

ROOT = Path(__file__).resolve().parents[1]
CLI = "clinconsensus-eval"
SKIPPED_DIRS = {"node_modules", "build", "dist", "__pycache__"}


def markdown_files() -> list[Path]:
    """Every Markdown file of the checkout (not in hidden folders, the virtual environment, build
    output or egg-info)."""
    out = []
    for path in sorted(ROOT.rglob("*.md")):
        parts = path.relative_to(ROOT).parts[:-1]
        if any(p.startswith(".") or p in SKIPPED_DIRS or p.endswith(".egg-info") for p in parts):
            continue
        out.append(path)
    return out


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


# -- reading Markdown ------------------------------------------------------------------------------

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)  # never across a paragraph


@dataclass
class Doc:
    """A Markdown text split into its fenced code blocks and its prose (code blanked out, so that
    offsets and line numbers stay those of the file)."""

    name: str
    text: str
    blocks: list[tuple[int, list[str]]] = field(default_factory=list)  # (first line number, lines)
    prose: str = ""  # the text with fenced blocks blanked
    plain: str = ""  # the prose with inline code blanked too
    inline: list[tuple[int, str]] = field(default_factory=list)  # (line, code) of each inline code span

    @classmethod
    def read(cls, name: str, text: str) -> Doc:
        doc = cls(name, text)
        prose_lines, fence, block = [], None, []
        for number, line in enumerate(text.split("\n"), 1):
            opened = FENCE.match(line)
            if fence is None and opened:
                fence, block = opened.group(1), []
                doc.blocks.append((number + 1, block))
                prose_lines.append("")
            elif fence is not None:
                if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not line.strip()[len(opened.group(1)):].strip():
                    fence = None
                else:
                    block.append(line)
                prose_lines.append("")
            else:
                prose_lines.append(line)
        doc.prose = "\n".join(prose_lines)
        plain = list(doc.prose)
        for m in INLINE_CODE.finditer(doc.prose):
            doc.inline.append((doc.line_of(m.start()), m.group(2).replace("\n", " ").strip()))
            for i in range(m.start(), m.end()):
                if plain[i] != "\n":
                    plain[i] = " "
        doc.plain = "".join(plain)
        return doc

    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def headings(self) -> list[tuple[int, int, str]]:
        """(line, level, text) of every ATX heading outside code."""
        out = []
        for number, line in enumerate(self.prose.split("\n"), 1):
            m = HEADING.match(line)
            if m:
                out.append((number, len(m.group(1)), (m.group(2) or "").strip()))
        return out

    def code(self) -> list[tuple[int, str]]:
        """(line, code) of every command line of a code block (backslash-continued lines joined) and
        of every inline code span, in the order of the file."""
        out = list(self.inline)
        for first, lines in self.blocks:
            start, joined = None, ""
            for i, line in enumerate(lines):
                if start is None:
                    start, joined = first + i, ""
                if line.rstrip().endswith("\\"):
                    joined += line.rstrip()[:-1] + " "
                    continue
                out.append((start, joined + line))
                start = None
            if start is not None:
                out.append((start, joined))
        return sorted(out, key=lambda item: item[0])

    def tables(self) -> list[tuple[int, list[str], list[tuple[int, list[str]]]]]:
        """(line, header cells, [(line, cells)]) of every pipe table outside code blocks."""
        lines, out, i = self.prose.split("\n"), [], 0
        while i < len(lines) - 1:
            if lines[i].lstrip().startswith("|") and re.match(r"^\s*\|?\s*:?-{3,}", lines[i + 1]):
                header, rows, j = cells(lines[i]), [], i + 2
                while j < len(lines) and lines[j].lstrip().startswith("|"):
                    rows.append((j + 1, cells(lines[j])))
                    j += 1
                out.append((i + 1, header, rows))
                i = j
            else:
                i += 1
        return out


def cells(line: str) -> list[str]:
    """The cells of a table row (a ``\\|`` inside a cell is no separator)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def read_doc(path: Path) -> Doc:
    return Doc.read(rel(path), path.read_text(encoding="utf-8"))


# -- links and anchors -----------------------------------------------------------------------------

LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


def heading_text(markdown: str) -> str:
    """A heading's text as GitHub renders it: code spans, links and images by their text,
    emphasis markers and HTML tags dropped."""
    text = re.sub(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", lambda m: m.group(2).strip(), markdown)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"(\*{1,3})(\S(?:.*?\S)?)\1", r"\2", text)
    text = re.sub(r"(?<![\w])(_{1,3})(\S(?:.*?\S)?)\1(?![\w])", r"\2", text)
    return text


def github_slug(heading: str) -> str:
    """GitHub's anchor of a heading (github-slugger): lower case, every character removed but
    letters, digits, marks, ``-``, ``_`` and spaces (CJK characters are letters), spaces to ``-``."""
    text = heading_text(heading).lower()
    kept = "".join(ch for ch in text if ch in "-_ " or unicodedata.category(ch)[0] in "LNM" or unicodedata.category(ch) == "Pc")
    return kept.replace(" ", "-")


def anchors(doc: Doc) -> set[str]:
    """Every anchor of a page: its headings' slugs, a repeated one suffixed -1, -2, ... as GitHub
    does, and the ids of HTML anchors written in it."""
    seen: dict[str, int] = {}
    out = set()
    for _, _, text in doc.headings():
        original = slug = github_slug(text)
        while slug in seen:
            seen[original] += 1
            slug = f"{original}-{seen[original]}"
        seen[slug] = 0
        out.add(slug)
    out |= set(re.findall(r"<a\s+(?:[^>]*\s)?(?:id|name)=[\"']([^\"']+)[\"']", doc.plain))
    return out


@dataclass
class LinkReport:
    problems: list[str] = field(default_factory=list)
    files: int = 0
    anchors: int = 0


def check_links(doc: Doc, path: Path, report: LinkReport, read=read_doc) -> None:
    """Add to ``report`` a line for each relative link of ``doc`` (at ``path``) whose file or anchor
    does not exist; ``read`` reads a linked Markdown file."""
    targets = [(doc.line_of(m.start()), m.group(2)) for m in LINK.finditer(doc.plain)]
    targets += [(doc.line_of(m.start()), m.group(2)) for m in REFERENCE.finditer(doc.plain)]
    for line, target in targets:
        if not target or SCHEME.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        where = f"{doc.name}:{line}: link {target!r}"
        if file_part:
            resolved = (path.parent / unquote(file_part)).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                report.problems.append(f"{where}: no file {rel(resolved)}")
                continue
            report.files += 1
            target_doc = read(resolved) if resolved.suffix == ".md" else None
        else:
            target_doc = doc
        if anchor:
            if target_doc is None:
                report.problems.append(f"{where}: an anchor into {rel(resolved)}, which has no headings")
                continue
            report.anchors += 1
            if unquote(anchor) not in anchors(target_doc):
                report.problems.append(f"{where}: no heading of {target_doc.name} has the anchor #{anchor}")


# -- commands and flags ----------------------------------------------------------------------------

MENTION = re.compile(r"(?<![\w.-])" + re.escape(CLI) + r"[ \t]+")
WORD = re.compile(r"^[a-z][a-z0-9-]*$")
STOP = re.compile(r"^(?:#.*|\|\|?|&&?|;|>>?|2>>?|2>&1|<)$")  # a comment, a pipe, &&, ;, a redirection
PLACEHOLDER = re.compile(r"^(?:[^a-z]*[A-Z][^a-z]*|\.\.\.|<.*>)$")  # upper case (LIST, K,..., METRIC[:DELTA]), ..., <x>


def sub_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: child for action in parser._actions if isinstance(action, argparse._SubParsersAction)
            for name, child in action.choices.items()}


def all_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command and step path of the CLI (``("review", "export")``) and its parser."""
    out = {path: parser} if path else {}
    for name, child in sub_parsers(parser).items():
        out.update(all_paths(child, (*path, name)))
    return out


@dataclass
class Mention:
    line: int
    paths: list[tuple[str, ...]]  # the command (several when written "a | b | c")
    flags: list[str]
    synopsis: list[tuple[str, str]]  # ("--flag", "value") of each "[--flag value]"
    problems: list[str]


def mentions(doc: Doc, root: argparse.ArgumentParser) -> list[Mention]:
    """Each ``clinconsensus-eval ...`` written in the code of ``doc``, read as far as the shell
    line goes (a comment, a pipe, ``&&``, ``;`` or the ``)`` of ``$(...)`` ends it); and each
    inline code span that starts with a command and then an option or a step (`` `summarize --strict` ``)."""
    out = []
    for line, code in doc.code():
        for m in MENTION.finditer(code):
            tokens = []
            for token in code[m.end():].split("\n", 1)[0].split():
                if token.endswith((")", ")\"", "`")) and "(" not in token:  # the end of "$(clinconsensus-eval ...)"
                    tokens.append(token.rstrip(")\"`"))
                    break
                tokens.append(token)
            out.append(read_mention(line, tokens, root))
    top = sub_parsers(root)
    for line, code in doc.inline:
        words = code.split()
        if len(words) > 1 and words[0] in top and (words[1].startswith("--") or words[1] in sub_parsers(top[words[0]])):
            out.append(read_mention(line, words, root))
    return sorted(out, key=lambda mention: mention.line)


def read_mention(line: int, tokens: list[str], root: argparse.ArgumentParser) -> Mention:
    mention = Mention(line, [], [], [], [])
    path: tuple[str, ...] = ()
    parser, i = root, 0
    while i < len(tokens):
        children = sub_parsers(parser)
        if not children:
            break
        word = tokens[i]
        if word in children:
            path, parser, i = (*path, word), children[word], i + 1
            continue
        if WORD.match(word):  # a word where a command (or a step) must stand
            mention.problems.append(f"{' '.join((CLI, *path, word))!r}: {'no command' if not path else 'no step'} {word!r} "
                                    f"({', '.join(children)})")
            return mention
        break  # a placeholder: "cat ...", "COMMAND"
    if not path:
        return mention
    mention.paths.append(path)
    siblings = sub_parsers(all_paths(root).get(path[:-1], root)) if len(path) > 1 else sub_parsers(root)
    while i + 1 < len(tokens) and tokens[i] == "|" and tokens[i + 1] in siblings:  # "compare | agreement | rescore"
        mention.paths.append((*path[:-1], tokens[i + 1]))
        i += 2
    rest = []
    for token in tokens[i:]:
        if STOP.match(token):
            break
        rest.append(token)
    for k, token in enumerate(rest):
        bare = token.lstrip("[")
        if not bare.startswith("--") or bare == "--":
            continue
        flag = re.split(r"[=\]\[,;:)]", bare, maxsplit=1)[0]
        mention.flags.append(flag)
        if token.startswith("[") and k + 1 < len(rest) and not rest[k + 1].startswith(("[", "-", "]")) and not bare.endswith("]"):
            value = rest[k + 1]
            while value.endswith("]") and value.count("]") > value.count("["):
                value = value[:-1]
            mention.synopsis.append((flag, value))
    return mention


def shown_default(action: argparse.Action) -> str | None:
    """An option's default as ``--help`` shows it (lists comma-separated); ``None``: none to show."""
    default = action.default
    if default is None or default is argparse.SUPPRESS or default is False or default == []:
        return None
    if isinstance(default, (list, tuple)):
        return ",".join(map(str, default))
    return str(default)


@dataclass
class CommandReport:
    problems: list[str] = field(default_factory=list)
    commands: set[tuple[str, ...]] = field(default_factory=set)
    mentions: int = 0
    flags: int = 0
    defaults: int = 0


def check_commands(doc: Doc, root: argparse.ArgumentParser, report: CommandReport) -> None:
    paths = all_paths(root)
    for mention in mentions(doc, root):
        report.problems += [f"{doc.name}:{mention.line}: {p}" for p in mention.problems]
        for path in mention.paths:
            report.mentions += 1
            report.commands.update(path[:k] for k in range(1, len(path) + 1))
            parser = paths[path]
            options = parser._option_string_actions
            for flag in mention.flags:
                report.flags += 1
                if flag not in options:
                    report.problems.append(f"{doc.name}:{mention.line}: {CLI} {' '.join(path)} has no option {flag} "
                                           f"(it has {', '.join(sorted(o for o in options if o.startswith('--')))})")
            for flag, value in mention.synopsis:
                action = options.get(flag)
                if action is None:
                    continue
                report.defaults += 1
                if PLACEHOLDER.match(value) or value == action.metavar or value == "...":
                    continue
                if "|" in value:
                    if action.choices and set(value.split("|")) != set(map(str, action.choices)):
                        report.problems.append(f"{doc.name}:{mention.line}: {CLI} {' '.join(path)} [{flag} {value}]: "
                                               f"the choices are {'|'.join(map(str, action.choices))}")
                    continue
                default = shown_default(action)
                if value != default:
                    report.problems.append(
                        f"{doc.name}:{mention.line}: {CLI} {' '.join(path)} [{flag} {value}] shows {value!r} as the default, "
                        f"the parser's is {default!r} (write a value you give in UPPERCASE, or the default)")


def check_command_reference(doc: Doc, root: argparse.ArgumentParser, names: list[str]) -> list[str]:
    """docs/command-line.md: its synopsis writes every command and step, and its table of where each
    is explained has a row for every command, and no name that is not one."""
    report = CommandReport()
    check_commands(doc, root, report)
    problems = [f"{doc.name}: the synopsis has no line for {CLI} {' '.join(p)}"
                for p in all_paths(root) if p not in report.commands]
    tabled = set()
    for line, header, rows in doc.tables():
        if header[:1] != ["command"]:
            continue
        for number, row in rows:
            for code in re.findall(r"`([^`]+)`", row[0]):
                words = code.split()
                if not WORD.match(words[0]):
                    continue
                if words[0] not in names:
                    problems.append(f"{doc.name}:{number}: {words[0]!r} is no command of {CLI}")
                tabled.add(words[0])
    problems += [f"{doc.name}: the table of commands has no row naming `{name}`" for name in names if name not in tabled]
    return problems


# -- Inspect's -T parameters -----------------------------------------------------------------------

def inspect_tasks() -> dict[str, list[tuple[str, pyinspect.Signature]]]:
    """benchmark -> [(task name, signature)] of every task Inspect's entry point registers."""
    registry = importlib.import_module("clinconsensus_tasks._registry")
    out: dict[str, list[tuple[str, pyinspect.Signature]]] = {}
    for name in registry.__all__:
        function = getattr(registry, name)
        benchmark = function.__module__.split(".")[1]
        out.setdefault(benchmark, []).append((name, pyinspect.signature(function)))
    return out


def literal(value: object) -> str:
    """A signature default as the docs write it (``true``, ``7,10``, ``hub``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "").replace("[", "").replace("]", "")).replace(", ", ",").strip()


def table_benchmark(doc: Doc, line: int, benchmarks: dict[str, str]) -> str | None:
    """The benchmark a ``-T`` table is of: the benchmark whose folder holds the file, else the one
    the nearest heading above the table names."""
    for benchmark in benchmarks:
        if doc.name.startswith(f"clinconsensus_tasks/{benchmark}/"):
            return benchmark
    above = [text for number, _, text in doc.headings() if number < line]
    for text in reversed(above):
        named = [b for b, title in benchmarks.items() if title.lower() in text.lower()]
        if named:
            return named[0]
    return None


@dataclass
class TableReport:
    problems: list[str] = field(default_factory=list)
    covered: dict[str, set[str]] = field(default_factory=dict)  # benchmark -> parameters in a table
    rows: int = 0
    mentions: int = 0


def is_parameter_table(header: list[str]) -> bool:
    return bool(header) and normal(header[0]) == "-T parameter" and "default" in [h.lower() for h in header]


def check_parameter_tables(doc: Doc, tasks: dict[str, list[tuple[str, pyinspect.Signature]]], benchmarks: dict[str, str],
                           report: TableReport) -> None:
    """Each ``-T`` table of ``doc`` against the signatures of its benchmark's tasks and the settings
    table: a row's default equals the signature's default; where the signature's is ``None`` (the
    task reads a fallback), the row says the settings table's default, after "`$VARIABLE`, else"
    when it names the setting's environment variable."""
    by_inspect = {s.inspect: s for s in settings_table.SETTINGS if s.inspect and not s.inspect.startswith("(")}
    for line, header, rows in doc.tables():
        if not is_parameter_table(header):
            continue
        benchmark = table_benchmark(doc, line, benchmarks)
        if benchmark is None:
            report.problems.append(f"{doc.name}:{line}: a -T table under no heading naming a benchmark ({', '.join(benchmarks.values())})")
            continue
        column = [h.lower() for h in header].index("default")
        signatures = tasks[benchmark]
        listed = {}
        for number, row in rows:
            name = normal(row[0])
            listed[name] = number
            report.rows += 1
            where = f"{doc.name}:{number}: -T {name}"
            having = [(task, sig.parameters[name]) for task, sig in signatures if name in sig.parameters]
            if not having:
                report.problems.append(f"{where}: no {benchmark} task has this parameter")
                continue
            defaults = {literal(p.default) if p.default is not None else None for _, p in having}
            if len(defaults) > 1:
                report.problems.append(f"{where}: the {benchmark} tasks' defaults differ ({defaults}): one row cannot say them")
                continue
            default = defaults.pop()
            stated = normal(row[column]) if column < len(row) else ""
            row = [*row, *[""] * (column + 1 - len(row))]
            setting = by_inspect.get(name)
            if default is not None:
                if stated != default:
                    report.problems.append(f"{where}: the table says the default is {stated!r}, the task's signature {default!r} "
                                           f"({having[0][0]})")
                if setting is not None and normal(setting.default) != default:
                    report.problems.append(f"{where}: the settings table says the default is {setting.default!r}, the task's "
                                           f"signature {default!r}")
                continue
            if setting is None:
                continue
            accepted = {normal(setting.default)}
            variable = setting.env_name()
            if variable:
                accepted |= {normal(f"{prefix}{variable}, else {setting.default}") for prefix in ("$", "")}
            if stated not in accepted:
                form = f"`${variable}`, else {setting.default}" if variable else setting.default
                report.problems.append(f"{where}: the table says the default is {row[column].strip()!r}, the settings table "
                                       f"{setting.default!r} (write it as {form!r})")
        report.covered.setdefault(benchmark, set()).update(listed)
        for task, sig in signatures:
            missing = [p for p in sig.parameters if p not in listed]
            if missing:
                report.problems.append(f"{doc.name}:{line}: the -T table of {benchmarks[benchmark]} lacks {', '.join(missing)} "
                                       f"(parameters of {task})")


def check_parameter_mentions(doc: Doc, tasks: dict[str, list[tuple[str, pyinspect.Signature]]], report: TableReport) -> None:
    """Every ``-T name`` written in ``doc`` is a parameter of some Inspect task."""
    known = {p for signatures in tasks.values() for _, sig in signatures for p in sig.parameters}
    for m in re.finditer(r"(?<![\w-])-T[ \t]+([a-z_][a-z0-9_]*)", doc.text):
        report.mentions += 1
        if m.group(1) not in known:
            report.problems.append(f"{doc.name}:{doc.line_of(m.start())}: -T {m.group(1)} is a parameter of no Inspect task")


# -- task versions ---------------------------------------------------------------------------------

VERSION_NUMBER = r"\d+(?:\.\d+)+"


@dataclass
class VersionReport:
    problems: list[str] = field(default_factory=list)
    checked: int = 0


def check_versions(doc: Doc, versions: dict[str, str], titles: dict[str, str], report: VersionReport) -> None:
    """Every "task version(s) X.Y" (each number in its list, "ClinConsensus 1.8, CliMedBench 1.3")
    is the ``TASK_VERSION`` of the benchmark named beside it (before "task version" or before the
    number), else of the benchmark whose folder holds the file; and a benchmark README's newest
    changelog entry ("- 1.8: ...") is its version."""
    names = "|".join(re.escape(t) for t in titles.values())
    by_title = {t.lower(): b for b, t in titles.items()}
    own = next((b for b in titles if doc.name.startswith(f"clinconsensus_tasks/{b}/")), None)
    space = r"(?:[ \t]+|[ \t]*\n[ \t]*)"  # within a paragraph
    pattern = re.compile(rf"(?:\b({names}){space})?\btask{space}versions?\b[ \t:]*\n?[ \t]*((?:(?:{names}){space})?{VERSION_NUMBER}"
                         rf"(?:[ \t]*(?:,|and){space}(?:(?:{names}){space})?{VERSION_NUMBER})*)", re.IGNORECASE)
    for m in pattern.finditer(doc.plain):
        for item in re.finditer(rf"(?:({names}){space})?({VERSION_NUMBER})", m.group(2), re.IGNORECASE):
            line = doc.line_of(m.start(2) + item.start(2))
            title = item.group(1) or m.group(1)
            benchmark = by_title[title.lower()] if title else own
            report.checked += 1
            if benchmark is None:
                report.problems.append(f"{doc.name}:{line}: task version {item.group(2)} of no benchmark: name it "
                                       f"({', '.join(titles.values())})")
            elif item.group(2) != versions[benchmark]:
                report.problems.append(f"{doc.name}:{line}: {titles[benchmark]} task version {item.group(2)}, the code's "
                                       f"TASK_VERSION is {versions[benchmark]}")
    if own is not None and doc.name.endswith("README.md"):
        changelog = next((number for number, _, text in doc.headings() if text.lower() == "changelog"), None)
        if changelog is None:
            report.problems.append(f"{doc.name}: no Changelog heading")
            return
        lines = doc.plain.split("\n")
        entry = next(((n, m.group(1)) for n in range(changelog, len(lines))
                      if (m := re.match(rf"^[-*]\s+({VERSION_NUMBER})\b", lines[n]))), None)
        report.checked += 1
        if entry is None or entry[1] != versions[own]:
            report.problems.append(f"{doc.name}:{entry[0] + 1 if entry else changelog}: the newest changelog entry is "
                                   f"{entry[1] if entry else 'missing'}, the code's TASK_VERSION is {versions[own]}")


def task_versions() -> tuple[dict[str, str], dict[str, str]]:
    """benchmark -> TASK_VERSION, and benchmark -> its name as its README's title."""
    versions, titles = {}, {}
    for benchmark in inspect_tasks():
        versions[benchmark] = importlib.import_module(f"clinconsensus_tasks.scorers.{benchmark}.metric_table").TASK_VERSION
        readme = read_doc(ROOT / "clinconsensus_tasks" / benchmark / "README.md")
        titles[benchmark] = next(text for _, level, text in readme.headings() if level == 1)
    return versions, titles


# -- the checks over the repository's docs ---------------------------------------------------------


@pytest.fixture(scope="module")
def docs() -> dict[Path, Doc]:
    return {path: read_doc(path) for path in markdown_files()}


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return build_parser()


def test_the_docs_read_are_every_markdown_file(docs):
    names = {rel(p) for p in docs}
    assert {"README.md", "CHANGELOG.md", "docs/command-line.md", "docs/inspect.md", "clinconsensus_tasks/data/DATA_CARD.md",
            "clinconsensus_tasks/clinconsensus/README.md", "clinconsensus_tasks/climedbench/README.md"} <= names
    assert len({n for n in names if n.startswith("docs/")}) == len(list((ROOT / "docs").glob("*.md")))


def test_every_relative_link_and_anchor_resolves(docs):
    report = LinkReport()
    for path, doc in docs.items():
        check_links(doc, path, report, read=lambda p: docs.get(p) or read_doc(p))
    assert report.problems == [], "\n".join(report.problems)
    assert report.files >= 90 and report.anchors >= 45, (report.files, report.anchors)  # 118 and 63 when written


def test_every_command_and_flag_the_docs_name_exists(docs, parser):
    report = CommandReport()
    for doc in docs.values():
        check_commands(doc, parser, report)
    assert report.problems == [], "\n".join(report.problems)
    assert report.mentions >= 120 and report.flags >= 150 and report.defaults >= 30, (report.mentions, report.flags, report.defaults)  # 164, 209, 42
    assert len({p[0] for p in report.commands}) >= 15, sorted(report.commands)


def test_the_command_reference_lists_every_command(parser):
    names = [name for name, *_ in commands()]
    assert len(names) >= 19
    problems = check_command_reference(read_doc(ROOT / "docs" / "command-line.md"), parser, names)
    assert problems == [], "\n".join(problems)


def test_the_T_tables_list_every_parameter_of_every_task_with_its_default(docs):
    tasks = inspect_tasks()
    versions, titles = task_versions()
    report = TableReport()
    for doc in docs.values():
        check_parameter_tables(doc, tasks, titles, report)
        if doc.name != "docs/settings.md":  # generated from the settings table ("-T name=value")
            check_parameter_mentions(doc, tasks, report)
    assert report.problems == [], "\n".join(report.problems)
    assert set(report.covered) == set(tasks), f"benchmarks without a -T table: {set(tasks) - set(report.covered)}"
    parameters = sum(len(sig.parameters) for signatures in tasks.values() for _, sig in signatures)
    assert parameters >= 100 and report.rows >= 20 and report.mentions >= 45, (parameters, report.rows, report.mentions)  # 109, 25, 63


def test_every_task_version_written_is_the_codes(docs):
    versions, titles = task_versions()
    report = VersionReport()
    for doc in docs.values():
        if doc.name != "CHANGELOG.md":  # its history; its newest section: tests/test_metric_table.py
            check_versions(doc, versions, titles, report)
    assert report.problems == [], "\n".join(report.problems)
    assert report.checked >= 4, report.checked  # each README's statement and newest changelog entry


# -- each check catches what it is for --------------------------------------------------------------


def test_github_anchors():
    assert github_slug("Inspect's default and `-T judge_calls=direct`") == "inspects-default-and--t-judge_callsdirect"
    assert github_slug("Judge tools: re-grading, agreement, training a local judge") == "judge-tools-re-grading-agreement-training-a-local-judge"
    assert github_slug("How `lm_eval` finds the tasks") == "how-lm_eval-finds-the-tasks"
    assert github_slug("心血管内科（成人）: 指标") == "心血管内科成人-指标"
    assert github_slug("**Bold** and [a link](x.md)") == "bold-and-a-link"
    doc = Doc.read("x.md", "# A\n\n## Usage\n\n## Usage\n\n```\n# not a heading\n```\n\n### Usage\n")
    assert anchors(doc) == {"a", "usage", "usage-1", "usage-2"}


def test_a_broken_link_or_anchor_is_named(tmp_path):
    page = ROOT / "docs" / "x.md"
    doc = Doc.read("docs/x.md", "# Title\n\nSee [ok](inspect.md#the-judge-is-a-model-role), [here](#title), [gone](missing.md),\n"
                                "[bad](inspect.md#no-such-heading), [self](#nothing), `[in code](nowhere.md)`, "
                                "[web](https://example.org/#x).\n")
    report = LinkReport()
    check_links(doc, page, report)
    assert report.problems == [
        "docs/x.md:3: link 'missing.md': no file docs/missing.md",
        "docs/x.md:4: link 'inspect.md#no-such-heading': no heading of docs/inspect.md has the anchor #no-such-heading",
        "docs/x.md:4: link '#nothing': no heading of docs/x.md has the anchor #nothing",
    ]
    assert report.files == 2 and report.anchors == 4


def test_an_unknown_command_flag_or_default_is_named(parser):
    doc = Doc.read("docs/x.md", "Run `clinconsensus-eval sumarize logs/`, then `report --no-such DIR` (`cat file` is no mention).\n\n```bash\n"
                                "clinconsensus-eval summarize logs/ --strikt \\\n  --json   # --not-checked\n"
                                "clinconsensus-eval review exprt DIR\n"
                                "clinconsensus-eval compare | agreement --labels FILE\n"
                                "clinconsensus-eval estimate [DATA] [--answer-chars 1200] [--judge-mode per_criterion|batched] [--tokenizer ...]\n"
                                "clinconsensus-eval review export RUN --output DIR [--cases 30] [--criteria-per-case M|all] [--overlap SHARE]\n"
                                "clinconsensus-eval compare-models A B [--fail-if-worse METRIC[:DELTA]] [--thresholds 7,10]\n"
                                "lm_eval --include_path \"$(clinconsensus-eval include-path)\" --tasks x\n```\n")
    report = CommandReport()
    check_commands(doc, parser, report)
    assert [p.split(" (")[0] for p in report.problems] == [
        "docs/x.md:1: 'clinconsensus-eval sumarize': no command 'sumarize'",
        "docs/x.md:1: clinconsensus-eval report has no option --no-such",
        "docs/x.md:4: clinconsensus-eval summarize has no option --strikt",
        "docs/x.md:6: 'clinconsensus-eval review exprt': no step 'exprt'",
        "docs/x.md:7: clinconsensus-eval compare has no option --labels",
        "docs/x.md:8: clinconsensus-eval estimate [--answer-chars 1200] shows '1200' as the default, the parser's is '1500'",
        "docs/x.md:8: clinconsensus-eval estimate [--judge-mode per_criterion|batched]: the choices are per_criterion|batched|both",
    ]
    assert ("include-path",) in report.commands and ("agreement",) in report.commands
    names = [name for name, *_ in commands()]
    reference = Doc.read("docs/command-line.md", "```bash\nclinconsensus-eval demo\n```\n\n| command | explained in |\n|---|---|\n"
                                                "| `demo`, `summarize --strict` | x |\n| `fly` | y |\n")
    problems = check_command_reference(reference, parser, names)
    assert f"docs/command-line.md: the synopsis has no line for {CLI} audit" in problems
    assert f"docs/command-line.md: the synopsis has no line for {CLI} review export" in problems
    assert "docs/command-line.md:8: 'fly' is no command of clinconsensus-eval" in problems
    assert "docs/command-line.md: the table of commands has no row naming `serve-stand-in`" in problems
    assert "docs/command-line.md: the table of commands has no row naming `summarize`" not in problems


def test_a_T_table_that_differs_from_the_task_is_named():
    tasks = inspect_tasks()
    titles = {"clinconsensus": "ClinConsensus", "climedbench": "CliMedBench"}
    doc = Doc.read("docs/x.md", "# X\n\n## ClinConsensus parameters\n\n| `-T` parameter | default | meaning |\n|---|---|---|\n"
                                "| `data` | `sample` | the data |\n| `thresholds` | `[7,10]` | k |\n| `judge_colour` | `red` | none |\n"
                                "| `judge_prompt` | `$CLINCONSENSUS_JUDGE_PROMPT`, else `project` | the prompt |\n"
                                "| `judge_failure_threshold` | `CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD`, else `0.01` | share |\n\n"
                                "Also `-T judge_mode=batched` and -T judge_colour=blue.\n")
    report = TableReport()
    check_parameter_tables(doc, tasks, titles, report)
    check_parameter_mentions(doc, tasks, report)
    assert report.problems[:3] == [
        "docs/x.md:7: -T data: the table says the default is 'sample', the task's signature 'hub' (clinconsensus)",
        "docs/x.md:9: -T judge_colour: no clinconsensus task has this parameter",
        "docs/x.md:10: -T judge_prompt: the table says the default is '`$CLINCONSENSUS_JUDGE_PROMPT`, else `project`', the "
        "settings table 'official' (write it as '`$CLINCONSENSUS_JUDGE_PROMPT`, else official')",
    ]
    assert report.problems[3].startswith("docs/x.md:5: the -T table of ClinConsensus lacks judge_mode, n_criteria, judge_max_attempts")
    assert report.problems[4:] == ["docs/x.md:13: -T judge_colour is a parameter of no Inspect task"]
    assert report.rows == 5 and report.mentions == 2
    orphan = Doc.read("docs/y.md", "## Parameters\n\n| `-T` parameter | default |\n|---|---|\n| `data` | `hub` |\n")
    report = TableReport()
    check_parameter_tables(orphan, tasks, titles, report)
    assert report.problems == ["docs/y.md:3: a -T table under no heading naming a benchmark (ClinConsensus, CliMedBench)"]


def test_a_stale_task_version_is_named():
    versions = {"clinconsensus": "1.8", "climedbench": "1.3"}
    titles = {"clinconsensus": "ClinConsensus", "climedbench": "CliMedBench"}
    readme = Doc.read("clinconsensus_tasks/clinconsensus/README.md", "# ClinConsensus\n\nTask version 1.7 in both frameworks.\n\n"
                                                                     "## Changelog\n\n- 1.7: older.\n- 1.6: oldest.\n")
    report = VersionReport()
    check_versions(readme, versions, titles, report)
    assert report.problems == [
        "clinconsensus_tasks/clinconsensus/README.md:3: ClinConsensus task version 1.7, the code's TASK_VERSION is 1.8",
        "clinconsensus_tasks/clinconsensus/README.md:7: the newest changelog entry is 1.7, the code's TASK_VERSION is 1.8",
    ]
    other = Doc.read("docs/x.md", "Task versions: ClinConsensus 1.8, CliMedBench 1.2. The CliMedBench task version 1.3; "
                                  "a task version 2.0 of nothing.\n")
    report = VersionReport()
    check_versions(other, versions, titles, report)
    assert report.problems == [
        "docs/x.md:1: CliMedBench task version 1.2, the code's TASK_VERSION is 1.3",
        "docs/x.md:1: task version 2.0 of no benchmark: name it (ClinConsensus, CliMedBench)",
    ]
    assert report.checked == 4
