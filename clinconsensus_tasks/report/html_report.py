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
  layout box), so a headless browser can prove every chart rendered and no script failed.
"""

from __future__ import annotations

import hashlib
import html
import importlib.metadata
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from clinconsensus_tasks.clinconsensus.logs import LoggedCase, read_case_records
from clinconsensus_tasks.scorers.clinconsensus.cacs import DEFAULT_N_CRITERIA, CaseResult, breakdowns, cacs_at_k, summarize
from clinconsensus_tasks.scorers.climedbench import scenarios as cmb
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
    """One CliMedBench run: ``(scenario, value, parsed)`` rows and their summary."""

    name: str
    path: str
    rows: list[tuple[str, float, bool]]
    meta: dict[str, Any] = field(default_factory=dict)
    # Parallel to rows: (item id, length decile or 0 when the log has none); the run's variant.
    items: list[tuple[str, int]] = field(default_factory=list)
    variant: str = "clean"

    def summary(self) -> dict[str, float]:
        return cmb.summarize(self.rows)

    def decile_summary(self) -> dict[str, float]:
        return decile_scores((code, decile, value) for (code, value, _), (_, decile) in zip(self.rows, self.items) if decile)

    def item_scores(self) -> dict[tuple[str, str], float]:
        return {(code, item_id): value for (code, value, _), (item_id, _) in zip(self.rows, self.items)}


@dataclass
class Runs:
    clin: list[ClinRun] = field(default_factory=list)
    med: list[MedRun] = field(default_factory=list)
    results_files: list[dict[str, Any]] = field(default_factory=list)  # lm-eval results_*.json metadata


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
        "synthetic_sample": meta.get("synthetic_sample"),
        "packages": dict(ev.packages or {}),
        "created": ev.created,
    }


def _read_inspect(path: Path, runs: Runs) -> None:
    log = _inspect_header(path)
    meta = _inspect_meta(log)
    task = log.eval.task.rsplit("/", 1)[-1]
    if task.startswith("clinconsensus"):
        n = int((log.eval.task_args or {}).get("n_criteria") or DEFAULT_N_CRITERIA)
        runs.clin.append(ClinRun(log.eval.model, str(path), read_case_records(path), n, meta))
    elif task.startswith("climedbench"):
        rows, items, variant = _inspect_climedbench_rows(path)
        runs.med.append(MedRun(_run_name(log.eval.model, variant), str(path), rows, meta, items, variant))
    else:
        raise ValueError(f"{path}: task {log.eval.task!r} is neither ClinConsensus nor CliMedBench")


def _run_name(model: str, variant: str) -> str:
    return model if variant == "clean" else f"{model} [{variant}]"


def _inspect_climedbench_rows(path: Path) -> tuple[list[tuple[str, float, bool]], list[tuple[str, int]], str]:
    from inspect_ai.log import read_eval_log

    rows, items, variants = [], [], set()
    for sample in read_eval_log(str(path)).samples or []:
        score = (sample.scores or {}).get("climedbench_scorer")
        if score is None or not isinstance(score.value, dict):
            raise ValueError(f"{path}: sample {sample.id!r} has no climedbench_scorer score")
        rows.append((str(sample.metadata["scenario"]), float(score.value["value"]), float(score.value["parsed"]) >= 0.5))
        items.append((str(sample.metadata["item"]["id"]), int(sample.metadata.get("length_decile") or 0)))
        variants.add(sample.metadata.get("variant", "clean"))
    return rows, items, ",".join(sorted(variants)) or "clean"


def _lmeval_climedbench_rows(path: Path) -> tuple[list[tuple[str, float, bool]], list[tuple[str, int]], str]:
    rows, items, variants = [], [], set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        sample = json.loads(line)
        code = str(sample["doc"]["scenario"]).upper()
        metric = cmb.SCENARIOS[code].metric
        if metric not in sample:
            raise ValueError(f"{path}:{number}: no {metric!r} value in the sample record")
        parse_failure = float(sample.get("parse_failure", 0.0))
        rows.append((code, float(sample[metric]), parse_failure < 0.5))
        items.append((str(sample["doc"]["id"]), int(sample["doc"].get("length_decile") or 0)))
        variants.add(sample["doc"].get("variant", "clean"))
    return rows, items, ",".join(sorted(variants)) or "clean"


def _lmeval_meta(path: Path) -> dict[str, Any]:
    match = re.match(r"samples_(.+?)_\d{4}-\d{2}-\d{2}T", path.stem)
    return {"framework": "lm-eval", "task": match.group(1) if match else path.stem.removeprefix("samples_"), "model": path.parent.name,
            "judges": [], "judge_mode": "", "data_source": "", "data_sha256": "", "packages": {}}


def _read_lmeval_results(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    config = data.get("config") or {}
    return {"path": str(path), "model": data.get("model_name") or path.parent.name,
            "model_args": config.get("model_args"), "tasks": sorted((data.get("results") or {}).keys())}


def read_runs(paths: Sequence[str | Path]) -> Runs:
    """Sort every log into ClinConsensus runs, CliMedBench runs and lm-eval results files."""
    runs = Runs()
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise FileNotFoundError(f"no such log file: {path}")
        name = path.name
        if path.suffix in (".eval", ".json") and not name.startswith("results_"):
            _read_inspect(path, runs)
        elif name.startswith("results_") and path.suffix == ".json":
            runs.results_files.append(_read_lmeval_results(path))
        elif name.startswith("samples_clinconsensus") and path.suffix == ".jsonl":
            runs.clin.append(ClinRun(path.parent.name, str(path), read_case_records(path), meta=_lmeval_meta(path)))
        elif name.startswith("samples_climedbench") and path.suffix == ".jsonl":
            rows, items, variant = _lmeval_climedbench_rows(path)
            runs.med.append(MedRun(_run_name(path.parent.name, variant), str(path), rows, _lmeval_meta(path), items, variant))
        else:
            raise ValueError(f"{path}: expected an Inspect log, samples_clinconsensus*/samples_climedbench_* .jsonl or results_*.json")
    _unique_names(runs.clin)
    _unique_names(runs.med)
    return runs


def _unique_names(runs: Sequence[ClinRun | MedRun]) -> None:
    """One leaderboard row per run: a model seen twice gets ``#2``, ``#3`` ..."""
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

    Each resample is scored by ``scorers.cacs.summarize``, the same code as the frameworks'
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


