"""CliMedBench as Inspect tasks: one per scenario (``climedbench_sso`` ...) and ``climedbench`` (all 14).

The prompt and the scoring come from ``clinconsensus_tasks.scorers.climedbench.scenarios``, the same code the
lm-eval tasks call. WTD's embedding model is loaded when a task that includes WTD is built, before
any answer is generated (``similarity.check_model``); tasks without WTD never import it.
"""

from __future__ import annotations

from typing import Any, Sequence

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState, generate

from clinconsensus_tasks.climedbench.dataset import load_scenario
from clinconsensus_tasks.scorers.climedbench.item_result import item_key, score_item
from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS, SIMILARITY, build_prompt, scenario_codes, summarize


# Bumped on any change of prompt, answer parsing or scoring (see CHANGELOG.md); the lm-eval YAMLs
# carry the same version as metadata.version 1.0.
TASK_VERSION = 1


def item_to_sample(code: str, item: dict[str, Any]) -> Sample:
    scenario = SCENARIOS[code]
    return Sample(
        id=item_key(code, item["id"]),
        input=build_prompt(scenario, item),
        target=item["answer"] if isinstance(item["answer"], str) else " ".join(item["answer"]),
        metadata={"scenario": code, "item": item},
    )


@metric(name="climedbench")
def climedbench_metrics() -> Metric:
    """Per-scenario metric, score and parse_failure; dimension means; overall score."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rows = [((s.sample_metadata or {})["scenario"], s.score.value["value"], s.score.value["parsed"] >= 0.5) for s in scores]  # type: ignore[index]
        out = summarize(rows)
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
        answer = state.output.completion if state.output else ""
        if SCENARIOS[code].kind != SIMILARITY:
            return Score(**score_item(code, item, answer, epoch=state.epoch).score_fields())
        from clinconsensus_tasks.climedbench.similarity import EmbeddingBatcher, configured_model

        if batcher is None:
            batcher = EmbeddingBatcher(configured_model(similarity_model))
        cosine = await batcher.similarity(answer, item["answer"]) if answer.strip() else 0.0
        result = score_item(code, item, answer, cosine=cosine, similarity_model=batcher.model_name, epoch=state.epoch)
        return Score(**result.score_fields())

    return score


def climedbench_task(codes: Sequence[str], data_dir: str | None, similarity_model: str | None, name: str) -> Task:
    if any(SCENARIOS[code].kind == SIMILARITY for code in codes):
        from clinconsensus_tasks.climedbench.similarity import check_model

        similarity_model = check_model(similarity_model)
    samples, sources, sample_data = [], {}, False
    for code in codes:
        loaded = load_scenario(code, data_dir)
        samples += [item_to_sample(code, item) for item in loaded.items]
        sources[code] = loaded.source
        sample_data = sample_data or loaded.is_sample
    return Task(
        dataset=MemoryDataset(samples, name=name),
        solver=generate(),
        scorer=climedbench_scorer(similarity_model),
        metadata={"data_sources": sources, "synthetic_sample": sample_data},
        version=TASK_VERSION,
    )


@task
def climedbench(data_dir: str | None = None, scenarios: str | list[str] | None = None, similarity_model: str | None = None) -> Task:
    """All CliMedBench scenarios (or ``-T scenarios=SSO,CPR``): per-scenario, dimension and overall scores.

    Args:
        data_dir: folder with one ``<CODE>.jsonl`` per scenario; unset: the bundled synthetic sample.
        scenarios: the scenario codes to run (default all 14).
        similarity_model: sentence-transformers model for WTD (hub id or folder); default
            ``$CLIMEDBENCH_SIMILARITY_MODEL``, else ``cyclone/simcse-chinese-roberta-wwm-ext``.
    """
    return climedbench_task(scenario_codes(scenarios), data_dir, similarity_model, "climedbench")


def _scenario_task(code: str):
    def build(data_dir: str | None = None, similarity_model: str | None = None) -> Task:
        return climedbench_task([code], data_dir, similarity_model, SCENARIOS[code].task_name)

    scenario = SCENARIOS[code]
    build.__name__ = scenario.task_name
    build.__doc__ = (
        f"CliMedBench {code} ({scenario.english}; {scenario.name}), scored by {scenario.metric}.\n\n"
        "Args:\n    data_dir: folder with one <CODE>.jsonl per scenario; unset: the bundled synthetic sample.\n"
        "    similarity_model: sentence-transformers model for WTD (hub id or folder).\n"
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
