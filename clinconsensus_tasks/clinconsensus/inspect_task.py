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
    Model,
    get_model,
    model_roles,
)
from inspect_ai import Epochs
from inspect_ai.scorer import Metric, SampleScore, Score, ScoreReducer, Scorer, Target, metric, score_reducer, scorer
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.solver import Generate, Solver, TaskState, solver

from clinconsensus_tasks.clinconsensus.dataset import Case, load_cases, slices_of
from clinconsensus_tasks.errors import ClinConsensusError, ConfigurationError
from clinconsensus_tasks.scorers.clinconsensus.cacs import DEFAULT_N_CRITERIA, CaseResult, breakdowns, flatten_breakdowns, summarize
from clinconsensus_tasks.scorers.agreement import Confusion
from clinconsensus_tasks.scorers.clinconsensus.judge_comparison import PairedCase, comparison_metrics, pair_verdicts
from clinconsensus_tasks.judge.inspect_calls import (
    RESUME_HINT,
    THRESHOLD_SETTING,
    check_failures,
    failure_threshold,
    judge_call_config,
    judge_text,
    single_client_attempt,
)
from clinconsensus_tasks.scorers.clinconsensus.answer_guard import suspect_reasons
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import CircuitBreaker, FailureTally, reason_counts
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS, count_failures, count_met, failures_of, grade_answer
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import JUDGE_MODES, PER_CRITERION, PROBE_MESSAGES
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import judge_max_tokens as max_tokens_for

GRADER_ROLE = "grader"
LOCAL_GRADER_ROLE = "local_grader"  # optional second judge, e.g. the distilled local judge


def shown_alone(error: ClinConsensusError) -> ClinConsensusError:
    """``error`` (same type, same message) made also Inspect's ``PrerequisiteError``, which
    ``inspect eval`` prints alone rather than at the end of a long traceback."""
    kind = type(error)
    both = type(kind.__name__, (kind, PrerequisiteError), {"__module__": kind.__module__})
    alone = both.__new__(both)
    alone.__dict__.update(vars(error))
    alone.args = error.args
    text = str(error)
    alone.message = text if text.startswith("ClinConsensus") else f"ClinConsensus: {text}"
    return alone


def parse_thresholds(thresholds: Sequence[int] | str | int, n_criteria: int = DEFAULT_N_CRITERIA) -> tuple[int, ...]:
    """Accept ``[7, 10]``, ``"7,10"`` or ``7`` (how ``-T thresholds=...`` may arrive); each k in 1..N."""
    if isinstance(thresholds, int):
        ks: tuple[int, ...] = (thresholds,)
    elif isinstance(thresholds, str):
        parts = [p for p in thresholds.replace(" ", "").strip("[]").split(",") if p]
        try:
            ks = tuple(int(p) for p in parts)
        except ValueError:
            raise ConfigurationError(f"thresholds={thresholds!r}: expected integers such as 7,10") from None
    else:
        ks = tuple(int(k) for k in thresholds)
    if not ks or any(not 1 <= k <= n_criteria for k in ks):
        raise ConfigurationError(f"thresholds={thresholds!r}: give one or more k with 1 <= k <= {n_criteria}")
    return tuple(dict.fromkeys(ks))


def case_to_sample(case: Case) -> Sample:
    return Sample(id=case.case_id, input=case.question, metadata=case.metadata())


def _epoch_record(met: int, judged: int, failures: int, empty: int, local: Sequence[int] = ()) -> str:
    """``met,judged,failures,empty`` and, with a local judge, ``,local_met,local_failures,tp,tn,fp,fn``."""
    return ",".join(str(x) for x in (met, judged, failures, empty, *local))


def _case_results(score_value: dict, metadata: dict) -> list[CaseResult]:
    """One :class:`CaseResult` per epoch of a sample, from the ``epochs`` record of its score.

    Each (case, epoch) counts as one observation, so with several epochs Pass@k and CACS@k are
    averaged over epochs per case, and failures are summed, never averaged away.
    """
    record = score_value.get("epochs") if isinstance(score_value, dict) else None
    if not isinstance(record, str):
        raise ConfigurationError(
            "ClinConsensus scores need the task's own epoch reducer ('clinconsensus_epochs'); "
            "run without --epochs-reducer (other reducers average away the per-case counts)."
        )
    slices = slices_of(metadata)
    out = []
    for part in record.split(";"):
        met, judged, failures, _empty = (int(x) for x in part.split(",")[:4])
        out.append(CaseResult(met=met, judged=judged, failures=failures, slices=slices))
    return out


