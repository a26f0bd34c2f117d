"""Every setting a user gives the project, in one table: its name, type, default, the Inspect
``-T`` argument, the lm-eval ``--metadata`` key, the environment variable and its help text.

Why one table: a setting spelled in several modules drifts (a reference that misses four, booleans
parsed five ways). Every reader of a setting's raw value goes through :func:`raw` (the one lookup:
lm-eval's ``--metadata`` first, then the environment, the fallback) and every flag through
:func:`flag` (the one boolean rule); ``docs/settings.md`` is generated from :data:`SETTINGS`
(``python -m clinconsensus_tasks.settings_table``), and a test fails when the two differ.

Judge settings are per judge role: the grader's environment variables start ``CLINCONSENSUS_JUDGE_``
and its ``--metadata`` keys ``judge_``; the second judge of ``clinconsensus_dual`` (Inspect's
``local_grader`` role) has the same settings under ``CLINCONSENSUS_LOCAL_JUDGE_`` / ``local_judge_``.
In Inspect a judge is a model role (``--model-role grader=...``), and these are its model's settings.

No framework is imported here: every ``inspect eval`` and every lm-eval task build reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.scorers.clinconsensus.judge_failures import ENV_FAILURE_THRESHOLD

GRADER, LOCAL_GRADER = "grader", "local_grader"
ROLE_ENV_PREFIX = {GRADER: "CLINCONSENSUS_JUDGE_", LOCAL_GRADER: "CLINCONSENSUS_LOCAL_JUDGE_"}
ROLE_METADATA_PREFIX = {GRADER: "judge_", LOCAL_GRADER: "local_judge_"}
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


@dataclass(frozen=True)
class Setting:
    """One setting. ``role``: a judge setting, one per judge role (``suffix`` names it:
    ``MODEL`` -> ``CLINCONSENSUS_JUDGE_MODEL`` and ``judge_model``). ``secret``: never taken from
    ``--metadata`` (lm-eval writes it into its results file). ``inspect``: the ``-T`` argument,
    or how Inspect takes it otherwise (in parentheses)."""

    name: str
    kind: str  # str, int, float, bool, share, json, list
    default: str
    help: str
    benchmark: str = "clinconsensus"
    env: str | None = None
    metadata: str | None = None
    inspect: str | None = None
    role: bool = False
    suffix: str = ""
    secret: bool = False

    def env_name(self, role: str = GRADER) -> str | None:
        return f"{ROLE_ENV_PREFIX[role]}{self.suffix}" if self.role else self.env

    def metadata_key(self, role: str = GRADER) -> str | None:
        if self.secret:
            return None
        return f"{ROLE_METADATA_PREFIX[role]}{self.suffix.lower()}" if self.role else self.metadata


def _judge(suffix: str, kind: str, default: str, help: str, inspect: str, secret: bool = False) -> Setting:
    return Setting(f"judge_{suffix.lower()}", kind, default, help, role=True, suffix=suffix, inspect=inspect, secret=secret)


SETTINGS: tuple[Setting, ...] = (
    # -- ClinConsensus: data and scoring --
    Setting("data", "str", "hub", "`hub` (skylenage/ClinConsensus), `sample` (bundled synthetic cases) or a .jsonl/.parquet path",
            env="CLINCONSENSUS_DATA", metadata="data", inspect="data"),
    Setting("revision", "str", "the default branch (the package pins no revision)", "hub revision (branch, tag or commit) of `hub`",
            env="CLINCONSENSUS_DATA_REVISION", metadata="revision", inspect="revision"),
    Setting("n_criteria", "int", "30", "expected criteria per case (N in CACS)", env="CLINCONSENSUS_N_CRITERIA",
            metadata="n_criteria", inspect="n_criteria"),
    Setting("thresholds", "list", "7,10", "the k of Pass@k and CACS@k (lm-eval: added to 7 and 10)", metadata="thresholds",
            inspect="thresholds"),
    Setting("breakdowns", "bool", "false", "also put the headline metrics by difficulty, subject and task label in the Inspect log's "
            "results (summarize and the report always give them)", inspect="breakdowns"),
    Setting("answer_max_tokens", "int", "8192", "generation limit of the model under test (lm-eval: `max_gen_toks` of the YAML)",
            inspect="answer_max_tokens"),
    Setting("answer_cache", "bool", "false", "serve the model's answers from Inspect's response cache, per epoch (keyed by the "
            "model's name, not its weights: only while the model behind the name is unchanged)", inspect="answer_cache"),
    Setting("allow_self_grading", "bool", "false", "grade with the model under test when no judge is bound",
            inspect="allow_self_grading"),
    # -- ClinConsensus: the judge protocol (shared by every judge of a run) --
    Setting("judge_mode", "str", "per_criterion", "`per_criterion` (the official protocol) or `batched` (one call per case)",
            env="CLINCONSENSUS_JUDGE_MODE", metadata="judge_mode", inspect="judge_mode"),
    Setting("judge_prompt", "str", "official", "`official` (fetched, sha256-checked), `project` or a template file",
            env="CLINCONSENSUS_JUDGE_PROMPT", metadata="judge_prompt", inspect="judge_prompt"),
    Setting("judge_prompt_url", "str", "the pinned GitHub URL", "a mirror of the official judge script (same bytes)",
            env="CLINCONSENSUS_JUDGE_PROMPT_URL", metadata="judge_prompt_url", inspect="(environment)"),
    Setting("judge_sees_thinking", "bool", "false", "send a reasoning model's `<think>` text to the judge too",
            env="CLINCONSENSUS_JUDGE_SEES_THINKING", metadata="judge_sees_thinking", inspect="judge_sees_thinking"),
    Setting("judge_check", "bool", "true", "send each judge one test request before the model answers anything",
            env="CLINCONSENSUS_JUDGE_CHECK", metadata="judge_check", inspect="judge_check"),
    Setting("judge_cache", "bool", "true", "reuse verdicts already obtained (Inspect's response cache; lm-eval: the on-disk cache)",
            env="CLINCONSENSUS_JUDGE_CACHE", metadata="judge_cache", inspect="judge_cache"),
    Setting("judge_calls", "str", "inspect", "Inspect only: `inspect` (each judge call through Inspect's model API: any provider, the "
            "transcript, the response cache, batch mode) or `direct` (an OpenAI-compatible judge through the project's client, "
            "lm-eval's: a third of the CPU a call; no ModelEvent per call, the verdict cache instead of Inspect's, no batch mode)",
            inspect="judge_calls"),
    Setting("cache_dir", "str", "$XDG_CACHE_HOME/clinconsensus_tasks, else ~/.cache/clinconsensus_tasks",
            "folder of the verdict cache (lm-eval; Inspect with judge_calls=direct), the batch ledger and the report's runs/", env="CLINCONSENSUS_CACHE_DIR", metadata="cache_dir",
            inspect="(Inspect: INSPECT_CACHE_DIR)"),
    Setting("judge_max_attempts", "int", "2", "attempts per verdict before it counts as a failed judgment (2: the request and one re-ask, the verdict rule)",
            inspect="judge_max_attempts"),
    Setting("judge_verdict_reading", "str", "strict", "how a judge's reply is read: `strict` (the project's verdict rule: one key in one "
            "JSON object outside any quote of the answer, asked again once) or `official` (the released judge's runner: the first "
            "`\"criteria_met\"` followed by true or false anywhere, asked once; per criterion only; refused by `summarize --strict` unless "
            "`--allow-prompt official-reading`; docs/verdict-rule.md)", env="CLINCONSENSUS_JUDGE_VERDICT_READING",
            metadata="judge_verdict_reading", inspect="judge_verdict_reading"),
    Setting("judge_failure_threshold", "share", "0.01", "share of failed judgments that ends the run with an error (0: never)",
            env=ENV_FAILURE_THRESHOLD, metadata="judge_failure_threshold", inspect="judge_failure_threshold"),
    Setting("judge_http", "str", "aiohttp", "`aiohttp` (the OpenAI SDK's aiohttp transport, where no proxy variable is set) or "
            "`httpx` (the SDK's default) for judge requests", env="CLINCONSENSUS_JUDGE_HTTP", metadata="judge_http",
            inspect="(environment)"),
    Setting("judge_batch_poll", "float", "30", "seconds between polls of the provider's batch API", env="CLINCONSENSUS_JUDGE_BATCH_POLL",
            metadata="judge_batch_poll", inspect="(not used: Inspect's own batch mode)"),
    # -- ClinConsensus: each judge role (grader; the second judge under LOCAL_) --
    _judge("BASE_URL", "str", "required", "OpenAI-compatible endpoint of the judge", "(--model-role grader=PROVIDER/MODEL)"),
    _judge("MODEL", "list", "required", "judge model; a comma-separated list is a jury", "(--model-role grader=a,b,c)"),
    _judge("API_KEY", "str", "EMPTY", "the judge's key: environment only, never --metadata", "(the provider's key variable)", secret=True),
    _judge("CONCURRENCY", "int", "32", "judge requests in flight", "(--max-connections of the role's model)"),
    _judge("MAX_RETRIES", "int", "6", "transport retries (429, 5xx, timeouts) with exponential backoff", "(--max-retries)"),
    _judge("TIMEOUT", "float", "120", "seconds per judge request", "(--timeout)"),
    _judge("MAX_TOKENS", "int", "512", "verdict length per criterion (batched mode: 96 per criterion)", "judge_max_tokens"),
    _judge("EXTRA_BODY", "json", "{}", "a JSON object merged into every judge request", "(the role's model config: extra_body)"),
    _judge("SERVER", "str", "auto", "`auto` (ask GET /v1/models), `vllm`, `sglang`, `openai` or `llamacpp`", "(the provider: vllm/, sglang/, openai-api/)"),
    _judge("STRUCTURED_OUTPUT", "bool", "false", "send response_format with the verdict's JSON schema", "judge_structured_output"),
    _judge("BATCH", "bool", "false", "first attempts through the provider's batch API at half price", "(--batch)"),
    # -- CliMedBench --
    Setting("climedbench_data_dir", "str", "required", "folder with one <CODE>.jsonl per scenario (the data is not public: "
            "its authors give it on request), or `sample` (bundled synthetic items); unset, a run refuses",
            benchmark="climedbench", env="CLIMEDBENCH_DATA_DIR", metadata="data_dir", inspect="data_dir"),
    Setting("similarity_model", "str", "cyclone/simcse-chinese-roberta-wwm-ext at its pinned commit",
            "sentence-transformers model of WTD (hub id[@revision] or folder)", benchmark="climedbench",
            env="CLIMEDBENCH_SIMILARITY_MODEL", metadata="similarity_model", inspect="similarity_model"),
    Setting("scenarios", "list", "all 14", "scenario codes to run (lm-eval: one task per scenario)", benchmark="climedbench",
            inspect="scenarios"),
    Setting("variant", "str", "clean", "clean, perturbed, nota or cot (lm-eval: the task name's suffix)", benchmark="climedbench",
            inspect="variant"),
    Setting("perturbation", "list", "shape,homophone,traditional,symbol", "perturbed kinds of the perturbed variant",
            benchmark="climedbench", inspect="perturbation"),
    Setting("perturbation_rate", "float", "0.12", "share of each question's characters perturbed", benchmark="climedbench",
            inspect="perturbation_rate"),
    Setting("seed", "int", "0", "perturbation seed (the same text in both frameworks)", benchmark="climedbench", inspect="seed"),
)

BY_NAME = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    return BY_NAME[name]


def raw(name: str, env: Mapping[str, str] | None = None, role: str = GRADER) -> str | None:
    """A setting's raw value from ``env`` (default: the process environment; lm-eval's
    ``--metadata`` is merged over it first by :func:`with_metadata`); ``None`` when unset or empty."""
    env = os.environ if env is None else env
    variable = setting(name).env_name(role)
    value = env.get(variable) if variable else None
    return None if value is None or str(value).strip() == "" else str(value)


def flag(value: str | bool | None, source: str, default: bool = False) -> bool:
    """The one boolean rule: 1/true/yes/on and 0/false/no/off (any case); unset: ``default``."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False if text else default
    raise ConfigurationError(f"{source}={value!r}: expected 1/0, true/false, yes/no or on/off")


