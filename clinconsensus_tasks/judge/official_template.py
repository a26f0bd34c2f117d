"""Choosing the per-criterion judge prompt, and obtaining the official template.

``judge_prompt`` (Inspect ``-T judge_prompt=...``; lm-eval and the CLI ``CLINCONSENSUS_JUDGE_PROMPT``):

* ``official`` (the default): the template the released judge was trained on. The package does
  not carry its text; like the dataset, it is obtained at first use: the official judge script
  is downloaded at a pinned commit (``CLINCONSENSUS_JUDGE_PROMPT_URL`` points at a mirror), its
  sha256 is checked against the pinned value, the ``PROMPT`` string is read with :mod:`ast` (never
  executed) and the file is cached under ``$CLINCONSENSUS_CACHE_DIR/judge_prompts``. Offline, or
  when the check fails, the run stops before the model under test answers anything, saying how to
  download and verify the file by hand and pass it as a path.
* ``project``: the project's own Chinese system + user prompt (``scorers.clinconsensus.rubric_prompt``).
* a path: any template file, plain text or a ``.py`` file with a ``PROMPT`` string, holding
  exactly the placeholders ``{user_message}``, ``{response}`` and ``{rubric_item}``.

Batched judging (one call per case) always uses the project's batched prompt.
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import ConfigurationError
from clinconsensus_tasks.judge.cache import default_cache_dir
from clinconsensus_tasks.scorers.clinconsensus.judge_template import JudgeTemplate, TemplateError, parse_template
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import BATCHED, BATCHED_SYSTEM, PER_CRITERION_SYSTEM

OFFICIAL = "official"
PROJECT = "project"

OFFICIAL_REPO = "crzzx1/ClinConsensus"
OFFICIAL_COMMIT = "52be41d98535cdcf48461bf59264f1ee9f16c47a"
OFFICIAL_PATH = "scripts/run_local_judge.py"
OFFICIAL_URL = f"https://raw.githubusercontent.com/{OFFICIAL_REPO}/{OFFICIAL_COMMIT}/{OFFICIAL_PATH}"
OFFICIAL_SHA256 = "a559d9051f96fc24aa1441ff03338dd83e32cd13d1071ce80b91bacf7048b1ce"
DOWNLOAD_TIMEOUT = 30.0


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _how_to(url: str, problem: str) -> ConfigurationError:
    return ConfigurationError(
        f"The official ClinConsensus judge prompt could not be obtained: {problem}\n"
        f"It is the PROMPT string of {OFFICIAL_PATH} in {OFFICIAL_REPO} at commit {OFFICIAL_COMMIT}. "
        "To provide it by hand:\n"
        f"  curl -L -o run_local_judge.py {url}\n"
        f"  sha256sum run_local_judge.py   # must print {OFFICIAL_SHA256}\n"
        "then pass the file as a path: Inspect `-T judge_prompt=/path/to/run_local_judge.py`, lm-eval and "
        f"clinconsensus-eval `CLINCONSENSUS_JUDGE_PROMPT=/path/to/run_local_judge.py`. A mirror of the file can be given "
        "with CLINCONSENSUS_JUDGE_PROMPT_URL=URL. To judge with the project's own prompt instead: judge_prompt=project "
        "(verdicts then differ from the released judge's protocol)."
    )


def official_template(
    url: str | None = None, cache_dir: str | Path | None = None, expected_sha256: str | None = None
) -> JudgeTemplate:
    """The official template: from the cache, else downloaded from ``url`` (default
    ``$CLINCONSENSUS_JUDGE_PROMPT_URL`` or the pinned GitHub URL) and checked against
    ``expected_sha256`` (default :data:`OFFICIAL_SHA256`) before it is read or cached."""
    expected_sha256 = expected_sha256 or OFFICIAL_SHA256
    url = url or settings_table.raw("judge_prompt_url") or OFFICIAL_URL
    folder = Path(cache_dir) if cache_dir else default_cache_dir() / "judge_prompts"
    cached = folder / f"run_local_judge-{expected_sha256}.py"
    if cached.is_file() and _sha256(cached.read_bytes()) == expected_sha256:
        data, source = cached.read_bytes(), url
    else:
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
                data = response.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise _how_to(url, f"downloading {url} failed ({type(exc).__name__}: {exc}).") from None
        got = _sha256(data)
        if got != expected_sha256:
            raise _how_to(url, f"{url} has sha256 {got}, expected {expected_sha256} (a different or altered file).")
        _keep(data, folder, expected_sha256)
        source = url
    try:
        template = parse_template(data.decode("utf-8"), OFFICIAL_PATH, name=OFFICIAL)
    except (TemplateError, UnicodeDecodeError) as exc:
        raise _how_to(url, str(exc)) from None
    return JudgeTemplate(template.text, OFFICIAL, source)


def template_file(path: str) -> JudgeTemplate:
    """A user's template file (plain text, or a ``.py`` file's ``PROMPT``), validated.

    A template is official by its content, whichever way it came: a file whose bytes have the
    pinned sha256 (the official script downloaded by hand, for a machine with no network) is the
    official template, recorded as ``official`` with the file as its source, and kept in the cache
    as a download would be. Any other file is a template of its own, recorded by its path; one
    named like the official script says why it is not the official one."""
    file = Path(os.path.expanduser(path))
    if not file.is_file():
        raise ConfigurationError(
            f"judge_prompt={path!r}: no such file. Use '{OFFICIAL}', '{PROJECT}' or the path of a template file "
            "with the placeholders {user_message}, {response} and {rubric_item}."
        )
    data = file.read_bytes()
    try:
        if _sha256(data) == OFFICIAL_SHA256:
            template = parse_template(data.decode("utf-8"), str(file), name=OFFICIAL)
            _keep(data, default_cache_dir() / "judge_prompts", OFFICIAL_SHA256)
            return template
        if file.name == Path(OFFICIAL_PATH).name:
            print(f"[clinconsensus] WARNING: {file} has sha256 {_sha256(data)}, not the pinned official file's {OFFICIAL_SHA256}: "
                  "judging with it as a template of its own (the release gate accepts only the official one)", file=sys.stderr)
        return parse_template(data.decode("utf-8"), str(file))
    except (TemplateError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"judge_prompt: {exc}") from None


def _keep(data: bytes, folder: Path, sha256: str) -> None:
    """The official script's bytes (of sha256 ``sha256``) in the cache, where :func:`official_template` looks first."""
    cached = folder / f"run_local_judge-{sha256}.py"
    if not (cached.is_file() and _sha256(cached.read_bytes()) == sha256):
        folder.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(cached)


def load_judge_prompt(choice: str | None, mode: str, url: str | None = None) -> JudgeTemplate | None:
    """The template for ``choice`` (``official``, ``project`` or a path; ``None`` means
    ``$CLINCONSENSUS_JUDGE_PROMPT``, else ``official``), or ``None`` for the project's prompt.
    Batched mode always uses the project's batched prompt: nothing is loaded."""
    choice = (choice or settings_table.raw("judge_prompt") or OFFICIAL).strip() or OFFICIAL
    if mode == BATCHED or choice == PROJECT:
        return None
    if choice == OFFICIAL:
        return official_template(url)
    return template_file(choice)


def prompt_record(template: JudgeTemplate | None, mode: str) -> dict[str, str]:
    """What a log records about the judge prompt used: its name, sha256 and source."""
    if template is not None:
        return template.describe()
    text = BATCHED_SYSTEM if mode == BATCHED else PER_CRITERION_SYSTEM
    name = "project-batched" if mode == BATCHED else PROJECT
    return {"judge_prompt": name, "judge_prompt_sha256": _sha256(text.encode("utf-8")), "judge_prompt_source": "clinconsensus_tasks"}
