"""Finding runs' log files, for every command that reads runs (of either benchmark).

Why one module: the report, ``compare-models`` and ``robustness`` each searched folders for
Inspect logs and lm-eval output with their own rules, so a file one of them found another missed.
What a log file is, and which files make one run, is decided here; reading a file's cases or
items is the benchmark's reader (``clinconsensus.logs``, ``climedbench.logs``).

The files: Inspect logs (``.eval``, or ``.json`` named ``<timestamp>_...`` as Inspect names them;
a ``.json`` named on the command line is taken as an Inspect log whatever its name), lm-eval
``samples_<task>_<timestamp>.jsonl`` (``--log_samples``) and ``results_<timestamp>.json``.

Where: local paths and URLs alike (``s3://bucket/prefix``, ``gs://``, ``az://``, ``file://``; see
``clinconsensus_tasks.storage``). A local path is a :class:`pathlib.Path` as it always was; a URL
is a ``UPath`` with the same interface, found by ONE listing of its prefix (never a request per
object), so every reader downstream opens either the same way.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Sequence

from clinconsensus_tasks.errors import ClinConsensusError
from clinconsensus_tasks.storage import is_remote_file, is_url, listing, location, remote_child, storage_errors

CLINCONSENSUS, CLIMEDBENCH = "clinconsensus", "climedbench"
BENCHMARKS = (CLINCONSENSUS, CLIMEDBENCH)
LMEVAL_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d.-]+)\.jsonl$")
INSPECT_JSON = re.compile(r"^\d{4}-\d{2}-\d{2}T")


class SeveralRuns(ClinConsensusError):
    """A folder given as one run holds the logs of several runs."""


class UnreadableLog(ClinConsensusError, ValueError):
    """An Inspect log that Inspect's reader cannot read (cut short, still being written, not a log)."""



def model_display_name(model: str) -> str:
    """One name per model across frameworks: Inspect's ``provider/[service/]name`` and lm-eval's
    output folder (``org__name``) both become ``name`` as the server knows it (``org/name``)."""
    parts = model.split("/")
    if len(parts) >= 3 and parts[0] in ("openai-api", "openai-compatible"):
        return "/".join(parts[2:])
    if len(parts) >= 2 and "__" not in model:
        return "/".join(parts[1:])
    return model.replace("__", "/")


def is_lmeval_samples(path: Path, benchmark: str | None = None) -> bool:
    """An lm-eval samples file (of ``benchmark``'s tasks, when given)."""
    return path.suffix == ".jsonl" and path.name.startswith(f"samples_{benchmark or ''}")


def is_lmeval_results(path: Path) -> bool:
    return path.suffix == ".json" and path.name.startswith("results_")


def is_inspect_log(path: Path, named: bool = False) -> bool:
    """An Inspect log: ``.eval``, or ``.json`` named as Inspect names logs (any ``.json`` that is
    not an lm-eval results file when the user ``named`` it)."""
    if path.suffix == ".eval":
        return True
    return path.suffix == ".json" and not is_lmeval_results(path) and (named or bool(INSPECT_JSON.match(path.name)))


def is_log(path: Path) -> bool:
    """A file of a run of either benchmark, in either framework (what a folder search keeps)."""
    return (not path.name.startswith(".")) and (
        is_inspect_log(path) or is_lmeval_results(path) or any(is_lmeval_samples(path, b) for b in BENCHMARKS))


def lmeval_task(path: Path) -> str:
    """The task a samples file holds (``samples_climedbench_sso_<time>.jsonl`` -> ``climedbench_sso``)."""
    match = LMEVAL_SAMPLES.match(path.name)
    return match.group("task") if match else path.stem.removeprefix("samples_")


def lmeval_run_key(path: Path) -> tuple[Path, str]:
    """Samples files of one lm-eval call share their folder and timestamp."""
    match = LMEVAL_SAMPLES.match(path.name)
    return path.parent, match.group("stamp") if match else path.name


class Found(list):
    """The log files :func:`find_logs` found, and the logs it left out of folders as superseded:
    ``superseded`` holds ``(old, newer)`` pairs."""

    superseded: list[tuple[Path, Path]]


