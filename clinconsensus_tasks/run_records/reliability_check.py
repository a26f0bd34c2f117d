"""The judge asked again (``clinconsensus-eval reliability``): which rows, which judges, the asks kept
in the output folder as they come, and the figures made from them.

* **The sample** (:func:`plan_check`): cases drawn per subject x difficulty stratum from every case
  the runs hold, with the physician review's sampler (``physician_review.sample_cases``: every case
  the same chance), and each drawn case's criteria (all, or ``criteria_per_case`` of them at random);
  a batched run is asked again per case (its prompt holds the whole rubric), so its rows are every
  criterion of a drawn case.
* **The asks** (:class:`Unit`): every judge that gave a run's verdicts (its grader, each juror of a
  jury, the second judge of a dual run) is asked each drawn answer ``repeat`` times as it was, and
  once under each answer-irrelevant edit (``answer_forms``) that changes it, under the protocol the
  run recorded (mode, prompt rebuilt and checked by its sha256, verdict length, structured output,
  thinking off and the input cut where the transport applies them). Each ask is a fresh request:
  the project's verdict cache and Inspect's response cache are passed by, and each ask is written
  to ``asks/`` as it returns, so a check that stops (``--max-calls``, a dead judge, Ctrl-C) keeps
  every answer it got but those of the asks still in flight, and resumes asking only what is missing.
* **The judge** (:func:`judge_asker`): an Inspect run's judge is bound again from the role its
  log's header recorded (model, config, base URL, arguments; keys from the environment, as when it
  ran) and asked through Inspect's model API, any provider, in-process ones included; an lm-eval
  run's judge is the OpenAI-compatible endpoint its ``--metadata`` and the environment give, as the
  run had them. A judge reached under another name than the one the run's verdicts carry is refused.
* **The figures** (:func:`run_figures`): ``scorers.reliability``'s, made again from the asks each
  time they are read (the gate never trusts a summary a hand could edit).
"""

from __future__ import annotations

import datetime
import json
import random
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase, read_case_records
from clinconsensus_tasks.errors import ClinConsensusError, ConfigurationError
from clinconsensus_tasks.judge.input_limit import JudgeInputLimits
from clinconsensus_tasks.judge.token_count import make_counter, prompt_tokens
from clinconsensus_tasks.run_records.protocol import header_settings, protocol_template, recorded_protocol
from clinconsensus_tasks.run_records.regrade import case_documents
from clinconsensus_tasks.run_records.review_export import stratum
from clinconsensus_tasks.scorers.agreement import RESAMPLES, mean_intervals
from clinconsensus_tasks.scorers.clinconsensus.answer_forms import TRANSFORMS, transform
from clinconsensus_tasks.scorers.clinconsensus.cacs import case_term_rows
from clinconsensus_tasks.scorers.clinconsensus.jury import JUROR_PREFIX, is_jury, juror_roles, min_votes, panel_verdict
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, case_terms, mean_names
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, SECOND_ROLE, GradedCase
from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import CriterionJudgment
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED
from clinconsensus_tasks.scorers.physician_review import sample_cases
from clinconsensus_tasks.scorers.reliability import AskedRow, headline_noise, invariance, repeatability
from clinconsensus_tasks.scorers.usage import TokenUsage
from clinconsensus_tasks.storage import listing, location, make_folder, remote_child, same_location, storage_errors, write_text

FORMAT, VERSION = "clinconsensus-reliability", 1
PLAN_FILE = "reliability_plan.json"
ASKS = "asks"
AS_IS = "as_is"  # the answer as the run held it
PANEL = "panel"  # a jury's majority, asked again as its jurors are
DEFAULT_CASES, DEFAULT_REPEAT = 30, 2
VERDICT_TOKENS = 40  # completion tokens of one verdict the run recorded no usage for


class CheckError(ClinConsensusError):
    """A check that cannot go on as asked (another plan in the folder, a judge that is not the run's ...)."""


@dataclass(frozen=True)
class CheckRun:
    """A run to ask again: its name, where it was read, its framework, its records, the judge settings
    its header recorded (Inspect task arguments, lm-eval ``--metadata``) and, for Inspect, its roles
    and the eval's ``--max-connections`` (what a role that sets none had as its connections)."""

    name: str
    path: str
    framework: str
    records: Sequence[LoggedCase]
    settings: Mapping[str, Any] = field(default_factory=dict)
    roles: Mapping[str, Any] = field(default_factory=dict)
    max_connections: int | None = None