def read_flag(name: str, env: Mapping[str, str] | None = None, role: str = GRADER) -> bool:
    """A boolean setting, its default from the table."""
    return flag(raw(name, env, role), setting(name).env_name(role) or name, setting(name).default == "true")


def metadata_keys() -> dict[str, str]:
    """``--metadata`` key -> the environment variable it stands for, every non-secret setting
    that has both (each judge role's too)."""
    out = {}
    for s in SETTINGS:
        for role in (GRADER, LOCAL_GRADER) if s.role else (GRADER,):
            key, variable = s.metadata_key(role), s.env_name(role)
            if key and variable:
                out[key] = variable
    return out


def secret_metadata_keys() -> tuple[str, ...]:
    return tuple(f"{ROLE_METADATA_PREFIX[r]}{s.suffix.lower()}" for s in SETTINGS if s.secret for r in (GRADER, LOCAL_GRADER))


def given_settings(metadata: Mapping[str, object]) -> dict[str, str]:
    """The environment variables lm-eval's ``--metadata`` sets (:func:`metadata_keys`; empty values
    left out; a list, a jury's models, comma-separated). An API key there is refused, and so is a
    URL with user-info or a query: lm-eval writes its metadata into the results file."""
    from urllib.parse import urlsplit

    secret = [k for k in secret_metadata_keys() if metadata.get(k)]
    if secret:
        raise ConfigurationError(f"--metadata {', '.join(secret)}: an API key given there is written into lm-eval's "
                                 "results file; set CLINCONSENSUS_JUDGE_API_KEY (or _LOCAL_) in the environment instead")
    for role in (GRADER, LOCAL_GRADER):
        key = setting("judge_base_url").metadata_key(role) or ""
        parts = urlsplit(",".join(str(u) for u in metadata[key]) if isinstance(metadata.get(key), (list, tuple)) else str(metadata.get(key) or ""))
        if parts.username or parts.password or parts.query:
            raise ConfigurationError(f"--metadata {key}: user-info or a query in the URL would be written into lm-eval's "
                                     "results file; give the endpoint without credentials and the key in the environment")
    return {variable: _text(metadata[key]) for key, variable in metadata_keys().items() if metadata.get(key) not in (None, "", [])}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return ",".join(str(v).strip() for v in value) if isinstance(value, (list, tuple)) else str(value)


