"""Reading an Inspect log for its records (issue 47): the samples without their transcripts, the same
as Inspect's own reader gives them.

Every command reads a ClinConsensus or CliMedBench log for its samples' ids, inputs, outputs, scores,
metadata, errors and usage, never for the transcript (events, messages and the attachments they
point into), which is most of a log's bytes: a local ``.eval`` file is read member by member
(stdlib ``zipfile``, with the zstd support Inspect installs, each sample parsed by ``json`` and built
by Inspect's own ``EvalSample``), anything else by Inspect's reader told to leave those fields out.
The logs here are real Inspect runs against the stand-in server (the user's model and judge).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clinconsensus_tasks.log_files import TRANSCRIPT_FIELDS, read_inspect_log, read_local_eval
from clinconsensus_tasks.clinconsensus.dataset import load_cases

pytestmark = pytest.mark.slow


@pytest.fixture
def run_log(fake_server, tmp_path, monkeypatch):
    """Two epochs of 4 cases, the model under test answering 500 for one of them (those samples
    error and Inspect keeps them, --fail-on-error 0.8), the judge failure policy off."""
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    question = load_cases("sample").cases[1].question
    fake_server.script("cand-some", lambda req: (500, "down") if question in req.user else "建议及时就医，监测血压。")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD", "0")
    log = inspect_eval(clinconsensus(data="sample"), model="openai-api/cand/cand-some", model_roles={"grader": "openai-api/judge/judge-model"},
                       epochs=2, limit=4, fail_on_error=0.8, log_dir=str(tmp_path / "logs"), display="none", max_retries=1)[0]
    assert log.status == "success" and sum(s.error is not None for s in log.samples) == 2
    return Path(log.location)


def without_transcripts(log) -> dict:
    dump = log.model_dump(exclude={"location", "etag"})
    for sample in dump["samples"]:
        for name in TRANSCRIPT_FIELDS:
            sample.pop(name, None)
    return dump


def test_the_records_read_are_inspects_reading_of_every_field_but_the_transcript(run_log, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    full = read_eval_log(str(run_log))
    assert len(full.samples) == 8 and all(s.events for s in full.samples)
    fast = read_local_eval(run_log)
    assert fast is not None and [(s.id, s.epoch) for s in fast.samples] == [(s.id, s.epoch) for s in full.samples]
    assert all(not s.events and not s.messages and not s.attachments for s in fast.samples)
    assert without_transcripts(fast) == without_transcripts(full)
    assert without_transcripts(read_inspect_log(run_log)) == without_transcripts(full)
    # Inspect's reader, told to leave the transcript out, gives the same; a .json log goes that way.
    assert without_transcripts(read_eval_log(str(run_log), exclude_fields=set(TRANSCRIPT_FIELDS))) == without_transcripts(full)
    as_json = tmp_path / "run.json"
    write_eval_log(full, str(as_json))
    assert read_local_eval(as_json) is None
    assert without_transcripts(read_inspect_log(as_json)) == without_transcripts(full)
    # A log written back (rescore) is read whole.
    whole = read_inspect_log(run_log, whole=True)
    assert all(s.events for s in whole.samples) and whole.samples[0].messages == full.samples[0].messages


def test_a_log_cut_short_is_named_whichever_reader_meets_it(run_log, tmp_path):
    from clinconsensus_tasks.log_files import UnreadableLog

    data = run_log.read_bytes()
    for keep in (len(data) // 2, len(data) - 30):
        cut = tmp_path / f"cut-{keep}.eval"
        cut.write_bytes(data[:keep])
        with pytest.raises(UnreadableLog, match=f"{cut.name}: not a readable Inspect log"):
            read_inspect_log(cut)
    # A zip, but not Inspect's: no members at all, or its members without the header; and a log
    # whose first sample member is cut in half (every other member whole).
    import zipfile

    import zipfile_zstd  # noqa: F401 -- Inspect writes its members zstd-compressed

    empty, stranger, half = tmp_path / "empty.eval", tmp_path / "stranger.eval", tmp_path / "half-sample.eval"
    zipfile.ZipFile(empty, "w").close()
    with zipfile.ZipFile(stranger, "w") as archive:
        archive.writestr("notes.txt", "not a log")
    with zipfile.ZipFile(run_log) as source, zipfile.ZipFile(half, "w") as target:
        first = next(n for n in source.namelist() if n.startswith("samples/"))
        for name in source.namelist():
            data = source.read(name)
            target.writestr(name, data[: len(data) // 2] if name == first else data)
    for bad in (empty, stranger, half):
        for header_only in (True, False):
            if bad is half and header_only:
                continue  # its header is whole
            with pytest.raises(UnreadableLog, match=f"{bad.name}: not a readable Inspect log"):
                read_inspect_log(bad, header_only=header_only)


def test_a_sample_is_read_as_json_reads_it_less_its_transcript():
    # The transcript is skipped unread (msgspec's split), the rest read by json: equal to json.loads
    # less those fields, key order kept; JSON only json takes (a bare NaN) is read whole by json.
    import json

    from clinconsensus_tasks.log_files import TRANSCRIPT_FIELDS, without_transcript

    sample = {"id": "SYN-0001", "epoch": 1, "input": "问题\n\"引号\" \\ 反斜杠 \u2028", "events": [{"x": "}]\"{["}] * 3,
              "scores": {"rubric_scorer": {"value": {"met": 3}, "metadata": {"judgments": [{"met": True, "explanation": "满足"}]}}},
              "attachments": {"a" * 32: "长" * 10_000}, "metadata": {"n": 1.5e-300, "big": 2**70}, "messages": []}
    raw = json.dumps(sample, ensure_ascii=False).encode("utf-8")
    expected = {k: v for k, v in json.loads(raw).items() if k not in TRANSCRIPT_FIELDS}
    assert without_transcript(raw) == expected and list(without_transcript(raw)) == list(expected)
    odd = b'{"id": 1, "metadata": {"score": NaN}, "events": [1, 2]}'
    got = without_transcript(odd)
    assert list(got) == ["id", "metadata"] and got["metadata"]["score"] != got["metadata"]["score"]  # NaN, read by json


def test_one_name_per_model_for_the_report_the_gate_and_the_check():
    # Inspect's provider/[service/]name, lm-eval's output folder: the model as its server knows it.
    from clinconsensus_tasks.log_files import model_display_name

    assert [model_display_name(m) for m in ("openai-api/cand/org/model-7b", "openai-compatible/vllm/org/model-7b", "openai/gpt-4.1",
                                            "hf/org/model-7b", "org__model-7b", "cand-model")] == \
        ["org/model-7b", "org/model-7b", "gpt-4.1", "org/model-7b", "org/model-7b", "cand-model"]
