"""docs/release-checklist.md, run as a team runs it (issue 60, item 3).

Every command of the page's code blocks, in the page's order, typed as written (``bash -c`` on the
line, its comment included), against the project's stand-in server started as a user starts it
(``clinconsensus-eval serve-stand-in``). Only what needs the network is given otherwise, by the
environment the commands run in (:data:`SUBSTITUTED`): the endpoints (``MODEL_BASE_URL``, and
``OPENAI_BASE_URL`` for the judge ``openai/gpt-4.1``), the hub's data (the bundled sample:
``INSPECT_EVAL_TASK_ARGS=data=sample``, Inspect's own variable for ``-T``) and the official prompt's download (``CLINCONSENSUS_JUDGE_PROMPT=project``, the
prompt the stand-in knows). Two commands are not run (:data:`NOT_RUN`): Inspect View's server (its
static bundle, the next line, is) and the Hub's uploads. The physicians' step between ``review
export`` and ``review score`` is done as physicians do it: each sheet filled in and saved.

Each step's outcome is checked: the smoke test's one case in ``logs-smoke/``, the full run in
``logs/``, the review and the check folders, the gate refusing the run in its own words (the bundled
sample, the project's prompt, and what a review and a check of 12 cases cannot show) with its JUnit file and Markdown summary saying the same, the report and the static
viewer written, ``publish`` refusing with the gate's lines and writing nothing, and the CI jobs'
commands failing the job with the summary appended where GitHub reads it. The page's own claims
about the gate and ``publish`` are the assertions.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "release-checklist.md"
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)

# What needs the network, given by the environment instead (a line of the page -> why).
SUBSTITUTED = {
    "export MODEL_BASE_URL=": "the model's endpoint: the stand-in's",
    "export OPENAI_API_KEY=": "the judge's key; its endpoint the stand-in's (OPENAI_BASE_URL)",
    "export CLINCONSENSUS_DATA_REVISION=": "the hub: the bundled sample instead (INSPECT_EVAL_TASK_ARGS=data=sample)",
}
NOT_RUN = {
    "inspect view --log-dir": "a server for a browser (the static bundle on the next line is made)",
    "hf upload": "the Hugging Face Hub",
}
REFUSED = [  # the gate's words for the stand-in's run, one line each
    "the bundled synthetic sample, not the benchmark: run on the 900 public cases (Inspect -T data=hub, lm-eval CLINCONSENSUS_DATA=hub)",
    "judge prompt project is not the official prompt: run with judge_prompt=official (the default), or accept it with "
    "--allow-prompt project",
]
JUDGE_CHECKS = {"the physicians' review read whole", "judge-physician kappa (--min-kappa)",
                "the judge's bias against the physicians (--max-judge-bias)", "the judge's flip rate (--max-flip-rate)"}


def page_steps() -> list[tuple[str, str]]:
    """(language, command) of every command of the page's code blocks, in order: shell lines with
    their continuations joined; in the CI blocks (YAML), each job's commands."""
    steps = []
    for language, body in FENCE.findall(PAGE.read_text(encoding="utf-8")):
        if language == "bash":
            joined = ""
            for line in body.splitlines():
                if line.rstrip().endswith("\\"):
                    joined += line.rstrip()[:-1]
                    continue
                line = joined + line
                joined = ""
                if line.strip() and not line.lstrip().startswith("#"):
                    steps.append(("bash", line.strip()))
        elif language == "yaml":
            for command in ci_commands(yaml.safe_load(body)):
                steps.append(("ci", command))
    return steps


def ci_commands(job) -> list[str]:
    """The shell commands of a CI definition: GitHub steps' ``run``, GitLab jobs' ``script``."""
    if isinstance(job, list):
        return [c for step in job for c in ci_commands(step)]
    if isinstance(job, dict):
        found = [job["run"]] if isinstance(job.get("run"), str) else [str(c) for c in job.get("script") or []]
        return found + [c for key, value in job.items() if key not in ("run", "script") for c in ci_commands(value)]
    return []