def _legend(names: Sequence[str], x: float, y: float) -> list[str]:
    out = []
    for i, name in enumerate(names):
        out.append(f'<rect x="{x:.1f}" y="{y + 18 * i - 9:.1f}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(_text(x + 18, y + 18 * i + 1, name, "start"))
    return out


def line_chart(series: Mapping[str, Sequence[float]], xs: Sequence[int], title: str, ylabel: str, xlabel: str = "k") -> str:
    """Lines over integer x (the CACS@k curve, the length-decile curve); y from 0 to 1."""
    w, h, left, top, plot_w, plot_h = 900, 380, 60, 30, 560, 300
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
    cell_w, cell_h, left, top = 64, 30, 180, 130
    w, h = left + cell_w * len(cols) + 20, top + cell_h * len(rows) + 20
    body = [_text(w / 2 if w < 600 else 300, 18, title, size=14, extra='font-weight="bold"')]
    for j, col in enumerate(cols):
        x, y = left + cell_w * j + cell_w / 2, top - 8
        body.append(_text(x, y, col, "start", extra=f'transform="rotate(-40 {x:.1f} {y:.1f})"'))
    for i, row in enumerate(rows):
        y = top + cell_h * i
        body.append(_text(left - 8, y + cell_h / 2 + 4, row, "end"))
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
    bar_w, gap, left, top, plot_h = 22, 24, 60, 30, 240
    group_w = bar_w * max(1, len(names)) + gap
    plot_w = group_w * len(groups)
    w, h = left + plot_w + 220, top + plot_h + 50
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
    when no model has them). Scores below 0 (Kendall's tau can be negative) are drawn at the centre."""
    w, h, cx, cy, radius = 900, 460, 380, 240, 170
    body = [_text(cx, 18, title, size=14, extra='font-weight="bold"')]

    def point(index: int, value: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * index / len(axes)
        r = radius * max(0.0, min(1.0, value))
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    for ring in (0.25, 0.5, 0.75, 1.0):
        ring_points = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, ring) for i in range(len(axes))))
        body.append(f'<polygon points="{ring_points}" fill="none" stroke="#ddd"/>')
    for i, axis in enumerate(axes):
        x, y = point(i, 1.0)
        lx, ly = point(i, 1.16)
        body.append(f'<line x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}" stroke="#ccc"/>')
        missing = all(axis not in values for values in series.values())
        anchor = "middle" if abs(lx - cx) < 10 else ("start" if lx > cx else "end")
        body.append(_text(lx, ly + 4, axis + (" (n/a)" if missing else ""), anchor, extra='fill="#999"' if missing else ""))
    for s, (name, values) in enumerate(series.items()):
        colour = PALETTE[s % len(PALETTE)]
        pts = [point(i, values[a]) for i, a in enumerate(axes) if a in values]
        body.append(f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in pts)}" fill="{colour}" fill-opacity="0.15" '
                    f'stroke="{colour}" stroke-width="2"/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in pts]
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
        body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in self.rows)
        return f"<h3>{_e(self.title)}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


