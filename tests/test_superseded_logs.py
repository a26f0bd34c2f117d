"""A log that a later attempt of the same task superseded (an eval-set retry, ``inspect eval-retry``)
is left out of a folder, named, by every command that reads runs (issue 40, item 2).

Why: a machine killed mid-run leaves its ``started`` log in the log folder, and Inspect leaves it
there when another process finishes the task (it cannot know the writer has stopped). Inspect's
own rule for an eval set is that a task's newest log is its log; the readers follow that rule.
The logs here are written with Inspect's own writer (``write_eval_log``), headers only: what is
tested is which logs are read, not what they hold. The whole campaign, with real runs in a real
S3-protocol server, is ``tests/test_campaign_in_a_bucket.py``.
"""

from __future__ import annotations

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.log_files import find_logs, superseded
from clinconsensus_tasks.report.runs import read_runs


def write_log(folder, created: str, task_id: str, status: str, model: str = "cand-a", name: str | None = None):
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, write_eval_log

    spec = EvalSpec(created=created, task="clinconsensus_tasks/clinconsensus", task_id=task_id, dataset=EvalDataset(),
                    model=f"openai-api/cand/{model}", config=EvalConfig())
    path = folder / (name or f"{created[:19].replace(':', '-')}-00-00_clinconsensus_{task_id}.eval")
    folder.mkdir(parents=True, exist_ok=True)
    write_eval_log(EvalLog(eval=spec, status=status), str(path))
    return path


@pytest.fixture
def campaign(tmp_path):
    """Machine 1 was killed (its log stayed ``started``); another machine's attempt finished the
    task; machine 2's task is still running."""
    logs = tmp_path / "logs"
    killed = write_log(logs, "2026-11-27T07:18:27+00:00", "QQuVLuLQrwiHZEqADHfhgR", "started")
    done = write_log(logs, "2026-11-27T07:18:53+00:00", "QQuVLuLQrwiHZEqADHfhgR", "success")
    running = write_log(logs, "2026-11-27T07:18:28+00:00", "THhsdVeRDne3rhPC5xSRY5", "started", model="cand-b")
    return logs, killed, done, running


def test_a_later_attempt_supersedes_the_killed_one_and_the_note_names_both(campaign, capsys):
    logs, killed, done, running = campaign
    found = find_logs([logs])
    assert list(found) == [running, done] and found.superseded == [(killed, done)]
    err = capsys.readouterr().err
    assert err == (f"clinconsensus-eval: note: left out {killed}: superseded by {done}, a later attempt of the same task "
                   "(an eval-set retry or inspect eval-retry of it)\n")


def test_a_log_named_on_the_command_line_is_read_whatever_superseded_it(campaign):
    logs, killed, done, _ = campaign
    assert list(find_logs([killed])) == [killed]
    assert find_logs([killed]).superseded == []


def test_only_the_same_task_id_and_model_in_the_same_folder_supersede(tmp_path):
    # Same name rest but another model (a renamed copy), another folder, a log named by its own pattern.
    a = write_log(tmp_path / "one", "2026-11-27T07:00:00+00:00", "TASKID", "started")
    other_model = write_log(tmp_path / "one", "2026-11-27T08:00:00+00:00", "TASKID", "success", model="cand-b")
    elsewhere = write_log(tmp_path / "two", "2026-11-27T09:00:00+00:00", "TASKID", "success")
    custom = write_log(tmp_path / "one", "2026-11-27T10:00:00+00:00", "TASKID", "success", name="cand-a-final.eval")
    assert superseded([a, other_model, elsewhere, custom]) == {}


def test_the_newest_is_decided_by_when_the_logs_record_they_were_created_not_by_name(tmp_path):
    # The file names' timestamps say the other order (a machine with its clock wrong names its file so).
    newer = write_log(tmp_path, "2026-11-27T09:00:00+00:00", "TASKID", "success", name="2026-11-27T01-00-00-00-00_clinconsensus_TASKID.eval")
    older = write_log(tmp_path, "2026-11-27T08:00:00+00:00", "TASKID", "started", name="2026-11-27T05-00-00-00-00_clinconsensus_TASKID.eval")
    assert superseded([newer, older]) == {older: newer}


def test_the_report_lists_the_superseded_log_and_the_gate_checks_only_the_newest(campaign, capsys):
    logs, killed, done, running = campaign
    assert (str(killed), f"superseded by {done}, a later attempt of the same task") in read_runs([logs]).skipped
    assert cli_main(["summarize", "--strict", str(logs)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {killed}" not in out and f"FAIL {done}" in out
    assert f"left {killed}: superseded by {done}, a later attempt of the same task; not checked\n" in out  # in the gate's own record
    # A log that stopped while its samples were being run is finished by running them, not by scoring.
    (started,) = [line for line in out.splitlines() if line.startswith(f"FAIL {running}: status started")]
    assert started.endswith("finish it, once no process is still writing it: run the same `inspect eval-set` command again, or "
                            "`inspect eval-retry LOG` (asks the model only for the samples the log does not hold)")


def test_a_log_named_and_in_a_folder_given_is_read_and_not_noted_as_left_out(campaign, capsys):
    logs, killed, done, running = campaign
    for order in ([killed, logs], [logs, killed]):
        found = find_logs(order)
        assert sorted(found) == sorted([killed, running, done]) and found.superseded == []
        assert "left out" not in capsys.readouterr().err


def test_logs_created_at_the_same_instant_supersede_neither(tmp_path):
    # A log and its `inspect log convert` copy: the same header, the same created time.
    log = write_log(tmp_path, "2026-11-27T07:00:00+00:00", "TASKID", "success")
    copy = tmp_path / log.name.replace(".eval", ".json")
    from inspect_ai.log import read_eval_log, write_eval_log

    write_eval_log(read_eval_log(str(log)), str(copy))
    assert superseded([log, copy]) == {}


def test_a_file_that_is_no_log_beside_a_log_of_its_name_is_named_by_the_reader_not_raised_here(tmp_path, capsys):
    log = write_log(tmp_path, "2026-11-27T07:00:00+00:00", "TASKID", "started")
    bad = tmp_path / "2026-11-27T08-00-00-00-00_clinconsensus_TASKID.json"
    bad.write_text('{"status": "success"}', encoding="utf-8")  # JSON, but no 'eval': Inspect's reader asserts
    assert superseded([log, bad]) == {}
    assert cli_main(["summarize", "--strict", str(tmp_path)]) == 2
    assert f"{bad}: not a readable Inspect log" in capsys.readouterr().err
