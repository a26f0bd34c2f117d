"""lm-evaluation-harness glue for CliMedBench: per-scenario datasets, scoring and the WTD filter.

Each scenario is a task (``task_configs/climedbench/climedbench_<code>.yaml``, sharing
``_template_yaml``) grouped by dimension and into ``climedbench``; the multiple-choice scenarios
also come as log-likelihood tasks (``climedbench_<code>_ll``, group ``climedbench_ll``) for base
models. Documents carry the rendered prompt and the item as JSON, so items of any shape (four or
five options, keyword lists, reference texts) pass through ``datasets`` unchanged; scoring calls
the shared core in ``clinconsensus_tasks.scorers.climedbench.scenarios``.

The paper's analyses are variant tasks (``climedbench_<code>_perturbed``, ``_nota``, ``_cot``,
grouped as ``climedbench_perturbed`` ...; ``dataset_kwargs`` carry the variant, and for perturbed
runs ``perturbation``, ``perturbation_rate`` and ``seed``), built by the same core as Inspect's
``-T variant=``, so both frameworks send the same text. Each document also reports
``length_decile_<d>`` for its input-length decile d: lm-eval averages the documents that report it
(its fallback aggregation for metrics a YAML does not list is the mean).
"""

from __future__ import annotations

import json
import math
import os
import sys
from typing import Any, Sequence

from clinconsensus_tasks.climedbench.dataset import ENV_DATA_DIR, load_scenario
from clinconsensus_tasks.clinconsensus.lmeval_task import first_responses
from clinconsensus_tasks.scorers.climedbench.length_deciles import decile_metric
from clinconsensus_tasks.scorers.climedbench.perturbation import DEFAULT_RATE
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, build_prompt, option_letters, score_answer, score_similarity
from clinconsensus_tasks.scorers.climedbench.variants import CLEAN, VariantSettings, ask_scenario, final_answer
from clinconsensus_tasks.climedbench.similarity import configured_model, cosine_similarities


def load_dataset(scenario: str, loglikelihood: bool = False, variant: str = CLEAN, perturbation: str | None = None,
                 perturbation_rate: float = DEFAULT_RATE, seed: int = 0, **kwargs: Any) -> dict[str, Any]:
    """``custom_dataset`` hook: one scenario's validated items, as asked under ``variant``, as a test split."""
    import datasets

    loaded = load_scenario(scenario, os.environ.get(ENV_DATA_DIR) or None)
    settings = VariantSettings(variant, perturbation or "all", float(perturbation_rate), int(seed))  # type: ignore[arg-type]
    asked, left_out = ask_scenario(loaded.scenario, loaded.items, settings)
    if left_out:
        print(f"[climedbench] {loaded.scenario.code} {variant}: {len(left_out)} item(s) left out: {', '.join(left_out)}", file=sys.stderr)
    rows = []
    for a in asked:
        item = a.item
        row = {"id": item["id"], "scenario": loaded.scenario.code, "item_json": json.dumps(item, ensure_ascii=False),
               "prompt": a.prompt, "variant": variant, "length_decile": a.length_decile,
               "variant_json": json.dumps(a.log, ensure_ascii=False)}
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
    """Score one answer; every scenario reports its metric, ``score`` and ``parse_failure``."""
    scenario = SCENARIOS[doc["scenario"]]
    item = json.loads(doc["item_json"])
    if scenario.kind == SIMILARITY:
        record = json.loads(results[0])
        value, parsed = score_similarity(record["answer"], record["cosine"])
    else:
        value, parsed = score_answer(scenario, item, final_answer(results[0], doc.get("variant", CLEAN)))
    return {scenario.metric: value, "score": value, "parse_failure": 0.0 if parsed else 1.0,
            decile_metric(doc["length_decile"]): value}


def mean(values: Sequence[float]) -> float:
    """Exactly rounded mean (``math.fsum``), so the order documents come back in cannot matter."""
    return math.fsum(values) / len(values) if values else 0.0


def similarity_filter(resps: Sequence[Sequence[str]], docs: Sequence[dict]) -> list[str]:
    """``custom`` filter for WTD: embed all answers and references in batches, once per run."""
    model = configured_model()
    answers = [final_answer(a, d.get("variant", CLEAN)) for a, d in zip(first_responses(resps), docs)]
    references = [json.loads(d["item_json"])["answer"] for d in docs]
    print(f"[climedbench] WTD similarity with {model} on {len(answers)} answers", file=sys.stderr)
    cosines = cosine_similarities(answers, references, model)
    return [json.dumps({"answer": a, "cosine": c, "similarity_model": model}, ensure_ascii=False) for a, c in zip(answers, cosines)]