@pytest.fixture
def stand_in():
    """The stand-in server as a user starts it; its base URL."""
    server = subprocess.Popen([str(BIN / "clinconsensus-eval"), "serve-stand-in", "--port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(server.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)


def environment(tmp_path: Path, base_url: str) -> dict[str, str]:
    """The shell the page's commands run in: the machine's, without any setting of this project, of
    Inspect or of CI, then the stand-ins for the network."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLINCONSENSUS_", "CLIMEDBENCH_", "INSPECT_", "OPENAI_", "MODEL_", "JUDGE_", "GITHUB_"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", MODEL_BASE_URL=base_url, MODEL_API_KEY="model-test-key",
               OPENAI_BASE_URL=base_url, OPENAI_API_KEY="judge-test-key", INSPECT_EVAL_TASK_ARGS="data=sample",
               CLINCONSENSUS_JUDGE_PROMPT="project",
               INSPECT_CACHE_DIR=str(tmp_path / "inspect-cache"), CLINCONSENSUS_CACHE_DIR=str(tmp_path / "cache"),
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    return env


def fill_sheets(folder: Path) -> int:
    """Each physician's sheet filled as a physician fills it (the stand-in judge's rule as their
    reading: a physician who agrees with the judge), saved in place; the rows labelled."""
    import json

    from openpyxl import load_workbook

    from clinconsensus_tasks.run_records.review_export import KEY_FILE
    from clinconsensus_tasks.run_records.review_sheets import SHEET
    from clinconsensus_tasks.stand_in import oracle_verdict

    key = json.loads((folder / KEY_FILE).read_text(encoding="utf-8"))
    rows = 0
    for path in sorted(folder.glob("physician_*.xlsx")):
        book = load_workbook(path)
        for row in book[SHEET].iter_rows(min_row=2):
            if row[0].value in key["rows"]:
                row[4].value = "符合" if oracle_verdict(row[2].value, row[3].value) else "不符合"
                rows += 1
        book.save(path)
    return rows


def fail_lines(stdout: str, run: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in stdout.splitlines() if line.startswith(f"FAIL {run}: ")]


def test_the_release_checklist_runs_as_written_and_nothing_publishes_the_stand_ins_numbers(stand_in, tmp_path):
    from inspect_ai.log import read_eval_log

    steps = page_steps()
    substituted = {prefix: [c for _, c in steps if c.startswith(prefix)] for prefix in SUBSTITUTED}
    skipped = {prefix: [c for _, c in steps if c.startswith(prefix)] for prefix in NOT_RUN}
    assert all(len(found) == 1 for found in substituted.values()), substituted  # the list is the page's, not stale
    assert all(found for found in skipped.values()), skipped
    run = [(language, c) for language, c in steps if not any(c.startswith(p) for p in (*SUBSTITUTED, *NOT_RUN))]
    assert [c.split()[0] for _, c in run] == ["inspect", "clinconsensus-eval", "inspect", *["clinconsensus-eval"] * 4, "inspect",
                                              "clinconsensus-eval", "clinconsensus-eval", "clinconsensus-eval", "clinconsensus-eval"]

    work = tmp_path / "release"
    work.mkdir()
    env = environment(tmp_path, stand_in)
    summary = tmp_path / "step_summary.md"
    summary.write_text("## Earlier step\n", encoding="utf-8")
    gate_out = None
    seen = []
    for language, command in run:
        shell = dict(env, GITHUB_STEP_SUMMARY=str(summary)) if language == "ci" else env
        done = subprocess.run(["bash", "-c", command], cwd=work, env=shell, capture_output=True, text=True, timeout=900)
        said = f"{command}\n--- exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        words = command.split()
        if words[:2] == ["inspect", "eval"]:
            assert done.returncode == 0, said
            folder = work / words[words.index("--log-dir") + 1]
            (log_file,) = folder.glob("*.eval")
            log = read_eval_log(str(log_file))
            cases = 1 if "--limit" in words else 12
            assert log.status == "success" and len(log.samples) == cases, said
            assert log.eval.model == "openai-api/model/my-model" and log.eval.model_roles["grader"].model == "openai/gpt-4.1"
            seen.append(f"run {folder.name}")
        elif words[:2] == ["inspect", "view"]:
            assert done.returncode == 0 and (work / "logs-www" / "index.html").is_file(), said
            seen.append("viewer")
        elif words[1] == "summarize" and "--strict" not in words:
            assert done.returncode == 0 and "(1 cases, 0 judge failures)" in done.stdout, said
            seen.append("smoke summary")
        elif words[1:3] == ["review", "export"]:
            assert done.returncode == 0 and len(list((work / "review").glob("physician_*.xlsx"))) == 3, said
            assert fill_sheets(work / "review") > 0  # the physicians' part
            seen.append("review export")
        elif words[1:3] == ["review", "score"]:
            assert done.returncode == 0, said
            seen.append("review score")
        elif words[1] == "reliability":
            assert done.returncode == 0 and (work / "reliability" / "reliability.json").is_file(), said
            seen.append("reliability")
        elif words[1] == "summarize" and language == "bash":
            gate_out = done.stdout
            check_gate(work, done, said)
            seen.append("gate")
        elif words[1] == "report":
            assert done.returncode == 0 and (work / "report.html").is_file() and (work / "report.md").is_file(), said
            seen.append("report")
        elif words[1] == "publish":
            # The gate's own lines (its bar and flags), then nothing written.
            assert done.returncode == 1 and gate_out is not None, said
            log = str(next((work / "logs").glob("*.eval")).relative_to(work))
            assert fail_lines(done.stdout, log) == fail_lines(gate_out, log), said
            assert done.stderr.splitlines()[-1].startswith("publish: nothing written"), said
            assert not (work / "model-card").exists()
            seen.append("publish refused")
        elif words[1] == "summarize" and language == "ci":
            # A CI job: failed by the exit code; the JUnit file for the test view; the job summary appended.
            assert done.returncode == 1, said
            suites = ET.parse(work / "gate.xml").getroot()
            assert suites.tag == "testsuites" and int(suites.get("failures")) >= len(REFUSED), said
            text = summary.read_text(encoding="utf-8")
            if "--markdown" in words:
                assert text.startswith("## Earlier step\n## Release gate: FAILED\n"), said
                assert all(line in text for line in REFUSED)
                seen.append("github job")
            else:
                seen.append("gitlab job")
        else:
            pytest.fail(f"a command of the page this test does not check: {command}")
    assert seen == ["run logs-smoke", "smoke summary", "run logs", "review export", "review score", "reliability", "gate", "viewer",
                    "report", "publish refused", "github job", "gitlab job"]


def check_gate(work: Path, done: subprocess.CompletedProcess, said: str) -> None:
    """The gate on the stand-in's run: refused in the gate's words, the JUnit file and the Markdown
    saying the same, the exit code 1 whatever is written."""
    assert done.returncode == 1, said
    log = str(next((work / "logs").glob("*.eval")).relative_to(work))
    problems = fail_lines(done.stdout, log)
    assert [p for p in problems if p in REFUSED] == REFUSED, said
    suites = ET.parse(work / "gate.xml").getroot()
    (suite,) = suites.findall("testsuite")
    assert suite.get("name") == log
    failures = {c.get("name"): c.find("failure").get("message").split("\n") for c in suite.iter("testcase") if c.find("failure") is not None}
    assert [line for lines in failures.values() for line in lines] == problems
    assert failures["the benchmark's data"] == REFUSED[:1] and failures["the official protocol"] == REFUSED[1:]
    # The rest: what a review and a check of 12 cases cannot show (the page's bars are a release's), and the
    # stand-in judge: the page's openai/gpt-4.1, sent to the stand-in by OPENAI_BASE_URL, is seen there.
    assert set(failures) - {"the benchmark's data", "the official protocol"} <= JUDGE_CHECKS | {"an independent judge"}
    assert failures["an independent judge"] == [
        "judged by the project's stand-in server (gpt-4.1), not a real judge: bind a real judge model"], said
    markdown = (work / "gate.md").read_text(encoding="utf-8")
    assert markdown.startswith("## Release gate: FAILED\n\n0 of 1 run(s) pass the release profile")
    assert all(f"- {' '.join(problem.split()).replace('<', '&lt;').replace('>', '&gt;')}" in markdown for problem in problems)
    assert "- physicians' review `review/`" in markdown and "- the judge asked again `reliability/`" in markdown
