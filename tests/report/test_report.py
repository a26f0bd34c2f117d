"""The HTML/Markdown report, built from real runs against the test server.

Four logs are produced once for the module (two ClinConsensus runs, one of them with two judges,
and two CliMedBench runs of different examinees). The tests check that every number in the report
equals the metric the framework logged, that the bootstrap is reproducible, that the page is
self-contained, and that a real browser renders every chart and the Chinese labels (Chromium and a
CJK font from ``.ci/install_report_deps.sh``; without them those tests fail and say so).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from browser import require_browser

from clinconsensus_tasks.commands.report import add_arguments as add_report_arguments, main as main_report
from clinconsensus_tasks.report.html_report import build_report
from clinconsensus_tasks.log_files import model_display_name as row_name
from clinconsensus_tasks.report.sections import bootstrap_intervals
from clinconsensus_tasks.report.svg import radar_chart
from clinconsensus_tasks.scorers.clinconsensus.cacs import summarize
from clinconsensus_tasks.scorers.clinconsensus.metric_table import headline_names
from clinconsensus_tasks.clinconsensus.logs import read_case_records
from clinconsensus_tasks.scorers.climedbench.scenarios import DIMENSIONS

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
HEADLINE = headline_names()
CLIMEDBENCH_SCENARIOS = ("ID1", "BKT", "SSO", "KE")  # no WTD: it would load an embedding model
N_CHARTS = 7  # CACS curve, 2 heatmaps, lay/professional bars, radar, parse-failure bars, length-decile curve


def _metrics(log) -> dict[str, float]:
    return {k: v.value for s in log.results.scores for k, v in s.metrics.items()}


@pytest.fixture(scope="module")
def runs(server, tmp_path_factory):
    """Real Inspect runs against the test server: ``{model: (log, metrics)}`` plus the report."""
    from inspect_ai import eval as inspect_eval

    from clinconsensus_tasks.climedbench.inspect_task import climedbench
    from clinconsensus_tasks.clinconsensus.inspect_task import clinconsensus

    root = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        for svc in ("CAND", "JUDGE"):
            mp.setenv(f"{svc}_BASE_URL", server.base_url)
            mp.setenv(f"{svc}_API_KEY", "test-key")
        mp.setenv("INSPECT_CACHE_DIR", str(root / "inspect-cache"))
        mp.setenv("CLINCONSENSUS_CACHE_DIR", str(root / "judge-cache"))
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("CLINCONSENSUS_JUDGE_PROMPT", "project")  # the stand-in server knows the project's prompt
        server.reset()
        plans = [
            # a run with its own k (5) beside 7 and 10: the report shows it, for every run
            (clinconsensus(data="sample", thresholds=[5, 7, 10], breakdowns=True), "openai-api/cand/cand-model", {"grader": "openai-api/judge/judge-model"}),
            (clinconsensus(data="sample", breakdowns=True), "openai-api/cand/dual-model",
             {"grader": "openai-api/judge/judge-model", "local_grader": "openai-api/judge/judge-alt"}),
            (climedbench(data_dir="sample", scenarios=",".join(CLIMEDBENCH_SCENARIOS)), "openai-api/cand/examinee-1", None),
            (climedbench(data_dir="sample", scenarios=",".join(CLIMEDBENCH_SCENARIOS)), "openai-api/cand/examinee-2", None),
        ]
        logs = {}
        for i, (task, model, roles) in enumerate(plans):
            log = inspect_eval(task, model=model, model_roles=roles, log_dir=str(root / f"logs{i}"), display="none")[0]
            assert log.status == "success", log.error
            logs[model] = (log, _metrics(log))
    out = root / "out" / "report.html"
    info = build_report([log.location for log, _ in logs.values()], out, resamples=1000, seed=0)
    return {"logs": logs, "info": info, "html": out.read_text(encoding="utf-8"),
            "md": (root / "out" / "report.md").read_text(encoding="utf-8"), "dir": root, "host": server.base_url.rsplit("/v1", 1)[0]}


def markdown_table(md: str, title: str) -> dict[str, dict[str, str]]:
    """``{first cell: {column: cell}}`` of the Markdown table under ``### title``."""
    block = md.split(f"### {title}\n", 1)[1].strip().split("\n\n", 1)[0].splitlines()
    header = [c.strip() for c in block[0].strip("|").split("|")]
    rows = {}
    for line in block[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(header, cells))
    return rows


