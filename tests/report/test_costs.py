"""Judge tokens and cost: the usage record (scorers.usage), both frameworks' per-case and total
tokens against what the server handed out, and ``summarize --prices --csv``.

The fake server on 127.0.0.1 stands in for the judge API: every reply carries a ``usage`` block
(characters / 1.5, cached tokens for a prompt prefix it has seen) and ``/stats`` sums what it sent.
"""

from __future__ import annotations

import csv
import json

import pytest

from clinconsensus_tasks.cli import main as cli_main
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.scorers.usage import Prices, TokenUsage, parse_prices, price_for
from clinconsensus_tasks.stand_in import usage_for
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PROBE_MESSAGES
from frameworks import run_inspect, run_lmeval


def test_usage_conventions_and_prices():
    openai = {"prompt_tokens": 1000, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 600}}
    assert TokenUsage.from_openai(openai) == TokenUsage(1, 1000, 600, 50)
    assert TokenUsage.from_openai(None) == TokenUsage(calls=1)
    # Inspect's input_tokens leaves the cache out: 400 + 600 read = the same 1000.
    assert TokenUsage.from_inspect(400, 50, 600, None) == TokenUsage(1, 1000, 600, 50)
    assert TokenUsage(1, 10, 2, 3) + TokenUsage(2, 5, 1, 1) == TokenUsage(3, 15, 3, 4)
    # 400 uncached at 2/M, 600 cached at 0.5/M, 50 out at 8/M = 0.0008 + 0.0003 + 0.0004
    assert Prices(2, 0.5, 8).cost(TokenUsage(1, 1000, 600, 50)) == pytest.approx(0.0015)
    prices = parse_prices(["gpt-4.1=2,0.5,8", "1,0.25,4"])
    assert price_for("openai-api/judge/gpt-4.1", prices) == Prices(2, 0.5, 8)
    assert price_for("other", prices) == Prices(1, 0.25, 4)
    assert price_for("x", parse_prices(["gpt-4.1=2,0.5,8"])) is None
    with pytest.raises(ValueError, match="INPUT,CACHED_INPUT,OUTPUT"):
        parse_prices(["gpt-4.1=2,8"])


def _totals(records) -> TokenUsage:
    out = TokenUsage()
    for r in records:
        out = out + TokenUsage.from_dict(r.judge_usage)
    return out


@pytest.mark.slow
def test_both_frameworks_record_the_judge_tokens_the_api_reported(fake_server, tmp_path, capsys):
    log, _ = run_inspect(tmp_path / "logs")
    served = TokenUsage.from_dict(fake_server.stats()["judge_usage"])
    assert served.calls == 360 and served.cached_prompt_tokens > 0  # 12 cases x 30 criteria; shared prefixes cached
    inspect_records = [r.graded for r in read_case_records(log.location)]
    assert _totals(inspect_records) == served
    # Inspect's own per-model accounting agrees (its input_tokens exclude the cached part), once
    # the judge check's one probe request, which grades nothing, is added.
    grader = log.stats.model_usage["openai-api/judge/judge-model"]
    probe = TokenUsage.from_openai(usage_for([m["content"] for m in PROBE_MESSAGES], "OK", None))
    assert TokenUsage.from_inspect(grader.input_tokens, grader.output_tokens, grader.input_tokens_cache_read,
                                   grader.input_tokens_cache_write, served.calls + 1) == served + probe

    fake_server.reset()  # forget cached prefixes: the lm-eval run starts as cold as the Inspect run did
    results, _ = run_lmeval(fake_server.base_url, tmp_path / "lmeval")
    samples = next((tmp_path / "lmeval").rglob("samples_clinconsensus*.jsonl"))
    lmeval_records = [r.graded for r in read_case_records(samples)]
    assert {r.case_id: r.judge_usage for r in lmeval_records} == {r.case_id: r.judge_usage for r in inspect_records}
    task = results["results"]["clinconsensus"]
    assert (task["judge_prompt_tokens,judge"], task["judge_cached_prompt_tokens,judge"], task["judge_completion_tokens,judge"]) == \
        (served.prompt_tokens, served.cached_prompt_tokens, served.completion_tokens)

    prices = Prices(2, 0.5, 8)
    out = tmp_path / "csv"
    assert cli_main(["summarize", "--json", "--prices", "judge-model=2,0.5,8", "--csv", str(out), log.location, str(samples)]) == 0
    report = json.loads(capsys.readouterr().out)
    for path in (log.location, str(samples)):
        (row,) = report[path]["judge_usage"]
        assert row == {"judge": "judge-model", **served.to_dict(), "cost": pytest.approx(prices.cost(served))}
    with (out / "cases.csv").open(encoding="utf-8") as handle:
        cases = list(csv.DictReader(handle))
    assert len(cases) == 24
    by_case = {r.case_id: r for r in inspect_records}
    for row in cases:
        record = by_case[row["case_id"]]
        assert int(row["met"]) == record.met and int(row["judge_prompt_tokens"]) == record.judge_usage["prompt_tokens"]
    with (out / "summary.csv").open(encoding="utf-8") as handle:
        summary = [r for r in csv.DictReader(handle) if r["slice"] == "overall"]
    assert [float(r["judge_cost"]) for r in summary] == [pytest.approx(prices.cost(served))] * 2
    assert {r["cacs@10"] for r in summary} == {str(report[log.location]["overall"]["cacs@10"])}
