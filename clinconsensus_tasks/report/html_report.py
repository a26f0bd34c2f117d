"""The report: one self-contained HTML page (and a Markdown summary) for many runs.

Why this exists: comparing models means opening several Inspect logs and lm-eval sample files and
lining up numbers by hand. The report reads them all and writes a leaderboard, intervals and charts
in one file that opens offline (reviewers, air-gapped hospital machines, CI artifacts).

The modules, by concern: ``report.runs`` reads the logs into runs, ``report.sections`` builds the
tables, notes and charts of each section from the scoring core, ``report.svg`` draws the charts;
this module lays the sections out as a page (and as Markdown). The command is ``commands.report``.

A tiny inline script records on the page's ``<body>`` how the charts laid out: ``data-rendered``
(charts with a non-empty layout box) and ``data-layout`` (``clipped:C overflow:O``: chart texts
outside their chart, charts wider than the page), so a headless browser can prove every chart
rendered, nothing is cut off and no script failed. The tab keeps the report's own title.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from clinconsensus_tasks.scorers.redact import redact
from clinconsensus_tasks.report.runs import read_runs
from clinconsensus_tasks.report.sections import (
    Section, baseline_section, clin_section, med_section, metadata_section, robustness_section,
)
from clinconsensus_tasks.report.reliability_section import check_section
from clinconsensus_tasks.report.review_section import review_section
from clinconsensus_tasks.report.svg import FONT_STACK, escape
from clinconsensus_tasks.run_records.review_intake import load_review
from clinconsensus_tasks.run_records.review_score import score_review
from clinconsensus_tasks.scorers.usage import Prices
from clinconsensus_tasks.storage import output_location, write_text

CSS = f"""
body {{ font-family: {FONT_STACK}; margin: 24px; color: #222; }}
svg text {{ font-family: {FONT_STACK}; }}
table {{ border-collapse: collapse; margin: 8px 0 20px; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }}
th {{ background: #f2f2f2; }}
td {{ max-width: 460px; white-space: pre-line; }}
td.long {{ overflow-wrap: anywhere; }}
details {{ margin: 8px 0 16px; }}
summary {{ cursor: pointer; font-weight: bold; font-size: 15px; margin: 8px 0; }}
details td {{ max-width: 640px; font-size: 12px; }}
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
  document.body.setAttribute('data-rendered', String(drawn));
  document.body.setAttribute('data-layout', 'clipped:' + clipped + ' overflow:' + overflow);
})();
</script>"""


def render_html(sections: Sequence[Section], title: str) -> str:
    parts = [f"<h1>{escape(title)}</h1>"]
    for section in sections:
        parts.append(f"<h2>{escape(section.title)}</h2>")
        parts += [f'<p class="note">{escape(n)}</p>' for n in section.notes]
        parts += [t.html() for t in section.tables[:1]]
        parts += section.charts
        parts += [t.html() for t in section.tables[1:]]
    return (f'<!DOCTYPE html>\n<html lang="zh-CN"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{CSS}</style></head><body>{''.join(parts)}{RENDER_CHECK}</body></html>\n")


def render_markdown(sections: Sequence[Section], title: str, html_name: str) -> str:
    parts = [f"# {title}", "", f"Charts: see `{html_name}`.", ""]
    for section in sections:
        parts += [f"## {section.title}", ""] + [f"{n}\n" for n in section.notes] + [t.markdown() for t in section.tables]
    return "\n".join(parts)


def build_report(
    logs: Sequence[str | Path], output: str | Path, markdown: str | Path | None = None,
    resamples: int = 1000, seed: int = 0, title: str = "ClinConsensus / CliMedBench results", baseline: str | Path | None = None,
    prices: Mapping[str, Prices] | None = None, review: str | Path | None = None, reliability: str | Path | None = None,
    cache: Any = None,
) -> dict[str, Any]:
    """Read ``logs`` and write the HTML report to ``output`` and the Markdown summary beside it
    (``report.md`` in the same folder unless ``markdown`` is given). Returns paths and counts.
    ``cache`` (``report.run_cache.RunCache``) serves the files read by an earlier report, unchanged."""
    runs = read_runs(logs, cache)
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
    if review:
        sections.append(review_section(score_review(load_review(review), resamples, seed)))
    if reliability:
        sections.append(check_section(reliability, runs, resamples, seed))
    sections.append(metadata_section(runs))
    output = output_location(output)  # a local path or a URL, as is --markdown
    md_path = output_location(markdown) if markdown else output.with_name("report.md")
    # Every report text passes here: a key in a run's metadata (lm-eval's model_args) is masked.
    page = redact(render_html(sections, title))
    write_text(output, page)
    write_text(md_path, redact(render_markdown(sections, title, output.name)))
    return {"html": str(output), "markdown": str(md_path), "charts": len(re.findall(r"<svg\b", page)),
            "clinconsensus_runs": [r.name for r in runs.clin], "climedbench_runs": [r.name for r in runs.med],
            "skipped": [{"log": path, "reason": why} for path, why in runs.skipped]}