def read_check_runs(paths: Sequence[str | Path]) -> list[CheckRun]:
    """The ClinConsensus runs among ``paths`` (files, folders, URL prefixes), each read once."""
    from clinconsensus_tasks.log_files import CLINCONSENSUS, benchmark_logs, read_inspect_log, model_display_name

    runs = []
    for path in benchmark_logs(paths, CLINCONSENSUS):
        where = location(path)
        named = str(where.resolve() if isinstance(where, Path) else where)  # the gate finds the run from any folder
        records = read_case_records(path)
        if where.suffix == ".jsonl":
            _, settings = header_settings(where)
            runs.append(CheckRun(f"{where.parent.name.replace('__', '/')} (lm-eval)", named, "lm-eval", records, settings))
            continue
        spec = read_inspect_log(where, header_only=True).eval
        connections = getattr(getattr(spec, "model_generate_config", None), "max_connections", None)
        runs.append(CheckRun(f"{model_display_name(spec.model)} (inspect)", named, "inspect", records, dict(spec.task_args or {}),
                             dict(spec.model_roles or {}), connections))
    return runs


def asked_roles(records: Sequence[LoggedCase]) -> list[str]:
    """The judges of a run whose verdicts are asked again: its grader, or each juror of a jury (the
    panel follows from theirs), and the second judge of a dual run."""
    if not records:
        return []
    first = records[0].graded
    roles = juror_roles(first) if is_jury(first) else [HEADLINE_ROLE]
    return roles + ([SECOND_ROLE] if SECOND_ROLE in first.roles else [])


def record_key(record: LoggedCase) -> str:
    return f"{record.graded.case_id}@{record.graded.epoch}"


# -- the plan ---------------------------------------------------------------------------------------


def plan_check(runs: Sequence[CheckRun], cases: int = DEFAULT_CASES, criteria_per_case: int | None = None,
               repeat: int = DEFAULT_REPEAT, transforms: Sequence[str] = TRANSFORMS, seed: int = 0) -> dict[str, Any]:
    """The check's plan: the settings, the runs (each with the judges it names), the drawn cases and
    their criteria (see the module docstring)."""
    if repeat < 2:
        raise ValueError(f"--repeat must be at least 2 (a judge asked once cannot disagree with itself), got {repeat}")
    if cases < 1:
        raise ValueError(f"--cases must be at least 1, got {cases}")
    if criteria_per_case is not None and criteria_per_case < 1:
        raise ValueError(f"--criteria-per-case must be at least 1 (or 'all'), got {criteria_per_case}")
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown:
        raise ValueError(f"--transforms: unknown {', '.join(unknown)}; use {', '.join(TRANSFORMS)} (or none)")
    if not runs or not any(run.records for run in runs):
        raise CheckError("the runs hold no graded case to ask again")
    strata: dict[str, tuple[str, str]] = {}
    rubrics: dict[str, list[str]] = {}
    for run in runs:
        for record in run.records:
            strata.setdefault(record.graded.case_id, stratum(record))
            rubrics.setdefault(record.graded.case_id, [cid for cid, _ in record.rubrics])
    drawn = sample_cases(strata, cases, seed)
    rng = random.Random(f"{seed}:criteria")
    rows = {}
    for case in drawn:
        ids = rubrics[case]
        rows[case] = ids if criteria_per_case is None or criteria_per_case >= len(ids) else sorted(rng.sample(ids, criteria_per_case), key=ids.index)
    return {
        "format": FORMAT, "version": VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "settings": {"cases": cases, "criteria_per_case": criteria_per_case or "all", "repeat": repeat,
                     "transforms": list(transforms), "seed": seed, "strata": "subject x difficulty"},
        "runs": [{"name": run.name, "path": run.path, "framework": run.framework, "cases": len(run.records),
                  "judges": judge_names_of(run.records, run.path)} for run in runs],
        "strata": {case: list(strata[case]) for case in drawn},
        "rows": rows,
    }


def judge_names_of(records: Sequence[LoggedCase], where: str = "") -> dict[str, str]:
    """Each asked role's judge as a run's verdicts name it (one name a role, else an error naming them)."""
    out = {}
    for role in asked_roles(records):
        names = sorted({r.graded.roles[role].judge for r in records if role in r.graded.roles})
        if len(names) != 1:
            raise CheckError(f"{where}: the {role} verdicts name {len(names)} judges ({', '.join(names) or 'none'}): "
                             "ask again a run of one judge per role")
        out[role] = names[0]
    return out


