"""CliMedBench scoring throughput: CPU time to score a full-size run, per metric.

Builds 33,735 synthetic items in the paper's scenario proportions (WTD's 807 excluded: they are
scored by embeddings, measured separately), gives each a model-like answer (brief reasoning, then
the answer in one of the shapes real models use; lengths 60-400 characters), and scores them all
with the shared core (``clinconsensus_tasks.scorers.climedbench.scenarios.score_answer``). Prints items per
second for each metric and the total CPU seconds (target: under 5 s on a 2-core machine). Then,
if a sentence-transformers model is available (``--similarity-model`` or
``CLIMEDBENCH_SIMILARITY_MODEL``), the WTD embedding rate in answer/reference pairs per second.

Perturbation (the robustness variant, needs the ``robustness`` extra): CPU time to perturb the
questions of 33,735 items in the paper's proportions (all 14 scenarios, sample items cycled with
distinct ids, so every perturbation is drawn afresh) at the default 12% with all four kinds,
after the one-off building of the character tables, which is printed apart (target: under 5 s).

Usage: python bench/scoring_throughput.py [--similarity-model PATH]
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections import defaultdict

from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.scorers.climedbench.perturbation import homophone_table, perturb, shape_table, traditional_table
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, ORDER, SCENARIOS, SIMILARITY, score_answer

TOTAL = 33735
REASONS = (
    "结合患者的病史、症状、体征及辅助检查结果综合分析，",
    "该患者为中年男性，既往有高血压病史，此次急性起病，",
    "根据《内科学》教材及相关临床指南的推荐，",
    "首先应排除危及生命的情况，如急性冠脉综合征、主动脉夹层，",
)


def model_like_answer(rng: random.Random, kind: str, item: dict) -> str:
    reason = "".join(rng.choice(REASONS) for _ in range(rng.randint(1, 6)))
    letters = list(item.get("options") or {})
    if kind == CHOICE:
        pick = rng.choice(letters + [item["answer"]] * 2)
        shape = rng.randrange(6)
        return [f"{reason}\n答案：{pick}", f"{pick}", f"{reason}故选{pick}。", f"答案为{chr(ord(pick) + 0xFEE0)}。{reason}",
                f"首选CT检查。{reason}正确答案是{pick}", "无法确定。"][shape]
    if kind == ORDER:
        order = letters[:]
        rng.shuffle(order)
        return rng.choice([f"{reason}\n答案：{''.join(order)}", f"正确顺序为：{'→'.join(order)}", f"排序：{' '.join(order[:3])}", "不清楚"])
    keywords = list(item["answer"])
    rng.shuffle(keywords)
    return " ".join(keywords[: rng.randint(1, len(keywords))] + ["临床研究", "疗效"][: rng.randint(0, 2)])


def build_items(rng: random.Random) -> list[tuple[str, dict, str]]:
    paper_total = sum(s.paper_items for s in SCENARIOS.values())
    rows = []
    for code, scenario in SCENARIOS.items():
        if scenario.kind == SIMILARITY:
            continue
        base = load_scenario(code, announce=False).items
        n = round(TOTAL * scenario.paper_items / paper_total)
        for i in range(n):
            item = base[i % len(base)]
            rows.append((code, item, model_like_answer(rng, scenario.kind, item)))
    return rows


def perturbation_cost() -> dict[str, float]:
    """CPU seconds to build the character tables once, then to perturb 33,735 questions."""
    paper_total = sum(s.paper_items for s in SCENARIOS.values())
    questions = []
    for code, scenario in SCENARIOS.items():
        base = load_scenario(code, announce=False).items
        n = round(TOTAL * scenario.paper_items / paper_total)
        questions += [(base[i % len(base)]["question"], f"{base[i % len(base)]['id']}#{i}") for i in range(n)]
    started = time.process_time()
    shape_table(), homophone_table(), traditional_table()
    tables = time.process_time() - started
    started = time.process_time()
    changed = sum(perturb(question, item_id).changed for question, item_id in questions)
    seconds = time.process_time() - started
    chars = sum(len(q) for q, _ in questions)
    return {"items": len(questions), "tables_cpu_seconds": round(tables, 3), "cpu_seconds": round(seconds, 3),
            "share_changed": round(changed / chars, 4)}


def wtd_rate(model_name: str, pairs: int = 807) -> float:
    from clinconsensus_tasks.climedbench.similarity import cosine_similarities, load_model

    items = load_scenario("WTD", announce=False).items
    answers = [items[i % len(items)]["answer"][::-1] + str(i) for i in range(pairs)]
    references = [items[i % len(items)]["answer"] for i in range(pairs)]
    load_model(model_name)
    started = time.perf_counter()
    cosine_similarities(answers, references, model_name)
    return pairs / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--similarity-model", default=os.environ.get("CLIMEDBENCH_SIMILARITY_MODEL"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rows = build_items(random.Random(args.seed))
    per_metric_cpu: dict[str, float] = defaultdict(float)
    per_metric_n: dict[str, int] = defaultdict(int)
    total_start = time.process_time()
    for code, item, answer in rows:
        scenario = SCENARIOS[code]
        t = time.process_time()
        score_answer(scenario, item, answer)
        per_metric_cpu[scenario.metric] += time.process_time() - t
        per_metric_n[scenario.metric] += 1
    cpu_seconds = time.process_time() - total_start
    rates = {m: round(per_metric_n[m] / per_metric_cpu[m]) for m in per_metric_n}
    print(f"scored {len(rows)} items ({', '.join(f'{m}: {per_metric_n[m]}' for m in per_metric_n)}) "
          f"in {cpu_seconds:.2f} s of CPU (target < 5 s)")
    for metric, rate in rates.items():
        print(f"  {metric:12} {rate:>10,} items/s")
    result = {"cpu_seconds": round(cpu_seconds, 3), "items_per_second": rates}
    cost = perturbation_cost()
    print(f"perturbed {cost['items']} questions (12%, all four kinds) in {cost['cpu_seconds']:.2f} s of CPU "
          f"(target < 5 s) after {cost['tables_cpu_seconds']:.2f} s building the character tables once; "
          f"{cost['share_changed']:.2%} of characters changed")
    result["perturbation"] = cost
    if args.similarity_model:
        rate = wtd_rate(args.similarity_model)
        print(f"  WTD similarity with {args.similarity_model}: {rate:,.0f} pairs/s (embedding, 807 pairs)")
        result["wtd_pairs_per_second"] = round(rate, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
