# inspect-evals-lint: ignore-file[IEFS002] -- one module per framework (inspect_task.py, lmeval_task.py); the package exports the tasks
"""CliMedBench as Inspect tasks: one per scenario (``climedbench_sso`` ...) and ``climedbench`` (all 14).

The prompt and the scoring come from ``clinconsensus_tasks.scorers.climedbench.scenarios``, the same code the
lm-eval tasks call. WTD's embedding model is loaded when a task that includes WTD is built, before
any answer is generated (``similarity.check_model``); tasks without WTD never import it.
The paper's analyses run as variants of every task (``-T variant=perturbed|nota|cot``, see
``clinconsensus_tasks.scorers.climedbench.variants``); every run also reports its scores per
input-length decile (``length_decile_1`` ... ``length_decile_10``).
"""

from __future__ import annotations

import sys
from typing import Sequence

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from clinconsensus_tasks.climedbench.dataset import SAMPLE_NOTE, chosen_data_dir, load_scenario
from clinconsensus_tasks.climedbench.logs import score_fields
from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.generation import CLIMEDBENCH
from clinconsensus_tasks.inspect_compat import shown_alone
from clinconsensus_tasks.scorers.climedbench.item_result import item_key, score_item
from clinconsensus_tasks.scorers.climedbench.length_deciles import decile_scores
from clinconsensus_tasks.scorers.climedbench.metric_table import TASK_VERSION
from clinconsensus_tasks.scorers.climedbench.perturbation import DEFAULT_RATE
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, scenario_codes, summarize
from clinconsensus_tasks.scorers.climedbench.variants import CLEAN, AskedItem, VariantSettings, applies, ask_scenario, final_answer


def item_to_sample(code: str, asked: AskedItem) -> Sample:
    item = asked.item
    return Sample(
        id=item_key(code, item["id"]),
        input=asked.prompt,
        target=item["answer"] if isinstance(item["answer"], str) else " ".join(item["answer"]),
        metadata={"scenario": code, "item": item, "length_decile": asked.length_decile, **asked.log},
    )


@metric(name="climedbench")
def climedbench_metrics() -> Metric:  # inspect-evals-lint: ignore[IETS008] -- tested through the real epoch reducer by eval(epochs=2) in tests/climedbench/test_e2e_mockllm.py (the rule's helper runs mockllm/model without usage, which downloads a tokenizer: not offline)
    """Per-scenario metric, score and parse_failure; dimension means; overall score."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rows = [((s.sample_metadata or {})["scenario"], s.score.value["value"], s.score.value["parsed"] >= 0.5) for s in scores]  # type: ignore[index]
        out = summarize(rows)
        out.update(decile_scores(((s.sample_metadata or {})["scenario"], (s.sample_metadata or {})["length_decile"], s.score.value["value"]) for s in scores))  # type: ignore[index]
        if len({code for code, _, _ in rows}) == 1:
            # A single-scenario task: plain names (accuracy, score, parse_failure).
            code = rows[0][0]
            return {key.split("/", 1)[1]: value for key, value in out.items() if key.startswith(f"{code}/")}
        return out

    return compute


@scorer(metrics=[climedbench_metrics()])
def climedbench_scorer(similarity_model: str | None = None) -> Scorer:
    """Score an answer with its scenario's rule; WTD by embedding similarity to the reference."""
    batcher = None

    async def score(state: TaskState, target: Target) -> Score:
        nonlocal batcher
        code = state.metadata["scenario"]
        item = state.metadata["item"]
        answer = final_answer(state.output.completion if state.output else "", state.metadata.get("variant", CLEAN))
        asked = {"epoch": state.epoch, "variant": state.metadata.get("variant", CLEAN),
                 "length_decile": int(state.metadata.get("length_decile", 0))}
        if SCENARIOS[code].kind != SIMILARITY:
            return Score(**score_fields(score_item(code, item, answer, **asked), item))
        from clinconsensus_tasks.climedbench.similarity import EmbeddingBatcher, configured_model

        if batcher is None:
            batcher = EmbeddingBatcher(configured_model(similarity_model))
        cosine = await batcher.similarity(answer, item["answer"]) if answer.strip() else 0.0
        result = score_item(code, item, answer, cosine=cosine, similarity_model=batcher.model_name, **asked)
        return Score(**score_fields(result, item))

    return score


def climedbench_task(codes: Sequence[str], data_dir: str | None, similarity_model: str | None, name: str,
                     settings: VariantSettings = VariantSettings()) -> Task:
    """The task of ``codes``; ``data_dir`` a folder or ``sample`` (unset: the one-line refusal,
    :data:`dataset.NO_DATA`). Every error of the data or the similarity model stops the build with
    one message, before any answer is generated."""
    try:
        return _climedbench_task(codes, chosen_data_dir(data_dir), similarity_model, name, settings)
    except ClinConsensusError as exc:
        raise shown_alone(exc, "CliMedBench") from exc


