"""The judge bill: estimate against what a run is charged, and the 900-case run in four configurations.

1. Estimate vs charged. An lm-eval run (per-criterion, a template-file judge prompt shaped like the
   official one: one user message, the rubric item after the question and the answer) against the
   stand-in server (separate process), which charges prompt tokens and caches a case's prefix
   only for calls that arrive after a call with it has completed. ``estimate`` for the same
   template and data, with the stand-in's counting rule (characters / 1.5, any prefix length
   cacheable), must match: the script prints estimate / charged for calls, prompt and cached tokens.
2. The bill of a 900-case run (answers of ``--answer-chars``), from ``estimate`` with the provider's
   cache rule (1,024-token minimum, 128-token steps), at the prices given (default: OpenAI
   gpt-4.1, USD per million tokens: input 2.00, cached input 0.50, output 8.00; Batch API half):
     sync, all at once  what the graders did: a share ``--today-share`` of calls 2-30 cached
                        (measured by ``bench/cache_order.py --before``)
     ordered for cache  first criterion, then the rest: every repeat of the prefix cached
     batch              Batch API at half price, no prompt-cache discount counted
     audited local      the local judge grades all; the API judge a ``--audit-share`` sample, ordered
     API only           batched mode on all cases + the per-criterion judge on the sample, ordered
   The local judge's GPU time is not priced.

Usage: python bench/judge_bill.py [--cases 100] [--answer-chars 1500] [--today-share 0.25]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from clinconsensus_tasks.scorers.clinconsensus.judge_template import parse_template
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED, PER_CRITERION
from clinconsensus_tasks.scorers.usage import Prices, TokenUsage
from judge_cost import Server, run_lmeval, write_cases

from clinconsensus_tasks.commands.estimate import PromptCache, estimate, make_counter

# The bench's own stand-in for the official template (its text cannot be downloaded here): same
# placeholders, same order, instructions after the rubric item.
TEMPLATE = (
    "You are grading a clinical assistant's reply against one rubric item written by physicians.\n\n"
    "## The user's message\n{user_message}\n\n## The assistant's reply\n{response}\n\n## Rubric item\n{rubric_item}\n\n"
    "## How to decide\n"
    "1. An item that names several requirements is met only when every one of them is met.\n"
    "2. Words such as 'for example' or 'including' introduce examples; not every example is required.\n"
    "3. Any medical fact, drug, dose or guideline the item names must be stated correctly.\n"
    "4. Items asking 'whether' the reply does something are met only when it clearly does.\n\n"
    "Reply with a fenced JSON block:\n```json\n{{\"explanation\": \"<why, in Chinese>\", \"criteria_met\": true}}\n```"
)
GPT41 = Prices(2.0, 0.5, 8.0)


def charged_vs_estimated(n: int, answer_chars: int, work: Path) -> dict:
    data, template = work / "cases.jsonl", work / "template.txt"
    write_cases(n, data)
    template.write_text(TEMPLATE, encoding="utf-8")
    server = Server(answer_chars, judge_template=str(template))
    try:
        server.reset(0.05)
        os.environ["CLINCONSENSUS_JUDGE_CACHE"] = "0"
        run_lmeval(server, str(data), PER_CRITERION, str(work / "cache"), judge_prompt=str(template))
        charged = TokenUsage.from_dict(server.stats()["judge_usage"])
    finally:
        server.stop()
    est = estimate(str(data), PER_CRITERION, answer_chars, make_counter(None, 1.5), template=parse_template(TEMPLATE, "bench"),
                   cache=PromptCache(0, 1)).usage
    ratio = lambda a, b: round(a / b, 4) if b else None
    return {"cases": n, "charged": charged.to_dict(), "estimated": est.to_dict(),
            "estimate_over_charged": {"calls": ratio(est.calls, charged.calls), "prompt_tokens": ratio(est.prompt_tokens, charged.prompt_tokens),
                                      "cached_prompt_tokens": ratio(est.cached_prompt_tokens, charged.cached_prompt_tokens)},
            "cached_share_charged": ratio(charged.cached_prompt_tokens, charged.prompt_tokens)}


def four_configurations(answer_chars: int, today_share: float, audit_share: float, prices: Prices, work: Path) -> dict:
    data = work / "cases-900.jsonl"
    write_cases(900, data)
    usage = estimate(str(data), PER_CRITERION, answer_chars, make_counter(None, 1.5), template=parse_template(TEMPLATE, "bench")).usage
    # batched mode (one call per case, the package's own prompt) graded on every case
    batched = estimate(str(data), BATCHED, answer_chars, make_counter(None, 1.5)).usage
    half = Prices(prices.input / 2, prices.input / 2, prices.output / 2)
    today = TokenUsage(usage.calls, usage.prompt_tokens, round(usage.cached_prompt_tokens * today_share), usage.completion_tokens)
    costs = {
        "sync, all at once (today)": prices.cost(today),
        "ordered for the cache": prices.cost(usage),
        "batch API": half.cost(TokenUsage(usage.calls, usage.prompt_tokens, 0, usage.completion_tokens)),
        f"audited local judge ({audit_share:.0%} to the API judge, ordered)": prices.cost(usage) * audit_share,
        f"API only: batched on all + per criterion on {audit_share:.0%}, ordered": prices.cost(batched) + prices.cost(usage) * audit_share,
        f"API only: batched on all via Batch API + per criterion on {audit_share:.0%}, ordered":
            half.cost(TokenUsage(batched.calls, batched.prompt_tokens, 0, batched.completion_tokens)) + prices.cost(usage) * audit_share,
    }
    base = costs["sync, all at once (today)"]
    return {"tokens": usage.to_dict(), "cacheable_share": round(usage.cached_prompt_tokens / usage.prompt_tokens, 4),
            "batched_tokens": batched.to_dict(), "cost_usd": {k: round(v, 2) for k, v in costs.items()}, "vs_today": {k: round(v / base, 3) for k, v in costs.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100, help="cases of the charged run")
    parser.add_argument("--answer-chars", type=int, default=1500)
    parser.add_argument("--today-share", type=float, default=0.25, help="share of calls 2-30 cached when all are sent at once")
    parser.add_argument("--audit-share", type=float, default=0.1)
    parser.add_argument("--prices", default="2,0.5,8", help="input, cached input, output per million tokens (default gpt-4.1)")
    args = parser.parse_args()
    prices = Prices(*map(float, args.prices.split(",")))
    work = Path(tempfile.mkdtemp(prefix="judge-bill-"))
    out = {"estimate_vs_charged": charged_vs_estimated(args.cases, args.answer_chars, work),
           "run_900": four_configurations(args.answer_chars, args.today_share, args.audit_share, prices, work)}
    e = out["estimate_vs_charged"]
    print(f"estimate / charged on {args.cases} cases (answers of {args.answer_chars} characters): {e['estimate_over_charged']}; "
          f"cached share charged {e['cached_share_charged']}")
    r = out["run_900"]
    print(f"900 cases, per criterion, answers of {args.answer_chars} characters: {r['tokens']}; cacheable {r['cacheable_share']:.1%}")
    for name, cost in r["cost_usd"].items():
        print(f"  {name:<72} {cost:>8.2f} USD  ({r['vs_today'][name]:.3f} of today's)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
