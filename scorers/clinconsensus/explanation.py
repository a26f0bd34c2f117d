"""A graded case as a reader sees it: one Markdown table of every criterion and every judge's verdict.

Why: Inspect View renders a score's explanation as Markdown on the sample's Scoring tab (and in the
transcript's score event), and keeps ``metadata`` in a collapsed tree. A reader looking at one
answer asks which criteria failed and why; "15/30 criteria met" answered neither. So the
explanation holds what a reader needs, bounded; the record (``GradedCase.to_dict``) stays in
metadata for programs.

The table: the criterion's id and text, each judge role's verdict (the headline role first, then a
second judge or a jury's jurors), a mark where the roles disagree, and the headline judge's reason
(or why the judgment failed). Every text is the judge's or the data's, so it is escaped (a table
cell holds no ``|``, no line break and no HTML) and cut to :data:`CELL_CHARS` characters (twice
that once escaped): a criterion's row is at most about ``4 x CELL_CHARS + 100`` characters whatever
the judge or the data wrote. Linear in its input; never raises on any text.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment
from clinconsensus_tasks.scorers.markdown import cell

MET, NOT_MET, FAILED = "met", "**not met**", "**FAILED**"  # words, not emoji: a viewer without an emoji font shows boxes
DISAGREE = "≠"


def verdict_word(judgment: CriterionJudgment | None) -> str:
    if judgment is None:
        return "–"
    if judgment.failed:
        return f"{FAILED} ({judgment.error_kind})" if judgment.error_kind else FAILED
    return MET if judgment.met else NOT_MET


def role_label(role: str) -> str:
    return {HEADLINE_ROLE: "judge", SECOND_ROLE: "second judge"}.get(role, role.replace("_", " "))


def case_explanation(record: GradedCase, criteria: Mapping[str, str] | Sequence[tuple[str, str]]) -> str:
    """The Markdown a reader sees for one graded case: a summary line, then one row per criterion
    (its id and text from ``criteria``, ``(criterion_id, text)`` pairs or a mapping) with every
    judge role's verdict, disagreements marked, and the headline judge's reason."""
    texts = dict(criteria)
    roles = [HEADLINE_ROLE, *(r for r in record.roles if r != HEADLINE_ROLE)]
    lines = [summary_line(record)]
    if record.answer_empty:
        return "\n\n".join(lines + ["The answer is empty: no criterion is met and nothing was sent to the judge."])
    several = len(roles) > 1
    head = ["#", "criterion", *(role_label(r) for r in roles), *(["agree"] if several else []), "reason"]
    lines.append("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    by_role = {role: {j.criterion_id: j for j in record.roles[role].judgments} for role in roles}
    rows = []
    for judgment in record.judgments:
        cid = judgment.criterion_id
        votes = [by_role[role].get(cid) for role in roles]
        usable = {v.met for v in votes if v is not None and not v.failed}
        agree = [DISAGREE if len(usable) > 1 else ""] if several else []
        reason = judgment.error if judgment.failed and judgment.error else judgment.explanation
        rows.append("| " + " | ".join([cell(cid, 24), cell(texts.get(cid, "")), *(verdict_word(v) for v in votes), *agree,
                                       cell(reason)]) + " |")
    lines[-1] += "\n" + "\n".join(rows)
    return "\n\n".join(lines)


def summary_line(record: GradedCase) -> str:
    """One line: the headline judge's count, failures, disagreements and flags."""
    parts = [f"**{record.met} of {record.judged} criteria met** (judge {cell(record.judge, 80)})"]
    if record.failures:
        parts.append(f"{record.failures} failed judgment(s), counted as not met")
    for role, verdicts in record.other_roles.items():
        met = sum(1 for j in verdicts.judgments if j.met)
        parts.append(f"{role_label(role)} {cell(verdicts.judge, 80)}: {met} met")
    if record.dual:
        paired = record.paired()
        if paired is not None:
            parts.append(f"{paired.confusion.fp + paired.confusion.fn} disagreement(s) {DISAGREE}")
    if record.suspect:
        parts.append(f"suspect answer ({cell(', '.join(record.suspect), 120)})")
    if record.answer_truncated:
        parts.append("the answer was cut by the generation limit")
    return "; ".join(parts)
