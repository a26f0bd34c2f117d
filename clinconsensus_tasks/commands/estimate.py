"""``clinconsensus-eval estimate DATA``: judge calls and tokens of a ClinConsensus run, before the run.

Why: a judge run over the public 900 cases is 27,000 calls in per-criterion mode; a release
checklist wants the bill before paying it. This builds the exact judge messages the run will send
(the judge prompt the run uses: ``--judge-prompt``, default ``$CLINCONSENSUS_JUDGE_PROMPT`` or
``official``, as the graders choose it; see ``judge.official_template``) for every case with a
stand-in answer of the given length and counts their tokens with, in this order of preference:

* a Hugging Face tokenizer from a local folder (``--tokenizer PATH``: the judge's own, e.g. the
  folder of ClinConsensus-Judge-8B),
* an OpenAI encoding (``--tokenizer o200k_base`` or ``cl100k_base``) through ``tiktoken`` if its
  encoding file can be loaded, else through ``bpe-openai`` (which carries the encodings inside
  the package, so it works offline),
* otherwise characters / ``--chars-per-token`` (default 1.5), and the output says so: an OpenAI
  encoding neither can load (offline, without bpe-openai) is estimated so too, with one line on
  stderr saying why and how to count it offline.

Prompt tokens include 4 tokens of chat formatting per message. Completion tokens are those of a
verdict with an explanation of ``--explanation-chars`` characters (per criterion; in batched mode
one such item per criterion). "Cacheable" prompt tokens are the part a provider's prompt cache
serves: in per-criterion mode the graders send a case's first criterion alone and the other 29
once it has returned, so each of those 29 reuses everything before the rubric item, counted as the
provider counts it (:class:`PromptCache`: OpenAI serves prefixes of at least 1,024 tokens, in
128-token steps; a shorter prefix is not cached at all, and the output says for how many cases).
A campaign (``--models N``) is N runs of the same cases: N times the calls and tokens.
The stand-in answer is neutral clinical Chinese text; re-asks of unparseable verdicts are not
counted (the verdict rule asks each at most once, so a judge that never gives a verdict costs at
most twice the calls; the run's ``judge_failures`` and attempts say how many there were).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from clinconsensus_tasks import json_output
from clinconsensus_tasks.clinconsensus.dataset import load_cases
from clinconsensus_tasks.judge.token_count import DEFAULT_CHARS_PER_TOKEN, MESSAGE_OVERHEAD, Counter, make_counter, prompt_tokens
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED, JUDGE_MODES, PER_CRITERION, batched_messages, per_criterion_messages
from clinconsensus_tasks.scorers.usage import ANY_JUDGE, Prices, TokenUsage

_ANSWER_TEXT = (
    "根据您提供的病史和检查结果，考虑以下几点：首先需要明确诊断，建议完善相关实验室检查和影像学检查；"
    "其次在治疗方面，应根据指南选择合适的药物并注意剂量和不良反应；同时关注合并症的管理，定期随访复查。"
    "如出现病情变化，应及时就医。"
)


@dataclass(frozen=True)
class PromptCache:
    """How a provider's prompt cache bills a repeated prefix: nothing under ``min_tokens``, else
    the longest ``min_tokens + k * step`` tokens that fit (OpenAI: 1,024 and 128)."""

    min_tokens: int = 1024
    step: int = 128

    def cacheable(self, prefix_tokens: int) -> int:
        if prefix_tokens < self.min_tokens:
            return 0
        step = max(1, self.step)
        return self.min_tokens + (prefix_tokens - self.min_tokens) // step * step


def stand_in_answer(chars: int) -> str:
    return (_ANSWER_TEXT * (chars // len(_ANSWER_TEXT) + 1))[:chars]


def _verdict_text(explanation_chars: int, criterion_id: str | None = None) -> str:
    explanation = stand_in_answer(explanation_chars)
    item: dict[str, Any] = {"explanation": explanation, "criteria_met": True}
    if criterion_id is not None:
        item = {"criterion_id": criterion_id, **item}
    return json.dumps(item, ensure_ascii=False)


@dataclass(frozen=True)
class Estimate:
    mode: str
    cases: int
    criteria: int
    usage: TokenUsage  # cached_prompt_tokens: the part the provider's prompt cache serves
    counter: str
    answer_chars: int
    judge_prompt: str = "project"
    cache: PromptCache = PromptCache()
    cases_under_cache_minimum: int = 0  # per-criterion cases whose shared prefix is too short to cache
    models: int = 1

    def to_dict(self, prices: Mapping[str, Prices] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "judge_prompt": self.judge_prompt, "models": self.models, "cases": self.cases,
                               "criteria": self.criteria, "answer_chars": self.answer_chars,
                               "calls": self.usage.calls, "prompt_tokens": self.usage.prompt_tokens,
                               "cacheable_prompt_tokens": self.usage.cached_prompt_tokens,
                               "cacheable_share": round(self.usage.cached_prompt_tokens / max(1, self.usage.prompt_tokens), 4),
                               "cache_min_tokens": self.cache.min_tokens, "cases_under_cache_minimum": self.cases_under_cache_minimum,
                               "completion_tokens": self.usage.completion_tokens, "tokens_counted_with": self.counter}
        for judge, price in (prices or {}).items():
            no_cache = TokenUsage(self.usage.calls, self.usage.prompt_tokens, 0, self.usage.completion_tokens)
            out.setdefault("cost", {})[judge] = {"without_prompt_cache": price.cost(no_cache), "with_prompt_cache": price.cost(self.usage)}
        return out


_RUBRIC_MARK = "\x00"  # stands in for the rubric item to find where a case's shared prefix ends


def _prefix_tokens(messages: list[dict[str, str]], counter: Counter) -> int:
    """Tokens before the rubric item (``_RUBRIC_MARK``) of a per-criterion request."""
    tokens = 0
    for message in messages:
        head, mark, _ = message["content"].partition(_RUBRIC_MARK)
        tokens += MESSAGE_OVERHEAD + counter.count(head)
        if mark:
            return tokens
    raise ValueError("the judge prompt does not contain the rubric item")


def estimate(data: str, mode: str, answer_chars: int, counter: Counter, explanation_chars: int = 60,
             template: JudgeTemplate | None = None, cache: PromptCache = PromptCache(), models: int = 1) -> Estimate:
    """Judge calls and tokens for grading one answer of ``answer_chars`` characters per case, with
    the per-criterion prompt ``template`` (``None``: the project's), for ``models`` models."""
    if mode not in JUDGE_MODES:
        raise ValueError(f"judge mode {mode!r}; choose one of {', '.join(JUDGE_MODES)}")
    build = template.messages if template is not None and mode == PER_CRITERION else per_criterion_messages
    loaded = load_cases(data)
    answer = stand_in_answer(answer_chars)
    total = TokenUsage()
    criteria = under_minimum = 0
    for case in loaded.cases:
        criteria += len(case.rubrics)
        if mode == PER_CRITERION:
            completion = counter.count(_verdict_text(explanation_chars))
            prefix = _prefix_tokens(build(case.question, answer, _RUBRIC_MARK), counter)
            cached = cache.cacheable(prefix)
            under_minimum += cached == 0
            for index, (_, criterion) in enumerate(case.rubrics):
                total = total + TokenUsage(1, prompt_tokens(build(case.question, answer, criterion), counter), cached if index else 0, completion)
        else:
            listed = [(str(i + 1), text) for i, (_, text) in enumerate(case.rubrics)]
            messages = batched_messages(case.question, answer, listed)
            reply = "[" + ", ".join(_verdict_text(explanation_chars, cid) for cid, _ in listed) + "]"
            total = total + TokenUsage(1, prompt_tokens(messages, counter), 0, counter.count(reply))
    total = TokenUsage(*(models * value for value in total.to_dict().values()))
    name = (template.name if template is not None else "project") if mode == PER_CRITERION else "project-batched"
    return Estimate(mode, len(loaded.cases), criteria, total, counter.description, answer_chars, name, cache, under_minimum, models)


def add_arguments(parser: Any) -> None:
    parser.add_argument("data", nargs="?", default="sample", help="a .jsonl/.parquet path, 'sample' or 'hub' (default sample)")
    parser.add_argument("--judge-mode", choices=[*JUDGE_MODES, "both"], default="both", help="judge mode(s) to estimate (default both)")
    parser.add_argument("--answer-chars", type=int, default=1500, help="length of the answers to be graded, in characters (default 1500)")
    parser.add_argument("--explanation-chars", type=int, default=60, help="length of a verdict's explanation, in characters (default 60)")
    parser.add_argument("--tokenizer", help="a local Hugging Face tokenizer folder, or an OpenAI encoding name such as o200k_base "
                                            "(default: none, count characters / --chars-per-token)")
    parser.add_argument("--chars-per-token", type=float, default=DEFAULT_CHARS_PER_TOKEN,
                        help=f"ratio used without --tokenizer (default {DEFAULT_CHARS_PER_TOKEN})")
    parser.add_argument("--prices", action="append", default=[], metavar="[JUDGE=]IN,CACHED,OUT",
                        help="prices per million tokens (input, cached input, output) to turn tokens into money; repeatable (default: none)")
    parser.add_argument("--judge-prompt", help="the per-criterion judge prompt the run will use: official, project or a template file "
                                               "(default: $CLINCONSENSUS_JUDGE_PROMPT, else official, as the runs choose)")
    parser.add_argument("--cache-min-tokens", type=int, default=PromptCache.min_tokens,
                        help=f"shortest prefix the provider's prompt cache serves (default {PromptCache.min_tokens}, OpenAI; 0: any)")
    parser.add_argument("--cache-step", type=int, default=PromptCache.step,
                        help=f"the cache serves the prefix in steps of this many tokens (default {PromptCache.step}, OpenAI; 1: exact)")
    parser.add_argument("--models", type=int, default=1, help="models graded on the same cases: a release campaign (default 1)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _priced(judge: str, price: Prices) -> str:
    """Which judge a cost is for and at what prices (``--prices`` without ``JUDGE=`` prices any judge)."""
    who = "for any judge" if judge == ANY_JUDGE else f"for {judge}"
    return f"{who} at {price.input:g} / {price.cached_input:g} / {price.output:g} per million input / cached input / output tokens"


def main(args: Any) -> int:
    from clinconsensus_tasks.scorers.usage import parse_prices

    from clinconsensus_tasks.judge.official_template import load_judge_prompt

    prices = parse_prices(args.prices)
    counter = make_counter(args.tokenizer, args.chars_per_token)
    if counter.fallback:  # an OpenAI encoding offline: the estimate is still made, from characters, and says so
        print(f"estimate: {counter.fallback}", file=sys.stderr)
    if args.models < 1:
        raise ValueError(f"--models must be at least 1, got {args.models}")
    cache = PromptCache(args.cache_min_tokens, args.cache_step)
    template = load_judge_prompt(args.judge_prompt, PER_CRITERION)  # what the run will send; the official one is fetched and checked
    modes = [PER_CRITERION, BATCHED] if args.judge_mode == "both" else [args.judge_mode]
    results = [estimate(args.data, mode, args.answer_chars, counter, args.explanation_chars, template, cache, args.models).to_dict(prices)
               for mode in modes]
    if args.json:
        print(json_output.dumps(results))
        return 0
    campaign = f"{args.models} models x " if args.models > 1 else ""
    print(f"{args.data}: {campaign}answers of {args.answer_chars} characters; tokens counted with {counter.description}")
    for r in results:
        print(f"  {r['mode']:<14}{r['cases']} cases, {r['criteria']} criteria, prompt {r['judge_prompt']}: {r['calls']:,} judge calls, "
              f"{r['prompt_tokens']:,} prompt tokens ({r['cacheable_prompt_tokens']:,} cacheable, {100 * r['cacheable_share']:.1f}%), "
              f"{r['completion_tokens']:,} completion tokens")
        if r["cases_under_cache_minimum"]:
            print(f"  {'':<14}the shared prompt prefix of {r['cases_under_cache_minimum']} of {r['cases']} cases is under the provider's "
                  f"cache minimum of {r['cache_min_tokens']:,} tokens: nothing of theirs is cacheable")
        for judge, cost in (r.get("cost") or {}).items():
            print(f"  {'':<14}cost {_priced(judge, prices[judge])}: {cost['without_prompt_cache']:.2f} without prompt caching, "
                  f"{cost['with_prompt_cache']:.2f} with")
    return 0
