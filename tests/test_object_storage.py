"""Runs in shared storage (issue 40): every command that reads runs, on ``s3://`` URLs as on local paths.

What stands in for what: moto's ``ThreadedMotoServer`` on 127.0.0.1 (``tests/s3_server.py``) stands
in for the team's bucket (AWS S3, or MinIO/Ceph behind ``AWS_ENDPOINT_URL``). It speaks the S3 REST
protocol over real HTTP, so the real clients talk to it unchanged: s3fs (the project's readers,
fsspec ``put`` of an lm-eval output folder) and Inspect's own log writer (``--log-dir s3://...``).
The credentials are dummies from the environment (botocore's standard chain); the model and the
judge are the project's stand-in server (``fake_server``), as in the framework tests.

Fast tests: finding runs under a prefix (one listing, counted at the server), the bad inputs (no
bucket, refused credentials, an endpoint that does not answer, no credentials, a prefix without
runs, an object cut short, a protocol without its library), the commands that read one log at a
time, and outputs written to URLs. Slow tests: a real ``inspect eval`` and a real lm-eval run into
the bucket, then ``summarize`` (plain and ``--strict``), ``report --output s3://...`` and
``compare-models --junit s3://...`` on the URLs; CliMedBench runs for ``robustness``, ``report
--baseline`` and ``cat calibrate``: each compared with the same command on a local copy of the
same files.
"""

from __future__ import annotations

import json
import uuid

import pytest

import s3_server  # moto[server], in the test extra: missing, these tests fail rather than skip
from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.dataset import load_cases


