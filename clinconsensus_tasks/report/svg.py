"""The report's charts: hand-written SVG strings.

Why hand-written: no plotting dependency, no external fonts or scripts, and real ``<text>``
elements, so Chinese labels stay searchable and render with the page's CJK font stack (the
project's CI installs ``fonts-noto-cjk``). Charts scale down to the page width (``viewBox``).

Identical series (two runs that logged the same numbers, e.g. one model in both frameworks) would
hide each other: the later one is drawn dashed on top of the earlier, so both colours show, and
its legend entry says which series it equals.
"""

from __future__ import annotations

import html
import math
import unicodedata
from typing import Any, Iterable, Mapping, Sequence

FONT_STACK = '"Noto Sans CJK SC", "Noto Sans SC", "WenQuanYi Micro Hei", sans-serif'
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22")
LEGEND_MAX_COLUMNS = 40  # longer model names are shortened in charts (the tables keep them whole)
DASH = 'stroke-dasharray="7 5"'


def escape(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _svg(width: int, height: int, body: Iterable[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
            + "".join(body) + "</svg>")


def _text(x: float, y: float, text: Any, anchor: str = "middle", size: int = 12, extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" {extra}>{escape(text)}</text>'


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


def same_as(series: Mapping[str, Any]) -> dict[str, str]:
    """``{name: earlier name}`` for every series whose values equal an earlier series' values."""
    seen: dict[str, str] = {}
    out = {}
    for name, values in series.items():
        key = repr(sorted(values.items()) if isinstance(values, Mapping) else list(values))
        if key in seen:
            out[name] = seen[key]
        else:
            seen[key] = name
    return out


def _label(name: str, twin: str | None) -> str:
    return short_name(name) if twin is None else short_name(f"{short_name(name, 24)} = {short_name(twin, 24)}", 52)


def legend_width(names: Sequence[str], twins: Mapping[str, str] | None = None) -> float:
    return 18 + max((text_width(_label(n, (twins or {}).get(n))) for n in names), default=0) + 12


def _legend(names: Sequence[str], x: float, y: float, twins: Mapping[str, str] | None = None) -> list[str]:
    out = []
    for i, name in enumerate(names):
        twin = (twins or {}).get(name)
        out.append(f'<rect x="{x:.1f}" y="{y + 18 * i - 9:.1f}" width="12" height="12" fill="{PALETTE[i % len(PALETTE)]}"/>')
        tip = name if twin is None else f"{name}: identical to {twin}"
        out.append(f'<g><title>{escape(tip)}</title>{_text(x + 18, y + 18 * i + 1, _label(name, twin), "start")}</g>')
    return out


def line_chart(series: Mapping[str, Sequence[float]], xs: Sequence[int], title: str, ylabel: str, xlabel: str = "k") -> str:
    """Lines over integer x (the CACS@k curve, the length-decile curve); y from 0 to 1."""
    twins = same_as(series)
    h, left, top, plot_w, plot_h = 380, 60, 30, 560, 300
    w = round(left + plot_w + 20 + legend_width(list(series), twins))
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
        dash = f" {DASH}" if name in twins else ""
        body.append(f'<polyline fill="none" stroke="{PALETTE[i % len(PALETTE)]}" stroke-width="2"{dash} points="{points}"/>')
    body += _legend(list(series), left + plot_w + 20, top + 10, twins)
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
        body.append(f'<g><title>{escape(row)}</title>{_text(left - 8, y + cell_h / 2 + 4, short_name(row), "end")}</g>')
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
    # At least as wide as the title (one bar of one series leaves a narrow plot; the title was cut off).
    w, h = round(max(left + plot_w + 20 + legend_width(names), text_width(title, 14) + 40)), top + plot_h + 50
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
                        f'fill="{PALETTE[i % len(PALETTE)]}"><title>{escape(name)}: {value:.4f}</title></rect>')
    body += _legend(names, left + plot_w + 20, top + 10)
    return _svg(w, h, body, title)


def radar_chart(axes: Sequence[str], series: Mapping[str, Mapping[str, float]], title: str) -> str:
    """One polygon per model over the axes; axes a model has no value on are skipped (labelled n/a
    when no model has them). The scale runs from 0 to 1, or from -1 to 1 when a score is negative
    (Kendall's tau can be), with the 0 ring drawn darker and every ring labelled."""
    twins = same_as(series)
    h, cx, cy, radius = 460, 380, 240, 170
    w = round(max(900, 680 + legend_width(list(series), twins)))
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
        dash = f" {DASH}" if name in twins else ""
        body.append(f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for _, _, (x, y) in pts)}" fill="{colour}" fill-opacity="0.15" '
                    f'stroke="{colour}" stroke-width="2"{dash}/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"><title>{escape(name)}: {escape(a)} {v:.4f}</title></circle>'
                 for a, v, (x, y) in pts]
    body += _legend(list(series), 680, 60, twins)
    return _svg(w, h, body, title)
