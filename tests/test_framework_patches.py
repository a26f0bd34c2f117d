"""Every patch of a framework's objects, held in one module per framework (``inspect_compat``,
``lmeval_glue``), checked against the installed framework: an upgrade that moves what a patch needs
fails here, naming the patch, and the patch itself raises rather than falling back in silence.

The judge-side checks build real provider objects the way Inspect builds a role's model
(``get_model``), pointed at a closed local port: nothing is sent.
"""

from __future__ import annotations

import inspect as pyinspect

import pytest

from clinconsensus_tasks import inspect_compat, lmeval_glue
from loopback_server import closed_port_url

PATCHES = ("wrap_generate", "sdk_retries_off", "use_http_client", "hf_thinking_off", "shown_alone", "register_logged_scorer_name")


def openai_judge():
    from inspect_ai.model import get_model

    return get_model("openai-api/judge/judge-model", base_url=closed_port_url("/v1"), api_key="test-key", memoize=False)


def test_every_patch_is_in_its_modules_list_and_the_architecture_doc():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for name in PATCHES:
        assert callable(getattr(inspect_compat, name)) and name in inspect_compat.__all__, name
        assert f"`{name}`" in doc, f"docs/architecture.md does not list the patch {name}"
    assert "`give_case_mean_its_stderr`" in doc and "`keep_answers`" in doc


def test_the_openai_compatible_providers_have_what_the_patches_change():
    judge = openai_judge()
    assert isinstance(judge.api, inspect_compat.openai_providers())
    before = judge.api.client
    inspect_compat.sdk_retries_off(judge)
    assert judge.api.client.max_retries == 0 and judge.api.model_args["max_retries"] == 0

    import httpx

    transport = httpx.AsyncClient()  # any transport the SDK takes (the project's is aiohttp's)
    inspect_compat.use_http_client(judge, transport)
    assert judge.api.http_client is transport and judge.api.client is not before  # the client re-created around it
    inspect_compat.use_http_client(judge, httpx.AsyncClient())  # once only
    assert judge.api.http_client is transport
    calls = []

    def wrap(generate):
        async def wrapped(*args, **kwargs):
            calls.append(args)
            return await generate(*args, **kwargs)
        return wrapped

    inspect_compat.wrap_generate(judge, wrap)
    first = judge.api.generate
    inspect_compat.wrap_generate(judge, wrap)  # once only
    assert judge.api.generate is first and getattr(first, inspect_compat.PATCHED)


def test_a_provider_without_what_a_patch_needs_fails_naming_the_patch():
    judge = openai_judge()
    del judge.api.model_args
    with pytest.raises(inspect_compat.FrameworkChanged, match=r"inspect_compat.sdk_retries_off: .* has no model_args"):
        inspect_compat.sdk_retries_off(judge)


def test_the_hf_provider_still_reads_enable_thinking_at_every_call():
    # hf_thinking_off sets the attribute the hf provider reads when it applies the chat template;
    # the provider is not built here (it loads a model): its source must still read and set it.
    from inspect_ai.model._providers import hf

    source = pyinspect.getsource(hf.HuggingFaceAPI)
    assert "self.enable_thinking = " in source and "enable_thinking=self.enable_thinking" in source


def test_the_model_names_provider_is_public_and_what_the_patches_decide_by():
    assert inspect_compat.provider_name(openai_judge()) == "openai-api"


def test_lmeval_has_what_its_one_patch_and_the_kept_answers_need():
    import lm_eval.api.metrics
    import lm_eval.evaluator_utils
    from lm_eval.api.model import CachingLM, hash_args

    lmeval_glue.give_case_mean_its_stderr()
    for module in (lm_eval.evaluator_utils, lm_eval.api.metrics):
        assert getattr(module.stderr_for_metric, "case_mean", False), module.__name__
        assert module.stderr_for_metric(lmeval_glue.case_mean, 100) is not None
    # The kept answers are found by lm-eval's own --use_cache: its key and file naming.
    assert "hash_args(attr, req.args)" in pyinspect.getsource(CachingLM) and callable(hash_args)
    assert '"_rank"' in pyinspect.getsource(__import__("lm_eval.evaluator", fromlist=["simple_evaluate"]).simple_evaluate)
