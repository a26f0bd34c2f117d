"""The release gate's verdicts in the forms CI systems show (``summarize --strict --junit FILE --markdown FILE``).

* JUnit XML (:func:`junit_xml`), the form ``pytest --junitxml`` writes and GitLab, Jenkins and most
  CI systems show natively: ``testsuites``, a ``testsuite`` per run, a ``testcase`` per check of
  ``gates.release.CHECKS`` (by its readable name, ``gates.release_gate.CHECK_NAMES``) and one for the
  smoke test left beside the release run; a check the run fails is a ``failure`` whose ``message``
  is its FAIL lines' words; a check not run (its bar not asked, or a run that did not finish) is
  ``skipped``. The headline numbers of a run that passes are its suite's properties.
* A Markdown summary (:func:`markdown_summary`), what GitHub Actions shows on a run's page when it is
  appended to the file ``$GITHUB_STEP_SUMMARY`` names: the verdict, each run's verdict with its FAIL
  lines or its headline numbers and their intervals, what each run rests on, and what the gate read.

Written whole or not at all (:func:`write_output`): a local file through a temporary file renamed
over it, a URL in one upload; the file ``$GITHUB_STEP_SUMMARY`` names is appended to, as GitHub
expects (other steps write their own summaries there).
"""

from __future__ import annotations

import io
import os
import xml.etree.ElementTree as ET
from typing import Any, Mapping

from clinconsensus_tasks.gates.release_gate import GateResult, GateRun, headline_text
from clinconsensus_tasks.gates.texts import interval_text
from clinconsensus_tasks.storage import is_url, output_location, same_location, storage_errors, write_text

SUITES = "clinconsensus-eval release gate"
FAILURE_TYPE = "release-gate"
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"  # the file GitHub Actions shows on the run's page, appended to


# -- JUnit XML --------------------------------------------------------------------------------------


def junit_xml(result: GateResult) -> str:
    """The gate's verdicts as JUnit XML: a test suite per run, a test case per check."""
    suites = ET.Element("testsuites", name=SUITES)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for run in result.runs:
        suite = _run_suite(run, result.document)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        suites.append(suite)
    if not result.runs:  # nothing to check is a failure, not an empty green report
        suite = ET.SubElement(suites, "testsuite", name=SUITES, tests="1", failures="1", errors="0", skipped="0")
        case = ET.SubElement(suite, "testcase", classname=SUITES, name="runs found", time="0")
        ET.SubElement(case, "failure", message=result.summary(), type=FAILURE_TYPE).text = result.summary()
        totals.update(tests=1, failures=1)
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    data = io.BytesIO()
    ET.ElementTree(suites).write(data, encoding="utf-8", xml_declaration=True)
    return data.getvalue().decode("utf-8") + "\n"


def _run_suite(run: GateRun, document: Mapping[str, Any]) -> ET.Element:
    verdict = run.verdict
    where = verdict["run"]
    failures = sum(1 for c in run.checks if c.problems)
    skipped = sum(1 for c in run.checks if c.skipped)
    suite = ET.Element("testsuite", name=where, tests=str(len(run.checks)), failures=str(failures), errors="0",
                       skipped=str(skipped))
    props = ET.SubElement(suite, "properties")
    shown = {"verdict": verdict["verdict"], "framework": verdict["framework"], "benchmark": verdict["benchmark"],
             "model": run.provenance.get("model", ""), "bar": document["profile"], "exceptions": ", ".join(document["exceptions"])}
    for name, figure in (verdict["headline"] or {}).items():
        shown[name] = interval_text(figure) if "low" in figure else headline_text(verdict["headline"])
    for name, value in shown.items():
        ET.SubElement(props, "property", name=name, value=str(value))
    for check in run.checks:
        case = ET.SubElement(suite, "testcase", classname=where, name=check.name, time="0")
        if check.problems:
            failure = ET.SubElement(case, "failure", message="\n".join(check.problems), type=FAILURE_TYPE)
            failure.text = "\n".join(f"FAIL {where}: {problem}" for problem in check.problems)
        elif check.skipped:
            ET.SubElement(case, "skipped", message=check.skipped)
    lines = [f"FAIL {where}: {p}" for p in verdict["problems"]] or [f"ok   {where}: {document['profile']}"]
    if verdict["headline"] is not None:
        lines.append(f"     {where}: {headline_text(verdict['headline'])}")
    ET.SubElement(suite, "system-out").text = "\n".join(lines)
    return suite


# -- Markdown ---------------------------------------------------------------------------------------


def markdown_summary(result: GateResult) -> str:
    """The gate's verdicts as Markdown (a GitHub Actions job summary): the verdict, a table of runs,
    each run's FAIL lines or headline numbers with their intervals and what it rests on, and what
    the gate read."""
    document = result.document
    title = "passed" if result.passed else "FAILED"
    lines = [f"## Release gate: {title}", "", _text(result.summary()) + "."]
    if document["exceptions"]:
        lines += ["", f"**Exceptions to the release profile:** {_text(', '.join(document['exceptions']))}"]
    if result.runs:
        lines += ["", "| run | benchmark | framework | model | verdict |", "|---|---|---|---|---|"]
        for run in result.runs:
            v = run.verdict
            outcome = "ok" if run.passed else f"FAIL ({len(v['problems'])} problem{'' if len(v['problems']) == 1 else 's'})"
            lines.append(f"| {_code(v['run'])} | {v['benchmark']} | {v['framework']} | {_cell(run.provenance.get('model', ''))} | "
                         f"**{outcome}** |")
    for run in result.runs:
        lines += ["", *_run_section(run, document)]
    lines += ["", *_read_section(result)]
    return "\n".join(lines) + "\n"


