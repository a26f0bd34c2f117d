"""Reading CliMedBench logs back: one reader per format, shared by calibration and the report.

Real runs against the local server (it stands in for the user's model endpoint). An Inspect run
whose WTD scorer cannot load its embedding model, with ``fail_on_error=False``, leaves real
errored (unscored) samples in a log that says success (the model check that normally stops such a
run before generation is bypassed here, as when the model folder disappears mid-run): the reader must list each of them, the
calibration must warn about each and keep it as a missing response, and the report must refuse
the log, naming file and sample.
"""

from __future__ import annotations

import json
import math
import statistics

import pytest

from clinconsensus_tasks.adaptive import commands as cat_commands
from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.climedbench.logs import read_item_log, score_fields
from clinconsensus_tasks.errors import DataValidationError
from clinconsensus_tasks.scorers.climedbench.item_result import score_item
from clinconsensus_tasks.scorers.climedbench.scenarios import summarize

pytestmark = pytest.mark.slow


@pytest.fixture
def log_with_errored_samples(fake_server, tmp_path, similarity_model_dir):
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench, climedbench_scorer

    # The task checks its similarity model when it is built, so a missing model stops the run before
    # any answer. A scorer whose model cannot load at scoring time (a folder removed mid-run) still
    # errors every WTD sample: the same task, scored with a model that does not exist.
    built = climedbench(data_dir="sample", scenarios="SSO,WTD", similarity_model=str(similarity_model_dir))
    task = Task(dataset=built.dataset, solver=built.solver, scorer=climedbench_scorer(str(tmp_path / "no-such-model")),
                metadata=built.metadata, name="climedbench")
    log = inspect_eval(task, model="openai-api/cand/cand-model", log_dir=str(tmp_path / "logs"), display="none", fail_on_error=False)[0]
    assert log.status == "success"  # Inspect calls the run a success and leaves the errored samples out of its metrics
    return log


def test_unscored_inspect_samples_are_listed_warned_about_and_refused_by_the_report(log_with_errored_samples, tmp_path, capsys):
    log = log_with_errored_samples
    read = read_item_log(log.location)
    wtd_ids = [item["id"] for item in load_scenario("WTD", announce=False).items]
    assert (read.model, read.framework, len(read.results)) == ("openai-api/cand/cand-model", "inspect", 10)  # 10 bundled SSO items
    assert {r.scenario for r in read.results} == {"SSO"}
    assert [u.key for u in read.unscored] == [f"WTD:{i}" for i in wtd_ids]
    assert all(u.path == log.location and "Could not load the similarity model" in u.reason for u in read.unscored)
    # The scored items are exactly what Inspect logged and aggregated.
    metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    assert summarize(r.row for r in read.results)["SSO/kendall_tau"] == metrics["kendall_tau"]
    by_id = {s.id: s for s in log.samples}
    for result in read.results:
        logged = by_id[result.key].scores["climedbench_scorer"]
        # Read back from the log, with the item as asked, the fields (the explanation a reader sees too) are the logged ones.
        assert score_fields(result, read.items[result.key]) == {"value": logged.value, "answer": logged.answer, "explanation": logged.explanation, "metadata": logged.metadata}

    # Calibration: each unscored sample is a missing response, with a warning naming file and sample.
    records = cat_commands.read_item_results([log.location])
    assert len(records) == 10 + len(wtd_ids)
    assert [r for r in records if r[3] is None] == [("openai-api/cand/cand-model", f"WTD:{i}", "similarity", None) for i in wtd_ids]
    warnings = [line for line in capsys.readouterr().err.splitlines() if "has no CliMedBench score" in line]
    assert len(warnings) == len(wtd_ids) and all(log.location in w for w in warnings)
    assert f"sample 'WTD:{wtd_ids[0]}'" in warnings[0]

    # The report: a scenario score over fewer items than were asked would be wrong, so it refuses.
    from clinconsensus_tasks.report.html_report import build_report

    with pytest.raises(DataValidationError, match=rf"{len(wtd_ids)} invalid record") as raised:
        build_report([log.location], tmp_path / "report.html")
    assert f"{log.location}: sample 'WTD:{wtd_ids[0]}' has no CliMedBench score" in str(raised.value)


def _lmeval_samples(base_url, folder, bootstrap_iters=0):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    results = simple_evaluate(
        tasks=["climedbench_sso"],
        model="local-chat-completions",
        model_args={"model": "examinee-1", "base_url": f"{base_url}/chat/completions", "num_concurrent": 4},
        apply_chat_template=True,
        log_samples=True,
        bootstrap_iters=bootstrap_iters,
    )
    folder.mkdir(parents=True)
    path = folder / "samples_climedbench_sso_2026-01-01T00-00-00.jsonl"
    path.write_text("".join(json.dumps(s, ensure_ascii=False, default=str) + "\n" for s in results["samples"]["climedbench_sso"]),
                    encoding="utf-8")
    return results, path


def test_lmeval_samples_reader_and_reported_stderr(fake_server, tmp_path):
    # bootstrap_iters > 0 lets lm-eval compute stderrs; for its built-in mean that is the closed form.
    results, path = _lmeval_samples(fake_server.base_url, tmp_path / "examinee-1", bootstrap_iters=100)
    read = read_item_log(path)
    items = load_scenario("SSO", announce=False).items
    assert (read.model, read.framework, read.unscored) == ("examinee-1", "lm-eval", [])
    assert [r.item_id for r in read.results] == [i["id"] for i in items]
    for result, item in zip(read.results, items):
        # the logged answer rescored (in its logged context: clean, the item's length decile) gives the logged value
        assert result == score_item("SSO", item, result.answer, length_decile=result.length_decile)
        assert (result.variant, 1 <= result.length_decile <= 10) == ("clean", True)

    # lm-eval's mean and its standard error, computed here independently from the per-item values.
    values = [r.value for r in read.results]
    task = results["results"]["climedbench_sso"]
    assert task["kendall_tau,answer"] == pytest.approx(statistics.fmean(values), abs=1e-15)
    assert task["kendall_tau_stderr,answer"] == pytest.approx(statistics.stdev(values) / math.sqrt(len(values)), rel=1e-12)
    assert task["score_stderr,answer"] == task["kendall_tau_stderr,answer"] > 0
    failures = [0.0 if r.parsed else 1.0 for r in read.results]
    assert task["parse_failure_stderr,answer"] == pytest.approx(statistics.stdev(failures) / math.sqrt(len(failures)), rel=1e-12)


def test_lmeval_record_without_a_value_is_unscored_and_a_broken_line_is_an_error(fake_server, tmp_path, capsys):
    _, path = _lmeval_samples(fake_server.base_url, tmp_path / "examinee-1")
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[1])
    del first["kendall_tau"]  # a hand-edited or truncated file
    path.write_text("\n".join([lines[0], json.dumps(first, ensure_ascii=False), *lines[2:]]) + "\n", encoding="utf-8")
    read = read_item_log(path)
    assert len(read.results) == len(lines) - 1
    (missing,) = read.unscored
    assert (missing.sample, missing.key, missing.path) == ("line 2", f"SSO:{first['doc']['id']}", str(path))
    records = cat_commands.read_item_results([str(path)])
    assert ("examinee-1", f"SSO:{first['doc']['id']}", "kendall_tau", None) in records
    assert f"{path}: sample line 2 has no CliMedBench score: no metric value in the record" in capsys.readouterr().err

    path.write_text(lines[0] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=rf"{path}:2: "):
        read_item_log(path)


def test_unknown_file_kind_is_an_error(tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="expected an Inspect log"):
        read_item_log(other)
