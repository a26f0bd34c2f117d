"""Reading and validating ClinConsensus cases, for both frameworks.

Sources (the same words for Inspect's ``-T data=...`` and lm-eval's ``CLINCONSENSUS_DATA``):

* ``hub`` (the default): the Hugging Face dataset ``skylenage/ClinConsensus``, file
  ``data/clinconsensus_low.jsonl``, loaded with ``datasets``.
* ``sample``: the synthetic sample bundled with the package (see ``data/DATA_CARD.md``).
* a path to a ``.jsonl`` or ``.parquet`` file in the same schema.

Every record is validated before anything is sent to a model, and all problems are reported at
once, each naming the file, line (row for parquet and the hub), case_id and field. There is no
silent fallback from one source to another. Beyond types and counts, validation refuses text that
would fail only after the model was paid (``clinconsensus_tasks.text_checks``):

* case_ids are compared as a reader sees them (NFKC, invisible format characters removed, white
  space stripped): ``C1`` and ``C1\u200b`` are the same case, reported as a duplicate;
* required text (case_id, difficulty, clinical_context, user_request, each criterion) made only of
  white space or invisible characters is empty;
* a lone surrogate anywhere in a record (it cannot be encoded into a request or a log) is refused;
* field lengths are limited (:data:`MAX_CRITERION_CHARS`, :data:`MAX_QUESTION_CHARS`,
  :data:`MAX_ID_CHARS`), far above real cases but below what a judge can read.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from clinconsensus_tasks import settings_table
from clinconsensus_tasks.errors import DataSourceError, DataValidationError
from clinconsensus_tasks.scorers.clinconsensus.audience import audience
from clinconsensus_tasks.scorers.clinconsensus.cacs import slices_of
from clinconsensus_tasks.scorers.clinconsensus.metric_table import DEFAULT_N_CRITERIA
from clinconsensus_tasks.scorers.clinconsensus.rubric_prompt import case_question
from clinconsensus_tasks.record_files import read_jsonl
from clinconsensus_tasks.text_checks import is_blank, is_duplicate, surrogate_problems

HF_DATASET = "skylenage/ClinConsensus"
HF_DATA_FILE = "data/clinconsensus_low.jsonl"
SAMPLE_FILE = "clinconsensus_sample.jsonl"
ENV_DATA = settings_table.setting("data").env
# The hub commit of skylenage/ClinConsensus that runs read by default and the release gate checks
# the revision a run recorded against. None: no commit id of the dataset could be confirmed when
# this was written (the project's machines cannot reach the hub), so nothing is pinned; rather than
# invent one, a run without a revision reads the default branch, says so, and records the commit it
# read (``data_revision``) with the file's sha256 (``data_sha256``). Set it to a 40-hex commit to pin.
HF_DATA_REVISION: str | None = None
ENV_REVISION = settings_table.setting("revision").env  # pins a hub revision (branch, tag or commit)

_STRING_FIELDS = ("case_id", "difficulty", "task", "subject", "user_role", "clinical_context", "user_request")
_REQUIRED_TEXT = ("case_id", "difficulty", "clinical_context", "user_request")  # blank or white space only: invalid
_LIST_FIELDS = ("task_labels", "subject_labels")

# Field limits. The released judge reads at most 5,120 tokens: its template, the question, the
# answer and one criterion. Chinese text runs at about 1.4 characters per token with Qwen3's
# tokenizer, so a question of 8,000 characters alone fills that input, and a criterion of 2,000
# (real ones are one sentence, under 200) would crowd out the answer. Longer fields cannot be
# judged as the benchmark intends: they are refused before any model call.
MAX_QUESTION_CHARS = 8_000  # clinical_context and user_request together
MAX_CRITERION_CHARS = 2_000
MAX_ID_CHARS = 200  # case_id and criterion_id


@dataclass(frozen=True)
class Case:
    """One validated ClinConsensus case."""

    case_id: str
    difficulty: str
    task: str
    task_labels: tuple[str, ...]
    subject: str
    subject_labels: tuple[str, ...]
    user_role: str
    clinical_context: str
    user_request: str
    rubrics: tuple[tuple[str, str], ...]  # (criterion_id, criterion)
    source: str = field(default="", compare=False)  # "file:line", for messages

    @property
    def question(self) -> str:
        return case_question(self.clinical_context, self.user_request)

    @property
    def audience(self) -> str:
        return audience(self.user_role)

    def slices(self) -> dict[str, tuple[str, ...]]:
        """Labels for the metric breakdowns (see ``scorers.clinconsensus.cacs.breakdowns``)."""
        return slices_of(self.metadata())

    def metadata(self) -> dict[str, Any]:
        """Everything but the question, as JSON-friendly values (Inspect sample metadata)."""
        return {
            "case_id": self.case_id,
            "difficulty": self.difficulty,
            "task": self.task,
            "task_labels": list(self.task_labels),
            "subject": self.subject,
            "subject_labels": list(self.subject_labels),
            "user_role": self.user_role,
            "audience": self.audience,
            "rubrics": [{"criterion_id": c, "criterion": t} for c, t in self.rubrics],
        }

    def to_record(self) -> dict[str, Any]:
        """The case in the dataset's own schema (plus the derived question and audience)."""
        record = self.metadata()
        record.update(clinical_context=self.clinical_context, user_request=self.user_request, question=self.question)
        return record


