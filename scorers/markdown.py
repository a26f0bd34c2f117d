"""Text from a model, a judge or the data, made safe to show in a Markdown explanation.

Inspect View renders a score's explanation as Markdown; what the explanation quotes (a criterion, a
judge's reason, an answer, a reference) is anyone's text, of any size. :func:`cell` makes one such
text a table cell or an inline quote: one line, bounded, and unable to start markup.
Framework-free.
"""

from __future__ import annotations

CELL_CHARS = 160  # a quoted text in one cell, at most (twice that once escaped)

# CommonMark backslash escapes: a cell's text can neither end the cell nor start markup or a link.
# Not < > &: Inspect View escapes HTML itself before it renders Markdown (a backslash there would
# show as "\&gt;"), so a tag in a judge's reason is shown as text.
_ESCAPES = {ch: "\\" + ch for ch in "|`*_[]#\\!~"}


def cell(text: object, limit: int = CELL_CHARS) -> str:
    """``text`` as one Markdown table cell: white space runs (line breaks too) made one space, cut
    to ``limit`` characters with an ellipsis, and the characters that would end the cell or start
    markup escaped. Only the first ``4 x limit`` characters are read."""
    raw = str(text if text is not None else "")[: 4 * limit]
    flat = " ".join(raw.split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return "".join(_ESCAPES.get(ch, ch) for ch in flat)
