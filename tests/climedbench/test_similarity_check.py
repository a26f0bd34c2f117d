"""CliMedBench's similarity model is checked before any answer is generated, in both frameworks.

A run that includes WTD stops at once with one message naming every way to provide the model
(``-T similarity_model=``, ``CLIMEDBENCH_SIMILARITY_MODEL``, ``HF_HUB_OFFLINE``); a run of
scenarios that do not need it never imports sentence-transformers. The server on 127.0.0.1 stands
in for the model under test: its call counts show that nothing was generated.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from clinconsensus_tasks.climedbench import similarity
from clinconsensus_tasks.errors import ConfigurationError

WAYS_OUT = ("-T similarity_model=", "CLIMEDBENCH_SIMILARITY_MODEL=", "HF_HUB_OFFLINE", "-T scenarios=")


def assert_one_clear_message(message: str, model: str) -> None:
    assert message.startswith(f"Could not load the similarity model {model!r} that CliMedBench's WTD scenario needs: ")
    for hint in WAYS_OUT:
        assert hint in message, hint


def test_hub_id_with_the_hub_offline_fails_at_once(fake_server):
    pytest.importorskip("sentence_transformers")
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as error:
        similarity.check_model("nobody/no-such-simcse-model")
    assert time.monotonic() - started < 5
    assert_one_clear_message(str(error.value), "nobody/no-such-simcse-model")
    assert "not in the Hugging Face cache, and HF_HUB_OFFLINE is set" in str(error.value)


@pytest.mark.slow
def test_inspect_task_with_wtd_checks_the_model_when_built(fake_server, monkeypatch, tmp_path):
    from clinconsensus_tasks.climedbench.inspect_task import climedbench

    missing = str(tmp_path / "no-model-here")
    monkeypatch.setenv("CLIMEDBENCH_SIMILARITY_MODEL", missing)
    with pytest.raises(ConfigurationError) as error:
        climedbench(data_dir="sample", scenarios="SSO,WTD")
    assert_one_clear_message(str(error.value), missing)
    assert fake_server.stats()["calls"] == {}


@pytest.mark.slow  # loads the sentence-transformers model (torch): tens of seconds on a busy machine
def test_inspect_task_with_a_loadable_model_builds(similarity_model_dir):
    from clinconsensus_tasks.climedbench.inspect_task import climedbench_wtd

    task = climedbench_wtd(data_dir="sample", similarity_model=str(similarity_model_dir))
    assert len(task.dataset) == 10  # the bundled sample: 10 WTD items
    assert str(similarity_model_dir) in similarity._models  # loaded once, reused by the scorer


@pytest.mark.slow
def test_lmeval_with_wtd_stops_before_generation(fake_server, monkeypatch, tmp_path):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    missing = str(tmp_path / "no-model-here")
    monkeypatch.setenv("CLIMEDBENCH_SIMILARITY_MODEL", missing)
    with pytest.raises(ConfigurationError) as error:
        simple_evaluate(
            tasks=["climedbench_sso", "climedbench_wtd"],
            model="local-chat-completions",
            model_args={"model": "cand-model", "base_url": f"{fake_server.base_url}/chat/completions"},
            apply_chat_template=True,
        )
    assert_one_clear_message(str(error.value), missing)
    assert fake_server.stats()["calls"] == {}


@pytest.mark.slow
def test_scenarios_without_wtd_never_import_the_model(tmp_path):
    code = (
        "import sys\n"
        "from clinconsensus_tasks.climedbench.inspect_task import climedbench\n"
        "from clinconsensus_tasks.climedbench.lmeval_task import load_dataset\n"
        "task = climedbench(data_dir='sample', scenarios='SSO,CPR,KE', similarity_model='/no/such/model')\n"
        "docs = load_dataset('SSO', data_dir='sample')['test']\n"
        "print(len(task.dataset), len(docs), 'sentence_transformers' in sys.modules, 'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["30", "10", "False", "False"]  # 10 bundled items per scenario


def test_the_default_model_is_pinned_to_a_hub_commit_and_another_is_chosen_explicitly(monkeypatch, tmp_path):
    monkeypatch.delenv("CLIMEDBENCH_SIMILARITY_MODEL", raising=False)
    pinned = similarity.configured_model()
    assert pinned == "cyclone/simcse-chinese-roberta-wwm-ext@871d7039a3fccd4869d545a25b63c545341ca7f4"
    assert similarity.hub_id_and_revision(pinned) == ("cyclone/simcse-chinese-roberta-wwm-ext", "871d7039a3fccd4869d545a25b63c545341ca7f4")
    monkeypatch.setenv("CLIMEDBENCH_SIMILARITY_MODEL", "org/other-simcse@main")
    assert similarity.hub_id_and_revision(similarity.configured_model()) == ("org/other-simcse", "main")
    assert similarity.hub_id_and_revision("org/other-simcse") == ("org/other-simcse", None)  # not pinned: the user's choice
    folder = tmp_path / "models@v2"
    folder.mkdir()
    assert similarity.hub_id_and_revision(str(folder)) == (str(folder), None)  # a folder is a folder, whatever its name


def test_the_pinned_default_is_what_an_offline_check_names(fake_server, monkeypatch):
    pytest.importorskip("sentence_transformers")
    monkeypatch.delenv("CLIMEDBENCH_SIMILARITY_MODEL", raising=False)
    with pytest.raises(ConfigurationError) as error:
        similarity.check_model()
    assert_one_clear_message(str(error.value), similarity.DEFAULT_SIMILARITY_SPEC)
