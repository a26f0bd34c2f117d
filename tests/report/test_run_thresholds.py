"""The k of Pass@k and CACS@k a run reported, as the report reads it from an lm-eval run's files
(Inspect's: its task arguments, checked end to end in ``test_report.py``)."""

from __future__ import annotations

import json

from clinconsensus_tasks.report.runs import _lmeval_thresholds, with_defaults


def test_an_lmeval_runs_thresholds_come_from_its_results_file(tmp_path):
    samples = tmp_path / "samples_clinconsensus_2026-11-25T10-00-00.123456.jsonl"
    samples.write_text("{}\n", encoding="utf-8")
    assert _lmeval_thresholds(samples) == (10, 7)  # no results file: the paper's k
    metrics = {"cacs@10,judge": 0.2, "cacs@7,judge": 0.3, "cacs@5,judge": 0.4, "pass@5,judge": 0.9,
               "cacs@10(subject=心内科),judge": 0.1, "cacs@10_stderr,judge": 0.01}
    (tmp_path / "results_2026-11-25T10-00-00.123456.json").write_text(json.dumps({"results": {"clinconsensus": metrics}}),
                                                                      encoding="utf-8")
    (tmp_path / "results_2026-11-24T09-00-00.000000.json").write_text(json.dumps({"results": {"clinconsensus": {"cacs@3,judge": 0}}}),
                                                                      encoding="utf-8")  # another run's
    assert _lmeval_thresholds(samples) == (10, 7, 5)
    assert with_defaults([12, 5]) == (12, 10, 7, 5)


def test_the_thresholds_a_list_of_metric_names_reports():
    from clinconsensus_tasks.scorers.clinconsensus.metric_table import reported_thresholds

    assert reported_thresholds(["cacs@10", "cacs@7", "pass@5", "rubric_accuracy"]) == (10, 7)
    assert reported_thresholds(["cacs@5,judge", "cacs@10(subject=心内科),judge", "cacs@10_stderr,judge"]) == (5,)
    assert reported_thresholds([]) == ()
