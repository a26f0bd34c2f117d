"""``clinconsensus-eval report``: one self-contained HTML page (and a Markdown summary) for many runs.

Why this exists: comparing models means opening several Inspect logs and lm-eval sample files and
lining up numbers by hand. This module reads them all and writes a leaderboard, intervals and charts
in one file that opens offline (reviewers, air-gapped hospital machines, CI artifacts).

Design choices, and why:

* Every number is computed by the project's scoring core (``scorers.clinconsensus.cacs``,
  ``scorers.climedbench``, ``judge.tools.compare_logs``) from the per-case records that the log
  readers return, so the report equals what the frameworks logged; nothing here re-implements a
  metric. The bootstrap intervals score every resample with ``scorers.clinconsensus.cacs`` too.
* Charts are hand-written SVG strings: no plotting dependency, no external fonts or scripts, and
  real ``<text>`` elements so Chinese labels stay searchable and render with the page's CJK font
  stack (the project's CI installs ``fonts-noto-cjk``).
* A tiny inline script sets ``document.title`` to ``rendered:N`` (N = charts with a non-empty
  layout box) and the body's ``data-layout`` to ``clipped:C overflow:O`` (chart texts outside
  their chart, charts wider than the page), so a headless browser can prove every chart rendered,
  nothing is cut off and no script failed. Charts scale down to the page width (``viewBox``).
"""

from __future__ import annotations

import hashlib
import html
import importlib.metadata
import json
import math
import re
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from clinconsensus_tasks.climedbench.logs import read_item_log
from clinconsensus_tasks.clinconsensus.logs import LoggedCase, read_case_records
from clinconsensus_tasks.scorers.clinconsensus.cacs import DEFAULT_N_CRITERIA, CaseResult, breakdowns, cacs_at_k, summarize
from clinconsensus_tasks.scorers.climedbench import scenarios as cmb
from clinconsensus_tasks.scorers.climedbench.item_result import ItemResult
from clinconsensus_tasks.report.costs import judge_usage, usage_rows
from clinconsensus_tasks.scorers.usage import Prices
from clinconsensus_tasks.scorers.climedbench.length_deciles import DECILES, decile_metric, decile_scores
from clinconsensus_tasks.scorers.climedbench.robustness import OVERALL, paired_drops

HEADLINE = ("rubric_accuracy", "pass@7", "pass@10", "cacs@7", "cacs@10")
CURVE_KS = range(1, 31)
FONT_STACK = '"Noto Sans CJK SC", "Noto Sans SC", "WenQuanYi Micro Hei", sans-serif'
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22")
AUDIENCES = ("lay", "professional")


# -- runs read from logs ---------------------------------------------------------------------------


@dataclass
class ClinRun:
    """One ClinConsensus run: per-case records and the metrics the scoring core computes from them."""

    name: str
    path: str
    records: list[LoggedCase]
    n_criteria: int = DEFAULT_N_CRITERIA
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def results(self) -> list[CaseResult]:
        return [r.result for r in self.records]

    @property
    def dual(self) -> bool:
        return any(r.local_judgments for r in self.records)

    def summary(self) -> dict[str, float]:
        return summarize(self.results, (7, 10), self.n_criteria)

    def breakdowns(self) -> dict[str, dict[str, dict[str, float]]]:
        return breakdowns(self.results, (7, 10), self.n_criteria)

    def curve(self) -> list[float]:
        met = [r.met for r in self.results]
        return [cacs_at_k(met, k, self.n_criteria) for k in CURVE_KS if k <= self.n_criteria]


@dataclass
class MedRun:
    """One CliMedBench run: its scored items and their summary."""

    name: str
    path: str
    results: list[ItemResult]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> list[tuple[str, float, bool]]:
        return [r.row for r in self.results]

    @property
    def variant(self) -> str:
        """How the run asked its items: ``clean``, ``perturbed``, ``nota``, ``cot`` (several: joined by commas)."""
        return _variant(self.results)

    def summary(self) -> dict[str, float]:
        return cmb.summarize(self.rows)

    def decile_summary(self) -> dict[str, float]:
        """Scores per input-length decile, from the items whose log carries their decile."""
        return decile_scores((r.scenario, r.length_decile, r.value) for r in self.results if r.length_decile)

    def item_scores(self) -> dict[tuple[str, str], float]:
        return {(r.scenario, r.item_id): r.value for r in self.results}


@dataclass
class Runs:
    clin: list[ClinRun] = field(default_factory=list)
    med: list[MedRun] = field(default_factory=list)
    results_files: list[dict[str, Any]] = field(default_factory=list)  # lm-eval results_*.json metadata
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (log, why): unfinished or empty