def find_logs(paths: Sequence[str | Path]) -> Found:
    """Files named, and in folders the log files they hold (recursively, sorted); anything else in
    a folder is left alone. A folder without any is an error, as is a path that does not exist.
    URLs alike: a URL naming an object is a file, one naming a prefix a folder (one listing).

    In a folder, an Inspect log that a later attempt of the same task superseded (see
    :func:`superseded`) is left out, with a note on stderr naming both; a file named is always kept."""
    out, dropped, named = Found(), [], set()
    for raw in paths:
        path = location(raw)
        if is_url(path):
            found = _find_remote(path)
        elif path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and is_log(p))
            if not found:
                raise FileNotFoundError(f"no Inspect logs or lm-eval samples/results files in the folder {path}")
        elif path.is_file():
            out.append(path)
            named.add(str(path))
            continue
        else:
            raise FileNotFoundError(f"no such log file or folder: {path}")
        if len(found) == 1 and _names_file(raw, found[0]):
            out += found
            named.add(str(found[0]))
            continue
        older = superseded(found)
        out += [p for p in found if p not in older]
        dropped += older.items()
    dropped = [(old, newer) for old, newer in dropped if str(old) not in named]  # named on the command line: read
    for old, newer in dropped:
        print(f"clinconsensus-eval: note: left out {old}: superseded by {newer}, a later attempt of the same task "
              "(an eval-set retry or inspect eval-retry of it)", file=sys.stderr)
    out.superseded = dropped
    return out


# Inspect names a log ``<created>_<task>_<task id>.eval`` (its default log file pattern); the
# attempts of one task (eval-set retries, ``inspect eval-retry``) keep its task id.
INSPECT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T[^_]+_(?P<rest>.+)\.(eval|json)$")


def superseded(found: Sequence[Path]) -> dict[Path, Path]:
    """The Inspect logs among ``found`` that a later attempt of the same task supersedes, each
    with the log that does: Inspect's own rule for an eval set (``latest_completed_task_eval_logs``:
    a task's newest log is its log, as every attempt is seeded from the one before). Logs of one
    task are found by name (same folder, same ``<task>_<task id>`` after the timestamp), then
    confirmed by their headers: the same ``eval.task_id`` and model, the newer by ``eval.created``
    as the logs record it (strictly: logs created at the same instant, such as a log and its
    ``inspect log convert`` copy, supersede neither). Only such groups are read (a header each); a
    log Inspect cannot read supersedes nothing and is not superseded (the reader names it later)."""
    groups: dict[tuple[str, str], list[Path]] = {}
    for path in found:
        match = INSPECT_NAME.match(path.name) if is_inspect_log(path) else None
        if match:
            groups.setdefault((str(path.parent), match.group("rest")), []).append(path)
    out: dict[Path, Path] = {}
    for paths in groups.values():
        if len(paths) < 2:
            continue
        headers = []
        for path in paths:
            try:
                spec = read_inspect_log(path, header_only=True).eval
            except Exception:  # any file at all may be in a folder: whatever it is, the reader names it later
                continue
            created = _instant(spec.created)
            if created is not None:  # a time it does not record readably supersedes nothing, nor is superseded
                headers.append(((spec.task_id, spec.model), created, str(path), path))
        by_task: dict[tuple[str, str], list] = {}
        for key, created, name, path in headers:
            by_task.setdefault(key, []).append((created, name, path))
        for attempts in by_task.values():
            attempts.sort(key=lambda a: a[:2])
            newest_at, _, newest = attempts[-1]
            out.update({path: newest for created, _, path in attempts if created < newest_at})
    return out


def _remote_objects(path) -> tuple[bool, list]:
    """(whether the URL names one object, the log objects under it) from one listing of its prefix."""
    found = listing(path)
    own = path.fs.unstrip_protocol(path.path)
    if list(found) == [own]:
        return True, [path]
    if not found:
        raise FileNotFoundError(f"no such log file or folder: {path} (nothing stored at that URL or under that prefix)")
    return False, [remote_child(path, url) for url in sorted(found) if url != own and is_log(remote_child(path, url))]


def _find_remote(path) -> list:
    single, found = _remote_objects(path)
    if not single and not found:
        raise FileNotFoundError(f"no Inspect logs or lm-eval samples/results files in the folder {path}")
    return found


def _instant(created: str) -> float | None:
    """When a log was created, comparable across machines' time zones (ISO 8601 with its offset;
    without one, as Inspect would have written it: UTC); None when it is no such time."""
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return None
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()


def is_file(path) -> bool:
    """Whether ``path`` (a Path, or a UPath from :func:`storage.location`) is a file (an object)."""
    return is_remote_file(path) if is_url(path) else path.is_file()


def benchmark_logs(paths: Sequence[str | Path], benchmark: str) -> list[str | Path]:
    """``paths`` with each folder (or URL prefix) replaced by the logs of ``benchmark`` it holds
    (Inspect logs of its tasks, its lm-eval samples files; not results files), for the commands
    that read each log on its own (``summarize``, ``export-official``, ``export-sft``). A file
    named stays as it was given."""
    out: list[str | Path] = []
    for raw in paths:
        found = find_logs([raw])
        if len(found) == 1 and _names_file(raw, found[0]):
            out.append(raw)
            continue
        mine = [p for p in found if is_lmeval_samples(p, benchmark) or (is_inspect_log(p) and _task_of(p, benchmark))]
        if not mine:
            raise FileNotFoundError(f"no {benchmark} Inspect logs or lm-eval samples_{benchmark}*.jsonl files in {location(raw)}")
        out += mine
    return out