def samples_text(cases, met_every: int = 3) -> str:
    """An lm-eval ``--log_samples`` file of the clinconsensus task, with given verdicts."""
    lines = []
    for case in cases:
        judgments = [{"criterion_id": cid, "met": i % met_every == 0, "explanation": f"理由{i}", "attempts": 1, "error": None}
                     for i, (cid, _) in enumerate(case.rubrics)]
        record = {"case_id": case.case_id, "met": sum(j["met"] for j in judgments), "judged": len(judgments), "failures": 0,
                  "empty_answer": False, "judge_model": "j", "judge_mode": "per_criterion", "judgments": judgments}
        lines.append(json.dumps({"doc_id": 0, "doc": case.to_record(), "resps": [["回答"]],
                                 "filtered_resps": [json.dumps(record, ensure_ascii=False)]}, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


SAMPLES = "samples_clinconsensus_2026-01-01T00-00-00.000000.jsonl"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- finding runs ----------------------------------------------------------------------------------


def test_finding_runs_under_a_prefix_is_one_listing(bucket):
    from clinconsensus_tasks.log_files import find_logs, run_files

    logs = [f"logs/m{i:03d}/{SAMPLES}" for i in range(40)] + ["logs/2026-01-01T00-00-00_clinconsensus_x.eval"]
    other = ["logs/readme.txt", "logs/m000/.hidden.eval", "logs/m001/notes.json", "elsewhere/2026-01-01T00-00-00_x.eval"]
    bucket.fs.pipe({f"{bucket.name}/{key}": b"{}" for key in logs + other})
    s3_server.clear_client_caches()  # no listing cached by the uploads
    bucket.server.reset()
    found = find_logs([bucket.url("logs")])
    assert [str(p) for p in found] == sorted(bucket.url(k) for k in logs)
    seen = bucket.server.seen()
    assert len(s3_server.listings(seen)) == 1 and len(seen) == 1, seen  # one listing, no request per object
    # A trailing slash, a URL naming one object, and a folder holding one run.
    assert [str(p) for p in find_logs([bucket.url("logs/")])] == [str(p) for p in found]
    assert [str(p) for p in find_logs([bucket.url(logs[0])])] == [bucket.url(logs[0])]
    assert [str(p) for p in run_files(bucket.url("logs/m007"))] == [bucket.url(f"logs/m007/{SAMPLES}")]


def test_the_gates_find_lmeval_runs_under_a_prefix_without_a_request_per_object(bucket):
    from clinconsensus_tasks.gates.facts import gate_runs

    stamp = "2026-01-01T00-00-00.000000"
    results = json.dumps({"configs": {"clinconsensus": {}}, "results": {}}).encode()
    objects = {}
    for i in range(25):
        objects[f"{bucket.name}/results/m{i:02d}/results_{stamp}.json"] = results
        objects[f"{bucket.name}/results/m{i:02d}/samples_clinconsensus_{stamp}.jsonl"] = b"{}"
    bucket.fs.pipe(objects)
    s3_server.clear_client_caches()
    bucket.server.reset()
    readers = gate_runs([bucket.url("results")])
    assert len(readers) == 25
    seen = bucket.server.seen()
    # One listing, then each results file read once (to learn its tasks); no HEAD for the samples beside them.
    assert len(s3_server.listings(seen)) == 1 and not [r for r in seen if r[0] == "HEAD"], seen
    assert sorted(r[1] for r in seen if r[0] == "GET" and not r[2]) == sorted(f"/{k}" for k in objects if k.endswith(".json"))


def test_plain_summarize_takes_folders_and_urls(bucket, tmp_path, capsys):
    cases = load_cases("sample").cases
    local = tmp_path / "results" / "cand-model" / SAMPLES
    local.parent.mkdir(parents=True)
    local.write_text(samples_text(cases), encoding="utf-8")
    bucket.fs.put(str(tmp_path / "results"), f"{bucket.name}/results", recursive=True)

    code, by_file, _ = run_cli(capsys, "summarize", "--json", str(local))
    assert code == 0
    code, by_folder, _ = run_cli(capsys, "summarize", "--json", str(tmp_path / "results"))
    assert code == 0 and json.loads(by_folder) == json.loads(by_file)  # the folder: the one run it holds
    url = bucket.url(f"results/cand-model/{SAMPLES}")
    for argument in (url, bucket.url("results"), bucket.url("results/")):
        code, out, err = run_cli(capsys, "summarize", "--json", argument)
        assert code == 0, err
        assert json.loads(out) == {url: json.loads(by_file)[str(local)]}
    code, out, _ = run_cli(capsys, "summarize", bucket.url("results"))  # the tables too
    assert code == 0 and f"== {url}  (12 cases, 0 judge failures)" in out


# -- bad input: a clear error naming the URL, exit codes as for local paths --------------------------


@pytest.mark.parametrize("command", [["summarize"], ["summarize", "--strict"], ["report", "--output", "REPORT"]])
def test_bad_locations_name_the_url(bucket, tmp_path, capsys, command):
    command = [str(tmp_path / "r.html") if a == "REPORT" else a for a in command]
    code, _, local_err = run_cli(capsys, *command, str(tmp_path / "nothing-here"))
    assert code == 2 and "no such log file or folder" in local_err
    missing = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/logs"
    code, _, err = run_cli(capsys, *command, missing)
    assert code == 2 and missing in err and "bucket does not exist" in err
    empty = bucket.url("no-runs-here")
    code, _, err = run_cli(capsys, *command, empty)
    assert code == 2 and f"no such log file or folder: {empty}" in err
    bucket.fs.pipe(f"{bucket.name}/notes/readme.txt", b"not a run")
    code, _, err = run_cli(capsys, *command, bucket.url("notes"))
    assert code == 2 and f"no Inspect logs or lm-eval samples/results files in the folder {bucket.url('notes')}" in err


def test_refused_credentials_name_the_url_and_print_no_secret(bucket, capsys):
    from moto.core.authorization import enable_iam_authentication

    bucket.fs.pipe(f"{bucket.name}/logs/m/{SAMPLES}", samples_text(load_cases("sample").cases).encode())
    s3_server.clear_client_caches()
    with enable_iam_authentication():  # moto now checks keys against its IAM users: ours is unknown (403 InvalidAccessKeyId)
        for command in (["summarize"], ["summarize", "--strict"], ["report", "--output", bucket.url("out/r.html")]):
            code, out, err = run_cli(capsys, *command, bucket.url("logs"))
            assert code == 2 and bucket.url("logs") in err and "refused access" in err, err
            assert s3_server.ENVIRONMENT["AWS_SECRET_ACCESS_KEY"] not in out + err
            assert s3_server.ENVIRONMENT["AWS_ACCESS_KEY_ID"] not in out + err


def test_an_unreachable_endpoint_or_no_credentials_name_the_url(monkeypatch, capsys):
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # botocore asks once (its retries would only slow the test)
    for name, value in s3_server.ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    s3_server.clear_client_caches()
    code, _, err = run_cli(capsys, "summarize", "s3://evals/logs")
    assert code == 2 and "s3://evals/logs: could not connect to the store" in err, err
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to ask
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    s3_server.clear_client_caches()
    code, _, err = run_cli(capsys, "summarize", "s3://evals/logs")
    assert code == 2 and "s3://evals/logs: no credentials found" in err, err
    s3_server.clear_client_caches()


def test_objects_cut_short_name_the_url(bucket, capsys):
    text = samples_text(load_cases("sample").cases)
    bucket.fs.pipe(f"{bucket.name}/cut/m/{SAMPLES}", text.encode()[: len(text.encode()) // 2])
    code, _, err = run_cli(capsys, "summarize", bucket.url("cut"))
    assert code == 2 and bucket.url(f"cut/m/{SAMPLES}") in err and "invalid" in err.lower()
    bucket.fs.pipe(f"{bucket.name}/cuteval/2026-01-01T00-00-00_clinconsensus_x.eval", b"PK\x03\x04 cut short")
    code, _, err = run_cli(capsys, "summarize", bucket.url("cuteval/2026-01-01T00-00-00_clinconsensus_x.eval"))
    assert code == 2 and "not a readable Inspect log" in err and bucket.url("cuteval/") in err


def test_a_protocol_whose_library_is_missing_names_the_package(capsys):
    import importlib.util

    for url, package in (("gs://team-bucket/logs", "gcsfs"), ("az://team-container/logs", "adlfs")):
        if importlib.util.find_spec(package):
            continue  # installed here: nothing to name
        code, _, err = run_cli(capsys, "summarize", url)
        assert code == 2 and url in err and f"pip install {package}" in err, err
    code, _, err = run_cli(capsys, "summarize", "nosuchproto://x/y")
    assert code == 2 and "nosuchproto://x/y" in err and "no protocol" in err


def test_commands_that_read_each_log_take_urls(bucket, tmp_path, capsys):
    """export-official, export-sft and compare on URLs: the same output as on the local files."""
    cases = load_cases("sample").cases
    for name, every in (("model-a", 3), ("model-b", 2)):
        local = tmp_path / "results" / name / SAMPLES
        local.parent.mkdir(parents=True)
        local.write_text(samples_text(cases, every), encoding="utf-8")
    bucket.fs.put(str(tmp_path / "results"), f"{bucket.name}/results", recursive=True)
    root, local_root = bucket.url("results"), str(tmp_path / "results")
    a, b = f"{root}/model-a/{SAMPLES}", f"{root}/model-b/{SAMPLES}"

    code, out, err = run_cli(capsys, "export-official", root, "--output", bucket.url("official"))
    assert code == 0, err
    assert run_cli(capsys, "export-official", local_root, "--output", str(tmp_path / "official"))[0] == 0
    for name in ("model-a", "model-b"):
        assert bucket.fs.cat(f"{bucket.name}/official/{name}_judge.json") == (tmp_path / "official" / f"{name}_judge.json").read_bytes()

    code, out, err = run_cli(capsys, "export-sft", a, "--output", bucket.url("sft"))
    assert code == 0, err
    assert run_cli(capsys, "export-sft", str(tmp_path / "results" / "model-a" / SAMPLES), "--output", str(tmp_path / "sft"))[0] == 0
    for name in ("train.jsonl", "dev.jsonl"):
        assert bucket.fs.cat(f"{bucket.name}/sft/{name}") == (tmp_path / "sft" / name).read_bytes()

    code, remote, err = run_cli(capsys, "compare", a, b, "--json")
    assert code == 0, err
    code, here, _ = run_cli(capsys, "compare", str(tmp_path / "results" / "model-a" / SAMPLES),
                            str(tmp_path / "results" / "model-b" / SAMPLES), "--json")
    assert json.loads(remote) == json.loads(here)
    code, by_folder, err = run_cli(capsys, "compare", f"{root}/model-a", f"{root}/model-b", "--json")  # folders holding one run
    assert code == 0 and json.loads(by_folder) == json.loads(here), err
    code, several, err = run_cli(capsys, "compare", root, "--json")
    assert code == 2 and f"{root}: holds 2 clinconsensus logs" in err

    code, remote_ids, err = run_cli(capsys, "audit", f"{root}/model-a", "--sample-ids", "--share", "0.5")
    assert code == 0, err
    assert remote_ids == run_cli(capsys, "audit", str(tmp_path / "results" / "model-a"), "--sample-ids", "--share", "0.5")[1]


# -- outputs to URLs ---------------------------------------------------------------------------------


def test_csv_output_to_a_url_equals_the_local_files(bucket, tmp_path, capsys):
    local = tmp_path / "m" / SAMPLES
    local.parent.mkdir()
    local.write_text(samples_text(load_cases("sample").cases), encoding="utf-8")
    assert run_cli(capsys, "summarize", str(local), "--csv", str(tmp_path / "csv"))[0] == 0
    assert run_cli(capsys, "summarize", str(local), "--csv", bucket.url("out/csv"))[0] == 0
    for name in ("cases.csv", "summary.csv"):
        assert bucket.fs.cat(f"{bucket.name}/out/csv/{name}") == (tmp_path / "csv" / name).read_bytes()


def test_an_output_to_a_missing_bucket_names_it(bucket, tmp_path, capsys):
    local = tmp_path / "m" / SAMPLES
    local.parent.mkdir()
    local.write_text(samples_text(load_cases("sample").cases), encoding="utf-8")
    missing = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/csv"
    code, _, err = run_cli(capsys, "summarize", str(local), "--csv", missing)
    assert code == 2 and missing in err and "bucket does not exist" in err


# -- end to end: the frameworks' own writers, then every command on the URLs ---------------------------


def _without(text: str, *prefixes: str) -> str:
    for prefix in prefixes:
        text = text.replace(prefix, "<ROOT>")
    return text


@pytest.mark.slow
def test_inspect_run_logged_to_a_bucket(fake_server, bucket, tmp_path, capsys):
    from frameworks import expected_metrics, run_inspect

    log, metrics = run_inspect(bucket.url("logs"))  # Inspect's own writer: --log-dir s3://...
    assert log.location.startswith(bucket.url("logs/")), log.location
    assert {k: metrics[k] for k in expected_metrics()} == expected_metrics()
    local = tmp_path / "logs"
    bucket.fs.get(f"{bucket.name}/logs", str(local), recursive=True)  # the same objects, on local disk
    (local_log,) = local.glob("*.eval")

    code, remote, err = run_cli(capsys, "summarize", "--json", bucket.url("logs"))
    assert code == 0, err
    code, here, _ = run_cli(capsys, "summarize", "--json", str(local))
    assert code == 0
    assert list(json.loads(remote)) == [log.location]
    assert json.loads(remote)[log.location] == json.loads(here)[str(local_log)]
    overall = json.loads(remote)[log.location]["overall"]
    assert {k: overall[k] for k in expected_metrics()} == expected_metrics()

    code, remote_gate, _ = run_cli(capsys, "summarize", "--strict", bucket.url("logs"))
    local_code, local_gate, _ = run_cli(capsys, "summarize", "--strict", str(local))
    assert code == local_code == 1  # the bundled sample is no release run: the same verdict, the same lines
    assert _without(remote_gate, log.location) == _without(local_gate, str(local_log))

    code, out, err = run_cli(capsys, "report", bucket.url("logs"), "--output", bucket.url("reports/report.html"))
    assert code == 0, err
    info = json.loads(out)
    assert info["html"] == bucket.url("reports/report.html") and info["markdown"] == bucket.url("reports/report.md")
    assert run_cli(capsys, "report", str(local), "--output", str(tmp_path / "reports" / "report.html"))[0] == 0
    remote_md = bucket.fs.cat(f"{bucket.name}/reports/report.md").decode("utf-8")
    local_md = (tmp_path / "reports" / "report.md").read_text(encoding="utf-8")
    assert _without(remote_md, log.location) == _without(local_md, str(local_log))
    assert b"<svg" in bucket.fs.cat(f"{bucket.name}/reports/report.html")


@pytest.mark.slow
def test_lmeval_output_folder_uploaded_to_a_bucket(fake_server, bucket, tmp_path, capsys):
    from frameworks import expected_metrics, run_lmeval

    run_lmeval(fake_server.base_url, output_path=tmp_path / "results")
    bucket.fs.put(str(tmp_path / "results"), f"{bucket.name}/results", recursive=True)  # as a team uploads it
    root = bucket.url("results")

    code, remote, err = run_cli(capsys, "summarize", "--json", root)
    assert code == 0, err
    code, here, _ = run_cli(capsys, "summarize", "--json", str(tmp_path / "results"))
    assert code == 0
    (remote_key,), (local_key,) = json.loads(remote), json.loads(here)
    assert remote_key.startswith(root + "/") and json.loads(remote)[remote_key] == json.loads(here)[local_key]
    overall = json.loads(remote)[remote_key]["overall"]
    assert {k: overall[k] for k in expected_metrics()} == expected_metrics()

    local_root = str(tmp_path / "results")
    code, remote_gate, _ = run_cli(capsys, "summarize", "--strict", root)
    local_code, local_gate, _ = run_cli(capsys, "summarize", "--strict", local_root)
    assert code == local_code and _without(remote_gate, root) == _without(local_gate, local_root)

    code, out, err = run_cli(capsys, "report", root, "--output", bucket.url("reports/report.html"),
                             "--markdown", bucket.url("reports/summary.md"))
    assert code == 0, err
    assert run_cli(capsys, "report", local_root, "--output", str(tmp_path / "rep" / "report.html"))[0] == 0
    remote_md = bucket.fs.cat(f"{bucket.name}/reports/summary.md").decode("utf-8")
    assert _without(remote_md, root) == _without((tmp_path / "rep" / "report.md").read_text(encoding="utf-8"), local_root)

    # compare-models reads two runs at URLs; its JUnit file goes to a URL too.
    code, out, err = run_cli(capsys, "compare-models", root, root, "--json", "--junit", bucket.url("reports/junit.xml"))
    local_code, local_out, _ = run_cli(capsys, "compare-models", local_root, local_root, "--json",
                                       "--junit", str(tmp_path / "junit.xml"))
    assert code == local_code, err
    assert _without(out, root) == _without(local_out, local_root)
    assert _without(bucket.fs.cat(f"{bucket.name}/reports/junit.xml").decode(), root) == \
        _without((tmp_path / "junit.xml").read_text(encoding="utf-8"), local_root)

    # A run at a URL read once: served again while the store says the object is the same (size, ETag,
    # modification time), read again once it is written over, even to the same size.
    cache = str(tmp_path / "runs-cache")

    def cached_report(name: str) -> tuple[dict, bytes]:
        code, out, err = run_cli(capsys, "report", root, "--output", str(tmp_path / name / "r.html"), "--runs-cache", cache)
        assert code == 0, err
        return json.loads(out)["runs_cache"], (tmp_path / name / "report.md").read_bytes()

    files = 2  # the samples file and its results file
    cold, cold_md = cached_report("cold")
    warm, warm_md = cached_report("warm")
    assert (cold["read"], cold["served"], warm["read"], warm["served"]) == (files, 0, 0, files) and warm_md == cold_md
    (samples_key,) = [k for k in bucket.fs.find(f"{bucket.name}/results") if "/samples_clinconsensus_" in k]
    data = bucket.fs.cat(samples_key)
    first, rest = data.split(b"\n", 1)
    row = json.loads(first)
    record = json.loads(row["filtered_resps"][0])
    record["judgments"][0]["met"] = not record["judgments"][0]["met"]
    record["met"] += 1 if record["judgments"][0]["met"] else -1
    row["filtered_resps"] = [json.dumps(record, ensure_ascii=False)]
    line = json.dumps(row, ensure_ascii=False).encode("utf-8")
    line += b" " * (len(first) - len(line)) if len(line) < len(first) else b""
    line = line.replace(b', "', b',"', len(line) - len(first)) if len(line) > len(first) else line
    assert len(line) == len(first)
    bucket.fs.pipe(samples_key, line + b"\n" + rest)
    bucket.fs.invalidate_cache()
    again, again_md = cached_report("again")
    assert (again["read"], again["served"]) == (1, files - 1) and again_md != warm_md
    code, out, err = run_cli(capsys, "report", root, "--output", str(tmp_path / "fresh" / "r.html"), "--no-runs-cache")
    assert code == 0 and "runs_cache" not in json.loads(out) and (tmp_path / "fresh" / "report.md").read_bytes() == again_md


@pytest.mark.slow
def test_climedbench_runs_in_a_bucket_robustness_and_report_baseline(fake_server, bucket, tmp_path, capsys):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench

    for name, variant, model in (("clean", "clean", "cand-model"), ("perturbed", "perturbed", "cand-model"),
                                 ("other", "clean", "examinee-2")):
        log = inspect_eval(climedbench(data_dir="sample", scenarios="ID1,BKT,SSO", variant=variant), model=f"openai-api/cand/{model}",
                           log_dir=bucket.url(f"cmb/{name}"), display="none")[0]
        assert log.status == "success", log.error
    bucket.fs.get(f"{bucket.name}/cmb", str(tmp_path / "cmb"), recursive=True)
    root, local_root = bucket.url("cmb"), str(tmp_path / "cmb")

    code, remote, err = run_cli(capsys, "robustness", f"{root}/clean", f"{root}/perturbed", "--json")
    assert code == 0, err
    code, here, _ = run_cli(capsys, "robustness", f"{local_root}/clean", f"{local_root}/perturbed", "--json")
    assert code == 0 and json.loads(remote)["drops"] == json.loads(here)["drops"]

    code, out, err = run_cli(capsys, "report", root, "--baseline", f"{root}/clean", "--output", bucket.url("reports/r.html"))
    assert code == 0, err
    assert run_cli(capsys, "report", local_root, "--baseline", f"{local_root}/clean", "--output", str(tmp_path / "r" / "r.html"))[0] == 0
    remote_md = bucket.fs.cat(f"{bucket.name}/reports/report.md").decode("utf-8")
    local_md = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "Against the baseline" in remote_md
    assert _without(remote_md, root) == _without(local_md, local_root)

    # cat calibrate: runs at URLs (folders), the bank written to a URL.
    code, _, err = run_cli(capsys, "cat", "calibrate", f"{root}/clean", f"{root}/other", "--irt-model", "1PL",
                           "--output", bucket.url("banks/bank.json"))
    assert code == 0, err
    assert run_cli(capsys, "cat", "calibrate", f"{local_root}/clean", f"{local_root}/other", "--irt-model", "1PL",
                   "--output", str(tmp_path / "bank.json"))[0] == 0
    remote_bank = json.loads(bucket.fs.cat(f"{bucket.name}/banks/bank.json"))
    local_bank = json.loads((tmp_path / "bank.json").read_text(encoding="utf-8"))
    assert remote_bank["items"] == local_bank["items"]
    assert [s["sha256"] for s in remote_bank["provenance"]["sources"]] == [s["sha256"] for s in local_bank["provenance"]["sources"]]

    # cat run: the bank read from the bucket, the resumable state kept there (a machine that takes
    # over resumes from it: the answers given are not asked for again); cat synthesize's records too.
    from clinconsensus_tasks.adaptive import commands as cat_commands

    fake_server.reset()
    first = cat_commands.run_adaptive("openai-api/cand/examinee-6", bucket.url("banks/bank.json"), bucket.url("cat/run"), max_items=3)
    assert first["items_used"] == 3 and fake_server.stats()["kinds"] == {"candidate": 3}
    fake_server.reset()
    second = cat_commands.run_adaptive("openai-api/cand/examinee-6", bucket.url("banks/bank.json"), bucket.url("cat/run"), max_items=5)
    assert fake_server.stats()["kinds"] == {"candidate": 2} and second["items"][:3] == first["items"]
    assert json.loads(bucket.fs.cat(f"{bucket.name}/cat/run/result.json"))["items_used"] == 5
    assert len(json.loads(bucket.fs.cat(f"{bucket.name}/cat/run/state.json"))["answers"]) == 5
    counts = cat_commands.synthesize("openai-api/cand/examinee-7", "openai-api/cand/examinee-8", bucket.url("cat/synthetic.jsonl"),
                                     scenarios=["ID1"], limit=2)
    assert counts["records"] == 6 and len(bucket.fs.cat(f"{bucket.name}/cat/synthetic.jsonl").decode().splitlines()) == 6


# -- the review commands of issue 39, at URLs ----------------------------------------------------------


def test_a_review_exported_to_a_bucket_and_scored_from_it_equals_the_local_one(bucket, tmp_path, capsys):
    """A team keeps the review beside the runs: ``review export --output s3://...``, the sheets
    fetched, filled and put back, ``review score s3://...``, and ``report``/``summarize --review``
    (which read the review folder through the same ``load_review``)."""
    from review.test_review import N, fill_xlsx, physician_met, run_of

    from clinconsensus_tasks.run_records.review_export import plan_review, write_review

    local, remote = tmp_path / "review", bucket.url("review")
    for where in (local, remote):
        write_review(plan_review([run_of()], 4, None, 1, 0.0, 0), where)
    assert sorted(bucket.fs.ls(f"{bucket.name}/review")) == sorted(f"{bucket.name}/review/{p.name}" for p in local.iterdir())
    from clinconsensus_tasks.run_records.review_sheets import read_sheet

    bucket.fs.get(f"{bucket.name}/review/physician_1.xlsx", str(tmp_path / "fetched.xlsx"))  # (an XLSX holds its write time)
    assert read_sheet(tmp_path / "fetched.xlsx").rows == read_sheet(local / "physician_1.xlsx").rows
    assert bucket.fs.cat(f"{bucket.name}/review/physician_1.csv") == (local / "physician_1.csv").read_bytes()

    fill_xlsx(local / "physician_1.xlsx", physician_met)  # the physician's filled sheet, put back beside the key
    bucket.fs.put(str(local / "physician_1.xlsx"), f"{bucket.name}/review/physician_1.xlsx")
    bucket.server.reset()
    s3_server.clear_client_caches()
    code, out, err = run_cli(capsys, "review", "score", remote, "--json")
    assert code == 0, err
    assert len(s3_server.listings(bucket.server.seen())) == 1  # the folder's files found in one listing
    local_code, local_out, _ = run_cli(capsys, "review", "score", str(local), "--json")
    assert local_code == 0
    assert _without(out, remote) == _without(local_out, str(local))
    assert json.loads(out)["judges"][0]["overall"]["kappa"]["estimate"] == pytest.approx(0.7) and N == 10
    # s3a:// (Hadoop's spelling; s3fs lists it as s3://) finds the same folder and gives the same figures.
    code, alias_out, err = run_cli(capsys, "review", "score", remote.replace("s3://", "s3a://", 1), "--json")
    assert code == 0, err
    assert alias_out == out

    # A prefix with nothing under it is named; a second export into a prefix that holds a review is refused.
    code, _, err = run_cli(capsys, "review", "score", bucket.url("nothing-here"))
    assert code == 2 and f"no such review folder: {bucket.url('nothing-here')}" in err
    with pytest.raises(Exception, match="already holds a review"):
        write_review(plan_review([run_of()], 4, None, 1, 0.0, 0), remote)


def test_validate_release_report_to_a_url(bucket, tmp_path, capsys):
    from clinconsensus.test_dataset import release_like, write_jsonl

    path = write_jsonl(tmp_path / "clinconsensus_low.jsonl", release_like())
    code, out, err = run_cli(capsys, "validate", "--release", str(path), "--report", bucket.url("checks/release.json"))
    assert code == 0, err
    assert json.loads(bucket.fs.cat(f"{bucket.name}/checks/release.json")) == json.loads(out)


@pytest.mark.slow
def test_a_reliability_check_in_a_bucket(fake_server, bucket, tmp_path, capsys):
    # The run in the bucket, the check's folder in the bucket: asked, resumed, gated and reported from
    # there; the figures equal a check kept on local disk.
    from frameworks import run_inspect

    log, _ = run_inspect(bucket.url("logs"))
    args = ["--cases", "3", "--transforms", "closing", "--json", "--resamples", "200"]
    code, remote, err = run_cli(capsys, "reliability", bucket.url("logs"), "--output", bucket.url("check"), *args, "--max-calls", "100")
    assert code == 0 and not json.loads(remote)["complete"], err
    code, remote, err = run_cli(capsys, "reliability", bucket.url("logs"), "--output", bucket.url("check"), *args)
    assert code == 0 and json.loads(remote)["complete"] and "already in s3://" in err, err
    assert bucket.fs.exists(f"{bucket.name}/check/reliability_plan.json") and bucket.fs.ls(f"{bucket.name}/check/asks")
    code, local, err = run_cli(capsys, "reliability", bucket.url("logs"), "--output", str(tmp_path / "check"), *args)
    assert code == 0, err
    strip = lambda figures: {k: v for k, v in json.loads(figures).items() if k != "folder"}  # noqa: E731
    assert strip(remote) == strip(local)
    code, gate, _ = run_cli(capsys, "summarize", "--strict", bucket.url("logs"), "--reliability", bucket.url("check"),
                            "--max-flip-rate", "0.05")
    assert code == 1 and "too small a check to show a flip rate <= 0.05" in gate  # 3 cases: the gate reads 10 or more
    code, out, err = run_cli(capsys, "report", bucket.url("logs"), "--reliability", bucket.url("check"), "--output",
                             str(tmp_path / "report.html"))
    assert code == 0, err
    assert "Each judge against itself" in (tmp_path / "report.md").read_text(encoding="utf-8")