def judge_name(run: CheckRun, role: str) -> str:
    return judge_names_of(run.records, run.path)[role]


def same_plan(held: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """``""`` when a folder's plan is the plan of this command (same settings, runs and judges),
    else what differs: a check resumes only the asks it planned."""
    for key in ("settings", "rows"):
        if held.get(key) != new.get(key):
            return f"its {key} differ"
    ran = [(r["path"], r["judges"]) for r in held.get("runs", [])]
    now = [(r["path"], r["judges"]) for r in new.get("runs", [])]
    return "" if ran == now else "its runs or their judges differ"


# -- the asks -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One ask of one judge: a run's answer to a case (as it was, or edited), some of its criteria."""

    run: int
    record: LoggedCase
    role: str
    form: str  # AS_IS or a transform
    ask: int
    criteria: tuple[str, ...]
    answer: str

    @property
    def id(self) -> str:
        return f"{self.run}|{record_key(self.record)}|{self.role}|{self.form}|{self.ask}"

    @property
    def group(self) -> tuple[int, str, str, int]:
        return self.run, self.role, self.form, self.ask


def run_units(plan: Mapping[str, Any], index: int, records: Sequence[LoggedCase]) -> tuple[list[Unit], dict[str, int]]:
    """Every ask the plan makes of run ``index`` (its ``records``), and for each transform the drawn
    answers it leaves as they were (no Markdown to remove, nothing to convert: no test of it, not asked)."""
    repeat, forms = plan["settings"]["repeat"], plan["settings"]["transforms"]
    roles = list(plan["runs"][index]["judges"])
    batched = any(r.graded.judge_mode == BATCHED for r in records)
    out: list[Unit] = []
    unchanged: dict[str, int] = dict.fromkeys(forms, 0)
    for record in records:
        case = record.graded.case_id
        if case not in plan["rows"]:
            continue
        criteria = tuple(cid for cid, _ in record.rubrics) if batched else tuple(plan["rows"][case])
        edited = {form: transform(form, record.answer) for form in forms}
        for form in forms:
            unchanged[form] += edited[form] == record.answer
        for role in roles:
            out += [Unit(index, record, role, AS_IS, a, criteria, record.answer) for a in range(repeat)]
            out += [Unit(index, record, role, form, 0, criteria, edited[form]) for form in forms if edited[form] != record.answer]
    return out, unchanged


def units(plan: Mapping[str, Any], runs: Sequence[CheckRun]) -> list[Unit]:
    """Every ask the plan makes, run by run."""
    return [unit for index, run in enumerate(runs) for unit in run_units(plan, index, run.records)[0]]


def unit_calls(unit: Unit, mode: str) -> int:
    """The judge calls an ask makes at first (re-asks of unreadable replies are the protocol's own)."""
    return 1 if mode == BATCHED else len(unit.criteria)


def unit_usage(unit: Unit, mode: str, template: Any) -> tuple[TokenUsage, bool]:
    """What an ask should cost: the run's own tokens per call for this judge and case where it
    recorded them, else the messages counted as estimate counts them without a tokenizer (characters / 1.5,
    4 tokens of chat formatting a message) and 40 completion tokens a verdict; and
    whether the run's usage was used."""
    from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import batched_messages, per_criterion_messages

    calls = unit_calls(unit, mode)
    verdicts = unit.record.graded.roles.get(unit.role)
    spent = dict(verdicts.usage) if verdicts is not None else {}
    if spent.get("calls"):
        per = {k: spent.get(k, 0) / spent["calls"] for k in ("prompt_tokens", "completion_tokens")}
        return TokenUsage(calls, round(per["prompt_tokens"] * calls), 0, round(per["completion_tokens"] * calls)), True
    texts = dict(unit.record.rubrics)
    counter = make_counter()  # characters per token, as estimate counts without a tokenizer
    if mode == BATCHED:
        tokens = prompt_tokens(batched_messages(unit.record.question, unit.answer, [(c, texts.get(c, "")) for c in unit.criteria]), counter)
    else:
        build = template.messages if template is not None else per_criterion_messages
        tokens = sum(prompt_tokens(build(unit.record.question, unit.answer, texts.get(c, "")), counter) for c in unit.criteria)
    return TokenUsage(calls, tokens, 0, VERDICT_TOKENS * len(unit.criteria)), False


def asked_line(unit: Unit, graded: GradedCase) -> dict[str, Any]:
    """What the asks file keeps of one ask: its unit, the judge, each criterion's verdict (``None``:
    failed, with its reason) and the tokens it spent."""
    verdicts = graded.headline
    return {"unit": unit.id, "judge": verdicts.judge,
            "verdicts": {j.criterion_id: j.met for j in verdicts.judgments},
            "failures": {j.criterion_id: f"{j.error_kind or 'failed'}: {j.error or ''}"[:300] for j in verdicts.judgments if j.met is None},
            "usage": dict(verdicts.usage)}


@dataclass(frozen=True)
class RunMatch:
    """How a run (its file and its records now) stands to a check (:func:`match_run`)."""

    index: int | None  # the run among the check's runs; None: the check did not read it
    why_not: str = ""  # why the check's figures are not this run's ('' when they are)
    missing: int = 0  # asks of the run the check has not made yet
    planned: int = 0


def match_run(check: Check, path: Any, records: Sequence[LoggedCase]) -> RunMatch:
    """Whether the check in ``check`` holds the figures of the run at ``path`` as ``records`` judge it
    now: the check read this file, and asked the judges its verdicts name (a run re-judged since is
    another judge). The one place that decides it, for the gate and the report alike."""
    where = f"the reliability check in {check.folder}"
    index = next((i for i, run in enumerate(check.plan["runs"]) if same_location(run["path"], path)), None)
    if index is None:
        return RunMatch(None, f"{where} did not ask this run's judge (it read {', '.join(r['path'] for r in check.plan['runs'])}): "
                              f"run clinconsensus-eval reliability {path} --output DIR")
    asked, now = check.plan["runs"][index]["judges"], judge_names_of(records)
    if asked != now:
        return RunMatch(index, f"{where} asked {', '.join(f'{r} {j}' for r, j in asked.items())}, but the run is now judged by "
                               f"{', '.join(f'{r} {j}' for r, j in now.items())} (re-judged since?): check the run's judge again")
    planned = [u.id for u in run_units(check.plan, index, records)[0]]
    return RunMatch(index, "", sum(1 for u in planned if u not in check.asks), len(planned))


def _not_an_ask(item: Any) -> str:
    """What makes ``item`` no ask as :func:`asked_line` writes one ('' when it is one): a verdict is
    true, false or null (failed), never a string or a number that reads as one."""
    if not isinstance(item, dict):
        return "not a JSON object"
    if not isinstance(item.get("unit"), str):
        return "no unit name"
    verdicts = item.get("verdicts")
    if not isinstance(verdicts, dict) or not all(isinstance(c, str) and (v is None or isinstance(v, bool)) for c, v in verdicts.items()):
        return "verdicts must map criterion ids to true, false or null"
    for name in ("failures", "usage"):
        if not isinstance(item.get(name, {}), dict):
            return f"{name} must be an object"
    return ""


def read_asks(folder: Any) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every ask in ``folder/asks`` by unit (the first of a unit asked twice), and notes on what was
    passed over (a line that is no ask, a unit asked twice)."""
    base = folder / ASKS
    if isinstance(base, Path):
        files = sorted(p for p in base.glob("*.jsonl")) if base.is_dir() else []
    else:
        files = [remote_child(base, url) for url in sorted(listing(base)) if url.endswith(".jsonl")]
    asks: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for path in files:
        with storage_errors(path):
            data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            notes.append(f"{path}: not UTF-8 text (byte {exc.start}): every ask in it left out")
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                item = None
            problem = _not_an_ask(item)
            if problem:
                notes.append(f"{path}:{number}: not an ask ({problem}): left out")
                continue
            unit = item["unit"]
            if unit in asks:
                notes.append(f"{path}:{number}: {unit} asked twice: the first answer kept")
                continue
            asks[unit] = item
    return asks, notes


def write_asks(folder: Any, lines: Sequence[Mapping[str, Any]]) -> Any:
    """Asks just returned, as a file of their own (a URL prefix has no append):
    ``asks/<UTC time>-<process>-<asks>.jsonl``."""
    import os

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S%f")
    path = folder / ASKS / f"{stamp}-{os.getpid()}-{len(lines)}.jsonl"
    write_text(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


@dataclass(frozen=True)
class Check:
    """A check's folder read: its plan, every ask by unit, and notes on what was passed over."""

    folder: Any
    plan: dict[str, Any]
    asks: dict[str, dict[str, Any]]
    notes: list[str]


def load_check(folder: str | Path) -> Check:
    """The check in ``folder`` (a local folder or a URL prefix); a folder with no plan is an error."""
    where = location(folder)
    plan = load_plan(where)
    if plan is None:
        raise CheckError(f"{where}: no {PLAN_FILE}: not a folder clinconsensus-eval reliability wrote")
    asks, notes = read_asks(where)
    return Check(where, plan, asks, notes)


def load_plan(folder: Any) -> dict[str, Any] | None:
    path = folder / PLAN_FILE
    with storage_errors(path):
        if not path.exists():
            return None
        text = path.read_text(encoding="utf-8")
    try:
        plan = json.loads(text)
    except ValueError as exc:
        raise CheckError(f"{path}: not JSON ({exc})") from None
    if not isinstance(plan, dict) or plan.get("format") != FORMAT or plan.get("version") != VERSION:
        raise CheckError(f"{path}: not a reliability plan of version {VERSION} (format {plan.get('format') if isinstance(plan, dict) else '?'})")
    return plan


def save_plan(folder: Any, plan: Mapping[str, Any]) -> None:
    make_folder(folder)
    write_text(folder / PLAN_FILE, json.dumps(plan, ensure_ascii=False, indent=1) + "\n")


# -- the judges -------------------------------------------------------------------------------------

Grader = Callable[[dict[str, Any], str], Awaitable[GradedCase]]


async def _nothing_to_close() -> None:
    return None


@dataclass(frozen=True)
class JudgeAsker:
    """How to ask one judge of a run again (:func:`judge_asker`): ``grade(doc, answer)`` makes one ask
    (a case's asked criteria, one answer) and may be called for many asks at once: they share the
    judge's ``connections`` (its client, connection slots, breaker and input limits are the
    asker's, for the whole check); the judge's name; and ``aclose()``, which closes what binding
    the judge opened."""

    grade: Grader
    judge: str
    connections: int
    aclose: Callable[[], Awaitable[None]] = _nothing_to_close


@dataclass(frozen=True)
class RunProtocol:
    """How a run's answers were judged, had again: mode, template, and the header's settings."""

    mode: str
    template: Any
    settings: Mapping[str, Any]


def run_protocol(run: CheckRun) -> RunProtocol:
    recorded = recorded_protocol(run.path, run.records)
    template = protocol_template(recorded, recorded.mode, None)  # rebuilt and checked by its sha256 before any call
    return RunProtocol(recorded.mode, template, run.settings)


def judge_asker(run: CheckRun, role: str, protocol: RunProtocol) -> JudgeAsker:
    """How to ask ``role``'s judge of ``run`` again, and its name: the judge is bound again as the
    run had it, refused unless it is the one the run's verdicts name (:func:`check_judge`), and sent
    the judge check before any ask. A setting the judge needs and the shell lacks (its API key) is
    a :class:`ConfigurationError` of one line naming the variable."""
    if run.framework == "inspect":
        return _inspect_asker(run, role, protocol)
    return _client_asker(run, role, protocol)


def _role_config(run: CheckRun, role: str) -> Any:
    name = "grader" if role == HEADLINE_ROLE or role.startswith(JUROR_PREFIX) else role
    config = run.roles.get(name)
    if isinstance(config, list):
        index = int(role.removeprefix(JUROR_PREFIX)) - 1 if role.startswith(JUROR_PREFIX) else 0
        config = config[index] if index < len(config) else None
    if config is None:
        raise CheckError(f"{run.path}: the log's header holds no {name!r} model role for the {role} verdicts: "
                         "the judge cannot be bound again as the run bound it")
    return config


def _inspect_asker(run: CheckRun, role: str, protocol: RunProtocol) -> JudgeAsker:
    from inspect_ai.model import GenerateConfig, get_model

    from clinconsensus_tasks.inspect_compat import PrerequisiteError
    from clinconsensus_tasks.judge.inspect_calls import (
        INSPECT_CALLS, InspectJudges, check_judges_now, grade_by, judge_connections, judge_decoding,
    )
    from clinconsensus_tasks.judge.official_template import prompt_record
    from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of
    from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS

    config = _role_config(run, role)
    get = (lambda k, d=None: config.get(k, d)) if isinstance(config, dict) else (lambda k, d=None: getattr(config, k, d))
    generate = get("config") or GenerateConfig()
    generate = generate if isinstance(generate, GenerateConfig) else GenerateConfig(**generate)
    if generate.max_connections is None and run.max_connections:
        # In the run, a role that set no connections of its own had the eval's (--max-connections:
        # judge_connections reads the active config); here no eval is active, and Inspect would
        # give the provider's default (10 for openai-api/) to the check's judge instead.
        generate = generate.merge(GenerateConfig(max_connections=run.max_connections))
    try:
        model = get_model(model=get("model"), config=generate, base_url=get("base_url"), memoize=False, **dict(get("args") or {}))
    except PrerequisiteError as exc:  # Inspect's text is Rich markup over several lines: one plain line instead
        raise ConfigurationError(unbound_judge(str(get("model")), role, exc.message)) from None
    settings = protocol.settings
    n_criteria = max(len(r.rubrics) for r in run.records)
    decoding = judge_decoding(protocol.mode, n_criteria, settings.get("judge_max_tokens"), bool(settings.get("judge_structured_output")))
    calls = str(settings.get("judge_calls") or INSPECT_CALLS)
    check_judge(run, role, str(model))
    check_judges_now([model])  # a wrong URL, key or model name stops the check before any ask
    # judge_documents_inspect's pieces, kept for the whole check: one set of connection slots and
    # one breaker for every ask, each call a fresh request (no response cache)
    judges = InspectJudges(decoding, cache=False, mode=protocol.mode, calls=calls)
    limits = JudgeInputLimits()  # learned once for every ask
    prompt_info = prompt_record(protocol.template, protocol.mode)

    async def grade(doc: dict[str, Any], answer: str) -> GradedCase:
        rubrics = [(r["criterion_id"], r["criterion"]) for r in doc["rubrics"]]
        return await grade_by(model, judges, limits, decoding, protocol.mode, MAX_ATTEMPTS, protocol.template, prompt_info,
                              str(doc["case_id"]), doc["question"], answer, rubrics, slices=slices_of(doc))

    return JudgeAsker(grade, str(model), judge_connections(model), model.api.aclose)


def unbound_judge(model: str, role: str, message: Any) -> str:
    """Why Inspect could not bind ``role``'s judge ``model`` again (its ``PrerequisiteError``), in one
    plain line: the environment variable it lacks and how to set it, else Inspect's words unmarked."""
    import re

    text = str(message)
    missing = re.findall(r"\[bold\]\[blue\]([A-Za-z_][A-Za-z0-9_]*)\[/blue\]\[/bold\]", text)
    if missing and "defined in the environment" in text:
        what = "API key" if missing[0].endswith("_API_KEY") else "base URL" if missing[0].endswith("_BASE_URL") else "setting"
        return (f"{' or '.join(missing)} is not set in this shell: the run's {role} judge {model} reads its {what} from it, as when "
                f"the run was made; export {missing[0]} with the judge's {what} and run the same command again")
    plain = " ".join(re.sub(r"\[/?[a-z ]+\]", "", text).split())
    return f"the run's {role} judge {model} cannot be bound again: {plain.removeprefix('ERROR: ')}"


def _client_asker(run: CheckRun, role: str, protocol: RunProtocol) -> JudgeAsker:
    from clinconsensus_tasks import settings_table
    from clinconsensus_tasks.judge.client import JudgeSettings, panel_from_env, probe_judge

    env = settings_table.merged_env(settings_table.given_settings(dict(protocol.settings)))
    if role.startswith(JUROR_PREFIX):
        panel = panel_from_env(env=env)
        index = int(role.removeprefix(JUROR_PREFIX)) - 1
        if index >= len(panel):
            raise CheckError(f"{run.path}: the run's jury had a juror {index + 1}, the settings name {len(panel)} judge(s)")
        settings = panel[index]
    else:
        settings = JudgeSettings.from_env(settings_table.LOCAL_GRADER if role == SECOND_ROLE else settings_table.GRADER, env)
    # each ask a fresh request: past the verdict cache, and sent at once (no batch API)
    settings = replace(settings, use_cache=False, batch=False)
    check_judge(run, role, settings.model)
    probe_judge(settings)  # a wrong URL, key or model name stops the check before any ask
    judge = _ClientJudge(settings, protocol)
    return JudgeAsker(judge.grade, settings.model, settings.concurrency, judge.aclose)


class _ClientJudge:
    """``judge.client.judge_documents``' pieces, opened once (inside the check's event loop, at its
    first ask) and kept for the whole check: the server asked once, one client whose connection
    slots every ask shares, one breaker, the input limits learned once. The requests are
    ``judge_documents``' own: thinking off where the server takes it, the verdict's schema with
    structured output, the mode's verdict length, fresh (no cache, no batch API)."""

    def __init__(self, settings: Any, protocol: RunProtocol):
        self.settings, self.protocol = settings, protocol
        self.limits = JudgeInputLimits()
        self.opened: Any = None  # an asyncio.Task opening the client: every ask waits for the same one

    async def _open(self) -> tuple[Any, Any, Any, Any, dict[str, str]]:
        import asyncio

        from clinconsensus_tasks.judge.client import JudgeClient, resume_hint
        from clinconsensus_tasks.judge.official_template import prompt_record
        from clinconsensus_tasks.judge.protocol import request_fields, response_format
        from clinconsensus_tasks.judge.server_info import ask_server, in_flight
        from clinconsensus_tasks.scorers.clinconsensus.judge_failures import CircuitBreaker

        settings, mode = self.settings, self.protocol.mode
        server = await asyncio.to_thread(ask_server, settings.base_url, settings.api_key, settings.model, settings.server)
        settings = replace(settings, concurrency=in_flight(settings.concurrency, server, settings.model))
        settings = replace(settings, extra_body=request_fields(server, settings.extra_body))
        if settings.structured_output:
            settings = replace(settings, extra_body={**settings.extra_body, "response_format": response_format(server.kind, mode)})
        return settings, server, JudgeClient(settings), CircuitBreaker(resume_hint=resume_hint(settings)), prompt_record(self.protocol.template, mode)

    async def grade(self, doc: dict[str, Any], answer: str) -> GradedCase:
        import asyncio

        from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of
        from clinconsensus_tasks.scorers.clinconsensus.rubric_grading import MAX_ATTEMPTS
        from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import judge_max_tokens
        from clinconsensus_tasks.scorers.usage import total

        if self.opened is None:
            self.opened = asyncio.ensure_future(self._open())
        settings, server, client, breaker, prompt_info = await asyncio.shield(self.opened)
        mode, template = self.protocol.mode, self.protocol.template
        rubrics = [(r["criterion_id"], r["criterion"]) for r in doc["rubrics"]]
        max_tokens = judge_max_tokens(mode, len(rubrics), settings.max_tokens)
        spent: list[TokenUsage] = []

        async def complete(messages: list[dict[str, str]], fresh: bool) -> str:
            return await client.complete(messages, fresh, max_tokens=max_tokens, usage=spent, breaker=breaker)

        record = await self.limits.grade(settings.model, server, max_tokens, str(doc["case_id"]), doc["question"], answer, rubrics,
                                         complete, mode, MAX_ATTEMPTS, template, slices=slices_of(doc), judge_prompt=prompt_info)
        return record.with_usage(total(spent).to_dict())  # tokens of the calls sent

    async def aclose(self) -> None:
        if self.opened is None:
            return
        if not self.opened.done():
            self.opened.cancel()
            return
        if not self.opened.cancelled() and self.opened.exception() is None:
            await self.opened.result()[2].aclose()


def check_judge(run: CheckRun, role: str, reached: str) -> None:
    """The judge reached must be the run's own, by the name its verdicts carry."""
    recorded = judge_name(run, role)
    if reached != recorded:
        where = ("the role's model in the log's header" if run.framework == "inspect" else
                 "the run's --metadata and the environment (CLINCONSENSUS_JUDGE_MODEL, _BASE_URL; the local judge's LOCAL_ ones)")
        raise CheckError(f"{run.path}: the {role} verdicts are {recorded!r}'s, but {where} now reach {reached!r}: a check asks "
                         "the run's own judge; set the environment as the run had it")


def documents(group: Sequence[Unit]) -> tuple[list[dict[str, Any]], list[str]]:
    """The judge's documents of some asks (each case with only the criteria asked) and their answers."""
    docs = []
    for unit, doc in zip(group, case_documents([u.record for u in group])):
        keep = set(unit.criteria)
        docs.append({**doc, "rubrics": [r for r in doc["rubrics"] if r["criterion_id"] in keep]})
    return docs, [u.answer for u in group]


# -- the figures --------------------------------------------------------------------------------------


def _verdicts(asks: Mapping[str, Mapping[str, Any]], unit_id: str) -> Mapping[str, Any] | None:
    item = asks.get(unit_id)
    return None if item is None else item["verdicts"]


def run_figures(plan: Mapping[str, Any], index: int, records: Sequence[LoggedCase], asks: Mapping[str, Mapping[str, Any]],
                thresholds: Sequence[int], resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """Every figure of run ``index`` of the plan, from its records (the census) and the asks."""
    settings = plan["settings"]
    repeat, forms = settings["repeat"], settings["transforms"]
    strata = plan["strata"]
    roles = list(plan["runs"][index]["judges"])
    drawn = [r for r in records if r.graded.case_id in plan["rows"]]
    batched = any(r.graded.judge_mode == BATCHED for r in records)
    jury = [r for r in roles if r.startswith(JUROR_PREFIX)]

    def criteria(record: LoggedCase) -> list[str]:
        return [cid for cid, _ in record.rubrics] if batched else list(plan["rows"][record.graded.case_id])

    def verdict(record: LoggedCase, role: str, form: str, ask: int, criterion: str) -> bool | None:
        if role == PANEL:
            votes = [verdict(record, j, form, ask, criterion) for j in jury]
            return panel_verdict([CriterionJudgment(criterion, v, "", 1) for v in votes], min_votes(len(jury))).met
        got = _verdicts(asks, f"{index}|{record_key(record)}|{role}|{form}|{ask}")
        return None if got is None else got.get(criterion)

    def answered(role: str, form: str, ask: int, record: LoggedCase) -> bool:
        targets = jury if role == PANEL else [role]
        return all(f"{index}|{record_key(record)}|{r}|{form}|{ask}" in asks for r in targets)

    judges = []
    for role in roles + ([PANEL] if jury else []):
        rows = []
        for record in drawn:
            subject, difficulty = strata[record.graded.case_id]
            for cid in criteria(record):
                got = tuple(verdict(record, role, AS_IS, a, cid) for a in range(repeat) if answered(role, AS_IS, a, record))
                rows.append(AskedRow(record.graded.case_id, record_key(record), cid, subject, difficulty, got))
        found: dict[str, Any] = {"role": role, "judge": plan["runs"][index]["judges"].get(role) or "jury majority",
                                 "repeatability": repeatability(rows, repeat, resamples, seed), "invariance": {}}
        for form in forms:
            pairs: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
            for record in drawn:
                if not answered(role, form, 0, record) or not answered(role, AS_IS, 0, record):
                    continue
                for cid in criteria(record):
                    before, after = verdict(record, role, AS_IS, 0, cid), verdict(record, role, form, 0, cid)
                    if before is not None and after is not None:
                        pairs[record.graded.case_id].append((before, after))
            found["invariance"][form] = invariance(pairs, resamples, seed)
        judges.append(found)
    headline = PANEL if jury else HEADLINE_ROLE
    noise = _headline_noise(plan, index, records, asks, headline, verdict, answered, repeat, thresholds, resamples, seed,
                            whole=batched or settings["criteria_per_case"] == "all")
    return {"run": plan["runs"][index]["name"], "path": plan["runs"][index]["path"], "framework": plan["runs"][index]["framework"],
            "headline_role": headline, "judges": judges, "headline": noise}


def _headline_noise(plan: Mapping[str, Any], index: int, records: Sequence[LoggedCase], asks: Mapping[str, Any], role: str,
                    verdict: Callable[..., bool | None], answered: Callable[..., bool], repeat: int, thresholds: Sequence[int],
                    resamples: int, seed: int, whole: bool) -> dict[str, Any]:
    """Each headline metric's noise split (``scorers.reliability.headline_noise``): the census is the
    run's headline met count of every record, the asks those of the drawn records asked whole."""
    if not whole:
        return {"why": "the check asked a share of each case's criteria (--criteria-per-case): a case's value on an ask "
                       "needs every criterion; ask whole cases for the headline's noise"}
    n = max([len(r.rubrics) for r in records] + [DEFAULT_N_CRITERIA])
    census = {record_key(r): r.graded.met for r in records}
    case_of = {record_key(r): r.graded.case_id for r in records}
    asked: dict[str, list[int]] = {}
    for record in records:
        if record.graded.case_id not in plan["rows"]:
            continue
        counts = []
        for a in range(repeat):
            if answered(role, AS_IS, a, record):
                counts.append(sum(bool(verdict(record, role, AS_IS, a, cid)) for cid, _ in record.rubrics))
        asked[record_key(record)] = counts
    names = mean_names(thresholds)
    # Beside it, the report's own interval: each case's terms (its judged count, its epochs averaged) resampled.
    rows = case_term_rows([r.graded.result() for r in records], thresholds, n)
    intervals = mean_intervals([[row[name] for name in names] for row in rows], resamples, seed) if rows else []
    return {name: headline_noise(census, asked, case_of, lambda m, name=name: case_terms(m, n, thresholds, n)[name], intervals[j], n,
                                 resamples, seed) for j, name in enumerate(names)}