def _climedbench_task(codes: Sequence[str], data_dir: str, similarity_model: str | None, name: str,
                      settings: VariantSettings) -> Task:
    if any(SCENARIOS[code].kind == SIMILARITY and applies(SCENARIOS[code], settings.variant) for code in codes):
        from clinconsensus_tasks.climedbench.similarity import check_model

        similarity_model = check_model(similarity_model)
    samples, sources, sample_data, left_out, not_applicable = [], {}, False, {}, []
    for code in codes:
        if not applies(SCENARIOS[code], settings.variant):
            not_applicable.append(code)
            continue
        loaded = load_scenario(code, data_dir, announce=False)
        asked, dropped = ask_scenario(loaded.scenario, loaded.items, settings)
        samples += [item_to_sample(code, a) for a in asked]
        if dropped:
            left_out[code] = dropped
        sources[code] = loaded.source
        sample_data = sample_data or loaded.is_sample
    if sample_data:
        print(f"[climedbench] data_dir=sample: the {SAMPLE_NOTE}, {len(samples)} items in {len(sources)} scenario(s); its scores say nothing about a model", file=sys.stderr)
    if left_out or not_applicable:
        print(f"[climedbench] {settings.variant}: items left out {left_out}; scenarios it does not apply to: {not_applicable}", file=sys.stderr)
    if not samples:
        raise ValueError(f"CliMedBench {settings.variant}: no item of {', '.join(codes)} can be asked under this variant "
                         f"(left out: {left_out}; not applicable: {not_applicable})")
    return Task(
        dataset=MemoryDataset(samples, name=name if settings.variant == CLEAN else f"{name}_{settings.variant}"),
        solver=generate(),
        scorer=climedbench_scorer(similarity_model),
        config=CLIMEDBENCH.inspect_config(),
        metadata={"generation": CLIMEDBENCH.record(), "data_sources": sources, "synthetic_sample": sample_data, "variant": settings.__dict__ | {"kinds": list(settings.kinds)},
                  "left_out": left_out, "not_applicable": not_applicable},
        version=TASK_VERSION,
    )


def variant_settings(variant: str, perturbation: str | list[str] | None, perturbation_rate: float, seed: int) -> VariantSettings:
    kinds = perturbation if isinstance(perturbation, str) or perturbation is None else ",".join(perturbation)
    return VariantSettings(variant, kinds or "all", float(perturbation_rate), int(seed))  # type: ignore[arg-type]


VARIANT_ARGS = """    variant: clean (default), perturbed (12% of each question's characters perturbed), nota (the
        right option's text becomes 以上都不对) or cot (reason first, answer after the reasoning).
    perturbation: perturbed kinds, comma-separated (default all: shape,homophone,traditional,symbol).
    perturbation_rate: share of each question's characters to perturb (default 0.12).
    seed: perturbation seed (default 0); the same seed gives the same text in both frameworks.
"""


@task
def climedbench(data_dir: str | None = None, scenarios: str | list[str] | None = None, similarity_model: str | None = None,
                variant: str = CLEAN, perturbation: str | list[str] | None = None, perturbation_rate: float = DEFAULT_RATE,
                seed: int = 0) -> Task:
    """All CliMedBench scenarios (or ``-T scenarios=SSO,CPR``): per-scenario, dimension, length-decile and overall scores.

    Args:
        data_dir: folder with one ``<CODE>.jsonl`` per scenario (the data is not public: its authors
            give it on request), or ``sample`` for the bundled synthetic sample; required.
        scenarios: the scenario codes to run (default all 14).
        similarity_model: sentence-transformers model for WTD (hub id or folder); default
            ``$CLIMEDBENCH_SIMILARITY_MODEL``, else ``cyclone/simcse-chinese-roberta-wwm-ext`` at its pinned commit.
        variant: clean (default), perturbed (12% of each question's characters perturbed), nota (the
            right option's text becomes 以上都不对) or cot (reason first, answer after the reasoning).
        perturbation: perturbed kinds, comma-separated (default all: shape,homophone,traditional,symbol).
        perturbation_rate: share of each question's characters to perturb (default 0.12).
        seed: perturbation seed (default 0); the same seed gives the same text in both frameworks.
    """
    return climedbench_task(scenario_codes(scenarios), data_dir, similarity_model, "climedbench",
                            variant_settings(variant, perturbation, perturbation_rate, seed))


def _scenario_task(code: str):
    def build(data_dir: str | None = None, similarity_model: str | None = None, variant: str = CLEAN,
              perturbation: str | list[str] | None = None, perturbation_rate: float = DEFAULT_RATE, seed: int = 0) -> Task:
        return climedbench_task([code], data_dir, similarity_model, SCENARIOS[code].task_name,
                                variant_settings(variant, perturbation, perturbation_rate, seed))

    scenario = SCENARIOS[code]
    build.__name__ = scenario.task_name
    build.__doc__ = (
        f"CliMedBench {code} ({scenario.english}; {scenario.name}), scored by {scenario.metric}.\n\n"
        "Args:\n    data_dir: folder with one <CODE>.jsonl per scenario (the data is not public: its authors give it\n"
        "        on request), or sample for the bundled synthetic sample; required.\n"
        "    similarity_model: sentence-transformers model for WTD (hub id or folder).\n" + VARIANT_ARGS
    )
    return task(name=scenario.task_name)(build)


climedbench_id1 = _scenario_task("ID1")
climedbench_id2 = _scenario_task("ID2")
climedbench_id3 = _scenario_task("ID3")
climedbench_id4 = _scenario_task("ID4")
climedbench_bkt = _scenario_task("BKT")
climedbench_fit = _scenario_task("FIT")
climedbench_ftt = _scenario_task("FTT")
climedbench_wtd = _scenario_task("WTD")
climedbench_ds = _scenario_task("DS")
climedbench_mc = _scenario_task("MC")
climedbench_sso = _scenario_task("SSO")
climedbench_cpr = _scenario_task("CPR")
climedbench_ke = _scenario_task("KE")
climedbench_cs = _scenario_task("CS")