CELL = re.compile(r"^(-?\d+\.\d{4}) \[(-?\d+\.\d{4}), (-?\d+\.\d{4})\]$")


def test_leaderboard_equals_logged_metrics_with_intervals(runs):
    table = markdown_table(runs["md"], "Leaderboard (bootstrap: resampled cases)")
    for model in ("openai-api/cand/cand-model", "openai-api/cand/dual-model"):
        log, metrics = runs["logs"][model]
        intervals = bootstrap_intervals([r.graded.result() for r in read_case_records(log.location)], resamples=1000, seed=0)
        for name in HEADLINE:
            point, lo, hi = CELL.match(table[row_name(model)][f"{name} [95% CI]"]).groups()
            assert point == f"{metrics[name]:.4f}", (model, name)
            assert float(lo) <= metrics[name] + 5e-5 and metrics[name] - 5e-5 <= float(hi), (model, name)
            assert (lo, hi) == (f"{intervals[name][0]:.4f}", f"{intervals[name][1]:.4f}")
            assert f"<td>{point} [{lo}, {hi}]</td>" in runs["html"]
        assert table[row_name(model)]["judge failures"] == str(int(metrics["judge_failures"]))
        assert table[row_name(model)]["cases"] == "12"
    # The first run's own k: its logged CACS@5 and Pass@5; the other run's, from its records.
    for model in ("openai-api/cand/cand-model", "openai-api/cand/dual-model"):
        log, metrics = runs["logs"][model]
        recomputed = summarize([r.graded.result() for r in read_case_records(log.location)], (5,), 30)
        for name in ("cacs@5", "pass@5"):
            point = CELL.match(table[row_name(model)][f"{name} [95% CI]"]).group(1)
            assert point == f"{metrics.get(name, recomputed[name]):.4f}", (model, name)
    assert "cacs@5" in runs["logs"]["openai-api/cand/cand-model"][1] and "cacs@5" not in runs["logs"]["openai-api/cand/dual-model"][1]
    # Not every interval is degenerate: the bootstrap did resample.
    assert CELL.match(table["cand-model"]["cacs@10 [95% CI]"]).group(2) != f"{runs['logs']['openai-api/cand/cand-model'][1]['cacs@10']:.4f}"


def test_bootstrap_is_seeded():
    from clinconsensus_tasks.scorers.clinconsensus.cacs import CaseResult

    rows = [CaseResult(m, 30) for m in (3, 8, 12, 15, 20, 9, 11, 27, 5, 14)]
    first, again = bootstrap_intervals(rows, seed=7), bootstrap_intervals(rows, seed=7)
    assert first == again
    assert bootstrap_intervals(rows, seed=8) != first
    for name, (lo, hi) in first.items():
        assert lo <= hi


def test_report_is_reproducible(runs, tmp_path):
    logs = [log.location for log, _ in runs["logs"].values()]
    build_report(logs, tmp_path / "report.html", resamples=1000, seed=0)
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == runs["md"]
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == runs["html"]


def test_breakdowns_and_agreement_equal_logged_metrics(runs):
    md = runs["md"]
    for title, dim in (("CACS@10 by subject", "subject"), ("CACS@10 by task label", "task"), ("CACS@10 by audience", "audience")):
        table = markdown_table(md, title)
        for model in ("openai-api/cand/cand-model", "openai-api/cand/dual-model"):
            metrics = runs["logs"][model][1]
            labels = [k[len(f"cacs@10({dim}="):-1] for k in metrics if k.startswith(f"cacs@10({dim}=")]
            assert labels
            for label in labels:
                assert table[row_name(model)][label] == f"{metrics[f'cacs@10({dim}={label})']:.4f}", (model, label)
    agreement = markdown_table(md, "Judge agreement (dual-judge runs)")
    assert list(agreement) == ["dual-model"]  # the single-judge run has no agreement
    row, metrics = agreement["dual-model"], runs["logs"]["openai-api/cand/dual-model"][1]
    assert row["percent"] == f"{metrics['agreement/percent']:.4f}"
    assert row["kappa"] == f"{metrics['agreement/kappa']:.4f}"
    assert row["macro F1"] == f"{metrics['agreement/macro_f1']:.4f}"
    assert row["CACS@10 diff"] == f"{metrics['agreement/cacs@10_diff']:.4f}"
    assert row["local CACS@10"] == f"{metrics['local/cacs@10']:.4f}"
    host = runs["host"]  # one name per judge, as lm-eval's records name it (provenance.judge_display)
    assert row["judges (reference vs local)"] == f"judge-model @ {host} vs judge-alt @ {host}"


