"""export-official: verdicts written in the official scorer's input format, from real sample files."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.cli import main
from clinconsensus_tasks.clinconsensus.dataset import load_cases, sample_path
from clinconsensus_tasks.errors import DataValidationError


def write_samples(path, cases, verdicts):
    """An lm-eval --log_samples file as the clinconsensus task writes it, with given verdicts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for case in cases:
            judgments = [{"criterion_id": cid, "met": verdicts(case, i), "explanation": f"理由{i}",
                          "attempts": 1, "error": None if verdicts(case, i) is not None else "unparseable verdict: '…'"}
                         for i, (cid, _) in enumerate(case.rubrics)]
            record = {"case_id": case.case_id, "met": sum(1 for j in judgments if j["met"]), "judged": len(judgments),
                      "failures": sum(1 for j in judgments if j["met"] is None), "empty_answer": False,
                      "judge_model": "j", "judgments": judgments}
            sample = {"doc_id": 0, "doc": case.to_record(), "resps": [["回答"]], "filtered_resps": [json.dumps(record, ensure_ascii=False)]}
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")


def test_export_follows_the_data_order_and_writes_failures_as_null(tmp_path, capsys):
    cases = load_cases("sample").cases
    verdict = lambda case, i: None if i == 0 else i % 3 == 0  # noqa: E731
    samples = tmp_path / "my-model" / "samples_clinconsensus_2026.jsonl"
    write_samples(samples, list(reversed(cases)), verdict)  # the run's order differs from the data's
    out = tmp_path / "judgements"
    assert main(["export-official", str(samples), "--output", str(out), "--data", str(sample_path())]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written == [{"run": str(samples), "file": str(out / "my-model_judge.json"), "cases": 12, "failed_judgments": 12}]
    entries = json.loads((out / "my-model_judge.json").read_text(encoding="utf-8"))
    assert [e["case_id"] for e in entries] == [c.case_id for c in cases]
    first = entries[0]["criteria_results"]
    assert first[0] == {"criterion_id": cases[0].rubrics[0][0], "criteria_met": None, "explanation": "理由0"}
    assert [r["criteria_met"] for r in first[1:4]] == [False, False, True]
    assert len(first) == 30


def test_export_refuses_incomplete_or_foreign_runs(tmp_path):
    from clinconsensus_tasks.clinconsensus.official_export import export_official

    cases = load_cases("sample").cases
    samples = tmp_path / "m" / "samples_clinconsensus.jsonl"
    write_samples(samples, cases[:10], lambda case, i: True)
    with pytest.raises(DataValidationError, match=r"no verdicts for 2 case\(s\) of the data, e.g. \['SYN-0011', 'SYN-0012'\]"):
        export_official([samples], tmp_path / "out", data="sample")
    with pytest.raises(DataValidationError, match="no case records for epoch 2"):
        export_official([samples], tmp_path / "out", epoch=2)
    other = tmp_path / "other" / "m" / "samples_clinconsensus.jsonl"
    write_samples(other, cases, lambda case, i: False)
    with pytest.raises(DataValidationError, match="would both be written to"):
        export_official([samples, other], tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written