def _paired_cases(score_value: dict, metadata: dict) -> list[PairedCase]:
    """The (grader, local_grader) pairs of each epoch of a sample scored by both judges."""
    out = []
    for reference, part in zip(_case_results(score_value, metadata), score_value["epochs"].split(";")):
        fields = [int(x) for x in part.split(",")]
        if len(fields) < 10:
            continue
        local_met, local_failures, tp, tn, fp, fn = fields[4:10]
        other = CaseResult(local_met, reference.judged, local_failures, reference.slices)
        out.append(PairedCase(reference, other, Confusion(tp=tp, tn=tn, fp=fp, fn=fn)))
    return out


@score_reducer(name="clinconsensus_epochs")
def clinconsensus_epochs() -> ScoreReducer:
    """Combine a case's epochs by keeping each epoch's counts (summing met, judged, failures)."""

    def reduce(scores: list[Score]) -> Score:
        values = [s.value for s in scores if isinstance(s.value, dict)]
        first = scores[0]
        return Score(
            value={
                "met": sum(v["met"] for v in values),
                "judged": sum(v["judged"] for v in values),
                "failures": sum(v["failures"] for v in values),
                "empty": sum(v["empty"] for v in values),
                "suspect": sum(v.get("suspect", 0) for v in values),
                "epochs": ";".join(v["epochs"] for v in values),
            },
            answer=first.answer,
            explanation="; ".join(s.explanation or "" for s in scores),
            metadata=first.metadata,
        )

    return reduce


def _empty_count(value: dict) -> int:
    return sum(int(part.split(",")[3]) for part in value["epochs"].split(";"))