def test_climedbench_tables_equal_logged_metrics(runs):
    md = runs["md"]
    scores = markdown_table(md, "Per-scenario scores")
    dims = markdown_table(md, "Dimensions")
    failures = markdown_table(md, "Parse failures per scenario")
    for model in ("openai-api/cand/examinee-1", "openai-api/cand/examinee-2"):
        metrics = runs["logs"][model][1]
        assert scores[row_name(model)]["score"] == f"{metrics['score']:.4f}"
        assert scores[row_name(model)]["parse failure"] == f"{metrics['parse_failure']:.4f}"
        for code in CLIMEDBENCH_SCENARIOS:
            column = next(c for c in scores[row_name(model)] if c.startswith(f"{code} ("))
            assert scores[row_name(model)][column] == f"{metrics[f'{code}/score']:.4f}"
            assert failures[row_name(model)][code] == f"{metrics[f'{code}/parse_failure']:.4f}"
        for dim, zh in DIMENSIONS.items():
            want = f"{metrics[f'dimension/{dim}']:.4f}" if f"dimension/{dim}" in metrics else "–"
            assert dims[row_name(model)][f"{zh} {dim}"] == want
    # The examinees differ, so the comparison is not vacuous.
    assert scores["examinee-1"]["score"] != scores["examinee-2"]["score"]


def test_metadata(runs):
    table = markdown_table(runs["md"], "Runs")
    dual = table["dual-model"]
    assert dual["model as logged"] == "openai-api/cand/dual-model"
    log = runs["logs"]["openai-api/cand/dual-model"][0]
    assert dual["judges"] == f"judge-model @ {runs['host']}, judge-alt @ {runs['host']}"
    assert dual["judge mode"] == "per_criterion"
    assert dual["data sha256"] == log.eval.metadata["data_sha256"]
    built = markdown_table(runs["md"], "Report built with")
    assert set(built) == {"clinconsensus-tasks", "inspect-ai", "lm-eval"}


def test_html_is_self_contained(runs):
    page = runs["html"]
    external = re.findall(r"""(?:\b(?:src|href)\s*=\s*["']?\s*|url\(\s*["']?\s*)(?:https?:)?//""", page, re.IGNORECASE)
    assert external == []
    assert "<link" not in page and "@import" not in page and "<script src" not in page
    assert len(re.findall(r"<svg\b", page)) == N_CHARTS == runs["info"]["charts"]
    assert "Noto Sans CJK SC" in page
    assert '<text x="' in page and "心血管内科</text>" in page  # labels are text, not paths


def test_cli_arguments(runs, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_report_arguments(parser)
    logs = [log.location for log, _ in runs["logs"].values()]
    args = parser.parse_args([*logs, "--output", str(tmp_path / "r.html"), "--resamples", "200", "--seed", "3"])
    assert main_report(args) == 0
    assert (tmp_path / "r.html").is_file() and (tmp_path / "report.md").is_file()
    assert f'"charts": {N_CHARTS}' in capsys.readouterr().out


def test_baseline_comparison(runs, tmp_path):
    # dual-model gets the same answers as cand-model (the server's answers depend on the question
    # only) and the same reference judge: every paired difference is 0.
    logs = {model: log.location for model, (log, _) in runs["logs"].items()}
    build_report(list(logs.values()), tmp_path / "r.html", resamples=200, baseline=logs["openai-api/cand/cand-model"])
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    table = markdown_table(md, f"{row_name('openai-api/cand/dual-model')} - baseline (12 paired cases)")
    assert set(table) == set(HEADLINE)
    metrics = runs["logs"]["openai-api/cand/cand-model"][1]
    for name in HEADLINE:
        assert table[name]["difference"] == "+0.0000" and table[name]["baseline"] == f"{metrics[name]:.4f}"
        assert table[name]["p (paired permutation)"] == "1.0000"
    assert "examinee-1: not compared" in md  # a CliMedBench run is not paired with a ClinConsensus baseline


# -- a real browser --------------------------------------------------------------------------------

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)


