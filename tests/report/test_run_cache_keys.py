"""What a kept reading is keyed by and what the report's cache folder accepts (``report.run_cache``),
on real files and an in-memory fsspec store (it stands in for a store whose listing says nothing that
changes with an object's bytes: no ETag, no modification time, no version)."""

from __future__ import annotations

import os
import pickle

from clinconsensus_tasks.report import run_cache
from clinconsensus_tasks.report.run_cache import RunCache, identity
from clinconsensus_tasks.report.runs import Runs, read_from
from clinconsensus_tasks.storage import location


def test_a_file_is_known_by_the_path_given_and_every_file_its_reading_came_from(tmp_path, monkeypatch):
    folder = tmp_path / "cand-model"
    folder.mkdir()
    samples = folder / "samples_clinconsensus_2026-11-28T01-02-03.jsonl"
    samples.write_text("{}\n", encoding="utf-8")
    cache = RunCache(tmp_path / "cache")
    monkeypatch.chdir(tmp_path)
    relative = location("cand-model/" + samples.name)
    # the report names a run by its path as given: the same file named another way is another reading
    assert cache.key(read_from(samples)) != cache.key(read_from(relative))
    assert read_from(samples) == [samples]
    results = folder / "results_2026-11-28T01-02-03.json"
    results.write_text('{"results": {}}', encoding="utf-8")
    assert read_from(samples) == [samples, results]  # its thresholds are read from the results file
    before = cache.key(read_from(samples))
    results.write_text('{"results": {"clinconsensus": {"cacs@5,none": 0.1}}}', encoding="utf-8")
    assert cache.key(read_from(samples)) != before
    results.unlink()
    assert cache.key(read_from(samples)) != before
    assert cache.key([tmp_path / "gone.jsonl"]) is None


def test_a_store_that_says_nothing_changing_with_the_bytes_keeps_nothing():
    url = location("memory://runs-cache-test/cand/samples_clinconsensus_2026-11-28T01-02-03.jsonl")
    url.fs.pipe(url.path, b"{}\n")
    try:
        assert identity(url) is None and RunCache("unused").key([url]) is None
        assert identity(location("memory://runs-cache-test/missing.jsonl")) is None  # gone: not an error here
    finally:
        url.fs.rm(url.path)


def test_an_entry_that_is_no_reading_is_a_miss_and_other_codes_readings_are_let_go(tmp_path, monkeypatch):
    cache = RunCache(tmp_path / "cache")
    cache.put("ab" * 32, Runs())
    assert isinstance(RunCache(tmp_path / "cache").get("ab" * 32, Runs), Runs)
    assert oct(os.stat(tmp_path / "cache").st_mode & 0o777) == "0o700"
    entry = next((tmp_path / "cache").rglob("*.pickle"))
    entry.write_bytes(pickle.dumps({"not": "a reading"}))
    wrong = RunCache(tmp_path / "cache")
    assert wrong.get("ab" * 32, Runs) is None and (wrong.hits, wrong.misses) == (0, 1)
    cache.put("cd" * 32, lambda: None)  # cannot be pickled: nothing kept, nothing left behind, no error
    assert not list((tmp_path / "cache").rglob("*.tmp")) and RunCache(tmp_path / "cache").get("cd" * 32, Runs) is None
    (old,) = [p for p in (tmp_path / "cache").iterdir()]
    monkeypatch.setattr(run_cache, "_CODE", "0" * 64)  # another version of the package
    cache.put("ef" * 32, Runs())
    assert [p.name for p in (tmp_path / "cache").iterdir()] != [old.name] and not old.exists()
    assert RunCache(tmp_path / "cache").get("ef" * 32, Runs) is not None


def test_a_file_without_a_key_counts_as_read():
    cache = RunCache("unused")
    assert cache.get(None, Runs) is None and (cache.hits, cache.misses) == (0, 1)
