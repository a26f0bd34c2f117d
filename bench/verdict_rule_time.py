"""Time of the verdict rule on the reply shapes issue 34.1 found quadratic or raising, by size.

For each shape (an honest verdict after opening braces, ``[{`` repeated, ``{"criteria_met": ``
repeated, a fence of blanks, nested ``[``, a batched list of 60,000 items) at 4 KB, 32 KB, 256 KB
and 1 MB, the seconds ``read_verdict`` and ``read_batched`` take:

- ``read``: as a run reads it (a reply over ``MAX_REPLY_CHARS`` is refused unread, so 256 KB and
  1 MB cost only their length check);
- ``uncapped``: the same reading with the cap lifted, which shows the reading itself is linear
  (time grows 8x from 32 KB to 256 KB and 4x to 1 MB, not 64x and 16x).

Then a case whose answer is 1 MB: the 30 per-criterion verdicts of ``grade_answer`` (prompts
built, replies read, the quote check against the answer), with a judge that answers at once.

Each figure is the best of ``--repeats`` runs. Usage: python bench/verdict_rule_time.py [--repeats 3]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Callable

from clinconsensus_tasks.scorers.clinconsensus import verdicts
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import grade_answer
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED, PER_CRITERION, prompt_echo

SIZES = {"4 KB": 4 << 10, "32 KB": 32 << 10, "256 KB": 256 << 10, "1 MB": 1 << 20}
VERDICT = '{"explanation": "回答未提及复诊。", "criteria_met": false}'
ITEM = '{"criterion_id": "1", "criteria_met": true}, '
SHAPES: dict[str, Callable[[int], str]] = {
    "braces then a verdict": lambda n: "{" * (n - len(VERDICT)) + VERDICT,
    "[{ repeated": lambda n: "[{" * (n // 2),
    'key repeated': lambda n: '{"criteria_met": ' * (n // 17),
    "fence of blanks": lambda n: "```\n" + " " * (n - 5) + "x",
    "nested [": lambda n: "[" * n,
    "batched list": lambda n: "[" + ITEM * (n // len(ITEM)) + "]",
}


def _best(repeats: int, run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def _shape_times(repeats: int) -> dict[str, dict[str, dict[str, float]]]:
    per, batched, ids = prompt_echo(PER_CRITERION), prompt_echo(BATCHED), [str(i) for i in range(1, 31)]
    figures: dict[str, dict[str, dict[str, float]]] = {}
    cap = verdicts.MAX_REPLY_CHARS
    for mode in ("read", "uncapped"):
        verdicts.MAX_REPLY_CHARS = cap if mode == "read" else 1 << 40
        for shape, make in SHAPES.items():
            for size, n in SIZES.items():
                reply = make(n)
                seconds = _best(repeats, lambda: (verdicts.read_verdict(reply, per), verdicts.read_batched(reply, ids, batched)))
                figures.setdefault(mode, {}).setdefault(shape, {})[size] = round(seconds, 4)
    verdicts.MAX_REPLY_CHARS = cap
    return figures


def _long_answer_case(repeats: int) -> float:
    answer = ("建议规范服用降压药，定期复诊，监测血压。" * 60_000)[: 1 << 20]
    rubrics = [(f"c{i}", f"回答是否提到第{i}项随访要求") for i in range(30)]

    async def judge(messages, fresh):  # a judge that answers at once: only the plugin's work is timed
        return "```json\n" + VERDICT + "\n```"

    def run() -> None:
        verdicts._squash.cache_clear()  # each run squashes the answer anew (once for its 30 verdicts)
        judgments = asyncio.run(grade_answer("高血压患者如何随访？", answer, rubrics, judge))
        assert [j.met for j in judgments] == [False] * 30

    return round(_best(repeats, run), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    figures = _shape_times(args.repeats)
    print(f"reply cap: {verdicts.MAX_REPLY_CHARS:,} characters; seconds for read_verdict + read_batched (best of {args.repeats})")
    for mode, shapes in figures.items():
        print(f"\n{mode}:")
        print(f"  {'shape':<24}" + "".join(f"{size:>10}" for size in SIZES))
        for shape, row in shapes.items():
            print(f"  {shape:<24}" + "".join(f"{row[size]:>10.4f}" for size in SIZES))
    case = _long_answer_case(args.repeats)
    print(f"\n30 verdicts of a case whose answer is 1 MB: {case:.3f} s")
    worst = {mode: max(max(row.values()) for row in shapes.values()) for mode, shapes in figures.items()}
    print(json.dumps({"reply_cap_chars": verdicts.MAX_REPLY_CHARS, "seconds": figures, "worst": worst, "case_1mb_answer_30_verdicts_s": case},
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
