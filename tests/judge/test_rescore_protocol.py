"""``rescore`` keeps the judging protocol its log recorded, in both frameworks (issue 48, item 1).

A run judged with a template file of our own (standing in for the official template, which is
fetched from GitHub and cannot be here) and a run judged in batched mode with the project's prompt,
each in Inspect and in lm-eval against the project's stand-in server on 127.0.0.1 (it stands in for
the model's and the judge's endpoints, over real HTTP), re-scored with only the judge changed: the
new log records the same prompt (by sha256) and mode as the old one, and the server sees the same
kind of requests, whatever ``CLINCONSENSUS_JUDGE_PROMPT`` says in the environment. A template the
log names that cannot be had again is an error before any judge call.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clinconsensus.test_judge_prompt import TEMPLATE
from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.judge.official_template import prompt_record
from frameworks import run_inspect, run_lmeval

pytestmark = pytest.mark.slow


def samples_of(folder: Path) -> Path:
    (found,) = sorted(folder.rglob("samples_clinconsensus_*.jsonl"))
    return found


def rescore(server, log, out, capsys, *flags) -> tuple[int, dict, str]:
    server.reset()
    code = cli_main(["rescore", str(log), "--output", str(out), "--judge-base-url", server.base_url, "--judge-model", "judge-alt",
                     "--judge-api-key", "k", *flags])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else {}, captured.err


def protocol_of(path) -> set[tuple[str, str, str]]:
    """(mode, prompt sha256, the judge's own name: Inspect's provider prefix taken off) of every case."""
    return {(r.graded.judge_mode, r.graded.judge_prompt.get("judge_prompt_sha256", ""), r.graded.judge.rsplit("/", 1)[-1])
            for r in read_case_records(path)}


def test_a_template_file_run_is_rescored_with_that_template_in_both_frameworks(fake_server, tmp_path, monkeypatch, capsys):
    template = tmp_path / "judge_template.txt"
    template.write_text(TEMPLATE, encoding="utf-8")
    sha = hashlib.sha256(TEMPLATE.encode("utf-8")).hexdigest()
    fake_server.set_judge_templates([TEMPLATE], record=True)
    log, _ = run_inspect(tmp_path / "inspect", judge_prompt=str(template), judge_failure_threshold=0.05)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", str(template))
    run_lmeval(fake_server.base_url, tmp_path / "lmeval")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "official")  # the environment says otherwise: the log's protocol wins
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_CACHE", "0")  # every re-scoring asks the judge (the two frameworks' answers are alike)
    for name, source in (("inspect", log.location), ("lmeval", samples_of(tmp_path / "lmeval"))):
        out = tmp_path / f"rescored-{name}" / (Path(source).name)
        code, result, err = rescore(fake_server, source, out, capsys)
        assert code == 0, err
        assert fake_server.stats()["kinds"] == {"per_criterion": 360}  # the answers reused, one call per criterion
        assert all(m[0]["content"].startswith("Decide whether the reply") for m in fake_server.judge_messages())
        assert len(fake_server.judge_messages()) == 360
        assert protocol_of(source) == {("per_criterion", sha, "judge-model")}
        assert protocol_of(out) == {("per_criterion", sha, "judge-alt")}  # same prompt and mode, another judge
        kept = result["protocol"]["from_log"]
        assert kept["judge_prompt"] == str(template) and kept["judge_prompt_sha256"] == sha and result["protocol"]["changed"] == {"judge_model": "judge-alt"}
        assert f"rescore: kept from the log: judge_mode per_criterion, judge_prompt {template}" in err
        if name == "inspect":  # the failure threshold its header recorded is kept too
            assert kept["judge_failure_threshold"] == "0.05"

    # The template moved: a named error before any call; given again by its new path, checked by sha256.
    moved = template.rename(tmp_path / "elsewhere.txt")
    for source in (log.location, samples_of(tmp_path / "lmeval")):
        code, _, err = rescore(fake_server, source, tmp_path / "never.eval", capsys)
        assert code == 2 and f"was read from {template}, which is not there now" in err, err
        assert fake_server.stats()["judge_calls"] == 0
    code, result, err = rescore(fake_server, log.location, tmp_path / "again.eval", capsys, "--judge-prompt", str(moved))
    assert code == 0, err
    assert protocol_of(tmp_path / "again.eval") == {("per_criterion", sha, "judge-alt")}
    # The same template by its sha256: kept, wherever it lies now.
    assert result["protocol"]["changed"] == {"judge_model": "judge-alt"} and result["protocol"]["from_log"]["judge_prompt_sha256"] == sha
    # An edited template is another prompt: at the log's path, a named error before any call; named
    # on the command line, a change the output says.
    moved.rename(template)
    edited = TEMPLATE.replace("Decide whether", "Judge whether")
    template.write_text(edited, encoding="utf-8")
    code, _, err = rescore(fake_server, log.location, tmp_path / "never.eval", capsys)
    assert code == 2 and f"has sha256 {sha[:12]}..., the one loaded now" in err and fake_server.stats()["judge_calls"] == 0
    fake_server.set_judge_templates([TEMPLATE, edited])
    code, result, err = rescore(fake_server, log.location, tmp_path / "edited.eval", capsys, "--judge-prompt", str(template))
    assert code == 0, err
    new_sha = hashlib.sha256(edited.encode("utf-8")).hexdigest()
    assert result["protocol"]["changed"]["judge_prompt"] == f"{template} (sha256 {sha[:12]}...) -> {template} (sha256 {new_sha[:12]}...)"
    assert "judge_prompt" not in result["protocol"]["from_log"]


def test_a_batched_run_is_rescored_batched_unless_told(fake_server, tmp_path, monkeypatch, capsys):
    log, _ = run_inspect(tmp_path / "inspect", judge_prompt="project", judge_mode="batched")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "project")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODE", "batched")
    run_lmeval(fake_server.base_url, tmp_path / "lmeval")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODE", "per_criterion")  # the environment says otherwise: the log wins
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_CACHE", "0")  # every re-scoring asks the judge (the two frameworks' answers are alike)
    batched_sha = prompt_record(None, "batched")["judge_prompt_sha256"]
    for name, source in (("inspect", log.location), ("lmeval", samples_of(tmp_path / "lmeval"))):
        out = tmp_path / f"rescored-{name}" / Path(source).name
        code, result, err = rescore(fake_server, source, out, capsys)
        assert code == 0, err
        assert fake_server.stats()["kinds"] == {"batched": 12}
        assert protocol_of(out) == {("batched", batched_sha, "judge-alt")}
        # Told: another mode and prompt, said so.
        code, result, err = rescore(fake_server, source, out.with_name("per-criterion" + out.suffix), capsys,
                                    "--judge-mode", "per_criterion", "--judge-prompt", "project")
        assert code == 0, err
        assert fake_server.stats()["kinds"] == {"per_criterion": 360}
        project = prompt_record(None, "per_criterion")["judge_prompt_sha256"]
        assert result["protocol"]["changed"] == {"judge_model": "judge-alt", "judge_mode": "batched -> per_criterion",
                                                 "judge_prompt": f"project-batched (sha256 {batched_sha[:12]}...) -> project "
                                                                 f"(sha256 {project[:12]}...)"}
        assert "rescore: changed: judge_model judge-alt, judge_mode batched -> per_criterion, judge_prompt project-batched" in err


def test_the_logs_failure_threshold_stands_and_a_missing_header_is_said(fake_server, tmp_path, monkeypatch, capsys):
    log, _ = run_inspect(tmp_path / "inspect", judge_prompt="project", judge_failure_threshold=0.5)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD", "0")  # the environment's "never" does not loosen the log's bar
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_CACHE", "0")
    fake_server.reset()
    code = cli_main(["rescore", str(log.location), "--output", str(tmp_path / "never.eval"), "--judge-base-url", fake_server.base_url,
                     "--judge-model", "judge-unreadable", "--judge-api-key", "k"])
    err = capsys.readouterr().err
    assert code == 1 and "the one the log's header recorded, which stands over the environment" in err, err
    assert "kept from the log: judge_mode per_criterion" in err and "judge_failure_threshold 0.5" in err
    # An lm-eval samples file without its results file: no header; the output says the environment's settings apply.
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "project")
    run_lmeval(fake_server.base_url, tmp_path / "lmeval")
    alone = tmp_path / "alone" / samples_of(tmp_path / "lmeval").name
    alone.parent.mkdir()
    alone.write_bytes(samples_of(tmp_path / "lmeval").read_bytes())
    code, result, err = rescore(fake_server, alone, tmp_path / "alone-out" / alone.name, capsys)
    assert code == 0, err
    assert "rescore: the log's header: none found (a samples file without its results file)" in err
    assert result["protocol"]["header"] == "" and "judge_failure_threshold" not in result["protocol"]["from_log"]


def test_a_run_judged_with_structured_output_is_rescored_with_it(fake_server, tmp_path, monkeypatch, capsys):
    # The log's task arguments record judge_structured_output; the re-scoring sends the verdict's
    # schema (response_format) as the run did, whatever the environment says.
    log, _ = run_inspect(tmp_path / "inspect", judge_prompt="project", judge_structured_output=True)
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_STRUCTURED_OUTPUT", "0")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_CACHE", "0")
    code, result, err = rescore(fake_server, log.location, tmp_path / "rescored.eval", capsys)
    assert code == 0, err
    assert result["protocol"]["from_log"]["judge_structured_output"] == "True"
    assert fake_server.stats()["judge_request_keys"].get("response_format") == 360