def _non_white_share(png: Path) -> float:
    """Share of pixels that are not (near) white: Pillow if installed, else a minimal PNG decoder."""
    try:
        from PIL import Image
    except ImportError:
        pixels, count = _decode_png(png.read_bytes())
        return 1 - sum(1 for p in pixels if min(p[:3]) >= 250) / count
    image = Image.open(png).convert("L")
    histogram = image.histogram()
    return 1 - sum(histogram[250:]) / (image.width * image.height)


def _decode_png(data: bytes) -> tuple[list[bytes], int]:
    """Pixels of a non-interlaced 8-bit RGB/RGBA PNG (what Chromium writes)."""
    import struct
    import zlib

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride, previous, pixels = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels += [bytes(line[x:x + bpp]) for x in range(0, stride, bpp)]
        previous = line
    return pixels, width * height


def test_renders_in_headless_chromium(runs, tmp_path):
    _require_browser()
    url = Path(runs["info"]["html"]).resolve().as_uri()
    png = tmp_path / "report.png"

    shot = _chromium(tmp_path, f"--screenshot={png}", "--window-size=1400,3000", url)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert png.is_file() and png.stat().st_size > 10_000
    assert _non_white_share(png) > 0.01

    dom = _chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for output in (shot.stderr, dom.stderr):
        assert "Uncaught" not in output and "CONSOLE" not in output, output[-2000:]
    # The layout probe writes its count on the page body; the tab keeps the report's title.
    assert f'data-rendered="{N_CHARTS}"' in dom.stdout
    assert "<title>ClinConsensus / CliMedBench results</title>" in dom.stdout and "rendered:" not in dom.stdout.split("<body", 1)[0]
    # At 1,400 px nothing is cut off: no chart text outside its chart, no chart wider than the page.
    assert 'data-layout="clipped:0 overflow:0"' in dom.stdout
    for label in ("心血管内科", "精神心理科", "诊断与鉴别诊断", "临床问答 clinical_qa"):
        assert re.search(rf"<text[^>]*>{label}", dom.stdout), label
    shutil.copy(png, runs["dir"] / "out" / "report.png")  # beside the report, for a look


def _require_browser() -> None:
    require_browser()


LONG_NAMES = ["openai-api/vllm-cluster-a/Qwen/Qwen3-235B-A22B-Instruct-2507-FP8-long-context",
              "anthropic/claude-sonnet-4-5-20250929", "vllm/HuatuoGPT-o1-72B", "华佗GPT-二期-医疗对话模型-七十二B参数版本",
              "openai/gpt-4.1-mini", "hf/skylenage/ClinConsensus-Judge-8B"]


