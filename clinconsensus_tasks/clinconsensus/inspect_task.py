# inspect-evals-lint: ignore-file[IEFS002] -- one module per framework (inspect_task.py, lmeval_task.py); the package exports the task
"""ClinConsensus as an Inspect task: the dataset adapter, the rubric scorer and its metrics.

The judge is the ``grader`` model role (``--model-role grader=PROVIDER/MODEL``), so any Inspect
provider can grade, with Inspect's own connection limits, retries and response cache. Grading
itself (prompts, re-asking unparseable verdicts, failure accounting) and every metric come from the
framework-free core in ``clinconsensus_tasks.scorers``, the same code the lm-eval path calls.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Literal, Sequence

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    CachePolicy,
    ContentReasoning,
    Model,
    ModelOutput,
    get_model,
    model_roles,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from clinconsensus_tasks import generation
from clinconsensus_tasks.clinconsensus import settings
from clinconsensus_tasks.clinconsensus.dataset import Case, load_cases
from clinconsensus_tasks.scorers.clinconsensus.records import INSPECT_SCORER
from clinconsensus_tasks.errors import ClinConsensusError, ConfigurationError
from clinconsensus_tasks.inspect_compat import register_logged_scorer_name, shown_alone
from clinconsensus_tasks.judge.official_template import load_judge_prompt, prompt_record
from clinconsensus_tasks.judge.input_limit import JudgeInputLimits
from clinconsensus_tasks.judge.inspect_server import judge_extra_body, judges_provenance, role_base_url, server_of
from clinconsensus_tasks.scorers.clinconsensus.answers import ANSWER_MAX_TOKENS, visible_answer
from clinconsensus_tasks.judge.protocol import check_failed
from clinconsensus_tasks.judge.inspect_calls import (
    DIRECT_CALLS,
    INSPECT_CALLS,
    InspectJudges,
    check_direct_judges,
    grade_by,
    judge_decoding,
    judge_calls_setting,
    to_chat,
    CHECK_HINT,
    check_judges_now,
    JudgeFailurePolicy,
    failure_threshold,
    probe_call_config,
    single_client_attempt,
)
from clinconsensus_tasks.scorers.clinconsensus.case_values import breakdown_metrics, case_value, run_metrics
from clinconsensus_tasks.scorers.clinconsensus.explanation import case_explanation
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import classify
from clinconsensus_tasks.scorers.clinconsensus import metric_table
from clinconsensus_tasks.scorers.clinconsensus.metric_table import TASK_VERSION
from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA
from clinconsensus_tasks.scorers.clinconsensus.jury import panel_record
from clinconsensus_tasks.scorers.clinconsensus.records import SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import PER_CRITERION, PROBE_MESSAGES
from clinconsensus_tasks.judge.provenance import data_provenance


GRADER_ROLE = "grader"
# The model under test's answers through Inspect's response cache, per epoch, only when the user asks
# for it (``-T answer_cache=true``): that cache is keyed by the model's name, URL, settings and
# messages, so a model retrained and served again under the same name would get its old answers.
ANSWER_CACHE = CachePolicy(per_epoch=True)
# The optional second judge, any model (an API model as well as a local one). The name is kept
# although it says "local": users type it (--model-role local_grader=...), logs record it.
LOCAL_GRADER_ROLE = "local_grader"


def case_to_sample(case: Case) -> Sample:
    return Sample(id=case.case_id, input=case.question, metadata=case.metadata())


def headline_first(metrics: dict[str, float], thresholds: Sequence[int] = (7, 10)) -> dict[str, float]:
    """The same metrics with the metric table's headline (CACS@10 first) and every other mean
    metric, each with its standard error, first: Inspect's results table and Inspect View show
    the first metric as the task's score."""
    first = [k for name in metric_table.mean_names(thresholds) for k in (name, f"{name}_stderr") if k in metrics]
    return {**{k: metrics[k] for k in first}, **{k: v for k, v in metrics.items() if k not in first}}