def one_log(path: str | Path, benchmark: str) -> str | Path:
    """The one log file of ``benchmark`` that ``path`` names, for the commands that read one log
    (``compare``, ``audit``, ``rescore``): the file as given, or the one such log in a folder or
    under a URL prefix; none or several is an error naming the folder."""
    found = benchmark_logs([path], benchmark)
    if len(found) > 1:
        raise SeveralRuns(f"{location(path)}: holds {len(found)} {benchmark} logs ({', '.join(map(str, found[:4]))}); name one")
    return found[0]


def _task_of(path: Path, benchmark: str) -> bool:
    """Whether an Inspect log found in a folder is of ``benchmark``'s tasks (another plugin's log is not)."""
    try:
        return benchmark_of(path) == benchmark
    except UnreadableLog:
        raise
    except ClinConsensusError:
        return False


def _names_file(raw: str | Path, found: Path) -> bool:
    """Whether the argument ``raw`` named the file ``found`` itself (not a folder holding it)."""
    return str(location(raw)).rstrip("/") == str(found).rstrip("/")


# What no reader of the package uses: a sample's transcript (its events, the messages and calls
# they share, its messages, the attachments they point into), most of a log's bytes. Every command
# reads ids, input, output, scores, metadata, errors and usage.
TRANSCRIPT_FIELDS = frozenset({"events", "events_data", "messages", "attachments", "timelines"})


def read_inspect_log(path: Path, header_only: bool = False, whole: bool = False):
    """An Inspect log read by Inspect's own reader (which takes URLs too), its samples without their
    transcripts (:data:`TRANSCRIPT_FIELDS`) unless ``whole`` (a log that is written back); a log it
    cannot read (an object cut short, a file still being written) is an :class:`UnreadableLog`
    naming it. A finished local ``.eval`` file is read by :func:`read_local_eval`."""
    from inspect_ai.log import read_eval_log

    with storage_errors(path):
        try:
            if not header_only and not whole:
                try:
                    log = read_local_eval(path)
                except Exception:  # noqa: BLE001 -- whatever it cannot read, Inspect's reader reads or names
                    log = None
                if log is not None:
                    return log
            return read_eval_log(str(path), header_only=header_only, exclude_fields=None if whole else set(TRANSCRIPT_FIELDS))
        except (OSError, MemoryError):  # a file or store that cannot be reached: storage_errors names it
            raise
        except Exception as exc:  # noqa: BLE001 -- whatever Inspect's reader meets in the bytes (a zip cut short or without
            # its members, JSON cut in a member: BadZipFile, KeyError, ijson's errors, ValueError) is a log it cannot read
            raise UnreadableLog(f"{path}: not a readable Inspect log ({type(exc).__name__}: {str(exc)[:300]}); cut short, "
                                "or still being written?") from exc


_SPLIT: Any = None


def without_transcript(raw: bytes) -> dict[str, Any]:
    """A sample member's JSON as ``json.loads`` reads it, less :data:`TRANSCRIPT_FIELDS`, whose
    values are skipped without being built: msgspec splits the object into its top-level fields'
    raw bytes (a scan at C speed), and ``json`` reads the rest. The transcript is most of a sample's
    bytes (its judge prompts, kept as attachments: 270 KB of a 2,500-case run's samples): 0.9 s a
    run against 3.4 s for reading it whole. JSON ``json`` takes and msgspec does not (a bare
    ``NaN``) is read whole by ``json``."""
    global _SPLIT
    import json

    import msgspec

    if _SPLIT is None:
        _SPLIT = msgspec.json.Decoder(dict[str, msgspec.Raw])
    try:
        fields = _SPLIT.decode(raw)
    except msgspec.DecodeError:
        data = json.loads(raw)
        return {k: v for k, v in data.items() if k not in TRANSCRIPT_FIELDS}
    return {k: json.loads(bytes(v)) for k, v in fields.items() if k not in TRANSCRIPT_FIELDS}


