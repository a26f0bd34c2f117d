"""Plain-text tables and numbers for the commands' terminal output."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence


def number(x: float | None, percent: bool = False) -> str:
    """A metric as the frameworks show it (a fraction), or in percent when asked; ``n/a`` for an
    undefined one (NaN: kappa of one class, precision of a class never said)."""
    if x is None or x != x:
        return "n/a"
    return f"{100 * x:.2f}" if percent else f"{x:.4f}"


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 0 if unicodedata.combining(ch) else 1 for ch in text)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "   ") -> list[str]:
    """Lines of a table: first column left-aligned, the others right-aligned, each as wide as its
    widest cell in terminal columns, so rows stay aligned with Chinese labels."""
    table = [list(header), *(list(row) for row in rows)]
    widths = [max(display_width(row[i]) for row in table) for i in range(len(header))]
    lines = []
    for row in table:
        cells = [cell + " " * (widths[i] - display_width(cell)) if i == 0 else " " * (widths[i] - display_width(cell)) + cell
                 for i, cell in enumerate(row)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines
