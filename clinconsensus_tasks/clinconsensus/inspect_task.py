"""ClinConsensus as an Inspect task: the dataset adapter, the rubric scorer and its metrics.

The judge is the ``grader`` model role (``--model-role grader=PROVIDER/MODEL``), so any Inspect
provider can grade, with Inspect's own connection limits, retries and response cache. Grading
itself (prompts, re-asking unparseable verdicts, failure accounting) and every metric come from the
framework-free core in ``clinconsensus_tasks.scorers``, the same code the lm-eval path calls.
"""

from __future__ import annotations

import asyncio
from typing import Literal, Sequence

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
    model_roles,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from clinconsensus_tasks.clinconsensus import settings
from clinconsensus_tasks.clinconsensus.dataset import Case, load_cases
from clinconsensus_tasks.clinconsensus.logs import INSPECT_SCORER
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.scorers.clinconsensus.cacs import DEFAULT_N_CRITERIA, breakdowns, flatten_breakdowns, headline_stderrs, slices_of, summarize
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import comparison_metrics
from clinconsensus_tasks.scorers.clinconsensus.records import GradedCase, grade_case
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, PROBE_MESSAGES
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import judge_max_tokens as max_tokens_for

GRADER_ROLE = "grader"
LOCAL_GRADER_ROLE = "local_grader"  # optional second judge, e.g. the distilled local judge


def case_to_sample(case: Case) -> Sample:
    return Sample(id=case.case_id, input=case.question, metadata=case.metadata())


HEADLINE_ORDER = ("cacs@10", "cacs@7", "pass@10", "pass@7", "rubric_accuracy")


def headline_first(metrics: dict[str, float]) -> dict[str, float]:
    """The same metrics with CACS@10 (the paper's headline) and the other headline metrics and
    their standard errors first: Inspect's results table and Inspect View show the first metric
    as the task's score."""
    first = [k for name in HEADLINE_ORDER for k in (name, f"{name}_stderr") if k in metrics]
    first += [k for k in metrics if k.startswith(("cacs@", "pass@")) and "(" not in k and k not in first]
    return {**{k: metrics[k] for k in first}, **{k: v for k, v in metrics.items() if k not in first}}


@metric(name="clinconsensus", scores="unreduced")
def clinconsensus_metrics(
    thresholds: Sequence[int] = (7, 10), n_criteria: int = DEFAULT_N_CRITERIA, with_breakdowns: bool = True
) -> Metric:
    """Rubric accuracy, Pass@k, CACS@k with their standard errors, judge failures and, optionally,
    breakdowns; with a second judge, its metrics and the agreement of the two.

    The metric reads every (case, epoch) score, not a reduced one (``scores="unreduced"``): each
    epoch's :class:`GradedCase` is in its score metadata, a case's epochs are averaged before the
    cases (standard errors clustered by case), and failed judgments of every epoch add up."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        records = [GradedCase.from_dict(s.score.metadata or {}, f"sample {s.sample_id!r}") for s in scores]
        results = [r.result() for r in records]
        out = summarize(results, thresholds, n_criteria)
        out.pop("cases")
        out.update(headline_stderrs(results, thresholds, n_criteria))
        out["empty_answers"] = float(sum(r.answer_empty for r in records))
        if with_breakdowns:
            out.update(flatten_breakdowns(breakdowns(results, thresholds, n_criteria)))
        paired = [p for p in (r.paired() for r in records) if p is not None]
        if paired:
            out.update(comparison_metrics(paired, thresholds, n_criteria, prefix="local", by_label=with_breakdowns))
            if with_breakdowns:
                local_tables = breakdowns([p.other for p in paired], thresholds, n_criteria)
                out.update({f"local/{k}": v for k, v in flatten_breakdowns(local_tables).items()})
        return headline_first(out)

    return compute


_KINDS = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
_SYSTEM_MESSAGES: dict[str, ChatMessage] = {}


def to_chat(messages: list[dict[str, str]]) -> list[ChatMessage]:
    """Inspect chat messages; the few distinct system prompts are built once and shared."""
    out: list[ChatMessage] = []
    for m in messages:
        if m["role"] == "system":
            cached = _SYSTEM_MESSAGES.get(m["content"])
            if cached is None:
                cached = _SYSTEM_MESSAGES.setdefault(m["content"], ChatMessageSystem(content=m["content"]))
            out.append(cached)
        else:
            out.append(_KINDS[m["role"]](content=m["content"]))
    return out


def local_grader() -> Model | None:
    """The second judge (``local_grader`` role), if one is bound."""
    return get_model(role=LOCAL_GRADER_ROLE) if model_roles().get(LOCAL_GRADER_ROLE) is not None else None


def resolve_grader(role: str = GRADER_ROLE, allow_self_grading: bool = False) -> Model:
    """The model bound to ``role``; an error telling how to bind one if there is none.

    Inspect would otherwise fall back to the model under test, which then grades itself.
    """
    if model_roles().get(role) is not None:
        return get_model(role=role)
    if allow_self_grading:
        return get_model()
    raise ConfigurationError(
        f"No judge bound: ClinConsensus grades answers with the '{role}' model role. Bind one, e.g. "
        f"`inspect eval clinconsensus_tasks/clinconsensus --model M --model-role {role}=openai/gpt-4.1`, "
        f"or `eval(..., model_roles={{'{role}': 'vllm/skylenage/ClinConsensus-Judge-8B'}})`. To grade "
        "with the model under test itself, pass -T allow_self_grading=true."
    )


@solver
def generate_with_judge_check(role: str = GRADER_ROLE, allow_self_grading: bool = False, check: bool = True) -> Solver:
    """Generate the answer, but first stop the run if no judge is bound or the judge does not answer.

    With ``check``, one tiny request goes to the judge(s) before the first answer is generated,
    so a wrong key, URL or model name fails the run at once rather than every judgment later.
    The check and the generation are one solver step: each extra step costs Inspect a snapshot
    of the task state per sample.
    """
    probe: asyncio.Task | None = None

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        nonlocal probe
        judges = [resolve_grader(role, allow_self_grading)]
        local = local_grader()
        if local is not None:
            judges.append(local)
        if check:
            if probe is None:
                probe = asyncio.ensure_future(_probe(judges))
            await asyncio.shield(probe)
        return await generate(state)

    return solve


async def _probe(judges: list[Model]) -> None:
    for judge in judges:
        try:
            await judge.generate(to_chat(PROBE_MESSAGES), config=GenerateConfig(max_tokens=8), cache=False)
        except Exception as exc:
            raise ConfigurationError(f"The judge ({judge}) did not answer a test request: {type(exc).__name__}: {exc}") from exc


@scorer(metrics=[clinconsensus_metrics()])
def rubric_scorer(
    judge_mode: str = PER_CRITERION,
    n_criteria: int = DEFAULT_N_CRITERIA,
    max_attempts: int = MAX_ATTEMPTS,
    judge_cache: bool = True,
    judge_role: str = GRADER_ROLE,
    allow_self_grading: bool = False,
    judge_max_tokens: int | None = None,
) -> Scorer:
    """Grade each answer against its case's rubric with the judge model.

    The score metadata is the case's :class:`GradedCase` record (verdicts, explanations, failures,
    and the second judge's in a dual-judge run); the value holds its counts, for display. The metrics attached here use k = 7 and 10; the task
    attaches metrics for its own thresholds.
    """
    judge_mode = settings.judge_mode(judge_mode)
    config = GenerateConfig(temperature=0.0, max_tokens=judge_max_tokens or max_tokens_for(judge_mode, n_criteria))

    def completer(model: Model):
        async def complete(messages: list[dict[str, str]], fresh: bool) -> str:
            output = await model.generate(to_chat(messages), config=config, cache=judge_cache and not fresh)
            return output.completion

        return complete

    async def score(state: TaskState, target: Target) -> Score:
        grader = resolve_grader(judge_role, allow_self_grading)
        local = local_grader()
        rubrics = [(r["criterion_id"], r["criterion"]) for r in state.metadata["rubrics"]]
        answer = state.output.completion if state.output else ""
        slices = slices_of(state.metadata)

        def grade(model: Model):
            return grade_case(str(state.sample_id), state.input_text, answer, rubrics, completer(model), str(model),
                              judge_mode, max_attempts, slices, state.epoch)

        record, *second = await asyncio.gather(*([grade(grader)] + ([grade(local)] if local is not None else [])))
        if second:
            record = record.with_local(second[0])
        note = f"{record.met}/{record.judged} criteria met" + (f", {record.failures} failed judgment(s)" if record.failures else "")
        if record.answer_empty:
            note = "empty answer: no criterion met (not sent to the judge)"
        local_result = record.local_result()
        if local_result is not None:
            note += f"; local judge: {local_result.met}/{local_result.judged} met"
        return Score(
            value={"met": record.met, "judged": record.judged, "failures": record.failures, "empty": int(record.answer_empty)},
            answer=answer,
            explanation=note,
            metadata=record.to_dict(),
        )

    return score


@task
def clinconsensus(
    data: str = "hub",
    judge_mode: Literal["per_criterion", "batched"] = "per_criterion",
    thresholds: list[int] | str = [7, 10],
    n_criteria: int = DEFAULT_N_CRITERIA,
    judge_max_attempts: int = MAX_ATTEMPTS,
    judge_cache: bool = True,
    judge_check: bool = True,
    judge_max_tokens: int | None = None,
    breakdowns: bool = True,
    allow_self_grading: bool = False,
) -> Task:
    """ClinConsensus: open-ended Chinese clinical cases graded against 30 rubric criteria each.

    Args:
        data: ``hub`` (Hugging Face ``skylenage/ClinConsensus``), ``sample`` (bundled synthetic
            cases) or a path to a ``.jsonl``/``.parquet`` file in the same schema.
        judge_mode: ``per_criterion`` (one judge call per criterion, the benchmark's protocol) or
            ``batched`` (one call per case).
        thresholds: the k of Pass@k and CACS@k.
        n_criteria: expected criteria per case (N in CACS).
        judge_max_attempts: attempts per verdict before it counts as a failed judgment.
        judge_cache: use Inspect's response cache for judge calls (re-asks always bypass it).
        judge_check: send the judge one test request before generating anything.
        judge_max_tokens: the judge's token budget per call (default 512 per criterion, 96 per
            criterion in batched mode).
        breakdowns: also report rubric accuracy and CACS by difficulty, subject, task and audience.
        allow_self_grading: grade with the model under test when no ``grader`` role is bound.
    """
    ks = settings.thresholds(thresholds, n_criteria)
    judge_mode = settings.judge_mode(judge_mode)
    loaded = load_cases(data, n_criteria)
    return Task(
        dataset=MemoryDataset([case_to_sample(c) for c in loaded.cases], name="clinconsensus", location=loaded.source),
        solver=generate_with_judge_check(GRADER_ROLE, allow_self_grading, judge_check),
        scorer=rubric_scorer(judge_mode, n_criteria, judge_max_attempts, judge_cache, GRADER_ROLE, allow_self_grading, judge_max_tokens),
        metrics=[clinconsensus_metrics(ks, n_criteria, breakdowns)],
        metadata={"data_source": loaded.source, "data_sha256": loaded.sha256, "judge_mode": judge_mode},
    )
