"""The release gate: is this run the benchmark, fit to publish? (``clinconsensus-eval summarize --strict``)

``inspect eval`` exits 0 whatever its log says, and a run's own settings can loosen its own
failure policy, so a release checklist gates on what the run RECORDED, read here, against a bar
that nothing in the run or its environment can lower. A release run (:data:`RELEASE_PROFILE`):

====================  ==========================================================================
finished              Inspect status ``success`` and no errored sample; lm-eval: results file and
                      samples file (``--log_samples``) both present
current version       the task version the run recorded is this package's ``TASK_VERSION``
the benchmark         ClinConsensus: the public file from the hub pinned to a commit (a run given
                      a 40-hex ``revision``; a branch moves), or a file whose sha256 the user
                      names (``--data-sha256``); never the bundled
                      synthetic sample. CliMedBench: not the bundled synthetic sample
whole                 no ``--limit``/sample selection; every case of the data the run loaded
                      answered (empty answers within the failure bar) and judged by every
                      criterion (ClinConsensus: N = 30); CliMedBench: all 14 scenarios, clean
                      (an analysis variant is not the benchmark)
independent judge     a grader other than the model under test (same model name = self-graded;
                      ``allow_self_grading`` refused), the grader the run's header names (a
                      re-scoring by another judge is refused), not the project's stand-in server
official protocol     per-criterion judging with the official prompt, replies read by the
                      project's verdict rule (others only when named with ``--allow-prompt NAME``;
                      the official runner's reading: ``--allow-prompt official-reading``)
judged                failed judgments (those of errored samples included) at most 1% of those
                      planned; CliMedBench: unparseable answers at most 1%; no suspect answer
numbers               the header's headline metrics equal those recomputed from the per-case
                      records
physicians (asked)    (``gates.physicians``) with ``--review DIR``: ``--min-kappa X``, the LOWER END of the judge's kappa
                      interval against the physicians at least X on at least 10 reviewed cases;
                      ``--max-judge-bias X``, the interval of the judge's bias on rubric accuracy
                      (its headline minus the physicians' estimate over every case) within +-X
                      points; either: every sheet read, labels back from every physician
steady judge (asked)  (``gates.reliability``) with ``--reliability DIR --max-flip-rate X``: the
                      run's judge asked again flips at most X of its rows at the UPPER END of
                      the flip rate's interval, from a finished check of at least 10 cases
====================  ==========================================================================

The facts are read by ``gates.facts`` (:class:`RunFacts`, ``gate_runs``); the rules are here, the
physicians' in ``gates.physicians``, and the regression gate (``gates.regression``, ``compare-models``)
holds each of its runs to a part of them (:data:`COMPARISON_CHECKS`). The bar is ``gates.bar.ReleaseBar``;
it reads no environment variable. Each loosening is a flag of the command (``--judge-failure-threshold``, ``--allow-prompt``, ``--data-sha256``), and the
verdict line of every run it let through prints it. Each refusal is one line that says what to
run instead.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Sequence

from clinconsensus_tasks.clinconsensus.dataset import HF_DATA_REVISION, HF_DATASET, is_commit, sample_path
from clinconsensus_tasks.judge.input_limit import OFFICIAL_CUT
from clinconsensus_tasks.judge.official_template import OFFICIAL_PATH, OFFICIAL_SHA256
from clinconsensus_tasks.log_files import CLIMEDBENCH
from clinconsensus_tasks.gates import physicians, reliability
from clinconsensus_tasks.gates.bar import Check, ReleaseBar
from clinconsensus_tasks.gates.facts import RunFacts
from clinconsensus_tasks.log_files import model_display_name
from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize
from clinconsensus_tasks.scorers.clinconsensus.jury import is_jury
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA, TASK_VERSION as CLIN_VERSION, mean_names
from clinconsensus_tasks.scorers.clinconsensus.records import HEADLINE_ROLE, failure_tally
from clinconsensus_tasks.scorers.clinconsensus.verdicts import STRICT
from clinconsensus_tasks.scorers.climedbench.metric_table import TASK_VERSION as CMB_VERSION

JURY = "jury"  # --allow-prompt jury: accept a jury's majority as the run's protocol
OFFICIAL_READING = "official-reading"  # --allow-prompt official-reading: accept replies read the official runner's way

OFFICIAL_PROMPT = "official"
OFFICIAL_SCRIPT = OFFICIAL_PATH.rsplit("/", 1)[-1]  # run_local_judge.py
OFFICIAL_MODE = "per_criterion"
STAND_IN_SERVER = "stand-in"  # judge.server_info: the kind of the project's own stand-in server
HUB_COMMIT_HINT = (f"python -c \"from huggingface_hub import HfApi; print(HfApi().dataset_info('{HF_DATASET}', "
                   "revision='main').sha)\"")
RELEASE_PROFILE = (
    "finished, current task version, the public data (hub pinned to a commit, or a named sha256), whole, "
    "an independent judge named by the run, the official prompt per criterion, failures <= 1%, no suspect "
    "answer, header numbers = records"
)


# -- the checks ----------------------------------------------------------------------------------

def _finished(run: RunFacts, bar: ReleaseBar) -> list[str]:
    # What did not finish is finished by running it again: `inspect score` cannot give a log the
    # answers it lacks (a run the judge failure policy ended is not here: its samples decide).
    hint = (RESUME_INSPECT if run.framework == "inspect" else
            "finish it: run the same lm_eval command again, with --use_cache PREFIX if its error named one (the answers "
            "it kept; verdicts come from the verdict cache)")
    return [f"{why}; {hint}" for why in run.unfinished]


RESUME_INSPECT = ("finish it, once no process is still writing it: run the same `inspect eval-set` command again, or "
                  "`inspect eval-retry LOG` (asks the model only for the samples the log does not hold)")


def _version(run: RunFacts, bar: ReleaseBar) -> list[str]:
    current = CMB_VERSION if run.benchmark == CLIMEDBENCH else CLIN_VERSION
    if _same_version(run.task_version, current):
        return []
    return [f"task version {run.task_version or '(none)'} is not this package's {current}: re-run (or re-score) with "
            "the installed clinconsensus-tasks"]


def _same_version(recorded: str, current: str) -> bool:
    try:
        return float(recorded) == float(current)
    except ValueError:
        return False


def _data(run: RunFacts, bar: ReleaseBar) -> list[str]:
    if run.benchmark == CLIMEDBENCH:
        if run.synthetic:
            return ["the bundled synthetic sample, not CliMedBench: run on your copy of the data "
                    "(Inspect -T data_dir=DIR, lm-eval CLIMEDBENCH_DATA_DIR=DIR)"]
        return []
    source, sha, revision = (run.data.get(k, "") for k in ("data_source", "data_sha256", "data_revision"))
    if sha and sha == _sha256(sample_path()) or Path(source).name == sample_path().name:
        return ["the bundled synthetic sample, not the benchmark: run on the 900 public cases "
                "(Inspect -T data=hub, lm-eval CLINCONSENSUS_DATA=hub)"]
    if bar.data_sha256:
        if sha != bar.data_sha256:
            return [f"data {source} has sha256 {sha or '(not recorded)'}, not the {bar.data_sha256} named with --data-sha256"]
        return []
    if HF_DATASET not in source or not source.startswith("hf://"):
        return [f"data {source or '(not recorded)'} is not the public dataset from the hub: run with the hub data "
                f"(Inspect -T data=hub), or name this file's sha256 if it is a copy of the public file (--data-sha256 {sha or 'SHA'})"]
    requested = run.data.get("data_revision_requested", "")
    if HF_DATA_REVISION and revision != HF_DATA_REVISION:
        return [f"hub data at revision {revision or '(not recorded)'}, not the package's {HF_DATA_REVISION}: run without a "
                "revision setting (the default is the package's)"]
    if HF_DATA_REVISION or is_commit(requested) and revision in ("", requested):
        return []
    # A branch (the default one included) moves: the same command may read other data tomorrow.
    resolved = f" (it read commit {revision})" if is_commit(revision) else ""
    pin = revision if is_commit(revision) else "COMMIT"
    return [f"hub data read at {requested or 'the default branch'}{resolved}, which moves: a release run is pinned to a "
            f"commit; run again with -T revision={pin} (lm-eval: CLINCONSENSUS_DATA_REVISION={pin}; the commit a branch "
            f"points at: {HUB_COMMIT_HINT}), or, if you checked the file, name its sha256 (--data-sha256 {sha or 'SHA'})"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _whole(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """Every case of the benchmark: the run's whole selection, and (CliMedBench) all 14 scenarios,
    clean, or (ClinConsensus) empty answers within the failure bar."""
    return _every_case(run, bar) + (_climedbench_whole(run) if run.benchmark == CLIMEDBENCH else _answered(run, bar))


def _every_case(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """The run's whole selection: no ``--limit``; ClinConsensus: every case loaded has a record,
    judged by every criterion."""
    problems = []
    if run.selection:
        problems.append(f"a part of the data ({run.selection}): run every case, without --limit")
    if run.benchmark == CLIMEDBENCH:
        return problems
    cases = {r.graded.case_id for r in run.records}
    if run.planned_cases is not None and len(cases) + run.errored < run.planned_cases and not run.selection:
        problems.append(f"{len(cases)} of the {run.planned_cases} cases loaded have a record: run every case")
    short = [r for r in run.records if r.graded.judged != DEFAULT_N_CRITERIA or any(len(v.judgments) != DEFAULT_N_CRITERIA for v in r.graded.roles.values())]
    if short:
        problems.append(f"{len(short)} case(s) not judged on all {DEFAULT_N_CRITERIA} criteria (first: {short[0].where}): "
                        f"the release data has {DEFAULT_N_CRITERIA} per case")
    return problems


def _answered(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """Empty answers within the failure bar (the model's output: a regression gate scores them instead)."""
    empty = sum(1 for r in run.records if r.graded.answer_empty)
    if run.records and empty > bar.failure_share * len(run.records):
        return [f"{empty} of {len(run.records)} answers are empty, above the {bar.failure_share:.1%} allowed: "
                "check the model's output (generation limit, thinking removal) and run again"]
    return []


def _climedbench_whole(run: RunFacts) -> list[str]:
    """All 14 scenarios, asked as the benchmark asks them (not an analysis variant)."""
    from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS

    problems = []
    if run.variant != "clean":
        problems.append(f"variant {run.variant} is an analysis, not the benchmark: run the clean tasks (Inspect without "
                        "-T variant, lm-eval --tasks climedbench)")
    asked = {r.scenario for r in run.items.results} | {u.scenario for u in run.items.unscored} if run.items is not None else set()
    missing = [code for code in SCENARIOS if code not in asked]
    if missing:
        problems.append(f"scenarios not run: {', '.join(missing)}: run all {len(SCENARIOS)} (Inspect without -T scenarios, "
                        "lm-eval --tasks climedbench; WTD needs a similarity model)")
    return problems


def _independent(run: RunFacts, bar: ReleaseBar) -> list[str]:
    if run.benchmark == CLIMEDBENCH:
        return []
    problems = []
    # The judges that gave verdicts: a jury's jurors (its panel is no model of its own).
    judges = sorted({v.judge for r in run.records for role, v in r.graded.roles.items() if v.judge and not (is_jury(r.graded) and role == HEADLINE_ROLE)})
    provenances = [j for r in run.records for p in r.provenance for j in (p.get("jurors") or [p])]
    servers = {p.get("judge_model", ""): p.get("judge_server", "") for p in provenances}
    named = {_judge_name(run, j) for j in judges}
    model = model_display_name(run.model) if run.framework == "inspect" else run.model
    if run.self_grading_allowed or model in {p.get("judge_model") for p in provenances} | named:
        problems.append(f"self-graded: the model under test ({run.model}) is its own judge; bind another model to the "
                        "grader role (--model-role grader=..., CLINCONSENSUS_JUDGE_MODEL)")
    header = set(run.header_judges)
    recorded = {p.get("judge", "") for p in provenances} if run.framework == "lm-eval" else set(judges)
    if header and recorded - header:
        problems.append(f"judged by {', '.join(sorted(recorded - header))}, but the run names {', '.join(sorted(header))}: "
                        "a re-scoring by another judge is another run; re-run with that judge bound from the start")
    if not header:
        problems.append("the run names no judge: run with the grader role bound (--model-role grader=...)")
    stand_in = sorted(m for m, kind in servers.items() if kind == STAND_IN_SERVER)
    if stand_in:
        problems.append(f"judged by the project's stand-in server ({', '.join(stand_in)}), not a real judge: bind a real "
                        "judge model")
    return problems


def _judge_name(run: RunFacts, judge: str) -> str:
    return model_display_name(judge) if run.framework == "inspect" else judge


def _official(run: RunFacts, bar: ReleaseBar) -> list[str]:
    if run.benchmark == CLIMEDBENCH:
        return []
    problems = []
    if any(is_jury(r.graded) for r in run.records) and JURY not in bar.allow_prompts:
        problems.append("graded by a jury: a jury's majority is not the single-judge official protocol; run with one judge "
                        f"in the grader role, or accept it with --allow-prompt {JURY}")
    if any(r.graded.verdict_reading != STRICT for r in run.records) and OFFICIAL_READING not in bar.allow_prompts:
        problems.append("the judges' replies were read the official runner's way (judge_verdict_reading=official: the first "
                        "\"criteria_met\" anywhere, asked once; a verdict quoted from the answer can count): run with "
                        f"judge_verdict_reading={STRICT} (the default), or accept it with --allow-prompt {OFFICIAL_READING}")
    modes = sorted({r.graded.judge_mode for r in run.records} - {OFFICIAL_MODE} - set(bar.allow_prompts))
    if modes:
        problems.append(f"judge mode {', '.join(modes)} is not the official protocol (one call per criterion): run with "
                        f"judge_mode={OFFICIAL_MODE}, or accept it with --allow-prompt {modes[0]}")
    prompts = sorted({r.graded.judge_prompt.get("judge_prompt", "") for r in run.records} - {OFFICIAL_PROMPT} - set(bar.allow_prompts))
    if prompts:
        shown = ", ".join(p or "(not recorded)" for p in prompts)
        # A file is recorded as the official prompt when its bytes have the pinned sha256, whichever way it came.
        copy = (f" ({OFFICIAL_SCRIPT} files are official by their sha256, {OFFICIAL_SHA256}: this one's content differs; "
                "download it again and check it)" if any(p.replace("\\", "/").rsplit("/", 1)[-1] == OFFICIAL_SCRIPT for p in prompts) else "")
        problems.append(f"judge prompt {shown} is not the official prompt{copy}: run with judge_prompt=official (the default), "
                        f"or accept it with --allow-prompt {prompts[0] or 'NAME'}")
    return problems


def _judged(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """ClinConsensus: the judgments (:func:`_judgments`); CliMedBench: answers parsed within the bar."""
    if run.benchmark != CLIMEDBENCH:
        return _judgments(run, bar)
    results = run.items.results if run.items is not None else []
    failed = sum(1 for r in results if not r.parsed)
    if results and failed > bar.failure_share * len(results):
        return [f"{failed} of {len(results)} answers unparseable, above the {bar.failure_share:.1%} allowed: check the "
                "model's answer format (the prompt's last line asks for it) before publishing"]
    return []


def _judgments(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """The judge's part (ClinConsensus): failed judgments within the bar, no answer cut to the judge's
    context, no suspect answer."""
    if run.benchmark == CLIMEDBENCH:
        return []
    tally = failure_tally([r.graded for r in run.records])
    planned = tally.judged + DEFAULT_N_CRITERIA * run.errored * run.judges_per_case
    tally = tally.with_unjudged(planned)
    problems = []
    if tally.failed > bar.failure_share * tally.judged:
        reasons = "; ".join(f"{label} x{n}" for label, n in tally.reasons.most_common(3))
        problems.append(f"{tally.failed} of {tally.judged} judgments failed, above the {bar.failure_share:.1%} allowed "
                        f"({reasons}); ask the judge again for them (inspect score LOG --overwrite --action overwrite / "
                        "the lm_eval command again)")
    cut = sum(1 for r in run.records for role in r.graded.roles.values() if role.input_cut and role.input_cut.get("why") != OFFICIAL_CUT)
    if cut:
        problems.append(f"{cut} answer(s) judged with their tail cut to the judge's context (judge_input_cut): a release run's "
                        "judge reads whole answers (the released judge's official 5,120-token cut excepted); serve the judge "
                        "with a longer context and ask it again")
    suspect = sum(1 for r in run.records if r.graded.suspect)
    if suspect:
        problems.append(f"{suspect} suspect answer(s) (imitating the judge prompt or carrying a verdict): read them "
                        "(clinconsensus-eval report) before publishing")
    return problems


def _numbers(run: RunFacts, bar: ReleaseBar) -> list[str]:
    """The header's metrics against the same metrics recomputed from the per-case records."""
    if run.benchmark == CLIMEDBENCH:
        return _climedbench_numbers(run)
    if not run.records:
        return ["no per-case record to recompute the numbers from"]
    if not run.header_metrics:  # not an edit: Inspect writes none when the failure policy ends the run
        return ["the header holds no numbers (the run ended before its metrics were computed): finish it with "
                "inspect score LOG --overwrite --action overwrite (lm-eval: the same command again)"]
    if run.epochs_reducer != "mean":
        return [f"each case's epochs were reduced by {run.epochs_reducer} (--epochs-reducer): a release number is the mean "
                "over a case's epochs; run with the default reducer (mean)"]
    ours = summarize([r.graded.result() for r in run.records], run.thresholds, DEFAULT_N_CRITERIA)
    # A count in the header is each case's mean over its epochs, summed (Inspect reduces it as the terms).
    epochs: dict[str, list[int]] = {}
    for r in run.records:
        epochs.setdefault(r.graded.case_id, []).append(r.graded.failures)
    ours["judge_failures"] = math.fsum(math.fsum(f) / len(f) for f in epochs.values())
    names = [n for n in mean_names(run.thresholds) + ["judge_failures"] if n in run.header_metrics or n in mean_names(run.thresholds)]
    differ = [n for n in names if n not in run.header_metrics or not math.isclose(ours[n], run.header_metrics[n], rel_tol=1e-9, abs_tol=1e-9)]
    if differ:
        shown = ", ".join(f"{n} {run.header_metrics.get(n, '(missing)')} vs {ours[n]:.6g}" for n in differ[:3])
        return [f"the header's numbers are not those of its records ({shown}): the file was edited or is torn; use the "
                "run's own output"]
    return []


def _climedbench_numbers(run: RunFacts) -> list[str]:
    results = run.items.results if run.items is not None else []
    by_scenario: dict[str, list[float]] = {}
    for r in results:
        by_scenario.setdefault(r.scenario, []).append(r.value)
    differ = []
    for code, values in sorted(by_scenario.items()):
        key = f"{code}/score"
        if key in run.header_metrics and not math.isclose(sum(values) / len(values), run.header_metrics[key], abs_tol=1e-9):
            differ.append(f"{code} {run.header_metrics[key]} vs {sum(values) / len(values):.6g}")
    if differ:
        return [f"the header's numbers are not those of its records ({', '.join(differ[:3])}): the file was edited or is torn"]
    return []


CHECKS: tuple[Check, ...] = (_finished, _version, _data, _whole, _independent, _official, _judged, _numbers,
                            physicians.review_whole, physicians.min_kappa, physicians.judge_bias, reliability.max_flip_rate)

# The facts a regression gate (``compare-models``) holds each of its two runs to: the run's health
# as a measurement, not the release-only facts (the public data at its revision, CliMedBench's 14
# clean scenarios, an independent judge, the official prompt), so two runs of a custom prompt or of
# the bundled sample may be compared; nor the model's own output (empty or unparseable answers),
# which the comparison scores. Same data and same judge on both sides are the comparison's own checks.
COMPARISON_CHECKS: tuple[Check, ...] = (_finished, _version, _every_case, _judgments, _numbers)
COMPARISON_PROFILE = ("finished, current task version, the whole selection (no --limit), failures <= 1%, no suspect or cut "
                      "answer, header numbers = records")


# -- the verdict -----------------------------------------------------------------------------------


def run_problems(facts: RunFacts, bar: ReleaseBar, checks: Sequence[Check] = CHECKS) -> list[str]:
    """Why the run is not a release run under ``bar`` (``checks``: another profile's, e.g.
    :data:`COMPARISON_CHECKS`); empty when it is. A run that did not finish gets that one reason
    only (its numbers are not final)."""
    unfinished = _finished(facts, bar)
    if unfinished and not facts.records and facts.items is None:
        return unfinished
    return [problem for check in checks for problem in check(facts, bar)]


def partial_beside_complete(runs: Sequence[RunFacts]) -> dict[str, str]:
    """For each run of a part of the data (``--limit``, sample ids) that stands beside a complete
    run of the same model and task in one gate: the line that says so and how to keep the smoke
    test out (``where`` -> line). The commonest way a release folder fails: the quick start's
    ``--limit 1`` run left in ``logs/`` or ``results/`` beside the full run. The runs' facts need
    only their ``where``, ``framework``, ``task``, ``model`` and ``selection`` (records may be let go)."""
    complete: dict[tuple[str, str, str], str] = {}
    for run in runs:
        if not run.selection:
            complete.setdefault((run.framework, run.task, _model_name(run)), run.where)
    out = {}
    for run in runs:
        whole = complete.get((run.framework, run.task, _model_name(run)))
        if run.selection and whole is not None:
            out[run.where] = (f"a smoke test beside the release run: {_model_name(run)} ran part of {run.task.rsplit('/', 1)[-1]} here "
                              f"({run.selection}) and all of it in {whole}; keep smoke tests in a folder of their own "
                              "(inspect eval --log-dir logs-smoke, lm_eval --output_path results-smoke), move this run "
                              "there and gate the release folder again")
    return out


def _model_name(run: RunFacts) -> str:
    return model_display_name(run.model) if run.framework == "inspect" else run.model


def comparison_problems(facts: RunFacts, bar: ReleaseBar) -> list[str]:
    """Why the run is not fit for a regression gate under ``bar`` (:data:`COMPARISON_CHECKS`); empty when it is."""
    return run_problems(facts, bar, COMPARISON_CHECKS)