@dataclass(frozen=True)
class LoadedCases:
    cases: list[Case]
    source: str  # what was read: a path or the hub file URL
    sha256: str | None  # of the file read, when there is one
    revision: str | None = None  # the hub commit the data came from, when it could be resolved
    requested_revision: str | None = None  # the hub revision the run asked for (a commit pins the data; a branch moves)


def criterion_id_of(item: dict[str, Any], index: int) -> str | None:
    """A criterion's id as a string: its ``criterion_id`` (a non-empty string, or an integer as the
    public release and the official scripts accept), or its 1-based position when it has none.
    ``None`` for an id of any other form."""
    if "criterion_id" not in item or item["criterion_id"] is None:
        return str(index + 1)
    value = item["criterion_id"]
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    return None


def _validate(record: Any, where: str, n_criteria: int, problems: list[str]) -> Case | None:
    if not isinstance(record, dict):
        problems.append(f"{where}: record is a {type(record).__name__}, expected a JSON object")
        return None
    cid = record.get("case_id")
    label = f"{where}: case_id {cid!r}" if isinstance(cid, str) and cid.strip() else f"{where}: case_id <missing>"
    before = len(problems)

    def bad(field_name: str, problem: str) -> None:
        problems.append(f"{label}: field '{field_name}': {problem}")

    for name in _STRING_FIELDS:
        if name not in record:
            bad(name, "missing")
        elif not isinstance(record[name], str):
            bad(name, f"expected a string, got {type(record[name]).__name__}")
    for name, problem in surrogate_problems(record):
        bad(name, problem)
    for name in _REQUIRED_TEXT:
        if is_blank(record.get(name)):
            bad(name, "empty" + ("" if not record[name].strip() else " (only invisible characters)"))
    _check_lengths(record, bad)
    for name in _LIST_FIELDS:
        value = record.get(name)
        if name not in record:
            bad(name, "missing")
        elif not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            bad(name, "expected a list of strings")
    rubrics = record.get("rubrics")
    parsed: list[tuple[str, str]] = []
    if "rubrics" not in record:
        bad("rubrics", "missing")
    elif not isinstance(rubrics, list):
        bad("rubrics", f"expected a list, got {type(rubrics).__name__}")
    else:
        if len(rubrics) != n_criteria:
            bad("rubrics", f"has {len(rubrics)} criteria, expected {n_criteria}")
        seen: set[str] = set()
        for i, item in enumerate(rubrics):
            at = f"rubrics[{i}]"
            if not isinstance(item, dict):
                bad(at, "expected an object with criterion_id and criterion")
                continue
            crit_id, text = criterion_id_of(item, i), item.get("criterion")
            if crit_id is None:
                bad(f"{at}.criterion_id", "expected a non-empty string or an integer (or no criterion_id: its position)")
            elif crit_id in seen:
                bad(f"{at}.criterion_id", f"duplicate id {crit_id!r}")
            if not isinstance(text, str) or is_blank(text):
                bad(f"{at}.criterion", "missing or not a non-empty string")
            elif len(text) > MAX_CRITERION_CHARS:
                bad(f"{at}.criterion", f"{len(text):,} characters, more than the {MAX_CRITERION_CHARS:,} allowed")
            if crit_id is not None and len(crit_id) > MAX_ID_CHARS:
                bad(f"{at}.criterion_id", f"{len(crit_id):,} characters, more than the {MAX_ID_CHARS:,} allowed")
            if crit_id is not None and isinstance(text, str):
                seen.add(crit_id)
                parsed.append((crit_id, text))
    if len(problems) > before:
        return None
    return Case(
        case_id=record["case_id"],
        difficulty=record["difficulty"],
        task=record["task"],
        task_labels=tuple(record["task_labels"]),
        subject=record["subject"],
        subject_labels=tuple(record["subject_labels"]),
        user_role=record["user_role"],
        clinical_context=record["clinical_context"],
        user_request=record["user_request"],
        rubrics=tuple(parsed),
        source=where,
    )


