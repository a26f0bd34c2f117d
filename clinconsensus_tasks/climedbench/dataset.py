"""Reading and validating CliMedBench scenario files, for both frameworks.

The official data is not public (available from its authors on request), so the project defines
the file layout: a directory with one JSONL file per scenario, named by its code (``ID1.jsonl``
... ``CS.jsonl``); see this folder's README.md for the fields. A run names its data (Inspect
``-T data_dir=``, lm-eval ``CLIMEDBENCH_DATA_DIR``): a folder, or ``sample`` for the bundled
synthetic sample, asked for by name as ClinConsensus's ``data=sample`` is. Unset, a run refuses
with :data:`NO_DATA` (:func:`chosen_data_dir`): synthetic items never score by default.
:func:`load_scenario` itself still reads the sample for ``None``: the project's own readers (the
release gate's check of bundled items, the adaptive-testing commands) call it so.

Every item is validated before it is sent anywhere; problems are reported together, each naming
the file, line, id and field. Ids, blank text and lone surrogates get the same checks as
ClinConsensus cases (``clinconsensus_tasks.text_checks``): ``ID1-1`` and ``ID1-1\u200b`` are one id,
a question of invisible characters only is empty. No length limits: no judge reads these items,
and scenario texts such as discharge summaries are long by nature.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.record_files import read_jsonl
from clinconsensus_tasks.errors import ConfigurationError, DataSourceError, DataValidationError
from clinconsensus_tasks.scorers.climedbench.scenarios import CHOICE, KEYWORDS, ORDER, SCENARIOS, SIMILARITY, Scenario
from clinconsensus_tasks.text_checks import is_blank, is_duplicate, surrogate_problems

ENV_DATA_DIR = settings_table.setting("climedbench_data_dir").env
SAMPLE = "sample"  # the data setting's value that asks for the bundled synthetic sample
SAMPLE_NOTE = "synthetic sample bundled with clinconsensus-tasks (not CliMedBench data)"


def no_data(give: str, sample: str) -> str:
    """What a command or run without CliMedBench data says, in one line: how to get and lay out the
    data, how to ``give`` the folder, and how to use the bundled ``sample`` on purpose."""
    return ("CliMedBench: no data folder given, and its data is not public: the CliMedBench authors give it on request "
            "(arXiv 2410.03502). Lay it out as one JSONL file per scenario (ID1.jsonl ... CS.jsonl; the Data section of "
            f"clinconsensus_tasks/climedbench/README.md) and give the folder: {give}. To run the bundled synthetic sample "
            f"on purpose (its scores say nothing about a model): {sample}.")


# What a run without a data setting says (one line: Inspect prints it alone, lm-eval as its error).
NO_DATA = no_data(f"Inspect `-T data_dir=DIR`, lm-eval `{ENV_DATA_DIR}=DIR`", f"`-T data_dir={SAMPLE}` / `{ENV_DATA_DIR}={SAMPLE}`")


@dataclass(frozen=True)
class LoadedItems:
    scenario: Scenario
    items: list[dict[str, Any]]
    source: str  # the file read
    is_sample: bool


def sample_dir() -> Path:
    return Path(str(resources.files("clinconsensus_tasks.data").joinpath("climedbench")))


def chosen_data_dir(data_dir: str | None) -> str:
    """A run's data setting (Inspect ``data_dir``, lm-eval ``CLIMEDBENCH_DATA_DIR``): a folder or
    ``sample``. Unset or blank: :class:`ConfigurationError` with :data:`NO_DATA`."""
    if data_dir is None or not str(data_dir).strip():
        raise ConfigurationError(NO_DATA)
    return str(data_dir).strip()


def resolve_data_dir(data_dir: str | None) -> tuple[Path, bool]:
    """The directory to read and whether it is the bundled sample (``"sample"``; ``None``/``""``
    too, for the project's own readers: a run's setting passes :func:`chosen_data_dir` first)."""
    choice = (data_dir or "").strip()
    if not choice or choice == SAMPLE:
        return sample_dir(), True
    path = Path(os.path.expanduser(choice))
    if not path.is_dir():
        raise DataSourceError(
            f"CliMedBench data directory not found: {path}. It should hold one JSONL file per scenario "
            f"({', '.join(s + '.jsonl' for s in SCENARIOS)}); give '{SAMPLE}' for the bundled synthetic sample."
        )
    return path, False


def _check(item: Any, scenario: Scenario, where: str, problems: list[str]) -> None:
    if not isinstance(item, dict):
        problems.append(f"{where}: record is a {type(item).__name__}, expected a JSON object")
        return
    iid = item.get("id")
    label = f"{where}: id {iid!r}" if isinstance(iid, str) and iid.strip() else f"{where}: id <missing>"

    def bad(field: str, problem: str) -> None:
        problems.append(f"{label}: field '{field}': {problem}")

    for name, problem in surrogate_problems(item):
        bad(name, problem)
    if not isinstance(iid, str) or is_blank(iid):
        bad("id", "missing or not a non-empty string")
    question = item.get("question")
    if not isinstance(question, str) or is_blank(question):
        bad("question", "missing or not a non-empty string")
    for name in ("reference", "specialty"):
        if name in item and not isinstance(item[name], str):
            bad(name, "expected a string")
    options = item.get("options")
    answer = item.get("answer")
    if scenario.kind in (KEYWORDS, SIMILARITY):
        if options is not None:
            bad("options", f"{scenario.code} items have no options")
    else:
        if not isinstance(options, dict) or len(options) < 2:
            bad("options", "expected an object of at least two letter -> text entries")
            return
        letters = list(options)
        expected = [chr(ord("A") + i) for i in range(len(letters))]
        if letters != expected:
            bad("options", f"letters must run {''.join(expected)} in order, got {''.join(letters)}")
        if not all(isinstance(t, str) and not is_blank(t) for t in options.values()):
            bad("options", "every option needs non-empty text")
    if scenario.kind == CHOICE:
        if not isinstance(answer, str) or answer not in (options or {}):
            bad("answer", f"{answer!r} is not one of the option letters {''.join(options or {})}")
    elif scenario.kind == ORDER:
        if not isinstance(answer, str) or sorted(answer) != sorted(options or {}):
            bad("answer", f"{answer!r} is not a permutation of the step letters {''.join(options or {})}")
    elif scenario.kind == KEYWORDS:
        if not isinstance(answer, list) or not answer or not all(isinstance(k, str) and k.strip() for k in answer):
            bad("answer", "expected a non-empty list of keyword strings")
    elif not isinstance(answer, str) or not answer.strip():
        bad("answer", "expected the reference text (a non-empty string)")


def validate_items(records: list[tuple[str, Any]], scenario: Scenario) -> list[dict[str, Any]]:
    problems: list[str] = []
    first_seen: dict[str, tuple[str, str]] = {}
    items = []
    for where, record in records:
        before = len(problems)
        _check(record, scenario, where, problems)
        if not is_duplicate(record, "id", where, first_seen, problems, "id") and len(problems) == before:
            items.append(record)
    if problems:
        raise DataValidationError(problems)
    return items


def load_scenario(code: str, data_dir: str | None = None, announce: bool = True) -> LoadedItems:
    """Load and validate one scenario's items from ``data_dir`` (a folder, or ``sample``/``None``: the
    bundled sample; a run's setting is checked by :func:`chosen_data_dir` before it gets here)."""
    scenario = SCENARIOS[code.upper()]
    directory, is_sample = resolve_data_dir(data_dir)
    path = directory / f"{scenario.code}.jsonl"
    if not path.is_file():
        raise DataSourceError(f"CliMedBench scenario file missing: {path}")
    items = validate_items(read_jsonl(path), scenario)
    if not items:
        raise DataValidationError([f"{path}: no records"])
    if is_sample and announce:
        print(f"[climedbench] {scenario.code}: the {SAMPLE_NOTE}, as asked ({len(items)} items)", file=sys.stderr)
    return LoadedItems(scenario, items, str(path), is_sample)