def _sha256(path: str | None) -> str:
    if not path or not Path(path).is_file():
        return ""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _inspect_header(path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    return read_eval_log(str(path), header_only=True)


def _inspect_meta(log: Any) -> dict[str, Any]:
    ev = log.eval
    roles = {name: cfg.model for name, cfg in (ev.model_roles or {}).items()}
    meta = dict(ev.metadata or {})
    return {
        "framework": "inspect",
        "task": ev.task,
        "model": ev.model,
        "judges": [roles[r] for r in ("grader", "local_grader") if r in roles],
        "judge_mode": meta.get("judge_mode", ""),
        "data_source": meta.get("data_source") or meta.get("data_sources") or (ev.dataset.location if ev.dataset else ""),
        "data_sha256": meta.get("data_sha256", ""),
        "data_revision": meta.get("data_revision", ""),
        "judge_prompt_sha256": meta.get("judge_prompt_sha256", ""),
        "task_version": ev.task_version,
        "synthetic_sample": meta.get("synthetic_sample"),
        "packages": dict(ev.packages or {}),
        "created": ev.created,
    }


def _read_inspect(path: Path, runs: Runs) -> None:
    log = _inspect_header(path)
    if log.status != "success":
        runs.skipped.append((str(path), f"unfinished Inspect run (status {log.status!r})"))
        return
    if not (log.results and log.results.total_samples):
        runs.skipped.append((str(path), "no samples"))
        return
    meta = _inspect_meta(log)
    task = log.eval.task.rsplit("/", 1)[-1]
    name = model_display_name(log.eval.model)
    if task.startswith("clinconsensus"):
        n = int((log.eval.task_args or {}).get("n_criteria") or DEFAULT_N_CRITERIA)
        runs.clin.append(ClinRun(name, str(path), read_case_records(path), n, meta))
    elif task.startswith("climedbench"):
        results = _climedbench_results(path)
        runs.med.append(MedRun(_run_name(name, _variant(results)), str(path), results, meta))
    else:
        raise ValueError(f"{path}: task {log.eval.task!r} is neither ClinConsensus nor CliMedBench")


def _climedbench_results(path: Path) -> list[ItemResult]:
    """The run's scored items; an unscored sample is an error (a scenario score without it would be wrong)."""
    log = read_item_log(path)
    log.require_scored()
    return log.results


def model_display_name(model: str) -> str:
    """One name per model across frameworks: Inspect's ``provider/[service/]name`` and lm-eval's
    output folder (``org__name``) both become ``name`` as the server knows it (``org/name``)."""
    parts = model.split("/")
    if len(parts) >= 3 and parts[0] in ("openai-api", "openai-compatible"):
        return "/".join(parts[2:])
    if len(parts) >= 2 and "__" not in model:
        return "/".join(parts[1:])
    return model.replace("__", "/")


def _variant(results: Sequence[ItemResult]) -> str:
    """The variant a run asked its items in (``clean``, ``perturbed`` ...; several joined by commas)."""
    return ",".join(sorted({r.variant for r in results})) or "clean"


def _run_name(model: str, variant: str) -> str:
    return model if variant == "clean" else f"{model} [{variant}]"


LMEVAL_SAMPLES = re.compile(r"^samples_(?P<task>.+?)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d.-]+)\.jsonl$")


def _lmeval_meta(path: Path, tasks: Sequence[str] | None = None) -> dict[str, Any]:
    """Run metadata of an lm-eval samples file, from the provenance its first record carries."""
    match = LMEVAL_SAMPLES.match(path.name)
    task = ", ".join(tasks) if tasks else (match.group("task") if match else path.stem.removeprefix("samples_"))
    meta = {"framework": "lm-eval", "task": task, "model": path.parent.name,
            "judges": [], "judge_mode": "", "data_source": "", "data_sha256": "", "packages": {}}
    with path.open(encoding="utf-8") as handle:
        first = next((line for line in handle if line.strip()), "")
    if not first:
        return meta
    sample = json.loads(first)
    data = (sample.get("doc") or {}).get("data_provenance") or {}
    meta.update({k: data[k] for k in ("data_source", "data_sha256", "data_revision") if data.get(k)})
    filtered = sample.get("filtered_resps") or [""]
    try:
        record = json.loads(filtered[0] if isinstance(filtered, list) else filtered)
    except (TypeError, ValueError):
        return meta  # CliMedBench records: no judge
    if isinstance(record, dict):
        judges = [p for p in (record.get("provenance"), record.get("local_provenance")) if p]
        meta["judges"] = [f"{p['judge_model']} @ {p['judge_endpoint']}" for p in judges]
        if judges:
            meta.update(judge_mode=judges[0]["judge_mode"], judge_prompt_sha256=judges[0]["judge_prompt_sha256"])
    return meta


def _read_lmeval_climedbench(paths: Sequence[Path], runs: Runs) -> None:
    """One lm-eval CliMedBench run from its samples files (one per scenario task, same folder and
    timestamp): one CliMedBench run in the report, as in Inspect. Variant tasks run in the same
    call (``--tasks climedbench,climedbench_perturbed``) make one run per variant."""
    by_variant: dict[str, tuple[list[ItemResult], list[str], list[Path]]] = {}
    for path in sorted(paths):  # the same run whichever order the files were named in
        found = _climedbench_results(path)
        if not found:
            runs.skipped.append((str(path), "no samples"))
            continue
        match = LMEVAL_SAMPLES.match(path.name)
        for variant in sorted({r.variant for r in found}):
            rows, tasks, used = by_variant.setdefault(variant, ([], [], []))
            rows += [r for r in found if r.variant == variant]
            used.append(path)
            tasks.append(match.group("task") if match else path.stem)
    for variant, (rows, tasks, used) in by_variant.items():
        name = _run_name(model_display_name(used[0].parent.name), variant)
        runs.med.append(MedRun(name, ", ".join(map(str, used)), rows, _lmeval_meta(used[0], tasks)))


def _read_lmeval_results(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    config = data.get("config") or {}
    return {"path": str(path), "model": data.get("model_name") or path.parent.name,
            "model_args": config.get("model_args"), "tasks": sorted((data.get("results") or {}).keys())}


def expand_logs(paths: Sequence[str | Path]) -> list[Path]:
    """Files named on the command line, and in folders the logs they hold (recursively): Inspect
    ``.eval`` and ``<timestamp>_*.json`` logs, lm-eval ``samples_clinconsensus*``/``samples_climedbench*``
    and ``results_*.json`` files. Anything else in a folder is left alone."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _is_log(p))
            if not found:
                raise FileNotFoundError(f"no Inspect logs or lm-eval samples/results files in the folder {path}")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"no such log file or folder: {path}")
    return out


def _is_log(path: Path) -> bool:
    name = path.name
    return (path.suffix == ".eval" or (path.suffix == ".json" and bool(re.match(r"\d{4}-\d{2}-\d{2}T", name)))
            or (name.startswith("results_") and path.suffix == ".json")
            or (name.startswith(("samples_clinconsensus", "samples_climedbench")) and path.suffix == ".jsonl"))


def read_runs(paths: Sequence[str | Path]) -> Runs:
    """Sort every log (or folder of logs) into ClinConsensus runs, CliMedBench runs and lm-eval
    results files; unfinished or empty logs are skipped and listed in ``Runs.skipped``."""
    runs = Runs()
    climedbench_groups: dict[tuple[Path, str], list[Path]] = {}
    for path in expand_logs(paths):
        name = path.name
        if path.suffix in (".eval", ".json") and not name.startswith("results_"):
            _read_inspect(path, runs)
        elif name.startswith("results_") and path.suffix == ".json":
            runs.results_files.append(_read_lmeval_results(path))
        elif name.startswith("samples_clinconsensus") and path.suffix == ".jsonl":
            records = read_case_records(path)
            if records:
                runs.clin.append(ClinRun(model_display_name(path.parent.name), str(path), records, meta=_lmeval_meta(path)))
            else:
                runs.skipped.append((str(path), "no samples"))
        elif name.startswith("samples_climedbench") and path.suffix == ".jsonl":
            match = LMEVAL_SAMPLES.match(name)
            climedbench_groups.setdefault((path.parent, match.group("stamp") if match else name), []).append(path)
        else:
            raise ValueError(f"{path}: expected an Inspect log, samples_clinconsensus*/samples_climedbench_* .jsonl or results_*.json")
    for group in climedbench_groups.values():
        _read_lmeval_climedbench(group, runs)
    _unique_names(runs.clin)
    _unique_names(runs.med)
    return runs


def _unique_names(runs: Sequence[ClinRun | MedRun]) -> None:
    """One leaderboard row per run: a model run in both frameworks gets the framework after its
    name; a model seen twice in one framework gets ``#2``, ``#3`` ..."""
    frameworks: dict[str, set[str]] = {}
    for run in runs:
        frameworks.setdefault(run.name, set()).add(run.meta.get("framework", ""))
    for run in runs:
        if len(frameworks[run.name]) > 1:
            run.name = f"{run.name} ({run.meta.get('framework', '')})"
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.name] = seen.get(run.name, 0) + 1
        if seen[run.name] > 1:
            run.name = f"{run.name} #{seen[run.name]}"


# -- bootstrap -------------------------------------------------------------------------------------


def bootstrap_intervals(
    results: Sequence[CaseResult], n_criteria: int = DEFAULT_N_CRITERIA, resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of the headline metrics, resampling cases with replacement.

    Each resample is scored by ``scorers.clinconsensus.cacs.summarize``, the same code as the frameworks'
    metrics. Deterministic for a given ``seed`` (numpy ``Generator``), so a report can be
    regenerated exactly.
    """
    import numpy as np

    if not results:
        return {name: (math.nan, math.nan) for name in HEADLINE}
    index = np.random.default_rng(seed).integers(0, len(results), size=(resamples, len(results)))
    draws = [summarize([results[i] for i in row], (7, 10), n_criteria) for row in index.tolist()]
    tail = 100 * (1 - level) / 2
    out = {}
    for name in HEADLINE:
        lo, hi = np.percentile([d[name] for d in draws], [tail, 100 - tail])
        out[name] = (float(lo), float(hi))
    return out


# -- SVG charts ------------------------------------------------------------------------------------


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _svg(width: int, height: int, body: Iterable[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}"><title>{_e(title)}</title>'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, text: Any, anchor: str = "middle", size: int = 12, extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" {extra}>{_e(text)}</text>'


LEGEND_MAX_COLUMNS = 40  # longer model names are shortened in charts (the tables keep them whole)


def _columns(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def text_width(text: Any, size: int = 12) -> float:
    """Estimated width in pixels of ``text`` at ``size``: wide (CJK) characters one em, others 0.62 em."""
    return sum(size * (1.0 if _columns(ch) == 2 else 0.62) for ch in str(text))


def short_name(name: str, columns: int = LEGEND_MAX_COLUMNS) -> str:
    """``name`` cut to ``columns`` terminal columns with an ellipsis, for chart labels."""
    if sum(map(_columns, name)) <= columns:
        return name
    out, used = "", 0
    for ch in name:
        if used + _columns(ch) > columns - 1:
            break
        out, used = out + ch, used + _columns(ch)
    return out + "…"


def legend_width(names: Sequence[str]) -> float:
    return 18 + max((text_width(short_name(n)) for n in names), default=0) + 12


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        out.append(f'<rect x="{x:.1f}" y="{y + 18 * i - 9:.1f}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(f'<g><title>{_e(name)}</title>{_text(x + 18, y + 18 * i + 1, short_name(name), "start")}</g>')
    return out


def line_chart(series: Mapping[str, Sequence[float]], xs: Sequence[int], title: str, ylabel: str, xlabel: str = "k") -> str:
    """Lines over integer x (the CACS@k curve, the length-decile curve); y from 0 to 1."""
    h, left, top, plot_w, plot_h = 380, 60, 30, 560, 300
    w = round(left + plot_w + 20 + legend_width(list(series)))
    body = [_text(w / 2, 18, title, size=14, extra='font-weight="bold"')]
    sx = lambda x: left + plot_w * (x - xs[0]) / max(1, xs[-1] - xs[0])  # noqa: E731
    sy = lambda y: top + plot_h * (1 - y)  # noqa: E731
    for tick in (0, 0.2, 0.4, 0.6, 0.8, 1.0):
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(tick):.1f}" y2="{sy(tick):.1f}" stroke="#ddd"/>')
        body.append(_text(left - 6, sy(tick) + 4, f"{tick:.1f}", "end"))
    for x in xs:
        if x == 1 or x % 5 == 0:
            body.append(_text(sx(x), top + plot_h + 16, x))
    body.append(_text(left + plot_w / 2, top + plot_h + 34, xlabel))
    body.append(_text(16, top + plot_h / 2, ylabel, extra=f'transform="rotate(-90 16 {top + plot_h / 2})"'))
    for i, (name, ys) in enumerate(series.items()):
        points = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in zip(xs, ys))
        body.append(f'<polyline fill="none" stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="2" points="{points}"/>')
    body += _legend(list(series), left + plot_w + 20, top + 10)
    return _svg(w, h, body, title)


def _heat_colour(value: float) -> str:
    """White (0) to dark blue (1)."""
    v = min(1.0, max(0.0, value))
    r, g, b = (int(255 + (c - 255) * v) for c in (8, 69, 148))
    return f"rgb({r},{g},{b})"


def heatmap(rows: Sequence[str], cols: Sequence[str], values: Mapping[tuple[str, str], float], title: str) -> str:
    """Models (rows) x labels (columns); empty cells where a model has no case with that label."""
    cell_w, cell_h, top = 64, 30, 130
    left = round(max(180, 16 + max((text_width(short_name(r)) for r in rows), default=0)))
    w, h = left + cell_w * len(cols) + 60, top + cell_h * len(rows) + 20
    body = [_text(w / 2 if w < 600 else 300, 18, title, size=14, extra='font-weight="bold"')]
    for j, col in enumerate(cols):
        x, y = left + cell_w * j + cell_w / 2, top - 8
        body.append(_text(x, y, col, "start", extra=f'transform="rotate(-40 {x:.1f} {y:.1f})"'))
    for i, row in enumerate(rows):
        y = top + cell_h * i
        body.append(f'<g><title>{_e(row)}</title>{_text(left - 8, y + cell_h / 2 + 4, short_name(row), "end")}</g>')
        for j, col in enumerate(cols):
            x = left + cell_w * j
            value = values.get((row, col))
            fill = "#f3f3f3" if value is None else _heat_colour(value)
            body.append(f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" fill="{fill}"/>')
            label = "–" if value is None else f"{value:.2f}"
            colour = "#fff" if value is not None and value > 0.55 else "#222"
            body.append(_text(x + cell_w / 2 - 1, y + cell_h / 2 + 3, label, size=11, extra=f'fill="{colour}"'))
    return _svg(w, h, body, title)


def bar_chart(groups: Sequence[str], series: Mapping[str, Sequence[float | None]], title: str, ymax: float = 1.0) -> str:
    """Grouped bars: one group per label, one bar per series (model)."""
    names = list(series)
    gap, left, top, plot_h = 24, 60, 30, 240
    # Bars narrow down (to 6 px) as groups and models multiply, so the plot stays about 1,000 px wide.
    bar_w = max(6, min(22, int((1000 / max(1, len(groups)) - gap) / max(1, len(names)))))
    group_w = bar_w * max(1, len(names)) + gap
    plot_w = group_w * len(groups)
    w, h = round(left + plot_w + 20 + legend_width(names)), top + plot_h + 50
    sy = lambda y: top + plot_h * (1 - y / ymax)  # noqa: E731
    body = [_text(min(w / 2, 400), 18, title, size=14, extra='font-weight="bold"')]
    for step in range(6):
        tick = ymax * step / 5
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(tick):.1f}" y2="{sy(tick):.1f}" stroke="#ddd"/>')
        body.append(_text(left - 6, sy(tick) + 4, f"{tick:.2f}", "end"))
    for g, group in enumerate(groups):
        x0 = left + group_w * g + gap / 2
        body.append(_text(x0 + bar_w * len(names) / 2, top + plot_h + 18, group))
        for i, name in enumerate(names):
            value = series[name][g]
            if value is None:
                continue
            y = sy(max(0.0, min(value, ymax)))
            body.append(f'<rect x="{x0 + bar_w * i:.1f}" y="{y:.1f}" width="{bar_w - 2}" height="{top + plot_h - y:.1f}" '
                        f'fill="{PALETTE[i % len(PALETTE)]}"><title>{_e(name)}: {value:.4f}</title></rect>')
    body += _legend(names, left + plot_w + 20, top + 10)
    return _svg(w, h, body, title)


def radar_chart(axes: Sequence[str], series: Mapping[str, Mapping[str, float]], title: str) -> str:
    """One polygon per model over the axes; axes a model has no value on are skipped (labelled n/a
    when no model has them). The scale runs from 0 to 1, or from -1 to 1 when a score is negative
    (Kendall's tau can be), with the 0 ring drawn darker and every ring labelled."""
    h, cx, cy, radius = 460, 380, 240, 170
    w = round(max(900, 680 + legend_width(list(series))))
    body = [_text(cx, 18, title, size=14, extra='font-weight="bold"')]
    low = -1.0 if any(v < 0 for values in series.values() for v in values.values()) else 0.0

    def point(index: int, value: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * index / len(axes)
        r = radius * (max(low, min(1.0, value)) - low) / (1.0 - low)
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    rings = (-0.5, 0.0, 0.5, 1.0) if low < 0 else (0.25, 0.5, 0.75, 1.0)
    for ring in rings:
        ring_points = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, ring) for i in range(len(axes))))
        stroke = "#888" if low < 0 and ring == 0 else "#ddd"
        body.append(f'<polygon points="{ring_points}" fill="none" stroke="{stroke}"/>')
        _, ty = point(0, ring)
        body.append(_text(cx + 4, ty - 2, f"{ring:g}", "start", size=10, extra='fill="#777"'))
    if low < 0:
        body.append(_text(cx + 4, cy + 12, "-1", "start", size=10, extra='fill="#777"'))
    for i, axis in enumerate(axes):
        x, y = point(i, 1.0)
        lx, ly = point(i, 1.16)
        body.append(f'<line x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}" stroke="#ccc"/>')
        missing = all(axis not in values for values in series.values())
        anchor = "middle" if abs(lx - cx) < 10 else ("start" if lx > cx else "end")
        body.append(_text(lx, ly + 4, axis + (" (n/a)" if missing else ""), anchor, extra='fill="#999"' if missing else ""))
    for s, (name, values) in enumerate(series.items()):
        colour = PALETTE[s % len(PALETTE)]
        pts = [(a, values[a], point(i, values[a])) for i, a in enumerate(axes) if a in values]
        body.append(f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for _, _, (x, y) in pts)}" fill="{colour}" fill-opacity="0.15" '
                    f'stroke="{colour}" stroke-width="2"/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{_e(name)}: {_e(a)} {v:.4f}</title></circle>'
                 for a, v, (x, y) in pts]
    body += _legend(list(series), 680, 60)
    return _svg(w, h, body, title)