@dataclass
class Section:
    title: str
    tables: list[Table] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def clin_section(runs: Sequence[ClinRun], resamples: int, seed: int) -> Section:
    section = Section("ClinConsensus")
    header = ["model", "cases", *[f"{m} [95% CI]" for m in HEADLINE], "judge failures", "judge"]
    rows = []
    for run in runs:
        s, ci = run.summary(), bootstrap_intervals(run.results, run.n_criteria, resamples, seed)
        rows.append([run.name, str(int(s["cases"])), *[f"{_f(s[m])} {_ci(ci[m])}" for m in HEADLINE],
                     str(int(s["judge_failures"])), ", ".join(run.meta.get("judges") or [r for r in {x.judge for x in run.records} if r])])
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
    return section


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
    """Reference judge against the local judge, for dual-judge runs (``judge_tools.compare_logs``)."""
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
        model = str(run.meta.get("model") or run.name)
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
        rows.append([run.name, m.get("framework", ""), m.get("task", ""), ", ".join(m.get("judges") or []), m.get("judge_mode", ""),
                     source_text, sha, ", ".join(f"{k} {v}" for k, v in (m.get("packages") or {}).items()), run.path])
    section.tables.append(Table("Runs", ["model", "framework", "task", "judges", "judge mode", "data source", "data sha256", "logged packages", "log"], rows))
    if runs.results_files:
        section.tables.append(Table("lm-eval results files", ["model", "model_args", "tasks", "file"],
                                    [[r["model"], str(r["model_args"] or ""), ", ".join(r["tasks"]), r["path"]] for r in runs.results_files]))
    section.tables.append(Table("Report built with", ["package", "version"], [[k, v] for k, v in package_versions().items()]))
    return section


# -- writing ---------------------------------------------------------------------------------------

CSS = f"""
body {{ font-family: {FONT_STACK}; margin: 24px; color: #222; }}
svg text {{ font-family: {FONT_STACK}; }}
table {{ border-collapse: collapse; margin: 8px 0 20px; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
th {{ background: #f2f2f2; }}
td {{ max-width: 460px; overflow-wrap: anywhere; }}
.chart {{ display: block; margin: 12px 0; }}
.note {{ color: #555; font-size: 13px; }}
"""

RENDER_CHECK = """<script>
(function () {
  var drawn = 0;
  document.querySelectorAll('svg').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && svg.querySelectorAll('text').length > 0) { drawn += 1; }
  });
  document.title = 'rendered:' + drawn;
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


def build_report(
    logs: Sequence[str | Path], output: str | Path, markdown: str | Path | None = None,
    resamples: int = 1000, seed: int = 0, title: str = "ClinConsensus / CliMedBench results",
) -> dict[str, Any]:
    """Read ``logs`` and write the HTML report to ``output`` and the Markdown summary beside it
    (``report.md`` in the same folder unless ``markdown`` is given). Returns paths and counts."""
    runs = read_runs(logs)
    if not runs.clin and not runs.med:
        raise ValueError("no ClinConsensus or CliMedBench runs among the logs")
    sections = ([clin_section(runs.clin, resamples, seed)] if runs.clin else []) + ([med_section(runs.med)] if runs.med else [])
    robust = robustness_section(runs.med, resamples, seed) if runs.med else None
    if robust is not None:
        sections.append(robust)
    sections.append(metadata_section(runs))
    output = Path(output)
    md_path = Path(markdown) if markdown else output.with_name("report.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(sections, title)
    output.write_text(page, encoding="utf-8")
    md_path.write_text(render_markdown(sections, title, output.name), encoding="utf-8")
    return {"html": str(output), "markdown": str(md_path), "charts": len(re.findall(r"<svg\b", page)),
            "clinconsensus_runs": [r.name for r in runs.clin], "climedbench_runs": [r.name for r in runs.med]}


def add_report_arguments(parser: Any) -> None:
    """The ``report`` subcommand's arguments (an ``argparse`` parser or subparser)."""
    parser.add_argument("logs", nargs="+", help="Inspect .eval/.json logs, lm-eval samples_clinconsensus*/samples_climedbench_*.jsonl "
                                                "and results_*.json files, of any number of models")
    parser.add_argument("--output", required=True, help="the HTML file to write (report.md is written beside it)")
    parser.add_argument("--markdown", help="where to write the Markdown summary (default: report.md beside --output)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of cases (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--title", default="ClinConsensus / CliMedBench results")


def main_report(args: Any) -> int:
    """Run the ``report`` subcommand from parsed arguments (see :func:`add_report_arguments`)."""
    info = build_report(args.logs, args.output, args.markdown, args.resamples, args.seed, args.title)
    print(json.dumps(info, ensure_ascii=False, indent=2))
    return 0
