"""Adaptive testing end to end: calibrate a bank from Inspect logs of several models, run a model
adaptively through Inspect's model API against the local server, resume without re-asking, and
make synthetic examinees with the generation -> debate -> reflection loop."""

from __future__ import annotations

import json

import pytest

from clinconsensus_tasks.adaptive import commands as cat_commands
from clinconsensus_tasks.adaptive.engine import ItemBank

pytestmark = pytest.mark.slow

SCENARIOS = "ID1,ID2,BKT,SSO,KE"  # in the bundled sample: 10 items each, 11 in ID2


@pytest.fixture
def examinee_logs(fake_server, tmp_path):
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench

    logs = []
    for n in range(1, 6):
        log = inspect_eval(climedbench(data_dir="sample", scenarios=SCENARIOS), model=f"openai-api/cand/examinee-{n}",
                           log_dir=str(tmp_path / "logs"), display="none")[0]
        assert log.status == "success"
        logs.append(log.location)
    return logs


def test_calibrate_run_and_resume(fake_server, tmp_path, examinee_logs):
    bank_path = tmp_path / "bank.json"
    bank = cat_commands.calibrate(examinee_logs, bank_path, model="2PL")
    assert len(bank) == 10 * 4 + 11 and set(bank.scenario_codes()) == set(SCENARIOS.split(","))
    assert bank.provenance["models"] == [f"openai-api/cand/examinee-{n}" for n in range(1, 6)]
    assert ItemBank.load(bank_path).fingerprint() == bank.fingerprint()

    out = tmp_path / "run"
    fake_server.reset()
    first = cat_commands.run_adaptive("openai-api/cand/examinee-6", str(bank_path), out, max_items=5)
    assert first["items_used"] == 5 and first["stop_reason"] == "max_items"
    assert fake_server.stats()["kinds"] == {"candidate": 5}  # one question at a time, five asked
    state = json.loads((out / "state.json").read_text(encoding="utf-8"))
    assert len(state["answers"]) == 5 and all("answer" in a for a in state["answers"].values())

    # Resume with a larger budget: the five answers are reused, only three more are asked.
    fake_server.reset()
    second = cat_commands.run_adaptive("openai-api/cand/examinee-6", str(bank_path), out, max_items=8)
    assert fake_server.stats()["kinds"] == {"candidate": 3}
    assert second["items"][:5] == first["items"] and second["steps"][:5] == first["steps"]
    assert set(second["predicted_scores"]) == set(SCENARIOS.split(",")) and 0 <= second["predicted_overall"] <= 1
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    assert result["items_used"] == 8 and result["theta"] == second["theta"]


def test_synthesize_examinees_and_calibrate_with_them(fake_server, tmp_path, examinee_logs):
    records = tmp_path / "synthetic.jsonl"
    counts = cat_commands.synthesize("openai-api/cand/examinee-7", "openai-api/cand/examinee-8", records,
                                     scenarios=["ID1", "BKT"], limit=3)
    assert counts == {"items": 6, "records": 18, "examinees": 3}
    rows = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
    assert {r["examinee"] for r in rows} == {"openai-api/cand/examinee-7/generation", "openai-api/cand/examinee-8/debate",
                                            "openai-api/cand/examinee-7/reflection"}
    assert fake_server.stats()["kinds"]["candidate"] >= 18  # three model calls per item
    bank = cat_commands.calibrate([*examinee_logs, str(records)], tmp_path / "bank.json", model="1PL")
    assert len(bank.provenance["models"]) == 8 and len(bank) == 10 * 4 + 11


def test_calibration_needs_two_models(fake_server, tmp_path, examinee_logs):
    from clinconsensus_tasks.errors import DataValidationError

    with pytest.raises(DataValidationError, match="at least two models"):
        cat_commands.calibrate(examinee_logs[:1], tmp_path / "bank.json")


def test_calibrate_from_lmeval_sample_files(fake_server, tmp_path, monkeypatch):
    # lm-eval writes <output>/<model>/samples_<task>_<time>.jsonl; the folder names the model.
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    files = []
    for n in (1, 2, 3):
        results = simple_evaluate(
            tasks=["climedbench_id1", "climedbench_sso"],
            model="local-chat-completions",
            model_args={"model": f"examinee-{n}", "base_url": f"{fake_server.base_url}/chat/completions", "num_concurrent": 4},
            apply_chat_template=True,
            log_samples=True,
        )
        folder = tmp_path / f"examinee-{n}"
        folder.mkdir()
        for task, samples in results["samples"].items():
            path = folder / f"samples_{task}_2026.jsonl"
            path.write_text("".join(json.dumps(s, ensure_ascii=False, default=str) + "\n" for s in samples), encoding="utf-8")
            files.append(str(path))
    records = cat_commands.read_item_results(files)
    assert {m for m, *_ in records} == {"examinee-1", "examinee-2", "examinee-3"}
    assert {i.split(":")[0] for _, i, _, _ in records} == {"ID1", "SSO"}
    bank = cat_commands.calibrate(files, tmp_path / "bank.json", model="2PL")
    assert len(bank) == 10 + 10 and bank.provenance["models"] == ["examinee-1", "examinee-2", "examinee-3"]


def test_cat_asks_for_its_data_by_name_before_any_model_call(fake_server, tmp_path, monkeypatch):
    # As the tasks do (issue 58 item 9): without --data-dir or CLIMEDBENCH_DATA_DIR, `cat synthesize`
    # and `cat run` stop with one line naming how to get, lay out and give the data, and the sample
    # on purpose; no model is asked. `--data-dir sample` runs on the sample.
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k != "CLIMEDBENCH_DATA_DIR"}
    cli = str(Path(sys.executable).parent / "clinconsensus-eval")
    bank = tmp_path / "no-bank.json"  # never read: the data is asked for first
    for words in (["synthesize", "--generator", "openai-api/cand/examinee-7", "--debater", "openai-api/cand/examinee-8",
                   "--output", str(tmp_path / "synthetic.jsonl"), "--scenarios", "ID1", "--limit", "1"],
                  ["run", "--model", "openai-api/cand/examinee-6", "--bank", str(bank), "--output", str(tmp_path / "run")]):
        fake_server.reset()
        done = subprocess.run([cli, "cat", *words], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode != 0 and done.stdout == ""
        assert done.stderr.strip().splitlines()[-1].endswith(cat_commands.CAT_NO_DATA), done.stderr
        assert fake_server.stats()["calls"] == {}
    assert "`--data-dir DIR` (or `CLIMEDBENCH_DATA_DIR=DIR`)" in cat_commands.CAT_NO_DATA
    assert cat_commands.CAT_NO_DATA.endswith("To run the bundled synthetic sample on purpose (its scores say nothing about a model): "
                                             "`--data-dir sample`.")
    done = subprocess.run([cli, "cat", "synthesize", "--generator", "openai-api/cand/examinee-7", "--debater",
                           "openai-api/cand/examinee-8", "--output", str(tmp_path / "synthetic.jsonl"), "--scenarios", "ID1",
                           "--limit", "1", "--data-dir", "sample"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"output": str(tmp_path / "synthetic.jsonl"), "items": 1, "records": 3, "examinees": 3}
