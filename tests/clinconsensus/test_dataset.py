"""Loading and validating ClinConsensus data from every source, on real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from clinconsensus_tasks.clinconsensus.dataset import (
    HF_DATA_FILE,
    load_cases,
    load_from_hub,
    sample_path,
)
from clinconsensus_tasks.errors import DataSourceError, DataValidationError
from clinconsensus_tasks.scorers.clinconsensus.audience import audience


def sample_records():
    return [json.loads(line) for line in sample_path().read_text(encoding="utf-8").splitlines()]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_bundled_sample_is_complete_and_varied():
    loaded = load_cases("sample")
    cases = loaded.cases
    assert len(cases) >= 10 and len(loaded.sha256) == 64
    assert all(len(c.rubrics) == 30 for c in cases)
    assert {c.audience for c in cases} == {"lay", "professional"}
    assert len({c.subject for c in cases}) >= 8 and len({c.task for c in cases}) >= 6
    first = cases[0]
    assert first.question == f"{first.clinical_context}\n\n{first.user_request}"
    assert first.audience == audience(first.user_role)


def test_local_jsonl_and_parquet_give_the_same_cases(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = sample_records()
    jsonl = write_jsonl(tmp_path / "cases.jsonl", records)
    parquet = tmp_path / "cases.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet)
    from_jsonl, from_parquet = load_cases(str(jsonl)), load_cases(str(parquet))
    assert from_jsonl.cases == from_parquet.cases == load_cases("sample").cases
    assert from_parquet.source == str(parquet)


def test_every_problem_is_reported_with_file_line_case_and_field(tmp_path):
    records = sample_records()[:4]
    records[0] = {k: v for k, v in records[0].items() if k != "subject"}
    records[1]["user_request"] = "   "
    records[2]["rubrics"] = records[2]["rubrics"][:29]
    records[3]["task_labels"] = "诊断"
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    with pytest.raises(DataValidationError) as info:
        load_cases(str(path))
    assert info.value.problems == [
        f"{path}:1: case_id 'SYN-0001': field 'subject': missing",
        f"{path}:2: case_id 'SYN-0002': field 'user_request': empty",
        f"{path}:3: case_id 'SYN-0003': field 'rubrics': has 29 criteria, expected 30",
        f"{path}:4: case_id 'SYN-0004': field 'task_labels': expected a list of strings",
    ]


def test_wrong_types_duplicates_and_criteria_problems(tmp_path):
    records = sample_records()[:3]
    records[0]["difficulty"] = 1
    records[1]["rubrics"][4] = {"criterion_id": records[1]["rubrics"][3]["criterion_id"], "criterion": ""}
    records[2]["case_id"] = records[0]["case_id"]
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    with pytest.raises(DataValidationError) as info:
        load_cases(str(path))
    rid = records[1]["rubrics"][3]["criterion_id"]
    assert info.value.problems == [
        f"{path}:1: case_id 'SYN-0001': field 'difficulty': expected a string, got int",
        f"{path}:2: case_id 'SYN-0002': field 'rubrics[4].criterion_id': duplicate id '{rid}'",
        f"{path}:2: case_id 'SYN-0002': field 'rubrics[4].criterion': missing or not a non-empty string",
        # Record 3 is valid on its own but repeats the id of record 1, itself invalid: reported too.
        f"{path}:3: case_id 'SYN-0001': field 'case_id': duplicate of {path}:1",
    ]


def test_duplicate_case_ids_name_the_first_occurrence(tmp_path):
    records = sample_records()[:2]
    records[1]["case_id"] = records[0]["case_id"]
    path = write_jsonl(tmp_path / "dup.jsonl", records)
    with pytest.raises(DataValidationError, match=rf"{path}:2: case_id 'SYN-0001': field 'case_id': duplicate of {path}:1"):
        load_cases(str(path))


def test_invalid_json_and_missing_or_unknown_files(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(sample_records()[0], ensure_ascii=False) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=rf"{path}:3: invalid JSON"):
        load_cases(str(path))
    with pytest.raises(DataSourceError, match="not found.*'sample'.*'hub'"):
        load_cases(str(tmp_path / "absent.jsonl"))
    (tmp_path / "cases.csv").write_text("x", encoding="utf-8")
    with pytest.raises(DataSourceError, match="unsupported file type '.csv'"):
        load_cases(str(tmp_path / "cases.csv"))


def _validate_hub(tmp_path, **env):
    cli = [sys.executable, "-m", "clinconsensus_tasks.cli", "validate", "hub"]
    # Run outside the checkout, so the installed package is what gets imported.
    return subprocess.run(cli, env={**os.environ, **env}, capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.slow
def test_hub_unreachable_names_both_alternatives(tmp_path):
    # The hub endpoint points at a closed local port: the real failure of an unreachable hub.
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf")}
    done = _validate_hub(tmp_path, **env)
    assert done.returncode == 2
    assert "Could not load the ClinConsensus data from the Hugging Face hub (skylenage/ClinConsensus, data/clinconsensus_low.jsonl, revision default branch)" in done.stderr
    assert "-T data=/path/to/clinconsensus_low.jsonl" in done.stderr and "`-T data=sample` / `CLINCONSENSUS_DATA=sample`" in done.stderr


@pytest.mark.slow
def test_hub_in_offline_mode_fails_fast_with_the_same_advice(tmp_path):
    done = _validate_hub(tmp_path, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    assert done.returncode == 2
    assert "OfflineModeIsEnabled" in done.stderr and "`-T data=sample` / `CLINCONSENSUS_DATA=sample`" in done.stderr


def test_byte_order_mark_is_accepted_and_bad_bytes_are_located(tmp_path):
    records = sample_records()[:2]
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8"))
    assert [c.case_id for c in load_cases(str(bom)).cases] == ["SYN-0001", "SYN-0002"]
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes(json.dumps(records[0], ensure_ascii=False).encode("utf-8") + b"\n" + b'{"case_id": "caf\xe9"}\n')
    with pytest.raises(DataValidationError, match=rf"{latin}:2: not UTF-8 text \(byte 17 of the line\)"):
        load_cases(str(latin))


def test_an_empty_file_is_an_error_not_a_zero_score(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(DataValidationError, match=rf"{empty}: no records"):
        load_cases(str(empty))


def test_hub_loader_reads_a_repository_layout_with_datasets(tmp_path, monkeypatch):
    # `datasets.load_dataset` treats a local folder laid out like the hub repository the same way
    # as the hub: this runs the real hub-loading code on files made here.
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    repo = tmp_path / "ClinConsensus"
    (repo / "data").mkdir(parents=True)
    shutil.copy(sample_path(), repo / HF_DATA_FILE)
    loaded = load_from_hub(str(repo))
    assert loaded.cases == load_cases("sample").cases
    assert loaded.source == str(repo / HF_DATA_FILE)
    assert loaded.sha256 == load_cases("sample").sha256  # provenance: the sha256 of the file read


def test_hub_rows_are_validated_with_row_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    repo = tmp_path / "ClinConsensus"
    (repo / "data").mkdir(parents=True)
    records = sample_records()[:3]
    records[2]["rubrics"] = records[2]["rubrics"][:10]
    write_jsonl(repo / HF_DATA_FILE, records)
    with pytest.raises(DataValidationError) as info:
        load_from_hub(str(repo))
    assert info.value.problems == [f"{repo / HF_DATA_FILE}:3: case_id 'SYN-0003': field 'rubrics': has 10 criteria, expected 30"]


def test_criterion_ids_may_be_integers_or_absent_and_become_strings(tmp_path):
    records = sample_records()[:3]
    for i, item in enumerate(records[0]["rubrics"]):
        item["criterion_id"] = 100 + i  # integers, as the official scripts accept
    for item in records[1]["rubrics"]:
        del item["criterion_id"]  # absent: the 1-based position
    records[2]["rubrics"][0]["criterion_id"] = 7
    records[2]["rubrics"][6]["criterion_id"] = "7"  # the same id once as integer and once as string
    records[2]["rubrics"][1]["criterion_id"] = True
    del records[2]["rubrics"][2]["criterion"]
    path = write_jsonl(tmp_path / "ids.jsonl", records)
    with pytest.raises(DataValidationError) as info:
        load_cases(str(path))
    assert info.value.problems == [
        f"{path}:3: case_id 'SYN-0003': field 'rubrics[1].criterion_id': expected a non-empty string or an integer (or no criterion_id: its position)",
        f"{path}:3: case_id 'SYN-0003': field 'rubrics[2].criterion': missing or not a non-empty string",
        f"{path}:3: case_id 'SYN-0003': field 'rubrics[6].criterion_id': duplicate id '7'",
    ]
    cases = load_cases(str(write_jsonl(tmp_path / "ok.jsonl", records[:2]))).cases
    assert [cid for cid, _ in cases[0].rubrics][:3] == ["100", "101", "102"]
    assert [cid for cid, _ in cases[1].rubrics] == [str(i) for i in range(1, 31)]


def release_like(n: int = 900) -> list[dict]:
    """A file shaped like the public release: n low-tier cases, 30 rubric items each."""
    base = sample_records()[0]
    return [{**base, "case_id": f"CC-{i:04d}", "difficulty": "low"} for i in range(1, n + 1)]


def test_validate_release_passes_the_release_shape(tmp_path, capsys):
    from clinconsensus_tasks.cli import main

    path = write_jsonl(tmp_path / "clinconsensus_low.jsonl", release_like())
    report_file = tmp_path / "report" / "release.json"
    assert main(["validate", "--release", str(path), "--report", str(report_file)]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report == json.loads(report_file.read_text(encoding="utf-8"))
    assert (report["records"], report["unique_case_ids"], report["total_rubrics"]) == (900, 900, 27000)
    assert report["difficulty_counts"] == {"low": 900} and report["rubric_length_counts"] == {"30": 900}
    assert report["missing_required_fields"] == [] and report["forbidden_field_keys"] == []
    assert "release validation passed" in err


def test_validate_release_reports_every_departure(tmp_path, capsys):
    from clinconsensus_tasks.cli import main

    rows = release_like()
    rows[1]["case_id"] = rows[0]["case_id"]
    rows[2]["difficulty"] = "high"
    rows[3]["rubrics"] = rows[3]["rubrics"][:29]
    del rows[4]["user_role"]
    rows[5]["reference_answer"] = "参考答案"
    rows[6]["qc_note"] = "ok"
    rows[7]["clinical_context"] += " 联系 13812345678 或 a.b@example.com，身份证 11010519491231002X"
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    assert main(["validate", "--release", str(path)]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["duplicate_case_ids"] == 1 and report["difficulty_counts"] == {"high": 1, "low": 899}
    assert report["rubric_length_counts"] == {"29": 1, "30": 899} and report["total_rubrics"] == 26999
    assert report["missing_required_fields"] == ["user_role"]
    assert report["forbidden_field_keys"] == ["qc_note", "reference_answer"]
    assert report["contact_like_matches_for_manual_review"] == {
        "email_like": ["a.b@example.com"], "phone_like": ["13812345678"], "id_card_like": ["11010519491231002X"]}
    for problem in ("expected exactly 900 unique cases, found 900 records with 899 unique case ids", "1 duplicate case id(s)",
                    "found difficulties {'high': 1, 'low': 899}", "rubric counts per case: {'29': 1, '30': 899}",
                    "fields missing from some records: user_role", "internal-looking fields present: qc_note, reference_answer"):
        assert problem in err
    assert "contact-like" not in err  # listed for review only, unless --strict-contact
    assert main(["validate", "--release", str(path), "--strict-contact"]) == 1
    assert "contact-like strings present: email_like, phone_like, id_card_like" in capsys.readouterr().err
    # Plain validate stays lenient about the release's promises (a user's own case file).
    assert main(["validate", str(write_jsonl(tmp_path / "own.jsonl", sample_records()[:2]))]) == 0


def test_white_space_only_required_text_fails_naming_file_line_case_and_field(tmp_path):
    records = sample_records()[:3]
    records[0]["clinical_context"] = " \n\t "
    records[2]["difficulty"] = "\u3000"  # an ideographic space
    path = write_jsonl(tmp_path / "blank.jsonl", records)
    with pytest.raises(DataValidationError) as info:
        load_cases(str(path))
    assert info.value.problems == [
        f"{path}:1: case_id 'SYN-0001': field 'clinical_context': empty",
        f"{path}:3: case_id 'SYN-0003': field 'difficulty': empty",
    ]


def test_a_directory_as_data_is_named_as_such(tmp_path):
    write_jsonl(tmp_path / "cases.jsonl", sample_records()[:1])
    with pytest.raises(DataSourceError, match=rf"^ClinConsensus data {tmp_path} is a directory, not a data file: .*holds: cases.jsonl\)$"):
        load_cases(str(tmp_path))


def test_the_hub_revision_defaults_to_the_pinned_one_and_is_chosen_explicitly(monkeypatch, capsys):
    # HF_HUB_OFFLINE stands in for a machine without the hub: the error names the revision asked for.
    from clinconsensus_tasks.clinconsensus import dataset
    from clinconsensus_tasks.errors import DataSourceError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.delenv("CLINCONSENSUS_DATA_REVISION", raising=False)
    monkeypatch.setattr(dataset, "HF_DATA_REVISION", None)
    with pytest.raises(DataSourceError, match="revision default branch"):
        load_from_hub()
    assert ("reading skylenage/ClinConsensus at its default branch, which moves: the run records the commit and sha256 "
            "it read, and the release gate asks for a run pinned to a commit") in capsys.readouterr().err
    pinned = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setattr(dataset, "HF_DATA_REVISION", pinned)
    with pytest.raises(DataSourceError, match=f"revision {pinned}"):
        load_from_hub()
    assert "which moves" not in capsys.readouterr().err  # a commit pins the data: nothing to warn of
    monkeypatch.setenv("CLINCONSENSUS_DATA_REVISION", "refs/pr/1")
    with pytest.raises(DataSourceError, match="revision refs/pr/1"):
        load_from_hub()
