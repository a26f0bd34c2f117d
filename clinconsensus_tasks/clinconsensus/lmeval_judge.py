"""Which judge an lm-eval run uses, and how its results file says so.

Why: lm-eval's convention for task settings is ``--metadata '{...}'``; whatever is given there is
written into the results file's ``configs``, so a results file names its judge by itself. The
environment variables stay as the fallback (and the only place for the API key, which must never
reach a results file).

* the settings the run uses: ``--metadata`` keys over the environment (``settings_table``: every
  setting with a ``--metadata`` key), read from the task's own config: ``load_dataset`` receives
  the metadata as keyword arguments, and the judge filter, which lm-eval calls with the answers and
  documents only, reads them through :func:`task_env`, which :meth:`ClinConsensusTask.apply_filters`
  sets from the config around its filters (nothing is copied into the documents).
* :class:`ClinConsensusTask`: the task class of the YAMLs. Building it needs no judge: lm-eval
  builds tasks to list, validate and test them (``lmeval_run_check``). When lm-eval runs it, before
  the first model request, it checks the judge(s) (:meth:`ClinConsensusTask.before_run`: settings,
  the judge prompt, one test request unless ``CLINCONSENSUS_JUDGE_CHECK=0``) and writes
  :func:`judge_identity` (judge model, host, mode, prompt sha256; both judges in a dual run) into
  the task config's ``metadata.judge``, which lm-eval writes into the results file's ``configs``
  whichever way the settings came in.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.clinconsensus import settings
from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.lmeval_glue import KeptAnswers, across_ranks, case_mean, keep_answers
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import JudgeFailureError
from clinconsensus_tasks.lmeval_run_check import RunCheckedTask
from clinconsensus_tasks.scorers.clinconsensus import metric_table

LOCAL_GRADER = settings_table.LOCAL_GRADER
METADATA_KEYS = settings_table.metadata_keys()  # --metadata key -> the environment variable it stands for
# The settings of the task whose filter is running: its config's ``--metadata`` (set by
# :meth:`ClinConsensusTask.apply_filters` around its filters, which lm-eval calls with the answers and
# documents only).
_TASK_SETTINGS: ContextVar[Mapping[str, str] | None] = ContextVar("clinconsensus_task_settings", default=None)


def task_env() -> dict[str, str]:
    """The settings the judge filter runs under: the task's ``--metadata`` over the environment (the
    environment alone for a filter called outside a ClinConsensus task)."""
    return settings_table.merged_env(_TASK_SETTINGS.get() or {})


def judge_mode(env: Mapping[str, str]) -> str:
    from clinconsensus_tasks.clinconsensus import settings

    return settings.judge_mode(settings_table.raw("judge_mode", env), "CLINCONSENSUS_JUDGE_MODE")


def judge_prompt_of(env: Mapping[str, str], mode: str) -> Any:
    """The judge prompt the settings in ``env`` name (``judge.official_template.load_judge_prompt``)."""
    from clinconsensus_tasks.judge.official_template import load_judge_prompt

    return load_judge_prompt(settings_table.raw("judge_prompt", env), mode, settings_table.raw("judge_prompt_url", env))


def judge_identity(env: Mapping[str, str], dual: bool) -> dict[str, Any]:
    """The judge(s) of the run as the results file records them (never a key, host only)."""
    from clinconsensus_tasks.judge.provenance import judge_provenance, jurors_provenance
    from clinconsensus_tasks.judge.client import JudgeSettings, panel_from_env
    from clinconsensus_tasks.judge.official_template import prompt_record

    mode = judge_mode(env)
    prompt = prompt_record(judge_prompt_of(env, mode), mode)
    out: dict[str, Any] = jurors_provenance([(j.model, j.base_url) for j in panel_from_env(env=env)], mode, prompt)
    if dual:
        local = JudgeSettings.from_env(LOCAL_GRADER, env)
        out["local"] = judge_provenance(local.model, local.base_url, mode, prompt)
    return out


def check_judges(env: Mapping[str, str], dual: bool) -> None:
    """Everything a run's judge(s) need, before the model under test answers anything: the
    settings, the judge prompt (the official one is fetched and sha256-checked now), the verdict
    cache file, and (unless ``CLINCONSENSUS_JUDGE_CHECK=0``) one tiny test request to each judge."""
    import sys

    from clinconsensus_tasks.judge.cache import check_cache_file
    from clinconsensus_tasks.judge.client import JudgeSettings, panel_from_env, probe_judge

    judges = panel_from_env(env=env) + ([JudgeSettings.from_env(LOCAL_GRADER, env)] if dual else [])
    template = judge_prompt_of(env, judge_mode(env))
    settings.verdict_reading(None, judge_mode(env), env=env)  # a wrong value stops the run before the model answers
    print(f"[clinconsensus] judge prompt: {template.name + ' sha256 ' + template.sha256 if template else 'project'}", file=sys.stderr)
    if judges[0].use_cache:
        warning = check_cache_file(judges[0].cache_dir)
        if warning:
            print(f"[clinconsensus] WARNING: {warning}", file=sys.stderr)
    if settings_table.read_flag("judge_check", env):
        for judge in judges:
            probe_judge(judge, " (CLINCONSENSUS_JUDGE_CHECK=0 skips this check)")


def keep_answers_of_run(instances: Sequence[Any], metadata: Mapping[str, Any], task: str) -> KeptAnswers:
    """Keep the run's answers (``lmeval_glue.keep_answers``) under the verdict cache's folder,
    ``lm-eval-answers/<task>-<model>-<UTC time>``: one name for every rank of a data-parallel run
    (rank 0's, gathered), each rank writing its own ``_rank<N>.db`` as lm-eval reads them."""
    from clinconsensus_tasks.judge.cache import default_cache_dir

    model = str(metadata.get("model") or metadata.get("pretrained") or "model")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{task}-{model}")[:80].strip("-")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    chosen = settings_table.raw("cache_dir", settings_table.merged_env(settings_table.given_settings(dict(metadata))))
    folder = Path(chosen).expanduser() if chosen else default_cache_dir()
    prefix = across_ranks(str(folder / "lm-eval-answers" / f"{name}-{stamp}"))[0]
    kept = keep_answers(instances, prefix)
    print(f"[clinconsensus] {kept.answers} answers kept until judged: {kept.path}", file=sys.stderr)
    return kept


class ClinConsensusTask(RunCheckedTask):
    """lm-eval's configurable task; a run checks its judge(s) first and names them in ``metadata.judge``."""

    def aggregation(self) -> dict:
        """The YAML's aggregations, and :func:`case_mean` for the Pass@k and CACS@k of thresholds
        given in ``--metadata '{"thresholds": [5]}'`` (which the YAML cannot list: lm-eval would
        warn and aggregate them with its own ``mean``, whose sum depends on the order of the cases)."""
        return {**{name: case_mean for name in self._metadata_means()}, **super().aggregation()}

    def higher_is_better(self) -> dict:
        return {**dict.fromkeys(self._metadata_means(), True), **super().higher_is_better()}

    def _metadata_means(self) -> list[str]:
        value = (self.config.metadata or {}).get("thresholds")
        if value in (None, "", []):
            return []
        env = settings_table.merged_env(settings_table.given_settings(dict(self.config.metadata or {})))
        return metric_table.mean_names(settings.thresholds(value, settings.n_criteria_from_env(env)))

    def apply_filters(self) -> Any:
        """Judge the answers (the YAML's filter), with the answers kept first where ``--use_cache``
        reads them (:func:`keep_answers_of_run`): a judge that fails, a Ctrl-C, any error while
        judging leaves them there, and the error says how to finish the run with no model call.
        Once judged, the kept copy is deleted (the samples file holds the answers)."""
        metadata = dict(self.config.metadata or {})
        kept = keep_answers_of_run(self._instances or [], metadata, str(self.config.task))
        settings = _TASK_SETTINGS.set(settings_table.given_settings(metadata))  # what the judge filter reads (task_env)
        try:
            out = super().apply_filters()
        except (ClinConsensusError, JudgeFailureError) as exc:  # the failure policy, a setting: its message ends with the way out
            exc.args = (f"{exc.args[0] if exc.args else exc} {kept.hint()}", *exc.args[1:])
            raise
        except BaseException:
            print(f"[clinconsensus] {kept.hint()}", file=sys.stderr)
            raise
        finally:
            _TASK_SETTINGS.reset(settings)
        kept.discard()
        return out

    def before_run(self) -> None:
        metadata = dict(self.config.metadata or {})
        env = settings_table.merged_env(settings_table.given_settings(metadata))
        dual = str(self.config.task).endswith("_dual")
        check_judges(env, dual)
        metadata["judge"] = judge_identity(env, dual)
        self.config.metadata = metadata