# -- the report's content --------------------------------------------------------------------------


def _f(value: float | None) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def _ci(interval: tuple[float, float]) -> str:
    return f"[{_f(interval[0])}, {_f(interval[1])}]"


def package_versions() -> dict[str, str]:
    out = {}
    for dist in ("clinconsensus-tasks", "inspect-ai", "lm-eval"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


@dataclass
class Table:
    """A table rendered both as Markdown and as HTML."""

    title: str
    header: list[str]
    rows: list[list[str]]

    def markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.header) + " |", "|" + "---|" * len(self.header)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        head = "".join(f"<th>{_e(c)}</th>" for c in self.header)
        # Numbers and names wrap at spaces only; long unspaced text (paths, hashes) anywhere.
        cell = lambda c: f'<td class="long">{_e(c)}</td>' if len(c) > 40 else f"<td>{_e(c)}</td>"  # noqa: E731
        body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in self.rows)
        return (f'<h3>{_e(self.title)}</h3><div class="scroll"><table><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table></div>")


@dataclass
class Section:
    title: str
    tables: list[Table] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def clin_section(runs: Sequence[ClinRun], resamples: int, seed: int, prices: Mapping[str, Prices] | None = None) -> Section:
    section = Section("ClinConsensus")
    header = ["model", "cases", *[f"{m} [95% CI]" for m in HEADLINE], "judge failures", "suspect answers", "judge"]
    rows = []
    for run in runs:
        s, ci = run.summary(), bootstrap_intervals(run.results, run.n_criteria, resamples, seed)
        failures, suspect = int(s["judge_failures"]), sum(1 for r in run.records if r.suspect)
        rows.append([run.name, str(int(s["cases"])), *[f"{_f(s[m])} {_ci(ci[m])}" for m in HEADLINE],
                     f"{failures} ⚠" if failures else "0", str(suspect),
                     ", ".join(run.meta.get("judges") or [r for r in {x.judge for x in run.records} if r])])
        if failures:
            section.notes.append(f"⚠ {run.name}: {failures} failed judgment(s) counted as not met, so its scores are lower "
                                 "bounds; finish the judging (README: judge failure policy) before comparing it.")
        if suspect:
            section.notes.append(f"⚠ {run.name}: {suspect} answer(s) hold verdict-like JSON or judge prompt section markers "
                                 "(suspect_answer in the log); the judge's own final verdict was used.")
    section.tables.append(Table("Leaderboard (bootstrap: resampled cases)", header, rows))
    section.notes.append(f"Intervals: percentile bootstrap over cases, {resamples} resamples, numpy Generator seed {seed}.")
    section.charts.append(line_chart({r.name: r.curve() for r in runs}, list(CURVE_KS)[: min(r.n_criteria for r in runs)],
                                     "CACS@k, k = 1..30", "CACS@k"))
    for dim, label in (("subject", "subject"), ("task", "task label")):
        section.charts.append(_breakdown_heatmap(runs, dim, f"CACS@10 by {label}"))
        section.tables.append(_breakdown_table(runs, dim, f"CACS@10 by {label}"))
    audience = {r.name: [r.breakdowns().get("audience", {}).get(a, {}).get("cacs@10") for a in AUDIENCES] for r in runs}
    section.charts.append(bar_chart(list(AUDIENCES), audience, "CACS@10: lay vs professional"))
    section.tables.append(Table("CACS@10 by audience", ["model", *AUDIENCES], [[n, *map(_f, v)] for n, v in audience.items()]))
    agreement = agreement_table(runs)
    if agreement.rows:
        section.tables.append(agreement)
    section.tables.append(usage_table(runs, prices))
    return section


def usage_table(runs: Sequence[ClinRun], prices: Mapping[str, Prices] | None = None) -> Table:
    """Judge tokens per run and judge, from the API usage recorded per case (``report.costs``)."""
    rows = []
    for run in runs:
        for row in usage_rows(judge_usage(run.records), prices):
            rows.append([run.name, row["judge"], str(row["calls"]), str(row["prompt_tokens"]), str(row["cached_prompt_tokens"]),
                         str(row["completion_tokens"]), "–" if row["cost"] is None else f"{row['cost']:.4f}"])
    return Table("Judge tokens and cost", ["model", "judge", "calls", "prompt tokens", "cached prompt tokens", "completion tokens",
                                           "cost (--prices)"], rows)


def _breakdown_values(runs: Sequence[ClinRun], dim: str) -> tuple[list[str], dict[tuple[str, str], float]]:
    values: dict[tuple[str, str], float] = {}
    labels: list[str] = []
    for run in runs:
        for label, stats in run.breakdowns().get(dim, {}).items():
            values[(run.name, label)] = stats["cacs@10"]
            if label not in labels:
                labels.append(label)
    return sorted(labels), values


def _breakdown_heatmap(runs: Sequence[ClinRun], dim: str, title: str) -> str:
    labels, values = _breakdown_values(runs, dim)
    return heatmap([r.name for r in runs], labels, values, title)


def _breakdown_table(runs: Sequence[ClinRun], dim: str, title: str) -> Table:
    labels, values = _breakdown_values(runs, dim)
    return Table(title, ["model", *labels], [[r.name, *[_f(values.get((r.name, l))) for l in labels]] for r in runs])


AGREEMENT_COLUMNS = ("agreement/percent", "agreement/kappa", "agreement/macro_f1", "agreement/cacs@10_diff", "other/cacs@10", "other/judge_failures")


def agreement_table(runs: Sequence[ClinRun]) -> Table:
    """Reference judge against the local judge, for dual-judge runs (``judge.tools.compare_logs``)."""
    from clinconsensus_tasks.judge.tools import compare_logs

    rows = []
    for run in runs:
        if not run.dual:
            continue
        metrics = compare_logs(run.path)
        judges = run.meta.get("judges") or [run.records[0].judge, run.records[0].local_judge]
        cells = [_f(metrics.get(c)) for c in AGREEMENT_COLUMNS[:-1]] + [str(int(metrics.get(AGREEMENT_COLUMNS[-1], 0)))]
        rows.append([run.name, " vs ".join(judges), *cells])
    header = ["model", "judges (reference vs local)", "percent", "kappa", "macro F1", "CACS@10 diff", "local CACS@10", "local judge failures"]
    return Table("Judge agreement (dual-judge runs)", header, rows)


def med_section(runs: Sequence[MedRun]) -> Section:
    section = Section("CliMedBench")
    summaries = {r.name: r.summary() for r in runs}
    codes = [c for c in cmb.SCENARIOS if any(f"{c}/score" in s for s in summaries.values())]
    header = ["model", "score", "parse failure", *[f"{c} ({cmb.SCENARIOS[c].metric})" for c in codes]]
    rows = [[n, _f(s.get("score")), _f(s.get("parse_failure")), *[_f(s.get(f"{c}/score")) for c in codes]] for n, s in summaries.items()]
    section.tables.append(Table("Per-scenario scores", header, rows))
    names = {d: f"{zh} {d}" for d, zh in cmb.DIMENSIONS.items()}
    dims = {n: {names[d]: s[f"dimension/{d}"] for d in cmb.DIMENSIONS if f"dimension/{d}" in s} for n, s in summaries.items()}
    section.charts.append(radar_chart(list(names.values()), dims, "CliMedBench: the 7 dimensions"))
    section.tables.append(Table("Dimensions", ["model", *names.values()], [[n, *[_f(d.get(v)) for v in names.values()]] for n, d in dims.items()]))
    failures = {n: [s.get(f"{c}/parse_failure") for c in codes] for n, s in summaries.items()}
    section.charts.append(bar_chart(codes, failures, "Parse failures per scenario (share of answers)"))
    section.tables.append(Table("Parse failures per scenario", ["model", *codes], [[n, *map(_f, v)] for n, v in failures.items()]))
    deciles = {r.name: r.decile_summary() for r in runs}
    curves = {n: [d.get(decile_metric(k), 0.0) for k in DECILES] for n, d in deciles.items() if d}
    if curves:
        section.charts.append(line_chart(curves, list(DECILES), "Score per input-length decile (1 shortest, 10 longest)", "score", "decile"))
        section.tables.append(Table("Score per input-length decile (unweighted mean over scenarios)", ["model", *map(str, DECILES)],
                                    [[n, *[_f(deciles[n].get(decile_metric(k))) for k in DECILES]] for n in curves]))
    return section


def robustness_section(runs: Sequence[MedRun], resamples: int, seed: int) -> Section | None:
    """Clean against each variant of the same model, per scenario: paired drops with intervals."""
    pooled: dict[tuple[str, str], dict[tuple[str, str], float]] = {}
    for run in runs:
        model = model_display_name(str(run.meta.get("model") or run.name))  # the leaderboard's name, framework aside
        pooled.setdefault((model, run.variant), {}).update(run.item_scores())
    rows, codes = [], [c for c in cmb.SCENARIOS]
    for (model, variant), scores in pooled.items():
        clean = pooled.get((model, "clean"))
        if variant == "clean" or not clean or not set(clean) & set(scores):
            continue
        drops, unpaired = paired_drops(clean, scores, resamples, seed)
        by = {d.scope: d for d in drops}
        rows.append([model, variant, f"{_f(by[OVERALL].drop)} {_ci((by[OVERALL].low, by[OVERALL].high))}",
                     str(by[OVERALL].items), str(unpaired["only_clean"]),
                     *[f"{_f(by[c].clean)} → {_f(by[c].variant)}" if c in by else "" for c in codes]])
    if not rows:
        return None
    section = Section("CliMedBench robustness")
    used = [c for i, c in enumerate(codes) if any(row[5 + i] for row in rows)]
    keep = [5 + codes.index(c) for c in used]
    section.tables.append(Table("Clean against each variant (drop = clean - variant, items paired)",
                                ["model", "variant", "overall drop [95% CI]", "paired items", "left out", *[f"{c} clean → variant" for c in used]],
                                [row[:5] + [row[i] for i in keep] for row in rows]))
    section.notes.append(f"Intervals: paired percentile bootstrap over items within each scenario, {resamples} resamples, "
                         f"numpy Generator seed {seed}; the overall drop is the unweighted mean of the scenario drops.")
    return section


def metadata_section(runs: Runs) -> Section:
    section = Section("Run metadata")
    rows = []
    for run in [*runs.clin, *runs.med]:
        m = run.meta
        source = m.get("data_source")
        source_text = json.dumps(source, ensure_ascii=False) if isinstance(source, dict) else str(source or "")
        sha = m.get("data_sha256") or (_sha256(source) if isinstance(source, str) else
                                       " ".join(f"{k}:{_sha256(v)}" for k, v in source.items() if _sha256(v)) if isinstance(source, dict) else "")
        rows.append([run.name, m.get("model", ""), m.get("framework", ""), m.get("task", ""), ", ".join(m.get("judges") or []), m.get("judge_mode", ""),
                     m.get("judge_prompt_sha256", ""), source_text, sha, m.get("data_revision", ""),
                     ", ".join(f"{k} {v}" for k, v in (m.get("packages") or {}).items()), run.path])
    section.tables.append(Table("Runs", ["model", "model as logged", "framework", "task", "judges", "judge mode", "judge prompt sha256",
                                         "data source", "data sha256", "data revision", "logged packages", "log"], rows))
    if runs.results_files:
        section.tables.append(Table("lm-eval results files", ["model", "model_args", "tasks", "file"],
                                    [[r["model"], str(r["model_args"] or ""), ", ".join(r["tasks"]), r["path"]] for r in runs.results_files]))
    if runs.skipped:
        section.tables.append(Table("Skipped logs (unfinished or empty)", ["log", "reason"], [[p, why] for p, why in runs.skipped]))
    section.tables.append(Table("Report built with", ["package", "version"], [[k, v] for k, v in package_versions().items()]))
    return section


# -- writing ---------------------------------------------------------------------------------------

CSS = f"""
body {{ font-family: {FONT_STACK}; margin: 24px; color: #222; }}
svg text {{ font-family: {FONT_STACK}; }}
table {{ border-collapse: collapse; margin: 8px 0 20px; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
th {{ background: #f2f2f2; }}
td {{ max-width: 460px; }}
td.long {{ overflow-wrap: anywhere; }}
.scroll {{ overflow-x: auto; }}
.chart {{ display: block; margin: 12px 0; max-width: 100%; height: auto; }}
.note {{ color: #555; font-size: 13px; }}
"""

RENDER_CHECK = """<script>
(function () {
  var drawn = 0, clipped = 0, overflow = 0, page = document.documentElement.clientWidth;
  document.querySelectorAll('svg').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && svg.querySelectorAll('text').length > 0) { drawn += 1; }
    if (box.right > page + 1) { overflow += 1; }
    svg.querySelectorAll('text').forEach(function (text) {
      var t = text.getBoundingClientRect();
      if (t.left < box.left - 1 || t.right > box.right + 1 || t.top < box.top - 1 || t.bottom > box.bottom + 1) { clipped += 1; }
    });
  });
  document.title = 'rendered:' + drawn;
  document.body.setAttribute('data-layout', 'clipped:' + clipped + ' overflow:' + overflow);
})();
</script>"""


def render_html(sections: Sequence[Section], title: str) -> str:
    parts = [f"<h1>{_e(title)}</h1>"]
    for section in sections:
        parts.append(f"<h2>{_e(section.title)}</h2>")
        parts += [f'<p class="note">{_e(n)}</p>' for n in section.notes]
        parts += [t.html() for t in section.tables[:1]]
        parts += section.charts
        parts += [t.html() for t in section.tables[1:]]
    return (f'<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f"<style>{CSS}</style></head><body>{''.join(parts)}{RENDER_CHECK}</body></html>\n")


def render_markdown(sections: Sequence[Section], title: str, html_name: str) -> str:
    parts = [f"# {title}", "", f"Charts: see `{html_name}`.", ""]
    for section in sections:
        parts += [f"## {section.title}", ""] + [f"{n}\n" for n in section.notes] + [t.markdown() for t in section.tables]
    return "\n".join(parts)


def baseline_section(baseline: str | Path, runs: Runs, resamples: int, seed: int) -> Section:
    """Every run of the baseline's benchmark against the baseline (``compare-models``), case by case."""
    from clinconsensus_tasks.report.compare_models import RunMismatch, compare_runs, read_run

    section = Section(f"Against the baseline {Path(baseline).name}")
    base = read_run(baseline)
    for run in [*runs.clin, *runs.med]:
        if Path(run.path).resolve() == Path(baseline).resolve():
            continue
        try:
            comparison = compare_runs(base, read_run(run.path), resamples=resamples, seed=seed)
        except RunMismatch as exc:
            section.notes.append(f"{run.name}: not compared ({exc})")
            continue
        rows = [[name, _f(r.baseline), _f(r.candidate), f"{r.difference:+.4f}", _ci(r.interval), f"{r.p_value:.4f}"]
                for name, r in comparison.results.items()]
        section.tables.append(Table(f"{run.name} - baseline ({comparison.paired_cases} paired cases)",
                                    ["metric", "baseline", "candidate", "difference", "95% CI (paired bootstrap)", "p (paired permutation)"], rows))
    section.notes.append(f"Paired over the cases both runs share; {resamples} bootstrap resamples and permutations, seed {seed}.")
    return section


def build_report(
    logs: Sequence[str | Path], output: str | Path, markdown: str | Path | None = None,
    resamples: int = 1000, seed: int = 0, title: str = "ClinConsensus / CliMedBench results", baseline: str | Path | None = None,
    prices: Mapping[str, Prices] | None = None,
) -> dict[str, Any]:
    """Read ``logs`` and write the HTML report to ``output`` and the Markdown summary beside it
    (``report.md`` in the same folder unless ``markdown`` is given). Returns paths and counts."""
    runs = read_runs(logs)
    for path, why in runs.skipped:
        print(f"report: warning: skipped {path}: {why}", file=sys.stderr)
    if not runs.clin and not runs.med:
        raise ValueError("no finished ClinConsensus or CliMedBench runs among the logs")
    sections = ([clin_section(runs.clin, resamples, seed, prices)] if runs.clin else []) + ([med_section(runs.med)] if runs.med else [])
    robust = robustness_section(runs.med, resamples, seed) if runs.med else None
    if robust is not None:
        sections.append(robust)
    if baseline:
        sections.append(baseline_section(baseline, runs, resamples, seed))
    sections.append(metadata_section(runs))
    output = Path(output)
    md_path = Path(markdown) if markdown else output.with_name("report.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(sections, title)
    output.write_text(page, encoding="utf-8")
    md_path.write_text(render_markdown(sections, title, output.name), encoding="utf-8")
    return {"html": str(output), "markdown": str(md_path), "charts": len(re.findall(r"<svg\b", page)),
            "clinconsensus_runs": [r.name for r in runs.clin], "climedbench_runs": [r.name for r in runs.med],
            "skipped": [{"log": path, "reason": why} for path, why in runs.skipped]}


def add_report_arguments(parser: Any) -> None:
    """The ``report`` subcommand's arguments (an ``argparse`` parser or subparser)."""
    parser.add_argument("logs", nargs="+", help="Inspect .eval/.json logs, lm-eval samples_clinconsensus*/samples_climedbench_*.jsonl "
                                                "and results_*.json files, or folders holding them (an Inspect log dir, an "
                                                "lm-eval output dir), of any number of models")
    parser.add_argument("--output", required=True, help="the HTML file to write (report.md is written beside it)")
    parser.add_argument("--markdown", help="where to write the Markdown summary (default: report.md beside --output)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of cases")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    parser.add_argument("--title", default="ClinConsensus / CliMedBench results", help="the page title")
    parser.add_argument("--prices", action="append", default=[], metavar="[JUDGE=]IN,CACHED,OUT",
                        help="judge prices per million tokens (input, cached input, output), per judge or for all; repeatable (default: tokens only)")
    parser.add_argument("--baseline", help="a run (log file or folder) to compare every other run of its benchmark against, "
                                           "case by case as compare-models does (default: none)")


def main_report(args: Any) -> int:
    """Run the ``report`` subcommand from parsed arguments (see :func:`add_report_arguments`)."""
    from clinconsensus_tasks.scorers.usage import parse_prices

    info = build_report(args.logs, args.output, args.markdown, args.resamples, args.seed, args.title, getattr(args, "baseline", None),
                        parse_prices(getattr(args, "prices", None) or []))
    print(json.dumps(info, ensure_ascii=False, indent=2))
    return 0
