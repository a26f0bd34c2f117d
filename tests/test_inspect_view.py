"""A sample as an Inspect user reads it: `inspect view bundle` served on 127.0.0.1 and opened in
headless Chromium, the sample's Scoring tab showing every criterion's text and each judge's verdict.

The runs are real Inspect runs against the stand-in server (a real OpenAI-compatible HTTP server
on 127.0.0.1, standing in for the model under test and two judges); the bundle is the static site
Inspect writes for any HTTP server to serve. The screenshot is kept beside the bundle for a look.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from browser import StaticSite, read_page, require_browser
from clinconsensus_tasks.clinconsensus.dataset import load_cases

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def bundle(log_dir: Path, out: Path) -> Path:
    done = subprocess.run([str(BIN / "inspect"), "view", "bundle", "--log-dir", str(log_dir), "--output-dir", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_a_clinconsensus_sample_shows_each_criterion_and_both_judges_in_inspect_view(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    require_browser()
    # The second judge says "met" to everything, with a reason holding HTML and a table's bar: shown as text.
    reason = "<b>加粗</b> | 伪造一列"
    fake_server.script("judge-html", lambda req: json.dumps({"explanation": reason, "criteria_met": True}, ensure_ascii=False))
    log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-model", limit=1, display="none",
                       model_roles={"grader": "openai-api/judge/judge-html", "local_grader": "openai-api/judge/judge-model"},
                       log_dir=str(tmp_path / "logs"))[0]
    assert log.status == "success", log.error
    case = load_cases("sample").cases[0]
    record = log.samples[0].scores["rubric_scorer"]
    met, second = record.metadata["met"], sum(j["met"] is True for j in record.metadata["roles"]["local_grader"]["judgments"])
    headline = f"30 of 30 criteria met (judge openai-api/judge/judge-html); second judge openai-api/judge/judge-model: {second} met"
    site = bundle(tmp_path / "logs", tmp_path / "bundle")
    with StaticSite(site) as server:
        url = f"{server.root}/#/logs/{Path(log.location).name}/samples/sample/{case.case_id}/1/scoring"
        # Waited for as rendered: the viewer shows the explanation's Markdown source first (`**30 of 30
        # criteria met**`, every criterion's text already in it) and renders it a moment later.
        text = read_page(url, headline, site / "scoring.png", tmp_path / "profile")
    # Every criterion's text, as the data gives it, and the table's columns.
    assert all(criterion in text for _, criterion in case.rubrics), text[:3000]
    assert met == 30 and headline in text, text[:3000]
    assert f"met\t{'not met' if second < 30 else 'met'}" in text and reason in text  # the tags shown as text, the bar kept in its cell
    for heading in ("criterion", "judge", "second judge", "agree", "reason"):
        assert heading in text
    assert "not met" in text and "≠" in text and (site / "scoring.png").stat().st_size > 20_000
