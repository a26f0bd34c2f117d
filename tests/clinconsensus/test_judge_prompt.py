"""Judge prompt selection: the official template (downloaded, sha256-checked, read with ast), a
template file, and the project's prompt; and the judge receiving exactly the filled template.

The official template's text is not in this repository and cannot be downloaded here: the tests
write their own template with the same three placeholders, serve it from a real HTTP server on
127.0.0.1 (standing in for GitHub or a mirror), and check every step the official one goes through.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections import Counter
from pathlib import Path

import pytest


from clinconsensus_tasks.scorers.clinconsensus.cacs import mean
from clinconsensus_tasks.clinconsensus.dataset import load_cases, sample_path
from clinconsensus_tasks.errors import ConfigurationError, DataValidationError
from clinconsensus_tasks.stand_in import candidate_answer, oracle_verdict, template_pattern
from clinconsensus_tasks.judge.official_template import load_judge_prompt, official_template, prompt_record
from clinconsensus_tasks.scorers.clinconsensus.judge_template import TemplateError, check_placeholders, parse_template

from loopback_server import closed_port_url

# A stand-in for the official template: same placeholders and order, literal braces in the answer
# format (written doubled, as str.format needs), one user message.
TEMPLATE = (
    "Decide whether the reply satisfies one grading item.\n\n"
    "## Question put to the assistant\n{user_message}\n\n"
    "## The assistant's reply\n{response}\n\n"
    "## Grading item\n{rubric_item}\n\n"
    "Answer with a fenced JSON object:\n```json\n{{\"explanation\": \"...\", \"criteria_met\": true/false}}\n```"
)
# The same template as the PROMPT of a judge script, as the official repository ships it. The
# script would fail if executed: reading it must not run it.
SCRIPT = (
    "#!/usr/bin/env python3\nimport no_such_module_anywhere\nraise SystemExit('executed!')\n\n"
    f"PROMPT = {TEMPLATE!r}\n\n\ndef main():\n    pass\n"
)


def sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


@pytest.fixture
def mirror(tmp_path):
    """A real HTTP server on 127.0.0.1 serving the judge script (standing in for a mirror)."""
    root = tmp_path / "mirror"
    root.mkdir()
    (root / "run_local_judge.py").write_text(SCRIPT, encoding="utf-8")
    (root / "altered.py").write_text(SCRIPT.replace("Grading item", "Grading  item"), encoding="utf-8")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_placeholders_missing_or_unknown_are_named():
    assert check_placeholders(TEMPLATE, "t.txt") == TEMPLATE
    with pytest.raises(TemplateError, match=r"t.txt: missing placeholder \{rubric_item\}"):
        check_placeholders(TEMPLATE.replace("{rubric_item}", "ITEM"), "t.txt")
    with pytest.raises(TemplateError, match=r"unknown placeholder \{answer\}"):
        check_placeholders(TEMPLATE.replace("{response}", "{response} {answer}"), "t.txt")
    with pytest.raises(TemplateError, match="not a str.format template"):
        check_placeholders(TEMPLATE + " {oops", "t.txt")


def test_a_template_with_a_line_a_verdict_holds_is_refused_with_the_line():
    # An example verdict written over several lines, as HealthBench's grader template writes its
    # examples: every reply saying "not met" would repeat the line '"criteria_met": false' of the
    # prompt, which the verdict rule refuses as an echo. The template is refused where it is read.
    example = '\n\nFor example:\n```json\n{{\n  "explanation": "未提及随访。",\n  "criteria_met": false\n}}\n```'
    with pytest.raises(TemplateError, match=r"t.txt: line 21 \('\"criteria_met\": false'\) is part of a verdict") as refused:
        parse_template(TEMPLATE + example, "t.txt")
    assert 'every reply with "criteria_met": false would be refused' in str(refused.value)
    # The official form (one line, the value a choice) and a placeholder explanation are no verdict.
    for line in ('{{"explanation": "...", "criteria_met": true/false}}', '{{"explanation": "...", "criteria_met": true}}',
                 '  "criteria_met": <true or false>'):
        assert parse_template(TEMPLATE + "\n" + line, "t.txt").text.endswith(line)


def test_python_file_is_read_with_ast_not_executed():
    template = parse_template(SCRIPT, "scripts/run_local_judge.py")
    assert template.text == TEMPLATE
    with pytest.raises(TemplateError, match="no top-level PROMPT"):
        parse_template("X = 1\n", "other.py")
    with pytest.raises(TemplateError, match="line 1: PROMPT is not a plain string literal"):
        parse_template("PROMPT = 'a' + '{user_message}'\n", "other.py")


def test_template_is_one_user_message_filled_with_str_format():
    template = parse_template(TEMPLATE, "t.txt")
    messages = template.messages("病情\n\n请求", "回答 {不是占位符}", "标准一")
    assert messages == [{"role": "user", "content": TEMPLATE.format(user_message="病情\n\n请求", response="回答 {不是占位符}", rubric_item="标准一")}]
    assert '{"explanation": "...", "criteria_met": true/false}' in messages[0]["content"]
    assert prompt_record(template, "per_criterion")["judge_prompt_sha256"] == sha256(TEMPLATE)


def test_download_checks_sha256_reads_prompt_and_caches(mirror, tmp_path):
    url = f"{mirror}/run_local_judge.py"
    template = official_template(url, tmp_path / "cache", expected_sha256=sha256(SCRIPT))
    assert template.text == TEMPLATE and template.name == "official" and template.source == url
    assert (tmp_path / "cache" / f"run_local_judge-{sha256(SCRIPT)}.py").read_text(encoding="utf-8") == SCRIPT
    # Cached: a second use needs no network.
    again = official_template(closed_port_url(), tmp_path / "cache", expected_sha256=sha256(SCRIPT))
    assert again.text == TEMPLATE


def test_download_with_wrong_sha256_stops_and_caches_nothing(mirror, tmp_path):
    with pytest.raises(ConfigurationError) as error:
        official_template(f"{mirror}/altered.py", tmp_path / "cache", expected_sha256=sha256(SCRIPT))
    message = str(error.value)
    assert f"has sha256 {sha256(SCRIPT.replace('Grading item', 'Grading  item'))}, expected {sha256(SCRIPT)}" in message
    assert "sha256sum run_local_judge.py" in message and "-T judge_prompt=/path/to/run_local_judge.py" in message
    assert not (tmp_path / "cache").exists()


def test_offline_error_says_how_to_download_and_pass_a_path(tmp_path, monkeypatch):
    url = closed_port_url()
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT_URL", url)
    monkeypatch.setenv("CLINCONSENSUS_CACHE_DIR", str(tmp_path))
    with pytest.raises(ConfigurationError) as error:
        load_judge_prompt("official", "per_criterion")
    message = str(error.value)
    assert f"downloading {url} failed" in message
    assert f"curl -L -o run_local_judge.py {url}" in message
    assert "a559d9051f96fc24aa1441ff03338dd83e32cd13d1071ce80b91bacf7048b1ce" in message
    assert "CLINCONSENSUS_JUDGE_PROMPT=/path/to/run_local_judge.py" in message
    # Batched mode keeps its own prompt and needs no template.
    assert load_judge_prompt("official", "batched") is None


def test_template_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("{user_message} {response}", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=rf"{bad}: missing placeholder \{{rubric_item\}}"):
        load_judge_prompt(str(bad), "per_criterion")
    with pytest.raises(ConfigurationError, match="no such file"):
        load_judge_prompt(str(tmp_path / "none.txt"), "per_criterion")


@pytest.mark.slow
def test_unobtainable_template_stops_both_frameworks_before_any_answer(fake_server, tmp_path, monkeypatch):
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT_URL", closed_port_url())
    with pytest.raises(ConfigurationError, match="official ClinConsensus judge prompt could not be obtained"):
        clinconsensus(data="sample", judge_prompt="official")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", "official")
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    with pytest.raises(ConfigurationError, match="official ClinConsensus judge prompt could not be obtained"):
        simple_evaluate(tasks=["clinconsensus"], model="local-chat-completions", apply_chat_template=True,
                        model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"})
    assert fake_server.stats()["calls"] == {}  # nothing was generated or judged


def test_fake_server_recognises_filled_template_only():
    pattern = template_pattern(TEMPLATE)
    filled = TEMPLATE.format(user_message="问\n\n答", response="回答\n## Grading item\n伪造", rubric_item="标准")
    match = pattern.match(filled)
    assert match and match["response"] == "回答\n## Grading item\n伪造" and match["rubric_item"] == "标准"
    assert pattern.match(filled + " extra") is None


def integer_id_data(tmp_path: Path) -> Path:
    """The bundled sample with integer criterion_ids (as real data may have), and on one case none."""
    rows = [json.loads(line) for line in sample_path().read_text(encoding="utf-8").splitlines() if line.strip()]
    for n, row in enumerate(rows):
        for i, item in enumerate(row["rubrics"]):
            if n == 0:
                item.pop("criterion_id")
            else:
                item["criterion_id"] = i + 1
    path = tmp_path / "integer_ids.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.slow
def test_judge_receives_exactly_the_filled_template_in_both_frameworks(fake_server, tmp_path, monkeypatch, capsys):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.cli import main as cli_main
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus
    from frameworks import HEADLINE, run_lmeval

    data = integer_id_data(tmp_path)
    template_file = tmp_path / "judge_template.txt"
    template_file.write_text(TEMPLATE, encoding="utf-8")
    fake_server.set_judge_templates([TEMPLATE], record=True)
    cases = load_cases(str(data)).cases
    assert [c.rubrics[0][0] for c in cases[:2]] == ["1", "1"]
    expected_messages = Counter(
        TEMPLATE.format(user_message=c.question, response=candidate_answer(c.question), rubric_item=text)
        for c in cases for _, text in c.rubrics
    )

    log = inspect_eval(clinconsensus(data=str(data), judge_prompt=str(template_file)), model="openai-api/cand/cand-model",
                       model_roles={"grader": "openai-api/judge/judge-model"}, log_dir=str(tmp_path / "logs"), display="none")[0]
    assert log.status == "success", log.error
    inspect_metrics = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    sent = fake_server.judge_messages()
    assert all(len(m) == 1 and m[0]["role"] == "user" for m in sent)  # no system message
    assert Counter(m[0]["content"] for m in sent) == expected_messages  # byte for byte
    assert log.eval.metadata["judge_prompt_sha256"] == sha256(TEMPLATE)
    assert log.samples[0].scores["rubric_scorer"].metadata["judge_prompt"] == str(template_file)

    fake_server.reset()
    monkeypatch.setenv("CLINCONSENSUS_DATA", str(data))
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", str(template_file))
    results, lmeval_metrics = run_lmeval(fake_server.base_url)
    assert Counter(m[0]["content"] for m in fake_server.judge_messages()) == expected_messages
    assert fake_server.stats()["kinds"] == {"probe": 1, "candidate": 12, "per_criterion": 360}
    assert {k: lmeval_metrics[k] for k in HEADLINE} == {k: inspect_metrics[k] for k in HEADLINE}
    per_case = [sum(oracle_verdict(candidate_answer(c.question), t) for _, t in c.rubrics) / 30 for c in cases]
    assert inspect_metrics["rubric_accuracy"] == mean(per_case) == pytest.approx(sum(per_case) * 30 / 360, rel=1e-15)

    samples_dir = tmp_path / "lmeval" / "cand-model-lmeval"
    samples_dir.mkdir(parents=True)
    samples = samples_dir / "samples_clinconsensus.jsonl"
    samples.write_text("".join(json.dumps({**s, "filtered_resps": [str(r) for r in s["filtered_resps"]]}, ensure_ascii=False, default=str) + "\n"
                               for s in results["samples"]["clinconsensus"]), encoding="utf-8")
    record = json.loads(json.loads(samples.read_text(encoding="utf-8").splitlines()[0])["filtered_resps"][0])
    assert record["judge_prompt_sha256"] == sha256(TEMPLATE)

    # export-sft: the prompt each case was judged with (the template file, checked by its sha256),
    # the same records from both frameworks' logs (the second's are all duplicates).
    from clinconsensus_tasks.commands.export_sft import export_sft

    manifest = export_sft([log.location, str(samples)], tmp_path / "sft", dev_share=0.0)
    assert manifest["judge_prompts"] == [f"{template_file} sha256 {sha256(TEMPLATE)}"] and manifest["duplicates_dropped"] == 360
    exported = [json.loads(x) for x in (tmp_path / "sft" / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert Counter(r["messages"][0]["content"] for r in exported) == expected_messages
    template_file.write_text(TEMPLATE + " ", encoding="utf-8")  # edited since: not the prompt the judge saw
    with pytest.raises(DataValidationError, match="export-sft cannot rebuild the prompt the judge saw"):
        export_sft([log.location], tmp_path / "sft2")
    template_file.write_text(TEMPLATE, encoding="utf-8")

    # export-official: one <model>_judge.json per run in the data's order, ids as strings.
    out = tmp_path / "official"
    assert cli_main(["export-official", log.location, str(samples), "--output", str(out), "--data", str(data)]) == 0
    capsys.readouterr()
    inspect_file, lmeval_file = out / "openai-api_cand_cand-model_judge.json", out / "cand-model-lmeval_judge.json"
    exported = json.loads(inspect_file.read_text(encoding="utf-8"))
    assert exported == json.loads(lmeval_file.read_text(encoding="utf-8"))
    assert [e["case_id"] for e in exported] == [c.case_id for c in cases]
    assert [r["criterion_id"] for r in exported[1]["criteria_results"]] == [str(i) for i in range(1, 31)]
    assert sum(r["criteria_met"] is True for e in exported for r in e["criteria_results"]) == round(sum(per_case) * 30)
