"""Which judge an lm-eval run uses, and how its results file says so.

Why: lm-eval's convention for task settings is ``--metadata '{...}'``; whatever is given there is
written into the results file's ``configs``, so a results file names its judge by itself. The
environment variables stay as the fallback (and the only place for the API key, which must never
reach a results file).

* :func:`judge_env`: the settings the run uses: ``--metadata`` keys (:data:`METADATA_KEYS`) over
  the environment. ``load_dataset`` receives the metadata and copies the given keys into every
  document (``judge_settings``), which is how the judge filter, which lm-eval calls with the
  documents only, sees the same settings.
* :class:`ClinConsensusTask`: the task class of the YAMLs. Building it needs no judge: lm-eval
  builds tasks to list, validate and test them (``lmeval_run_check``). When lm-eval runs it, before
  the first model request, it checks the judge(s) (:meth:`ClinConsensusTask.before_run`: settings,
  the judge prompt, one test request unless ``CLINCONSENSUS_JUDGE_CHECK=0``) and writes
  :func:`judge_identity` (judge model, host, mode, prompt sha256; both judges in a dual run) into
  the task config's ``metadata.judge``, which lm-eval writes into the results file's ``configs``
  whichever way the settings came in.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.lmeval_run_check import RunCheckedTask

ENV_JUDGE_MODE = "CLINCONSENSUS_JUDGE_MODE"
ENV_JUDGE_CHECK = "CLINCONSENSUS_JUDGE_CHECK"  # 0: no test request before a run
LOCAL_JUDGE_PREFIX = "CLINCONSENSUS_LOCAL_JUDGE_"
METADATA_KEYS = {  # --metadata key -> the environment variable it stands for
    "judge_base_url": "CLINCONSENSUS_JUDGE_BASE_URL",
    "judge_model": "CLINCONSENSUS_JUDGE_MODEL",
    "judge_server": "CLINCONSENSUS_JUDGE_SERVER",
    "judge_mode": ENV_JUDGE_MODE,
    "local_judge_base_url": "CLINCONSENSUS_LOCAL_JUDGE_BASE_URL",
    "local_judge_model": "CLINCONSENSUS_LOCAL_JUDGE_MODEL",
    "local_judge_server": "CLINCONSENSUS_LOCAL_JUDGE_SERVER",
}
SECRET_KEYS = ("judge_api_key", "local_judge_api_key")
DOC_FIELD = "judge_settings"


def metadata_settings(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The environment variables ``--metadata`` sets (empty values left out); an API key there is
    refused, since lm-eval would write it into the results file."""
    secret = [k for k in SECRET_KEYS if metadata.get(k)]
    if secret:
        raise ConfigurationError(f"--metadata {', '.join(secret)}: an API key given there is written into lm-eval's "
                                 "results file; set CLINCONSENSUS_JUDGE_API_KEY (or _LOCAL_) in the environment instead")
    given = {env: _text(metadata[key]) for key, env in METADATA_KEYS.items() if metadata.get(key) not in (None, "", [])}
    for key in ("judge_base_url", "local_judge_base_url"):
        parts = urlsplit(str(metadata.get(key) or ""))
        if parts.username or parts.password or parts.query:
            raise ConfigurationError(f"--metadata {key}: user-info or a query in the URL would be written into lm-eval's "
                                     "results file; give the endpoint without credentials and the key in the environment")
    return given


def _text(value: Any) -> str:
    """A setting as its environment variable holds it: a list (a jury's models or URLs) comma-separated."""
    return ",".join(str(v).strip() for v in value) if isinstance(value, (list, tuple)) else str(value)


def judge_env(given: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment with ``given`` (:func:`metadata_settings`) over it."""
    return {**os.environ, **dict(given or {})}


def doc_field(given: Mapping[str, str]) -> str:
    """The documents' copy of :func:`metadata_settings` (JSON text: an Arrow column holds it)."""
    return json.dumps(dict(given), sort_keys=True)


def docs_env(docs: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """:func:`judge_env` with what ``load_dataset`` copied from ``--metadata`` into the documents."""
    return judge_env(json.loads(docs[0].get(DOC_FIELD) or "{}") if docs else {})


def judge_mode(env: Mapping[str, str]) -> str:
    from clinconsensus_tasks.clinconsensus import settings

    return settings.judge_mode(env.get(ENV_JUDGE_MODE), ENV_JUDGE_MODE)


def judge_identity(env: Mapping[str, str], dual: bool) -> dict[str, Any]:
    """The judge(s) of the run as the results file records them (never a key, host only)."""
    from clinconsensus_tasks.clinconsensus.provenance import judge_provenance, jurors_provenance
    from clinconsensus_tasks.judge.client import JudgeSettings, panel_from_env
    from clinconsensus_tasks.judge.official_template import (
        load_judge_prompt,
        prompt_record,
    )

    mode = judge_mode(env)
    prompt = prompt_record(load_judge_prompt(None, mode), mode)
    out: dict[str, Any] = jurors_provenance([(j.model, j.base_url) for j in panel_from_env(env=env)], mode, prompt)
    if dual:
        local = JudgeSettings.from_env(prefix=LOCAL_JUDGE_PREFIX, env=env)
        out["local"] = judge_provenance(local.model, local.base_url, mode, prompt)
    return out


def check_judges(env: Mapping[str, str], dual: bool) -> None:
    """Everything a run's judge(s) need, before the model under test answers anything: the
    settings, the judge prompt (the official one is fetched and sha256-checked now), the verdict
    cache file, and (unless ``CLINCONSENSUS_JUDGE_CHECK=0``) one tiny test request to each judge."""
    import sys

    from clinconsensus_tasks.judge.cache import check_cache_file
    from clinconsensus_tasks.judge.client import JudgeSettings, panel_from_env, probe_judge
    from clinconsensus_tasks.judge.official_template import load_judge_prompt

    judges = panel_from_env(env=env) + ([JudgeSettings.from_env(prefix=LOCAL_JUDGE_PREFIX, env=env)] if dual else [])
    template = load_judge_prompt(None, judge_mode(env))
    print(f"[clinconsensus] judge prompt: {template.name + ' sha256 ' + template.sha256 if template else 'project'}", file=sys.stderr)
    if judges[0].use_cache:
        warning = check_cache_file(judges[0].cache_dir)
        if warning:
            print(f"[clinconsensus] WARNING: {warning}", file=sys.stderr)
    if env.get(ENV_JUDGE_CHECK, "1") not in ("0", "false", "no"):
        for judge in judges:
            probe_judge(judge, f" ({ENV_JUDGE_CHECK}=0 skips this check)")


class ClinConsensusTask(RunCheckedTask):
    """lm-eval's configurable task; a run checks its judge(s) first and names them in ``metadata.judge``."""

    def before_run(self) -> None:
        metadata = dict(self.config.metadata or {})
        env = judge_env(metadata_settings(metadata))
        dual = str(self.config.task).endswith("_dual")
        check_judges(env, dual)
        metadata["judge"] = judge_identity(env, dual)
        self.config.metadata = metadata
