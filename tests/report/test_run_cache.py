"""The report's readings kept between reports (``report.run_cache``), on runs both frameworks wrote
against the stand-in server: a warm report is the cold one to the byte and reads nothing; a run file
written again (same size, its modification time set back), moved, deleted or whose kept reading is
damaged is never served from an older reading, nor one made by other code."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from clinconsensus_tasks.report.html_report import build_report
from clinconsensus_tasks.report import run_cache
from clinconsensus_tasks.report.run_cache import RunCache

from frameworks import run_inspect, run_lmeval

pytestmark = pytest.mark.slow


def report(logs, out, cache):
    info = build_report(logs, out / "report.html", resamples=200, cache=cache)
    return (out / "report.html").read_bytes() + (out / "report.md").read_bytes(), info


def test_a_warm_report_is_the_cold_one_and_no_older_reading_is_served(fake_server, tmp_path, monkeypatch):
    log, _ = run_inspect(tmp_path / "logs")
    run_lmeval(fake_server.base_url, tmp_path / "lmeval", judge="judge-alt")
    (samples,) = (tmp_path / "lmeval").rglob("samples_clinconsensus_*.jsonl")
    logs = [str(tmp_path / "logs"), str(tmp_path / "lmeval")]
    files = 3  # the Inspect log, the lm-eval samples file and its results file

    plain, _ = report(logs, tmp_path / "plain", None)
    cold_cache = RunCache(tmp_path / "cache")
    cold, _ = report(logs, tmp_path / "cold", cold_cache)
    assert (cold_cache.hits, cold_cache.misses) == (0, files) and cold == plain
    warm_cache = RunCache(tmp_path / "cache")
    warm, _ = report(logs, tmp_path / "warm", warm_cache)
    assert (warm_cache.hits, warm_cache.misses) == (files, 0) and warm == cold

    # The same files named by a relative path: read again, the report names them as given.
    monkeypatch.chdir(tmp_path)
    relative = ["logs", "lmeval"]
    named, _ = report(relative, tmp_path / "relative", RunCache(tmp_path / "cache"))
    assert named == report(relative, tmp_path / "relative-plain", None)[0] and named != warm

    # Written again to the same size, its modification time set back: one verdict of the first case flipped.
    stat = samples.stat()
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[0])
    record = json.loads(first["filtered_resps"][0])
    flipped = record["judgments"][0]["met"]
    record["judgments"][0]["met"] = not flipped
    record["met"] += -1 if flipped else 1
    first["filtered_resps"] = [json.dumps(record, ensure_ascii=False)]
    edited = json.dumps(first, ensure_ascii=False)
    grown = len(edited.encode("utf-8")) + 1 - len(lines[0].encode("utf-8"))  # true <-> false: a byte more or less
    edited = edited.replace(', "', ',"', grown) if grown > 0 else edited + " " * -grown
    edited += "\n"
    samples.write_text(edited + "".join(lines[1:]), encoding="utf-8")
    os.utime(samples, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert samples.stat().st_size == stat.st_size and samples.stat().st_mtime_ns == stat.st_mtime_ns
    again = RunCache(tmp_path / "cache")
    changed, _ = report(logs, tmp_path / "changed", again)
    assert (again.hits, again.misses) == (files - 1, 1) and changed != warm
    assert changed == report(logs, tmp_path / "changed-plain", None)[0]  # what a fresh reading says

    # Moved: read again under its new name; deleted: gone from the report.
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(log.location, moved / os.path.basename(log.location))
    after = RunCache(tmp_path / "cache")
    _, info = report([str(moved), str(tmp_path / "lmeval")], tmp_path / "moved-report", after)
    assert (after.hits, after.misses) == (files - 1, 1) and len(info["clinconsensus_runs"]) == 2
    os.remove(moved / os.path.basename(log.location))
    gone = RunCache(tmp_path / "cache")
    _, info = report([str(tmp_path / "lmeval")], tmp_path / "gone", gone)
    assert len(info["clinconsensus_runs"]) == 1 and gone.misses == 0

    # A kept reading that cannot be read back is read again from the file, the report unchanged.
    for entry in (tmp_path / "cache").rglob("*.pickle"):
        entry.write_bytes(b"not a pickle")
    damaged = RunCache(tmp_path / "cache")
    assert report([str(tmp_path / "lmeval")], tmp_path / "damaged", damaged)[0] == report([str(tmp_path / "lmeval")], tmp_path / "fresh", None)[0]
    assert damaged.hits == 0

    # Read again, the entries are whole; a reading made by other code (another package digest) is not served.
    lmeval_only = [str(tmp_path / "lmeval")]
    rewarmed = RunCache(tmp_path / "cache")
    report(lmeval_only, tmp_path / "rewarmed", rewarmed)
    assert (rewarmed.hits, rewarmed.misses) == (2, 0)
    monkeypatch.setattr(run_cache, "_CODE", "0" * 64)
    other_code = RunCache(tmp_path / "cache")
    report(lmeval_only, tmp_path / "other-code", other_code)
    assert (other_code.hits, other_code.misses) == (0, 2)