@metric(name="clinconsensus")
def clinconsensus_metrics(  # inspect-evals-lint: ignore[IETS008] -- tested by eval(epochs=2) with each reducer in tests/clinconsensus/test_frameworks.py and on rows in tests/clinconsensus/test_case_values.py (the rule's helper needs a tokenizer download)
    thresholds: Sequence[int] = (7, 10), n_criteria: int = DEFAULT_N_CRITERIA, with_breakdowns: bool = False,
    judge_failure_threshold: float | None = None,
) -> Metric:
    """Rubric accuracy, Pass@k and CACS@k with their standard errors, the counts (failed judgments,
    empty, truncated and suspect answers), the same means over the cases with no failed judgment,
    the audience slices and, with a second judge or a jury, their metrics and the agreement
    (``scorers.clinconsensus.case_values.run_metrics``); with ``with_breakdowns``, each headline
    metric by difficulty, subject and task too.

    Each score's value is its case's row of per-case terms (``case_values.case_value``), so Inspect
    reduces a case's epochs itself, as ``--epochs-reducer`` says (the mean by default), and this
    metric reads the reduced rows: a standard error is over cases. Never raises (Inspect also calls a
    metric on the samples finished so far, for its live display). The failure policy judges the
    whole run once, at its end (:class:`JudgeFailurePolicy`); ``judge_failure_threshold`` is
    accepted for logs that record it. A jury's kappas and the breakdowns by subject and task label
    need each verdict: ``clinconsensus-eval summarize`` and the report give them."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        values = [s.score.value for s in scores]
        metadata = [s.sample_metadata or {} for s in scores]
        out = run_metrics(values, [m.get("audience") for m in metadata], thresholds, n_criteria)
        if with_breakdowns and out:
            out.update(breakdown_metrics(values, [slices_of(m) for m in metadata], thresholds))
        return headline_first(out, thresholds)

    return compute


def judge_roles_per_case() -> int:
    """Judge roles each case's record holds: one judge; a jury's panel and each juror; plus a second judge."""
    graders = model_roles().get(GRADER_ROLE)
    jurors = len(graders) if isinstance(graders, list) and len(graders) > 1 else 0
    return 1 + jurors + (model_roles().get(LOCAL_GRADER_ROLE) is not None)


def local_grader() -> Model | None:
    """The second judge (``local_grader`` role), if one is bound."""
    return get_model(role=LOCAL_GRADER_ROLE, required=True) if model_roles().get(LOCAL_GRADER_ROLE) is not None else None  # inspect-evals-lint: ignore[IEBP001] -- called only from the solver and the scorer, per sample


def resolve_graders(role: str = GRADER_ROLE, allow_self_grading: bool = False) -> list[Model]:
    """The model(s) bound to ``role``: one judge, or a jury when the role is bound to a list
    (``--model-role grader=a,b,c``; ``scorers.clinconsensus.jury``). An error telling how to bind
    one if there is none: Inspect would otherwise fall back to the model under test, which then
    grades itself."""
    bound = model_roles().get(role)
    if isinstance(bound, list) and bound:
        return list(bound)
    if bound is not None:
        return [get_model(role=role, required=True)]  # inspect-evals-lint: ignore[IEBP001] -- called only from the solver and the scorer, per sample
    if allow_self_grading:
        return [get_model()]  # inspect-evals-lint: ignore[IEBP001] -- called only from the solver and the scorer, per sample
    raise ConfigurationError(
        f"No judge bound: ClinConsensus grades answers with the '{role}' model role. Bind one, e.g. "
        f"`inspect eval clinconsensus_tasks/clinconsensus --model M --model-role {role}=openai/gpt-4.1`, "
        f"or `eval(..., model_roles={{'{role}': 'vllm/skylenage/ClinConsensus-Judge-8B'}})`; a list "
        f"(`--model-role {role}=a,b,c`) is a jury. To grade with the model under test itself, pass "
        "-T allow_self_grading=true."
    )


def bound_judges() -> list[Model]:
    """Every judge model bound for this run: the grader role's (one, or a jury's), then the second judge."""
    out: list[Model] = []
    for role in (GRADER_ROLE, LOCAL_GRADER_ROLE):
        bound = model_roles().get(role)
        out += list(bound) if isinstance(bound, list) else [bound] if bound is not None else []
    return out


@solver
def generate_with_judge_check(role: str = GRADER_ROLE, allow_self_grading: bool = False, check: bool = True,
                              checked: Sequence[str] = (), answer_cache: bool = False) -> Solver:
    """Generate the answer, but first stop the run if no judge is bound or the judge does not answer.

    With ``check``, one tiny request goes to the judge(s) before the first answer is generated,
    so a wrong key, URL or model name fails the run at once rather than every judgment later.
    The check and the generation are one solver step: each extra step costs Inspect a snapshot
    of the task state per sample. Judges named in ``checked`` were checked when the task was built
    (``inspect_calls.check_judges_now``) and are not asked again.

    The answer is generated anew, as Inspect does by default. With ``answer_cache`` it goes
    through Inspect's response cache, per epoch: the same command again serves every answer the
    cache holds for that model name, which is right only while the model behind the name is the
    one that gave them. Nothing else needs it: a failed judge is finished by ``inspect score``
    (the judge alone is asked), and ``inspect eval-retry`` keeps every finished sample.
    """
    probe: asyncio.Task | None = None

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        nonlocal probe
        judges = resolve_graders(role, allow_self_grading)
        local = local_grader()
        if local is not None:
            judges.append(local)
        judges = [j for j in judges if str(j) not in checked]
        if check and judges:
            if probe is None:
                probe = asyncio.ensure_future(_probe(judges))
            await asyncio.shield(probe)
        return await generate(state, cache=ANSWER_CACHE if answer_cache else False)

    return solve


async def _probe(judges: list[Model]) -> None:
    for judge in judges:
        single_client_attempt(judge)
        try:  # with the fields every request to this judge carries (thinking off where its server takes it)
            extra_body = judge_extra_body(judge, await server_of(judge)) or None
            await judge.generate(to_chat(PROBE_MESSAGES), config=probe_call_config(extra_body), cache=False)
        except Exception as exc:
            raise shown_alone(check_failed(str(judge), role_base_url(judge) or "its provider's endpoint", classify(exc)[1], CHECK_HINT),
                                  "ClinConsensus") from None


def _answer_with_reasoning(output: ModelOutput | None, keep_thinking: bool) -> tuple[str, bool]:
    """The answer text and whether the model reasoned. Inspect keeps a model's reasoning apart
    from its text (``completion`` is the reply alone); with ``keep_thinking`` the reasoning is put
    back in front, in ``<think>`` tags, as a model without a reasoning parser writes it."""
    if output is None:
        return "", False
    content = output.message.content if output.choices else ""
    reasoning = [c.reasoning for c in content if isinstance(c, ContentReasoning)] if not isinstance(content, str) else []
    if keep_thinking and reasoning:
        return "".join(f"<think>{r}</think>\n\n" for r in reasoning) + output.completion, True
    return output.completion, bool(reasoning)


@scorer(metrics=[clinconsensus_metrics()], name=INSPECT_SCORER)  # logs key its scores by this name
def rubric_scorer(
    judge_mode: str = PER_CRITERION,
    n_criteria: int = DEFAULT_N_CRITERIA,
    max_attempts: int = MAX_ATTEMPTS,
    judge_cache: bool = True,
    judge_role: str = GRADER_ROLE,
    allow_self_grading: bool = False,
    judge_max_tokens: int | None = None,
    judge_prompt: str | None = None,
    judge_sees_thinking: bool = False,
    judge_structured_output: bool = False,
    judge_failure_threshold: float | None = None,
    planned_judgments: int = 0,
    judge_calls: str = INSPECT_CALLS,
    thresholds: Sequence[int] = (7, 10),
    judge_verdict_reading: str | None = None,
) -> Scorer:
    """Grade each answer against its case's rubric with the judge model.

    The score's value is the case's row of per-case terms and counts (``case_values.case_value``:
    what the metrics average or add, and what Inspect reduces over epochs); its explanation, the
    table a reader sees in Inspect View; its metadata, the case's :class:`GradedCase` record
    (verdicts, reasons, failures, every judge role's) for programs. ``thresholds``: the k of the
    Pass@k and CACS@k terms in the value (the task's).
    ``judge_prompt`` is ``official`` (the default, also from ``$CLINCONSENSUS_JUDGE_PROMPT``),
    ``project`` or a template file; it is resolved here, when the task is built, so a template
    that cannot be had stops the run before any answer. The metrics attached here use k = 7 and 10; the task
    attaches metrics for its own thresholds.

    A failed judgment never errors the sample: it is recorded in the score (kind and reason), so
    the answer stays in the log and ``inspect score LOG`` can re-judge it. Once the judge fails
    too many calls in a row, its breaker fails its remaining judgments at once, with no
    request sent. Whether the failures are too many is decided once, at the end of the run, by
    the task's :class:`JudgeFailurePolicy`. ``judge_failure_threshold`` and ``planned_judgments``
    are accepted and unused, so ``inspect score`` can re-score logs written before that policy.
    ``judge_verdict_reading`` is ``strict`` (the default, also from
    ``$CLINCONSENSUS_JUDGE_VERDICT_READING``) or ``official`` (the released judge's runner's
    reading; each record says so).
    """
    judge_mode = settings.judge_mode(judge_mode)
    reading = settings.verdict_reading(judge_verdict_reading, judge_mode)
    template = load_judge_prompt(judge_prompt, judge_mode)
    prompt_info = prompt_record(template, judge_mode)
    decoding = judge_decoding(judge_mode, n_criteria, judge_max_tokens, judge_structured_output)  # greedy; the schema when asked
    judges = InspectJudges(decoding, judge_cache, judge_mode, judge_calls_setting(judge_calls))  # judge/inspect_calls.py: the Inspect transport
    limits = JudgeInputLimits()  # judge/input_limit.py: each judge's input limit, learned from refusals as they come

    async def score(state: TaskState, target: Target) -> Score:
        graders = resolve_graders(judge_role, allow_self_grading)
        local = local_grader()
        rubrics = [(r["criterion_id"], r["criterion"]) for r in state.metadata["rubrics"]]
        slices = slices_of(state.metadata)
        # The answer as the user saw it: a reasoning model's thinking is not graded (unless asked).
        raw, reasoned = _answer_with_reasoning(state.output, judge_sees_thinking)
        seen = visible_answer(raw, judge_sees_thinking)
        answer = seen.text
        truncated = seen.cut_in_thinking or (state.output is not None and state.output.stop_reason == "max_tokens")

        async def grade(model: Model) -> GradedCase:  # judge/input_limit.py: graded within the judge's input limit
            return await grade_by(model, judges, limits, decoding, judge_mode, max_attempts, template, prompt_info, str(state.sample_id),
                                  state.input_text, answer, rubrics, slices=slices, epoch=state.epoch, verdict_reading=reading)

        graded = await asyncio.gather(*([grade(g) for g in graders] + ([grade(local)] if local is not None else [])))
        record = panel_record(graded[:len(graders)]) if len(graders) > 1 else graded[0]  # a jury: the majority of its jurors
        if local is not None:
            record = record.with_role(SECOND_ROLE, graded[-1])
        record = replace(record, answer_truncated=truncated, thinking_removed=seen.thinking_removed or (reasoned and not judge_sees_thinking))
        return Score(
            value=case_value(record, thresholds, n_criteria),  # the case's per-case terms and counts: what Inspect reduces
            answer=answer,
            explanation=case_explanation(record, rubrics),  # what a reader sees in Inspect View: every criterion's verdict and reason
            metadata={**record.to_dict(), **judges_provenance(graders, local, judge_mode, prompt_info)},
        )

    return score


register_logged_scorer_name(rubric_scorer)  # `inspect score LOG` finds it by the name the log records


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
    breakdowns: bool = False,
    allow_self_grading: bool = False,
    judge_prompt: str | None = None,
    answer_max_tokens: int = ANSWER_MAX_TOKENS,
    judge_sees_thinking: bool = False,
    revision: str | None = None,
    judge_failure_threshold: float | None = None,
    judge_structured_output: bool = False,
    answer_cache: bool = False,
    judge_calls: Literal["inspect", "direct"] = "inspect",
    judge_verdict_reading: Literal["strict", "official"] | None = None,
) -> Task:
    """ClinConsensus: open-ended Chinese clinical cases graded against 30 rubric criteria each.

    Args:
        data: ``hub`` (Hugging Face ``skylenage/ClinConsensus``), ``sample`` (bundled synthetic
            cases) or a path to a ``.jsonl``/``.parquet`` file in the same schema.
        judge_mode: ``per_criterion`` (one judge call per criterion, the benchmark's protocol) or
            ``batched`` (one call per case).
        thresholds: the k of Pass@k and CACS@k.
        n_criteria: expected criteria per case (N in CACS).
        judge_max_attempts: attempts per verdict before it counts as a failed judgment (2: the
            request and one re-ask, the verdict rule).
        judge_cache: use Inspect's response cache for judge calls (re-asks always bypass it).
        answer_cache: serve the model's answers from Inspect's response cache, per epoch
            (default false, as Inspect). That cache is keyed by the model's name, URL and settings,
            not by its weights: turn it on only while the model behind the name is unchanged.
        judge_check: send the judge one test request before generating anything.
        judge_max_tokens: the judge's token budget per call (default 512 per criterion, 96 per
            criterion in batched mode).
        breakdowns: also put each headline metric by difficulty, subject and task label in the log's
            results (default false: ``clinconsensus-eval summarize`` and the report give them, with
            a jury's kappas; the audience slices are always there, as in lm-eval's results).
        allow_self_grading: grade with the model under test when no ``grader`` role is bound.
        judge_prompt: per-criterion judge prompt: ``official`` (the template the released judge
            was trained on, downloaded and sha256-checked at first use), ``project`` (the
            project's own prompt) or the path of a template file with the placeholders
            ``{user_message}``, ``{response}``, ``{rubric_item}``. Default
            ``$CLINCONSENSUS_JUDGE_PROMPT``, else ``official``. Batched mode has its own prompt.
        answer_max_tokens: generation limit for the model under test (default 8192, as lm-eval's
            ``max_gen_toks``); answers stopped by it are counted as ``truncated_answers``.
            Inspect's ``--max-tokens`` overrides it.
        judge_sees_thinking: send a reasoning model's ``<think>`` text to the judge too (default:
            the judge grades the reply as the user saw it).
        revision: the hub revision (branch, tag or commit) of ``data=hub``; default
            ``$CLINCONSENSUS_DATA_REVISION``, else the default branch.
        judge_failure_threshold: the share of the planned judgments that may fail (default
            ``CLINCONSENSUS_JUDGE_FAILURE_THRESHOLD`` or 0.01; 0 = no limit). Above it the run ends
            with status ``error`` once every sample is done (:class:`JudgeFailurePolicy`);
            judgments of samples that errored count as failed.
        judge_structured_output: ask the judge for JSON by ``response_format`` (off by default: the
            released judge was trained on the fenced format; an API without it answers 400).
        judge_calls: ``inspect`` (default: each judge call through Inspect's model API, with its
            transcript event, response cache and batch mode, any provider) or ``direct`` (an
            OpenAI-compatible judge through the project's own client, as lm-eval's path: about a
            third of the CPU per call, for campaigns at hundreds of connections; no event per
            judge call in the transcript, the project's verdict cache in place of Inspect's, no
            batch mode; see docs/performance.md).
        judge_verdict_reading: how a judge's reply is read: ``strict`` (the project's verdict
            rule, docs/verdict-rule.md) or ``official`` (the released judge's runner's: the first
            ``"criteria_met": true|false`` anywhere, asked once), to reproduce the released
            pipeline's numbers. Default ``$CLINCONSENSUS_JUDGE_VERDICT_READING``, else ``strict``.
            Recorded in every record; ``summarize --strict`` refuses ``official`` unless
            ``--allow-prompt official-reading``.
    """
    try:
        ks = settings.thresholds(thresholds, n_criteria)
        judge_mode = settings.judge_mode(judge_mode)
        settings.verdict_reading(judge_verdict_reading, judge_mode)  # a wrong value stops the run before any answer
        threshold = failure_threshold(judge_failure_threshold)
        loaded = load_cases(data, n_criteria, revision)
        checked = [str(j) for j in check_judges_now(bound_judges())] if judge_check else []  # a wrong judge stops the run before any answer
        if judge_calls_setting(judge_calls) == DIRECT_CALLS:
            check_direct_judges(bound_judges())
    except ClinConsensusError as exc:
        raise shown_alone(exc, "ClinConsensus") from exc
    return Task(
        dataset=MemoryDataset([case_to_sample(c) for c in loaded.cases], name="clinconsensus", location=loaded.source),
        solver=generate_with_judge_check(GRADER_ROLE, allow_self_grading, judge_check, checked, answer_cache),
        scorer=rubric_scorer(judge_mode, n_criteria, judge_max_attempts, judge_cache, GRADER_ROLE, allow_self_grading,
                             judge_max_tokens, judge_prompt, judge_sees_thinking,
                             judge_structured_output=judge_structured_output, judge_calls=judge_calls, thresholds=list(ks),
                             judge_verdict_reading=judge_verdict_reading),
        metrics=[clinconsensus_metrics(ks, n_criteria, breakdowns)],
        early_stopping=JudgeFailurePolicy(threshold, judges=judge_roles_per_case),
        config=generation.CLINCONSENSUS.inspect_config(max_tokens=answer_max_tokens),
        metadata={**data_provenance(loaded), "judge_mode": judge_mode, "generation": generation.CLINCONSENSUS.record(), **prompt_record(load_judge_prompt(judge_prompt, judge_mode), judge_mode)},
        version=TASK_VERSION,
    )
