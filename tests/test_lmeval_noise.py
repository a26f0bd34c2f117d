"""lm-eval runs of these tasks stay quiet: lm-eval's hint that custom kwargs can be passed to
``--metadata`` (logged once per task built from a ``custom_dataset``, 14 times per CliMedBench
run) is dropped for this package's tasks and kept for others. The server on 127.0.0.1 stands in
for the model under test."""

from __future__ import annotations

import logging

import pytest

from clinconsensus_tasks.lmeval_glue import CustomDatasetHintFilter

HINT = ": Custom kwargs can be passed to `--metadata` in console (as json string) or to the TaskManager."


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("lm_eval.api.task", logging.WARNING, __file__, 1, message, None, None)


def test_filter_drops_the_hint_for_these_tasks_only():
    keep = CustomDatasetHintFilter()
    assert not keep.filter(record("climedbench_sso" + HINT))
    assert not keep.filter(record("clinconsensus" + HINT))
    assert keep.filter(record("mmlu_anatomy" + HINT))
    assert keep.filter(record("climedbench_sso: something else went wrong"))


@pytest.mark.slow
def test_a_climedbench_run_logs_no_metadata_hint(fake_server, caplog):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    with caplog.at_level(logging.WARNING):
        results = simple_evaluate(
            tasks=["climedbench_sso", "climedbench_cpr"],
            model="local-chat-completions",
            model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
            apply_chat_template=True,
            bootstrap_iters=0,
        )
    assert set(results["results"]) == {"climedbench_sso", "climedbench_cpr"}
    assert fake_server.stats()["calls"] == {"cand-model": 20}  # 10 bundled items per scenario
    assert not [r for r in caplog.records if "--metadata" in r.getMessage()]
