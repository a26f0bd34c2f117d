"""lm-evaluation-harness glue for CliMedBench: per-scenario datasets, scoring and the WTD filter.

Each scenario is a task (``task_configs/climedbench/climedbench_<code>.yaml``, sharing
``_template_yaml``) grouped by dimension and into ``climedbench``; the multiple-choice scenarios
also come as log-likelihood tasks (``climedbench_<code>_ll``, group ``climedbench_ll``) for base
models. The YAMLs are written by ``task_configs/climedbench/_generate_configs.py`` from the
scenario table. Documents carry the rendered prompt and the item as JSON, so items of any shape
(four or five options, keyword lists, reference texts) pass through ``datasets`` unchanged;
scoring calls the shared core (``clinconsensus_tasks.scorers.climedbench.item_result.score_item``),
the same as the Inspect scorer.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Sequence

from clinconsensus_tasks.climedbench.dataset import ENV_DATA_DIR, load_scenario
from clinconsensus_tasks.clinconsensus.lmeval_task import first_responses
from clinconsensus_tasks.scorers.climedbench.item_result import score_item
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, build_prompt, option_letters
from clinconsensus_tasks.climedbench.similarity import configured_model, cosine_similarities
from clinconsensus_tasks.climedbench.similarity import check_model
from clinconsensus_tasks.lmeval_tasks import quiet_custom_dataset_hint


quiet_custom_dataset_hint()  # lm-eval's --metadata hint, once per task, is noise here


def load_dataset(scenario: str, loglikelihood: bool = False, **kwargs: Any) -> dict[str, Any]:
    """``custom_dataset`` hook: one scenario's validated items as a ``datasets.Dataset`` test split."""
    import datasets

    loaded = load_scenario(scenario, os.environ.get(ENV_DATA_DIR) or None)
    if loaded.scenario.kind == SIMILARITY:
        check_model()  # before any generation: one clear error instead of a failure after every answer
    rows = []
    for item in loaded.items:
        row = {"id": item["id"], "scenario": loaded.scenario.code, "item_json": json.dumps(item, ensure_ascii=False),
               "prompt": build_prompt(loaded.scenario, item)}
        if loglikelihood:
            letters = option_letters(item)
            row.update(ll_prompt=loglikelihood_prompt(loaded.scenario.code, item), choices=letters, gold=letters.index(item["answer"]))
        rows.append(row)
    return {"test": datasets.Dataset.from_list(rows)}


def loglikelihood_prompt(code: str, item: dict[str, Any]) -> str:
    """The prompt of the log-likelihood variant: the same question and options, ending in 答案："""
    prompt = build_prompt(SCENARIOS[code], item)
    return prompt.rsplit("\n\n", 1)[0] + "\n\n答案："


def process_results(doc: dict, results: Sequence[str]) -> dict[str, float]:
    """Score one answer; every scenario reports its metric, ``score`` and ``parse_failure``.

    Each is a per-document value that the task YAMLs aggregate with lm-eval's built-in ``mean``,
    so lm-eval also reports its standard error (``<metric>_stderr``).
    """
    code = doc["scenario"]
    item = json.loads(doc["item_json"])
    if SCENARIOS[code].kind == SIMILARITY:
        record = json.loads(results[0])
        result = score_item(code, item, record["answer"], cosine=record["cosine"], similarity_model=record.get("similarity_model"))
    else:
        result = score_item(code, item, results[0])
    return result.lmeval_metrics()


def similarity_filter(resps: Sequence[Sequence[str]], docs: Sequence[dict]) -> list[str]:
    """``custom`` filter for WTD: embed all answers and references in batches, once per run."""
    model = configured_model()
    answers = first_responses(resps)
    references = [json.loads(d["item_json"])["answer"] for d in docs]
    print(f"[climedbench] WTD similarity with {model} on {len(answers)} answers", file=sys.stderr)
    cosines = cosine_similarities(answers, references, model)
    return [json.dumps({"answer": a, "cosine": c, "similarity_model": model}, ensure_ascii=False) for a, c in zip(answers, cosines)]