def merged_env(given: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment with ``given`` (:func:`given_settings`) over it."""
    return {**os.environ, **dict(given or {})}


# -- the reference in the docs --------------------------------------------------------------------


def reference_markdown() -> str:
    """``docs/settings.md``: every setting, generated from :data:`SETTINGS`."""
    lines = ["# Settings reference", "",
             "<!-- generated by `python -m clinconsensus_tasks.settings_table > docs/settings.md`; "
             "tests/test_settings_table.py fails when it differs -->", "",
             "Every setting of both benchmarks, from one table (`clinconsensus_tasks/settings_table.py`). In lm-eval, "
             "`--metadata '{\"key\": value}'` is the main channel and the environment variable the fallback (an API key "
             "only in the environment: lm-eval writes its metadata into the results file). In Inspect, `-T name=value`; a "
             "judge is a model role, so its settings are that model's (shown in parentheses).", ""]
    for benchmark, title in (("clinconsensus", "ClinConsensus"), ("climedbench", "CliMedBench")):
        lines += [f"## {title}", "", "| name | type | default | Inspect | lm-eval `--metadata` | environment | what it does |",
                  "|---|---|---|---|---|---|---|"]
        for s in SETTINGS:
            if s.benchmark != benchmark:
                continue
            meta = s.metadata_key() or ("(environment only)" if s.secret else "")
            if s.role:
                meta = f"`{meta}` (second judge: `{s.metadata_key(LOCAL_GRADER)}`)" if not s.secret else meta
                env = f"`{s.env_name()}` (second judge: `{s.env_name(LOCAL_GRADER)}`)"
            else:
                meta = f"`{meta}`" if meta else ""
                env = f"`{s.env}`" if s.env else ""
            inspect = s.inspect if (s.inspect or "").startswith("(") else f"`-T {s.inspect}`" if s.inspect else ""
            lines.append(f"| `{s.name}` | {s.kind} | {s.default} | {inspect} | {meta} | {env} | {s.help} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference_markdown(), end="")