@metric(name="clinconsensus")
def clinconsensus_metrics(
    thresholds: Sequence[int] = (7, 10), n_criteria: int = DEFAULT_N_CRITERIA, with_breakdowns: bool = True,
    judge_failure_threshold: float | None = None,
) -> Metric:
    """Rubric accuracy, Pass@k, CACS@k, judge failures, suspect answers and, optionally, their
    breakdowns; an error instead when failed judgments exceed the failure threshold."""
    threshold = failure_threshold(judge_failure_threshold)

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        check_failures(scores, threshold)
        results = [r for s in scores for r in _case_results(s.score.value, s.sample_metadata or {})]  # type: ignore[arg-type]
        out = summarize(results, thresholds, n_criteria)
        out.pop("cases")
        out["empty_answers"] = float(sum(_empty_count(s.score.value) for s in scores))
        out["suspect_answers"] = float(sum(s.score.value.get("suspect", 0) for s in scores))  # type: ignore[union-attr]
        if with_breakdowns:
            out.update(flatten_breakdowns(breakdowns(results, thresholds, n_criteria)))
        paired = [p for s in scores for p in _paired_cases(s.score.value, s.sample_metadata or {})]  # type: ignore[arg-type]
        if paired:
            out.update(comparison_metrics(paired, thresholds, n_criteria, prefix="local", by_label=with_breakdowns))
            if with_breakdowns:
                local_tables = breakdowns([p.other for p in paired], thresholds, n_criteria)
                out.update({f"local/{k}": v for k, v in flatten_breakdowns(local_tables).items()})
        return out

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
        single_client_attempt(judge)
        try:
            await judge.generate(to_chat(PROBE_MESSAGES), config=judge_call_config(judge, max_tokens=8), cache=False)
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
    judge_failure_threshold: float | None = None,
    planned_judgments: int = 0,
) -> Scorer:
    """Grade each answer against its case's rubric with the judge model.

    The score value holds the counts the metrics need (``met``, ``judged``, ``failures``,
    ``empty`` and the per-epoch record ``epochs``); the per-criterion verdicts, explanations and
    failures are in the score metadata. The metrics attached here use k = 7 and 10; the task
    attaches metrics for its own thresholds.

    Failure policy (``scorers.clinconsensus.judge_failures``): a judge failing call after call
    stops the run at once (circuit breaker), and so does the sample whose failed judgments take
    the run past ``judge_failure_threshold`` of the ``planned_judgments`` (or of those made so far).
    """
    if judge_mode not in JUDGE_MODES:
        raise ConfigurationError(f"judge_mode={judge_mode!r}; choose one of {', '.join(JUDGE_MODES)}")
    decoding = dict(temperature=0.0, max_tokens=judge_max_tokens or max_tokens_for(judge_mode, n_criteria))
    threshold = failure_threshold(judge_failure_threshold)
    breaker, tally = CircuitBreaker(resume_hint=RESUME_HINT), FailureTally()

    def completer(model: Model):
        single_client_attempt(model)

        async def complete(messages: list[dict[str, str]], fresh: bool) -> str:
            config = judge_call_config(model, **decoding)
            output = await model.generate(to_chat(messages), config=config, cache=judge_cache and not fresh)
            return judge_text(output)

        return complete

    async def score(state: TaskState, target: Target) -> Score:
        grader = resolve_grader(judge_role, allow_self_grading)
        local = local_grader()
        rubrics = [(r["criterion_id"], r["criterion"]) for r in state.metadata["rubrics"]]
        answer = state.output.completion if state.output else ""
        jobs = [grade_answer(state.input_text, answer, rubrics, completer(grader), judge_mode, max_attempts, breaker)]
        if local is not None:
            jobs.append(grade_answer(state.input_text, answer, rubrics, completer(local), judge_mode, max_attempts, breaker))
        judgments, *local_judgments = await asyncio.gather(*jobs)
        for graded in (judgments, *local_judgments):
            tally.add(failures_of(graded), len(graded))
        tally.check(threshold, RESUME_HINT, THRESHOLD_SETTING, planned_judgments)
        suspect = suspect_reasons(answer)
        met, failures, empty = count_met(judgments), count_failures(judgments), int(not answer.strip())
        note = f"{met}/{len(judgments)} criteria met" + (f", {failures} failed judgment(s)" if failures else "")
        if empty:
            note = "empty answer: no criterion met (not sent to the judge)"
        metadata = {"judge_mode": judge_mode, "judge": str(grader), "judgments": [j.to_dict() for j in judgments],
                    "suspect_answer": suspect, "failure_reasons": dict(reason_counts(failures_of(judgments)))}
        if suspect:
            note += f"; suspect answer ({', '.join(suspect)})"
        local_fields: tuple[int, ...] = ()
        if local_judgments:
            other = local_judgments[0]
            matrix = pair_verdicts([j.met for j in judgments], [j.met for j in other])
            local_fields = (count_met(other), count_failures(other), matrix.tp, matrix.tn, matrix.fp, matrix.fn)
            note += f"; local judge: {local_fields[0]}/{len(other)} met"
            metadata.update(local_judge=str(local), local_judgments=[j.to_dict() for j in other])
        return Score(
            value={
                "met": met,
                "judged": len(judgments),
                "failures": failures,
                "empty": empty,
                "suspect": int(bool(suspect)),
                "epochs": _epoch_record(met, len(judgments), failures, empty, local_fields),
            },
            answer=answer,
            explanation=note,
            metadata=metadata,
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
    judge_failure_threshold: float | None = None,
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
        judge_failure_threshold: the share of failed judgments that ends the run with an error
            (default ``CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD`` or 0.01; 0 = never stop).
    """
    try:
        ks = parse_thresholds(thresholds, n_criteria)
        if judge_mode not in JUDGE_MODES:
            raise ConfigurationError(f"judge_mode={judge_mode!r}; choose one of {', '.join(JUDGE_MODES)}")
        failure_threshold(judge_failure_threshold)
        loaded = load_cases(data, n_criteria)
    except ClinConsensusError as exc:
        raise shown_alone(exc) from exc
    return Task(
        dataset=MemoryDataset([case_to_sample(c) for c in loaded.cases], name="clinconsensus", location=loaded.source),
        solver=generate_with_judge_check(GRADER_ROLE, allow_self_grading, judge_check),
        scorer=rubric_scorer(judge_mode, n_criteria, judge_max_attempts, judge_cache, GRADER_ROLE, allow_self_grading,
                             judge_max_tokens, judge_failure_threshold, len(loaded.cases) * n_criteria),
        metrics=[clinconsensus_metrics(ks, n_criteria, breakdowns, judge_failure_threshold)],
        epochs=Epochs(1, clinconsensus_epochs()),
        metadata={"data_source": loaded.source, "data_sha256": loaded.sha256, "judge_mode": judge_mode},
    )