def read_local_eval(path: Path):
    """A finished local ``.eval`` log, its samples without their transcripts, as Inspect's reader
    gives them when told to leave :data:`TRANSCRIPT_FIELDS` out (``tests/test_log_reading.py``
    holds the two equal), in a third of its time; ``None`` for any other log (a URL, a ``.json``
    log, one still being written), which Inspect's reader reads.

    Inspect leaves fields out by streaming each sample's JSON through ijson, an event at a time in
    Python: 11.6 s for a 2,500-case log, against 5 s for reading each sample member whole (stdlib
    ``zipfile``, zstd from ``zipfile_zstd``, which Inspect installs and imports), parsing it with
    ``json``, dropping the transcript and building Inspect's own ``EvalSample``; the transcript is
    now skipped unread (:func:`without_transcript`). As Inspect does,
    a sample logged twice under one name is read once (the last member), and the samples are
    sorted by epoch, then id. The header is Inspect's reading of it.
    """
    import zipfile

    from inspect_ai.log import EvalSample, read_eval_log

    from clinconsensus_tasks.inspect_compat import get_deserializing_context

    if is_url(path) or Path(path).suffix != ".eval":
        return None
    log = read_eval_log(str(path), header_only=True)
    if log.status == "started":
        return None
    samples = []
    with zipfile.ZipFile(path) as archive:
        for name in dict.fromkeys(n for n in archive.namelist() if n.startswith("samples/") and n.endswith(".json")):
            data = without_transcript(archive.read(name))
            samples.append(EvalSample.model_validate(data, context=get_deserializing_context()))
    samples.sort(key=lambda s: (s.epoch, s.id if isinstance(s.id, str) else str(s.id).zfill(20)))
    log.samples = samples
    return log


def ended_by_judge_policy(log: Any) -> bool:
    """Whether an Inspect log's only failure was the judge failure policy ending the run (its
    answers all there): re-judged since with ``inspect score LOG --overwrite``, it keeps that
    status (Inspect does not change it), and its samples, read now, decide."""
    from clinconsensus_tasks.scorers.clinconsensus.judge_failures import JudgeFailureError

    return log.status == "error" and log.error is not None and JudgeFailureError.__name__ in (log.error.traceback or "")


def inspect_task(path: Path) -> str:
    """The task name an Inspect log records, without the package (``clinconsensus``)."""
    return read_inspect_log(path, header_only=True).eval.task.rsplit("/", 1)[-1]


def benchmark_of(path: Path) -> str:
    """``clinconsensus`` or ``climedbench``, from the file's name or the task its log records."""
    task = lmeval_task(path) if path.suffix == ".jsonl" else inspect_task(path)
    for benchmark in BENCHMARKS:
        if task.startswith(benchmark):
            return benchmark
    raise ClinConsensusError(f"{path}: task {task!r} is neither ClinConsensus nor CliMedBench")


def run_files(path: str | Path, benchmark: str | None = None) -> list[Path]:
    """The log file(s) of ONE run: the file itself, or the one Inspect log or the lm-eval samples
    files of one call in a folder (an lm-eval CliMedBench run writes one file per scenario).
    :class:`SeveralRuns` when the folder holds more than one run. ``benchmark``: the run of that
    benchmark among a folder's lm-eval samples files, as one call of both writes them
    (``lm_eval --tasks clinconsensus,climedbench --log_samples --output_path DIR``: one
    ClinConsensus samples file beside the CliMedBench ones)."""
    path = location(path)
    if is_url(path):
        single, logs = _remote_objects(path)
        if single:
            return logs
    else:
        if path.is_file():
            return [path]
        if not path.is_dir():
            raise FileNotFoundError(f"no such log file or folder: {path}")
        logs = find_logs([path]) if any(p.is_file() and is_log(p) for p in path.rglob("*")) else []
    inspect_logs = [p for p in logs if is_inspect_log(p)]
    samples = [p for p in logs if p.suffix == ".jsonl"]
    if not inspect_logs and not samples:
        raise FileNotFoundError(f"{path}: no Inspect log (.eval/.json) and no lm-eval samples_clinconsensus*/samples_climedbench_*.jsonl inside")
    if (inspect_logs and samples) or len(inspect_logs) > 1:
        raise SeveralRuns(f"{path}: holds several runs ({', '.join(map(str, [*inspect_logs, *samples][:6]))}); name the log file of one run")
    if inspect_logs:
        return inspect_logs
    if benchmark is not None and any(lmeval_task(p).startswith(benchmark) for p in samples):
        samples = [p for p in samples if lmeval_task(p).startswith(benchmark)]
    tasks = [lmeval_task(p) for p in samples]
    clin_tasks = {t for t in tasks if t.startswith(CLINCONSENSUS)}
    if len(set(tasks)) < len(tasks) or len({t.split("_")[0] for t in tasks}) > 1 or len(clin_tasks) > 1:
        raise SeveralRuns(f"{path}: holds samples files of several runs ({', '.join(map(str, samples[:6]))}); name the samples file of one run")
    return samples
