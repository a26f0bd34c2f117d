"""Judge prompt templates in the official ClinConsensus form: one user message, three placeholders.

The released judge (``skylenage/ClinConsensus-Judge-8B``) was fine-tuned on one English template.
A fine-tuned judge shown another prompt gives other verdicts, so to be comparable with the paper
and with the official scripts a run must send that template, filled exactly as the official
script fills it: ``str.format`` with ``user_message`` (the clinical context, a blank line, the
request), ``response`` (the model's answer) and ``rubric_item`` (one criterion's text), sent as a
single user message with no system message.

This module holds what does not depend on where a template came from: reading one out of a Python
file without executing it, checking its placeholders, and filling it in. The package carries no
template text of its own; ``clinconsensus_tasks.judge.official_template`` obtains the official one.
"""

from __future__ import annotations

import ast
import hashlib
import json
import string
from dataclasses import dataclass

from clinconsensus_tasks.scorers.clinconsensus.verdicts import echo_lines, echoes

PLACEHOLDERS: tuple[str, ...] = ("user_message", "response", "rubric_item")
PROMPT_VARIABLE = "PROMPT"  # the name of the template string in the official judge script


class TemplateError(ValueError):
    """A template that cannot be used: unreadable, or with missing or unknown placeholders."""


@dataclass(frozen=True)
class JudgeTemplate:
    """A per-criterion judge template and where it came from (recorded in every log)."""

    text: str
    name: str  # "official", or the path it was read from
    source: str = ""  # URL or file it was read from

    @property
    def sha256(self) -> str:
        """sha256 of the template text (UTF-8), the identity logs record."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def describe(self) -> dict[str, str]:
        """What logs and results files record about the template."""
        return {"judge_prompt": self.name, "judge_prompt_sha256": self.sha256, "judge_prompt_source": self.source}

    def messages(self, question: str, answer: str, criterion: str) -> list[dict[str, str]]:
        """The judge request for one (case, criterion): the filled template as one user message."""
        content = self.text.format(user_message=question, response=answer, rubric_item=criterion)
        return [{"role": "user", "content": content}]


def check_placeholders(text: str, where: str) -> str:
    """Return ``text`` if its placeholders are exactly :data:`PLACEHOLDERS`; else raise
    :class:`TemplateError` naming each missing or unknown one (and ``where``)."""
    try:
        fields = {name for _, name, spec, conv in string.Formatter().parse(text) if name is not None}
    except ValueError as exc:  # a lone "{" or "}"
        raise TemplateError(f"{where}: not a str.format template ({exc}); write literal braces as {{{{ and }}}}") from None
    problems = [f"missing placeholder {{{p}}}" for p in PLACEHOLDERS if p not in fields]
    problems += [f"unknown placeholder {{{f}}}" if f else "empty placeholder {}" for f in sorted(fields - set(PLACEHOLDERS))]
    if problems:
        raise TemplateError(f"{where}: " + "; ".join(problems) + f" (a judge template uses exactly {', '.join('{' + p + '}' for p in PLACEHOLDERS)})")
    return text


def check_no_verdict_lines(text: str, where: str) -> str:
    """Return ``text`` unless a line of its fixed text is part of a verdict a judge would write
    (an example such as ``"criteria_met": false`` on a line of its own): the verdict rule refuses a
    reply that repeats a line of its prompt (``verdicts.echoes``), so every reply giving that
    verdict would be refused. Raise :class:`TemplateError` naming ``where`` and the line."""
    blank = {name: "\n" for name in PLACEHOLDERS}
    for met in (True, False):
        reply = {"explanation": "回答满足该标准的要求。", "criteria_met": met}  # an explanation of its own, as judges write
        for written in (json.dumps(reply, ensure_ascii=False), json.dumps(reply, ensure_ascii=False, indent=2)):
            for number, line in enumerate(text.splitlines(), 1):
                if echoes(written, echo_lines(line.format(**blank))):
                    raise TemplateError(f"{where}: line {number} ({line.strip()!r}) is part of a verdict a judge would write; the "
                                        f"verdict rule refuses a reply that repeats a line of its prompt, so every reply with "
                                        f"\"criteria_met\": {json.dumps(met)} would be refused. Write the example so that no line of "
                                        f"it is one a verdict holds (e.g. \"criteria_met\": <true or false>)")
    return text


def template_from_python(source: str, where: str) -> str:
    """The string assigned to ``PROMPT`` at the top level of a Python file, read with :mod:`ast`
    (the file is never executed)."""
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as exc:
        raise TemplateError(f"{where}: not a Python file ({exc.msg}, line {exc.lineno})") from None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == PROMPT_VARIABLE for t in targets):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
            raise TemplateError(f"{where}: line {node.lineno}: {PROMPT_VARIABLE} is not a plain string literal")
    raise TemplateError(f"{where}: no top-level {PROMPT_VARIABLE} = \"...\" string")


def parse_template(content: str, where: str, name: str | None = None) -> JudgeTemplate:
    """A template from a file's content: a ``.py`` file's ``PROMPT`` string, or plain text."""
    text = template_from_python(content, where) if where.endswith(".py") else content
    return JudgeTemplate(check_no_verdict_lines(check_placeholders(text, where), where), name or where, where)