def _check_lengths(record: dict[str, Any], bad: Any) -> None:
    """Report fields longer than the limits above (the question's on its longer part)."""
    cid = record.get("case_id")
    if isinstance(cid, str) and len(cid) > MAX_ID_CHARS:
        bad("case_id", f"{len(cid):,} characters, more than the {MAX_ID_CHARS:,} allowed")
    parts = {name: record.get(name) for name in ("clinical_context", "user_request")}
    if all(isinstance(v, str) for v in parts.values()):
        size = sum(len(v) for v in parts.values())
        if size > MAX_QUESTION_CHARS:
            longer = max(parts, key=lambda name: len(parts[name]))
            bad(longer, f"the question (clinical_context {len(parts['clinical_context']):,} + user_request "
                        f"{len(parts['user_request']):,} characters) is longer than the {MAX_QUESTION_CHARS:,} allowed")


def validate_records(
    records: Iterable[tuple[str, Any]], n_criteria: int = DEFAULT_N_CRITERIA
) -> list[Case]:
    """Validate ``(location, record)`` pairs; raise :class:`DataValidationError` listing every problem."""
    problems: list[str] = []
    cases: list[Case] = []
    first_seen: dict[str, tuple[str, str]] = {}
    for where, record in records:
        case = _validate(record, where, n_criteria, problems)
        if not is_duplicate(record, "case_id", where, first_seen, problems, "case_id") and case is not None:
            cases.append(case)
    if problems:
        raise DataValidationError(problems)
    return cases


def read_parquet(path: Path) -> list[tuple[str, Any]]:
    """``("file:row", record)`` for each row; an empty or unreadable file is a :class:`DataValidationError`."""
    import pyarrow.parquet as pq

    if path.stat().st_size == 0:
        raise DataValidationError([f"{path}: empty file (0 bytes), no records"])
    try:
        table = pq.read_table(path)
    except Exception as exc:
        raise DataValidationError([f"{path}: not a readable parquet file: {type(exc).__name__}: {exc}"]) from None
    return list(_dataset_rows(table.to_pylist(), str(path)))


def _dataset_rows(dataset: Any, name: str) -> Iterable[tuple[str, Any]]:
    for index, row in enumerate(dataset):
        yield f"{name}:{index + 1}", dict(row)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_commit(revision: str | None) -> bool:
    """Whether ``revision`` is a full hub commit hash (40 hex digits): it names immutable content,
    where a branch or tag may point elsewhere tomorrow."""
    return bool(revision) and re.fullmatch(r"[0-9a-f]{40}", str(revision)) is not None


def sample_path() -> Path:
    """Path of the bundled synthetic sample."""
    return Path(str(resources.files("clinconsensus_tasks.data").joinpath(SAMPLE_FILE)))


def _hub_file(repo_id: str, data_file: str, revision: str | None) -> tuple[str | None, str | None]:
    """sha256 and resolved commit of the hub file (from the local hub cache when offline); ``(None,
    None)`` when ``huggingface_hub`` cannot say. Only for provenance: the data itself comes from ``datasets``."""
    try:
        from huggingface_hub import hf_hub_download

        local = Path(hf_hub_download(repo_id, data_file, repo_type="dataset", revision=revision))
    except Exception:
        return None, None
    parts = local.parts
    commit = parts[parts.index("snapshots") + 1] if "snapshots" in parts else None
    return _sha256(local), commit


