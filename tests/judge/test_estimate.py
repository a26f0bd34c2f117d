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
    assert cli_main(["estimate", "sample", "--judge-mode", "per_criterion", "--answer-chars", "300", "--prices", "2,0.5,8", "--json"]) == 0
    (estimate,) = json.loads(capsys.readouterr().out)
    uncached = estimate["prompt_tokens"] - estimate["cacheable_prompt_tokens"]
    assert estimate["cost"]["*"]["with_prompt_cache"] == pytest.approx(
        (uncached * 2 + estimate["cacheable_prompt_tokens"] * 0.5 + estimate["completion_tokens"] * 8) / 1e6)
    assert estimate["cost"]["*"]["without_prompt_cache"] == pytest.approx((estimate["prompt_tokens"] * 2 + estimate["completion_tokens"] * 8) / 1e6)
    assert cli_main(["estimate", "sample", "--tokenizer", "no_such_encoding"]) == 2
    assert "no local folder of that name" in capsys.readouterr().err
