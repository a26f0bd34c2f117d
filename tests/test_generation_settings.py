"""The lm-eval YAMLs carry the declared generation setting of their benchmark (``generation.py``):
the ClinConsensus YAMLs are generated from it, CliMedBench's hand-written template is checked here."""

from __future__ import annotations

from pathlib import Path

import yaml

from clinconsensus_tasks.generation import CLIMEDBENCH, CLINCONSENSUS

CONFIGS = Path(__file__).resolve().parents[1] / "task_configs"


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def generation_kwargs(path: Path) -> dict:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)["generation_kwargs"]


def test_yaml_generation_kwargs_are_the_declared_settings():
    assert generation_kwargs(CONFIGS / "clinconsensus" / "clinconsensus.yaml") == CLINCONSENSUS.lmeval_generation_kwargs() == {
        "until": [], "max_gen_toks": 8192, "do_sample": False, "temperature": 0.0}
    assert generation_kwargs(CONFIGS / "climedbench" / "_template_yaml") == CLIMEDBENCH.lmeval_generation_kwargs() == {
        "until": [], "max_gen_toks": 1024, "do_sample": False, "temperature": 0.0}


def test_inspect_config_is_the_declared_settings_and_takes_a_task_override():
    config = CLINCONSENSUS.inspect_config(max_tokens=100)
    assert (config.max_tokens, config.temperature, config.seed, config.stop_seqs) == (100, 0.0, 1234, None)
