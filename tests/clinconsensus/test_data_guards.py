"""Data that passes a naive check but would fail after model calls is refused at load time,
naming file, line, case and field (issue 18, item 8). Real files, read by the loader both
frameworks share (``load_cases``); the framework tests at the end count requests at the stand-in
server to show that nothing was sent."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.clinconsensus.dataset import load_cases, sample_path
from clinconsensus_tasks.climedbench.dataset import load_scenario, sample_dir
from clinconsensus_tasks.errors import DataValidationError

ZWSP = "\u200b"
MAX_QUESTION_CHARS, MAX_CRITERION_CHARS = 8_000, 2_000  # the documented limits (dataset.py)


def sample_records(n: int = 3) -> list[dict]:
    return [json.loads(line) for line in sample_path().read_text(encoding="utf-8").splitlines()[:n]]


def write_jsonl(path, records):
    # ensure_ascii keeps a lone surrogate as the JSON escape a real file would hold ("\ud800")
    path.write_text("".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records), encoding="utf-8")
    return path


def problems_of(path) -> list[str]:
    with pytest.raises(DataValidationError) as info:
        load_cases(str(path))
    return info.value.problems


def test_case_ids_that_differ_only_by_invisible_or_trailing_space_clash(tmp_path):
    records = sample_records(3)
    records[1]["case_id"] = records[0]["case_id"] + " "
    records[2]["case_id"] = records[0]["case_id"] + ZWSP
    path = write_jsonl(tmp_path / "ids.jsonl", records)
    hint = "('SYN-0001': ids are compared without white space and invisible characters)"
    assert problems_of(path) == [
        f"{path}:2: case_id 'SYN-0001 ': field 'case_id': duplicate of {path}:1 {hint}",
        f"{path}:3: case_id 'SYN-0001\\u200b': field 'case_id': duplicate of {path}:1 {hint}",
    ]


def test_text_of_invisible_characters_only_is_empty(tmp_path):
    records = sample_records(3)
    records[0]["rubrics"][4]["criterion"] = ZWSP * 3
    records[1]["clinical_context"] = ZWSP + "\u3000" + "\ufeff"
    records[2]["user_request"] = "\u2060 \u200d"
    path = write_jsonl(tmp_path / "blank.jsonl", records)
    assert problems_of(path) == [
        f"{path}:1: case_id 'SYN-0001': field 'rubrics[4].criterion': missing or not a non-empty string",
        f"{path}:2: case_id 'SYN-0002': field 'clinical_context': empty (only invisible characters)",
        f"{path}:3: case_id 'SYN-0003': field 'user_request': empty (only invisible characters)",
    ]


def test_absurd_lengths_are_refused_with_the_limit_stated(tmp_path):
    records = sample_records(3)
    records[0]["rubrics"][0]["criterion"] = "是" * 100_000
    records[1]["clinical_context"] = "患" * (MAX_QUESTION_CHARS - len(records[1]["user_request"]) + 1)
    records[2]["rubrics"][29]["criterion"] = "是" * MAX_CRITERION_CHARS  # at the limit: accepted
    path = write_jsonl(tmp_path / "long.jsonl", records)
    request = len(records[1]["user_request"])
    assert problems_of(path) == [
        f"{path}:1: case_id 'SYN-0001': field 'rubrics[0].criterion': 100,000 characters, more than the 2,000 allowed",
        (f"{path}:2: case_id 'SYN-0002': field 'clinical_context': the question (clinical_context "
         f"{MAX_QUESTION_CHARS - request + 1:,} + user_request {request:,} characters) is longer than the 8,000 allowed"),
    ]


def test_a_lone_surrogate_anywhere_is_named_not_an_encoding_traceback(tmp_path):
    records = sample_records(3)
    records[0]["rubrics"][2]["criterion"] = "需评估\ud800血压"
    records[1]["clinical_context"] = "患者\udfff"
    records[2]["subject_labels"] = ["心内科", "\ud83d"]
    path = write_jsonl(tmp_path / "surrogate.jsonl", records)
    assert problems_of(path) == [
        f"{path}:1: case_id 'SYN-0001': field 'rubrics[2].criterion': lone surrogate U+D800 at character 4: not valid Unicode text",
        f"{path}:2: case_id 'SYN-0002': field 'clinical_context': lone surrogate U+DFFF at character 3: not valid Unicode text",
        f"{path}:3: case_id 'SYN-0003': field 'subject_labels[1]': lone surrogate U+D83D at character 1: not valid Unicode text",
    ]
    # The message itself prints on any terminal (the surrogates are escaped, not embedded).
    str(DataValidationError(problems_of(path))).encode("utf-8")


def test_an_empty_or_unreadable_parquet_file_is_a_clear_error(tmp_path):
    empty = tmp_path / "empty.parquet"
    empty.write_bytes(b"")
    assert problems_of(empty) == [f"{empty}: empty file (0 bytes), no records"]
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    [problem] = problems_of(broken)
    assert problem.startswith(f"{broken}: not a readable parquet file: ")


def test_a_parquet_file_with_no_rows_is_the_usual_no_records_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "none.parquet"
    pq.write_table(pa.table({"case_id": pa.array([], pa.string())}), path)
    assert problems_of(path) == [f"{path}: no records"]


def test_climedbench_items_get_the_same_id_blank_and_surrogate_checks(tmp_path):
    lines = (sample_dir() / "BKT.jsonl").read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines[:3]]
    items[1]["id"] = items[0]["id"] + ZWSP
    items[2]["question"] = ZWSP
    items[0]["options"]["B"] = "\ud800"
    (tmp_path / "BKT.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    with pytest.raises(DataValidationError) as info:
        load_scenario("BKT", str(tmp_path))
    path, first = tmp_path / "BKT.jsonl", items[0]["id"]
    assert info.value.problems == [
        f"{path}:1: id {first!r}: field 'options.B': lone surrogate U+D800 at character 1: not valid Unicode text",
        (f"{path}:2: id {items[1]['id']!r}: field 'id': duplicate of {path}:1 "
         f"({first!r}: ids are compared without white space and invisible characters)"),
        f"{path}:3: id {items[2]['id']!r}: field 'question': missing or not a non-empty string",
    ]


# -- nothing is sent: both frameworks, counted at the stand-in server ---------------------------


def _bad_case(kind: str, records: list[dict]) -> None:
    """Make case 3 of 4 (``SYN-0003``) bad in one way that used to pass validation."""
    case = records[2]
    if kind == "long criterion":
        case["rubrics"][7]["criterion"] = "需" * 100_000
    elif kind == "invisible criterion":
        case["rubrics"][7]["criterion"] = ZWSP * 4
    elif kind == "surrogate in context":
        case["clinical_context"] += "\ud800"
    elif kind == "id clash":
        case["case_id"] = records[1]["case_id"] + ZWSP


BAD_DATA = {  # kind -> what the error names
    "long criterion": r"cases.jsonl:3: case_id 'SYN-0003': field 'rubrics\[7\].criterion': 100,000 characters",
    "invisible criterion": r"cases.jsonl:3: case_id 'SYN-0003': field 'rubrics\[7\].criterion': missing or not a non-empty",
    "surrogate in context": r"cases.jsonl:3: case_id 'SYN-0003': field 'clinical_context': lone surrogate U\+D800",
    "id clash": r"cases.jsonl:3: case_id 'SYN-0002\\u200b': field 'case_id': duplicate of .*cases.jsonl:2",
    "empty parquet": r"cases.parquet: empty file \(0 bytes\), no records",
}


@pytest.fixture(params=sorted(BAD_DATA))
def bad_data(request, tmp_path):
    """A data file that validated before (4 cases, one bad), and the error it must now raise."""
    if request.param == "empty parquet":
        path = tmp_path / "cases.parquet"
        path.write_bytes(b"")
        return path, BAD_DATA[request.param]
    records = sample_records(4)
    _bad_case(request.param, records)
    return write_jsonl(tmp_path / "cases.jsonl", records), BAD_DATA[request.param]


@pytest.fixture
def long_criterion_file(tmp_path):
    records = sample_records(4)
    _bad_case("long criterion", records)
    return write_jsonl(tmp_path / "cases.jsonl", records)


def test_inspect_refuses_the_data_before_any_request(fake_server, tmp_path, bad_data):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    path, error = bad_data
    with pytest.raises(DataValidationError, match=error):
        inspect_eval(clinconsensus(data=str(path)), model="openai-api/cand/cand-model",
                     model_roles={"grader": "openai-api/judge/judge-model"}, log_dir=str(tmp_path / "logs"), display="none")
    assert fake_server.stats()["calls"] == {}  # neither the model nor the judge was asked anything


def test_lmeval_refuses_the_data_before_any_request(fake_server, monkeypatch, bad_data):
    from frameworks import run_lmeval

    path, error = bad_data
    monkeypatch.setenv("CLINCONSENSUS_DATA", str(path))
    with pytest.raises(DataValidationError, match=error):
        run_lmeval(fake_server.base_url)
    assert fake_server.stats()["calls"] == {}  # not even the judge check: the data is read first


def test_lmeval_dual_task_refuses_the_data_before_checking_either_judge(fake_server, monkeypatch, long_criterion_file):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    monkeypatch.setenv("CLINCONSENSUS_DATA", str(long_criterion_file))
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("CLINCONSENSUS_LOCAL_JUDGE_BASE_URL", fake_server.base_url)
    monkeypatch.setenv("CLINCONSENSUS_LOCAL_JUDGE_MODEL", "judge-alt")
    with pytest.raises(DataValidationError, match=r"field 'rubrics\[7\].criterion': 100,000 characters"):
        simple_evaluate(tasks=["clinconsensus_dual"], model="local-chat-completions",
                        model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
                        apply_chat_template=True)
    assert fake_server.stats()["calls"] == {}  # the local judge's check used to come first