def load_from_hub(
    repo_id: str = HF_DATASET, data_file: str = HF_DATA_FILE, n_criteria: int = DEFAULT_N_CRITERIA, revision: str | None = None
) -> LoadedCases:
    """Load the public release with ``datasets``; ``repo_id`` may also be a local folder laid out
    like the hub repository (``datasets`` treats both alike). ``revision`` (default
    ``$CLINCONSENSUS_DATA_REVISION``, else :data:`HF_DATA_REVISION`) names a branch, tag or commit."""
    import datasets

    revision = revision or settings_table.raw("revision") or HF_DATA_REVISION
    if not is_commit(revision) and not Path(repo_id).exists():
        print(f"[clinconsensus] WARNING: reading {repo_id} at {revision or 'its default branch'}, which moves: the run records "
              f"the commit and sha256 it read, and the release gate asks for a run pinned to a commit "
              f"({ENV_REVISION}=<40-hex commit>, Inspect: -T revision=<40-hex commit>).", file=sys.stderr)
    local = Path(repo_id).exists()
    try:
        dataset = datasets.load_dataset(repo_id, data_files=data_file, split="train", revision=revision)
    except Exception as exc:
        if local:
            raise DataSourceError(f"Could not read {Path(repo_id) / data_file}: {type(exc).__name__}: {exc}") from exc
        raise DataSourceError(
            f"Could not load the ClinConsensus data from the Hugging Face hub ({repo_id}, {data_file}, "
            f"revision {revision or 'default branch'}): "
            f"{type(exc).__name__}: {exc}\n"
            "If this machine cannot reach the hub, use a local copy instead: Inspect "
            "`-T data=/path/to/clinconsensus_low.jsonl` (or .parquet), lm-eval "
            f"`{ENV_DATA}=/path/to/clinconsensus_low.jsonl`; or the bundled synthetic sample: "
            f"`-T data=sample` / `{ENV_DATA}=sample`."
        ) from exc
    name = str(Path(repo_id) / data_file) if local else f"hf://datasets/{repo_id}/{data_file}"
    sha256, commit = (_sha256(Path(repo_id) / data_file), None) if local else _hub_file(repo_id, data_file, revision)
    return _nonempty(LoadedCases(validate_records(_dataset_rows(dataset, name), n_criteria), name, sha256, commit or revision,
                                 None if local else revision))


def _nonempty(loaded: LoadedCases) -> LoadedCases:
    if not loaded.cases:
        raise DataValidationError([f"{loaded.source}: no records"])
    return loaded


def load_cases(data: str | None = None, n_criteria: int = DEFAULT_N_CRITERIA, revision: str | None = None) -> LoadedCases:
    """Load and validate cases from ``data``: ``None``/``"hub"``, ``"sample"`` or a file path
    (``revision`` pins the hub revision, see :func:`load_from_hub`)."""
    choice = (data or "hub").strip()
    if choice == "hub":
        return load_from_hub(n_criteria=n_criteria, revision=revision)
    path = sample_path() if choice == "sample" else Path(os.path.expanduser(choice))
    if path.is_dir():
        inside = sorted(p.name for p in path.iterdir() if p.suffix.lower() in (".jsonl", ".json", ".parquet"))
        raise DataSourceError(
            f"ClinConsensus data {path} is a directory, not a data file: give the .jsonl or .parquet file itself"
            + (f" (this directory holds: {', '.join(inside[:5])})" if inside else " (it holds no .jsonl or .parquet file)")
        )
    if not path.is_file():
        raise DataSourceError(
            f"ClinConsensus data file not found: {path}. Give a .jsonl or .parquet file, "
            "'sample' for the bundled synthetic sample, or 'hub' for the Hugging Face dataset."
        )
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        records = read_jsonl(path)
    elif suffix == ".parquet":
        records = read_parquet(path)
    else:
        raise DataSourceError(f"{path}: unsupported file type {suffix!r}; use .jsonl or .parquet")
    return _nonempty(LoadedCases(validate_records(records, n_criteria), str(path), _sha256(path)))