def test_charts_fit_the_page_with_long_names_and_many_models(tmp_path):
    """Six models with long (also Chinese) names, 14 scenario groups and negative dimension scores:
    at 1,400 px every legend, label and chart stays inside the page (checked by the page's own
    layout probe in Chromium; the screenshot is kept beside the page for a look)."""
    from clinconsensus_tasks.report.html_report import render_html
    from clinconsensus_tasks.report.sections import Section
    from clinconsensus_tasks.report.svg import bar_chart, heatmap, line_chart
    from clinconsensus_tasks.scorers.climedbench.scenarios import SCENARIOS

    _require_browser()
    codes = list(SCENARIOS)
    dims = [f"{zh} {d}" for d, zh in DIMENSIONS.items()]
    charts = [
        line_chart({n: [max(0.0, 0.8 - 0.03 * k - 0.05 * i) for k in range(30)] for i, n in enumerate(LONG_NAMES)}, list(range(1, 31)), "curve", "CACS@k"),
        heatmap(LONG_NAMES, ["心血管内科", "精神心理科"], {(n, "心血管内科"): 0.3 for n in LONG_NAMES}, "heat"),
        bar_chart(codes, {n: [0.1 * (i + 1) % 1 for i in range(len(codes))] for n in LONG_NAMES}, "parse failures"),
        radar_chart(dims, {n: {d: (-0.6 if j == 5 else 0.2 + 0.1 * i) for j, d in enumerate(dims)} for i, n in enumerate(LONG_NAMES)}, "radar"),
    ]
    page = tmp_path / "stress.html"
    page.write_text(render_html([Section("stress", charts=charts)], "stress"), encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", "--window-size=1400,3000", page.resolve().as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-rendered="4"' in dom.stdout and "<title>stress</title>" in dom.stdout
    assert 'data-layout="clipped:0 overflow:0"' in dom.stdout
    shot = _chromium(tmp_path, f"--screenshot={tmp_path / 'stress.png'}", "--window-size=1400,3000", page.resolve().as_uri())
    assert shot.returncode == 0 and _non_white_share(tmp_path / "stress.png") > 0.01


def test_radar_shows_negative_scores():
    svg = radar_chart(["a", "b", "c"], {"m1": {"a": -0.5, "b": 0.2, "c": 0.4}, "m2": {"a": 0.0, "b": 0.2, "c": 0.4}}, "t")
    points = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)" r="3" fill="[^"]+"><title>(m\d): a ', svg)
    (x1, y1, _), (x2, y2, _) = points
    assert (x1, y1) != (x2, y2)  # -0.5 and 0 are drawn apart, neither at the centre
    assert (x1, y1) != ("380.0", "240.0") and (x2, y2) != ("380.0", "240.0")
    assert ">-0.5</text>" in svg and ">0</text>" in svg  # the rings are labelled


def test_one_name_per_model_across_frameworks():
    assert row_name("openai-api/cand/cand-model") == "cand-model"  # Inspect
    assert row_name("cand-model") == "cand-model"  # lm-eval's output folder
    assert row_name("vllm/Qwen/Qwen3-8B") == row_name("Qwen__Qwen3-8B") == "Qwen/Qwen3-8B"
    assert row_name("openai/gpt-4.1") == "gpt-4.1"


def test_folders_are_read_and_unfinished_or_empty_logs_skipped(runs, tmp_path, capsys):
    from inspect_ai.log import read_eval_log, write_eval_log

    unfinished = read_eval_log(runs["logs"]["openai-api/cand/cand-model"][0].location)
    unfinished.status = "started"
    extra = tmp_path / "extra"
    write_eval_log(unfinished, str(extra / "2026-01-01T00-00-00+00-00_clinconsensus_unfinished.eval"))
    empty = extra / "lmeval" / "m" / "samples_climedbench_ke_2026-01-01T00-00-00.000000.jsonl"
    empty.parent.mkdir(parents=True)
    empty.write_text("", encoding="utf-8")
    info = build_report([runs["dir"], extra], tmp_path / "report.html", resamples=1000, seed=0)
    assert info["clinconsensus_runs"] == ["cand-model", "dual-model"]
    assert info["climedbench_runs"] == ["examinee-1", "examinee-2"]
    assert info["skipped"] == [
        {"log": str(extra / "2026-01-01T00-00-00+00-00_clinconsensus_unfinished.eval"), "reason": "unfinished Inspect run (status 'started')"},
        {"log": str(empty), "reason": "no samples"},
    ]
    assert f"report: warning: skipped {empty}: no samples" in capsys.readouterr().err
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    for title in ("Leaderboard (bootstrap: resampled cases)", "Per-scenario scores", "Dimensions"):
        assert markdown_table(md, title) == markdown_table(runs["md"], title)
    assert "### Skipped logs (unfinished, empty, or superseded by a later attempt)" in md


def test_runs_read_side_by_side_make_the_same_report_and_a_bad_file_the_same_error(runs, tmp_path, monkeypatch):
    # A campaign large enough is read by one worker process per CPU (report.runs._workers); the
    # threshold is lowered so these small logs go that way, in two spawned processes.
    from clinconsensus_tasks.report import runs as run_reading

    logs = [log.location for log, _ in runs["logs"].values()]
    monkeypatch.setattr(run_reading, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(run_reading.os, "sched_getaffinity", lambda pid: {0, 1})
    chosen = []
    workers = run_reading._workers
    monkeypatch.setattr(run_reading, "_workers", lambda paths: chosen.append(workers(paths)) or chosen[-1])
    build_report(logs, tmp_path / "report.html", resamples=1000, seed=0)
    assert chosen == [2]
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == runs["md"]
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == runs["html"]
    # A file that cannot be read: the error a reading in one process gives, naming it.
    bad = tmp_path / "bad" / "2026-01-01T00-00-00+00-00_clinconsensus_bad.eval"
    bad.parent.mkdir()
    bad.write_bytes(Path(logs[0]).read_bytes()[:5000])
    with pytest.raises(Exception) as side_by_side:
        run_reading.read_runs([*logs, bad])
    monkeypatch.setattr(run_reading, "PARALLEL_MIN_BYTES", 1 << 60)
    with pytest.raises(Exception) as one_process:
        run_reading.read_runs([*logs, bad])
    assert (type(side_by_side.value), str(side_by_side.value)) == (type(one_process.value), str(one_process.value))
    assert str(bad) in str(side_by_side.value)


# -- lm-eval files ---------------------------------------------------------------------------------


def _write_samples(folder: Path, task: str, samples: list[dict]) -> Path:
    """What lm-eval's ``--log_samples`` writes: ``<output>/<model>/samples_<task>_<timestamp>.jsonl``."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{task}_2026-01-01T00-00-00.000000.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for sample in samples:
            record = {**sample, "filtered_resps": [str(r) for r in sample["filtered_resps"]]}
            handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    return path


def test_report_from_lmeval_sample_files(fake_server, tmp_path, monkeypatch):
    from clinconsensus_tasks.lmeval_glue import simple_evaluate

    monkeypatch.setenv("CLINCONSENSUS_JUDGE_MODEL", "judge-model")
    results = simple_evaluate(
        tasks=["clinconsensus", "climedbench_sso", "climedbench_bkt"],
        model="local-chat-completions",
        model_args={"model": "examinee-3", "base_url": f"{fake_server.base_url}/chat/completions", "num_concurrent": 4},
        apply_chat_template=True,
        log_samples=True,
        bootstrap_iters=0,
    )
    folder = tmp_path / "lmeval" / "examinee-3"
    files = [_write_samples(folder, task, results["samples"][task]) for task in ("clinconsensus", "climedbench_sso", "climedbench_bkt")]
    info = build_report(files, tmp_path / "report.html", resamples=200)
    md = (tmp_path / "report.md").read_text(encoding="utf-8")

    assert info["clinconsensus_runs"] == ["examinee-3"]
    assert info["climedbench_runs"] == ["examinee-3"]  # one run: the samples files of one lm-eval run, grouped
    row = markdown_table(md, "Leaderboard (bootstrap: resampled cases)")["examinee-3"]
    for name in HEADLINE:
        assert row[f"{name} [95% CI]"].split(" ")[0] == f"{results['results']['clinconsensus'][f'{name},judge']:.4f}", name
    scores = markdown_table(md, "Per-scenario scores")
    assert scores["examinee-3"]["SSO (kendall_tau)"] == f"{results['results']['climedbench_sso']['score,answer']:.4f}"
    assert scores["examinee-3"]["BKT (accuracy)"] == f"{results['results']['climedbench_bkt']['score,answer']:.4f}"
    assert markdown_table(md, "Parse failures per scenario")["examinee-3"]["BKT"] == \
        f"{results['results']['climedbench_bkt']['parse_failure,answer']:.4f}"
    for task in ("clinconsensus", "climedbench_bkt, climedbench_sso"):
        assert f"| examinee-3 | examinee-3 | lm-eval | {task} |" in md
    # The lm-eval output folder gives the same report as its files.
    build_report([tmp_path / "lmeval"], tmp_path / "folder" / "report.html", resamples=200)
    assert (tmp_path / "folder" / "report.md").read_text(encoding="utf-8") == md
    # Provenance and judge tokens of the lm-eval run, from its samples file.
    from clinconsensus_tasks.clinconsensus.dataset import load_cases
    from clinconsensus_tasks.judge.official_template import prompt_record
    from clinconsensus_tasks.scorers.usage import TokenUsage

    block = md.split("### Runs\n", 1)[1].strip().split("\n\n", 1)[0].splitlines()
    header = [c.strip() for c in block[0].strip("|").split("|")]
    (run,) = [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in block[2:]
              if line.startswith("| examinee-3 | examinee-3 | lm-eval | clinconsensus |")]
    host = fake_server.base_url.rsplit("/v1", 1)[0]
    assert run["judges"] == f"judge-model @ {host}" and run["judge mode"] == "per_criterion"
    assert run["judge prompt sha256"] == prompt_record(None, "per_criterion")["judge_prompt_sha256"]
    assert run["data sha256"] == load_cases("sample").sha256 and run["data source"].endswith("clinconsensus_sample.jsonl")
    served = TokenUsage.from_dict(fake_server.stats()["judge_usage"])
    tokens = markdown_table(md, "Judge tokens and cost")["examinee-3"]
    assert (tokens["judge"], tokens["calls"], tokens["prompt tokens"], tokens["cached prompt tokens"], tokens["completion tokens"]) == \
        ("judge-model", "360", str(served.prompt_tokens), str(served.cached_prompt_tokens), str(served.completion_tokens))