def _run_section(run: GateRun, document: Mapping[str, Any]) -> list[str]:
    v, p = run.verdict, run.provenance
    lines = [f"### {'ok' if run.passed else 'FAIL'}: {_code(v['run'])}", ""]
    if not run.passed:
        lines += [f"- {_text(problem)}" for problem in v["problems"]]
    elif v["headline"] is not None and "score" in v["headline"]:
        lines.append(_text(headline_text(v["headline"])))
    elif v["headline"] is not None:
        cases = next(iter(v["headline"].values()))["cases"]
        lines += ["| metric | estimate [95% interval] |", "|---|---|"]
        lines += [f"| {name} | {interval_text(figure)} |" for name, figure in v["headline"].items()]
        lines += ["", f"Fractions (0 to 1), as the frameworks report them; {cases} cases; intervals: the case bootstrap "
                      "(1000 resamples, seed 0), as the report's leaderboard."]
    rests = _rests_on(p)
    if rests:
        lines += ["", "Rests on: " + "; ".join(rests) + "."]
    if v["physicians"] is not None:
        from clinconsensus_tasks.gates.physicians import estimate_text, physicians_text

        lines += ["", f"Physicians: {_text(physicians_text(v['physicians']))}; {_text(estimate_text(v['physicians']))}."]
    if v["reliability"] is not None and not v["reliability"].get("mismatch"):
        from clinconsensus_tasks.gates.reliability import flip_text

        lines += ["", f"Judge asked again: {_text(flip_text(v['reliability']))}."]
    return lines


def _rests_on(p: Mapping[str, Any]) -> list[str]:
    """What a run's numbers rest on, in words."""
    out = []
    if p.get("model"):
        out.append(f"model {_code(p['model'])}")
    if p.get("task_version"):
        out.append(f"task {_code(p['task'])} version {p['task_version']}")
    if p.get("judges"):
        prompt = f", prompt {_code(p['judge_prompt'])}" if p.get("judge_prompt") else ""
        sha = f" (sha256 {_code(p['judge_prompt_sha256'])})" if p.get("judge_prompt_sha256") else ""
        out.append(f"judge {', '.join(_code(j) for j in p['judges'])} ({p.get('judge_mode') or 'mode not recorded'}{prompt}{sha})")
    if p.get("data_source"):
        revision = f" at {_code(p['data_revision'])}" if p.get("data_revision") else ""
        out.append(f"data {_code(p['data_source'])}{revision}, sha256 {_code(p.get('data_sha256') or 'not recorded')}")
    if p.get("cases") is not None and "thresholds" in p:
        out.append(f"{p['cases']} cases, k = {', '.join(map(str, p['thresholds']))}")
    if p.get("items") is not None:
        out.append(f"{p['items']} items of {len(p.get('scenarios') or [])} scenarios ({p.get('variant', 'clean')})")
    return out


def _read_section(result: GateResult) -> list[str]:
    document = result.document
    lines = ["<details><summary>What the gate read</summary>", "",
             f"- the bar: {_text(document['profile'])}",
             f"- exceptions: {_text(', '.join(document['exceptions']) or 'none')}",
             f"- named: {', '.join(_code(p) for p in result.paths)}",
             f"- runs found: {len(result.runs)}"]
    for item in document["superseded"]:
        lines.append(f"- left out: {_code(item['run'])}, superseded by {_code(item['superseded_by'])} (a later attempt of the same task)")
    if "review" in document:
        review = document["review"]
        lines.append(f"- physicians' review {_code(review['folder'])}: {len(review['left_out'])} row(s) left out, "
                     f"{len(review['notes'])} note(s)")
        lines += [f"  - note: {_text(note)}" for note in review["notes"]]
    if "reliability" in document:
        check = document["reliability"]
        lines.append(f"- the judge asked again {_code(check['folder'])}: {len(check['notes'])} note(s)")
    lines += ["", "</details>"]
    return lines


def _text(text: str) -> str:
    """Text for Markdown: no line break, and nothing GitHub would take for an HTML tag."""
    return " ".join(str(text).split()).replace("<", "&lt;").replace(">", "&gt;")


def _cell(text: str) -> str:
    return _text(text).replace("|", "\\|")


def _code(text: str) -> str:
    """Inline code that holds any text (a backtick inside gets a longer fence)."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


# -- writing ----------------------------------------------------------------------------------------


def write_output(raw: Any, text: str) -> str:
    """Write an output whole or not at all, locally or to a URL; the file ``$GITHUB_STEP_SUMMARY``
    names is appended to instead (GitHub Actions' job summary: other steps write there too).
    Returns what was done, for the command's message."""
    step_summary = os.environ.get(STEP_SUMMARY, "")
    target = output_location(raw)
    if step_summary and same_location(raw, step_summary):
        with storage_errors(target):
            with target.open("a", encoding="utf-8") as handle:
                handle.write(text)  # one write: the whole summary or none of it
        return f"appended to {raw} (${STEP_SUMMARY})"
    if is_url(target):
        write_text(target, text)  # one upload: an object store shows the whole object or none
        return f"wrote {raw}"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # beside it: the rename stays on one file system
    try:
        with partial.open("w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return f"wrote {raw}"
