"""``clinconsensus-eval demo``: the README's first command, end to end with no endpoint.

The demo starts the project's stand-in server itself (a real HTTP server on 127.0.0.1 standing in
for a user's model endpoint and judge), so these tests run the real command line as a user would
and check what it wrote and printed against the server's own rules.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest

from clinconsensus_tasks.commands.demo import plan_demo
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS

from frameworks import expected_metrics


def test_plan_leaves_wtd_out_without_a_similarity_model(monkeypatch):
    monkeypatch.delenv("CLIMEDBENCH_SIMILARITY_MODEL", raising=False)
    plan = plan_demo(None, None)
    assert plan.scenarios == [c for c in SCENARIOS if c != "WTD"] and plan.similarity_model is None
    assert plan.notes == ["CliMedBench WTD left out: it is scored by embedding similarity and no similarity model was given "
                          "(demo --similarity-model DIR, a sentence-transformers model folder; needs the [similarity] extra)."]
    assert "climedbench" not in plan.lmeval_climedbench_tasks and len(plan.lmeval_climedbench_tasks) == 13


def test_plan_leaves_wtd_out_when_the_model_cannot_load(tmp_path):
    pytest.importorskip("sentence_transformers")
    plan = plan_demo(None, str(tmp_path / "not-a-model"))
    assert "WTD" not in plan.scenarios and plan.similarity_model is None
    (note,) = plan.notes
    assert note.startswith(f"CliMedBench WTD left out: similarity model {str(tmp_path / 'not-a-model')!r} cannot be used: ")


def test_suggested_commands_keep_their_line_continuations():
    """What the demo prints for a real model is pasted into a shell: every command that spans lines
    ends its lines with a backslash, and each continued line stays a line of its own."""
    from clinconsensus_tasks.commands.demo import real_model_commands

    text = real_model_commands()
    assert text.startswith("# The model under test")
    assert "--limit 1 --log-dir logs-smoke \\\n  --model openai-api/model/MY-MODEL --model-role grader=openai/gpt-4.1\n" in text
    # The path the README walks: the smoke tests in folders of their own, the data pinned, the gate.
    assert "--output_path results/   # first: --limit 1 --output_path results-smoke/\n" in text
    assert "export CLINCONSENSUS_DATA_REVISION=$(python -c" in text
    assert text.endswith("clinconsensus-eval summarize --strict logs/ results/\nclinconsensus-eval report logs/ results/ --output report.html")
    continued = [line for line in text.splitlines() if line.endswith("\\")]
    assert len(continued) == 5
    lines = text.splitlines()
    assert all(lines[i + 1].startswith("  ") for i, line in enumerate(lines) if line.endswith("\\"))


def test_plan_refuses_unknown_frameworks():
    with pytest.raises(ConfigurationError, match="framework\\(s\\) not installed: jax"):
        plan_demo(["jax"], None)


@pytest.mark.slow
def test_demo_runs_everything_and_stops_the_server(tmp_path, similarity_model_dir):
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "clinconsensus_tasks.cli", "demo", "--output", str(out),
         "--similarity-model", str(similarity_model_dir), "--resamples", "50"],
        capture_output=True, text=True, timeout=1500, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stdout = done.stdout
    # Both frameworks ran both benchmarks, all 14 scenarios, and wrote their own log files.
    assert len(list((out / "inspect-logs").glob("*.eval"))) == 2
    samples = {re.sub(r"_\d{4}-.*", "", p.name) for p in (out / "lmeval-output").rglob("samples_*.jsonl")}
    assert samples == {"samples_clinconsensus"} | {f"samples_{s.task_name}" for s in SCENARIOS.values()}
    assert (out / "report.html").is_file() and (out / "report.md").is_file()
    # The demo's keys are no words of the report: redaction masks every key it holds.
    assert "<h1>clinconsensus-eval demo (stand-in model and judge)</h1>" in (out / "report.html").read_text(encoding="utf-8")
    assert "WTD left out" not in stdout
    # The headline numbers: the same in both frameworks, and what the server's judge rules give.
    expected = expected_metrics()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^  (inspect|lm-eval) +(.+)$", stdout, re.MULTILINE)}
    assert rows["inspect"] == rows["lm-eval"]
    values = rows["inspect"].split()
    assert values[:5] == [f"{expected[k]:.4f}" for k in ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy")]
    # Where everything is, and how to run a real model.
    for line in (f"Inspect logs     {out / 'inspect-logs'}/", f"report           {out / 'report.html'} and {out / 'report.md'}",
                 "inspect eval clinconsensus_tasks/clinconsensus -T data=sample --limit 1", "--tasks clinconsensus,climedbench"):
        assert line in stdout
    # The server is stopped: its port no longer accepts connections.
    port = int(re.search(r"stand-in server for the model and the judge on http://127.0.0.1:(\d+)/v1", stdout).group(1))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
