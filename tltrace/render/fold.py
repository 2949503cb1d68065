"""Long lines folded to the terminal's width, never cut silently.

The stream's lines (a pass, a diff line of IR, a `done:` line) are written as they are
when the output is a file or a pipe. On a terminal a line wider than it is folded:
its continuation rows hang under the line's text (after a diff line's gutter and the
IR's own indentation) behind a `↪` marker, broken at a space when one is in the
row's second half. A line that would take more rows than it may (4; a changed line of a
diff 12, as what changed is often at its end) is cut on the last with `… +N chars`,
saying how much is not shown (the report, and `tltrace show --pass` piped to a file,
have it whole). Widths are terminal cells, so wide characters count twice.

It works on Rich segments (styled runs of text already made visible), so a line is
rendered once and cut where it is written, at about 0.1 ms a folded line.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, get_character_cell_size
from rich.segment import Segment
from rich.style import Style

ELLIPSIS = "\u2026"  # the mark of a cut (render/table.py takes it from here)

MARK = "\u21aa "  # ↪: this row continues the line above
# Rows one line may take before the rest is cut (an 8 KB constant table is not a screenful).
ROWS = 4
CHANGED_ROWS = 12

_LEAD = re.compile(r" *(?:[-+~] *)?")  # indentation, a diff line's gutter, the IR's own indentation
_DIM = Style(dim=True)
_BOLD = Style(bold=True)


def _take(text: str, start: int, cells: int, ascii_: bool) -> int:
    """Return the offset after the most characters from `start` that fit in `cells` terminal cells."""
    if ascii_:
        return min(len(text), start + max(0, cells))
    used = 0
    end = start
    while end < len(text):
        w = get_character_cell_size(text[end])
        if used + w > cells:
            break
        used += w
        end += 1
    return end


def _break_at(text: str, start: int, end: int) -> int:
    """Return where to end a row that may run to `end`: after its last space in its second half, else `end`.

    A word (a path, a name like `tl.has_tma`) is kept whole on the next row when that
    costs at most half a row.
    """
    if end >= len(text):
        return end
    space = text.rfind(" ", start, end)
    return space + 1 if space > start + (end - start) // 2 else end


def _cut_marker(left: int, cells: int) -> str:
    """Return the end of a cut row: how many characters are not shown (just `…` when too narrow)."""
    marker = f" {ELLIPSIS} +{left} chars"
    return marker if len(marker) < cells // 2 else ELLIPSIS


def _expand_tabs(line: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    col = 0
    for seg in line:
        text = seg.text
        if "\t" in text:
            parts = []
            for ch in text:
                if ch == "\t":
                    pad = 8 - col % 8
                    parts.append(" " * pad)
                    col += pad
                else:
                    parts.append(ch)
                    col += get_character_cell_size(ch)
            text = "".join(parts)
        else:
            col += cell_len(text)
        out.append(Segment(text, seg.style))
    return out


def fold(line: list[Segment], width: int, rows: int | None = None) -> list[list[Segment]]:
    """Return one line's segments as rows of at most `width` cells: itself when it fits, else folded.

    rows: the most rows it may take; None: CHANGED_ROWS for a diff's changed line, else ROWS.
    (See the module for how rows hang and how a cut is said.)
    """
    plain = "".join(seg.text for seg in line)
    if width <= 0 or len(plain) <= width // 2 or (len(plain) <= width and plain.isascii()):
        return [line]
    if cell_len(plain) <= width:
        return [line]
    if "\t" in plain:
        line = _expand_tabs(line)
        plain = "".join(seg.text for seg in line)
    ascii_ = plain.isascii()
    hang = _LEAD.match(plain).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    if rows is None:
        gutter = plain[: min(hang, 8)].strip()
        rows = CHANGED_ROWS if gutter in ("+", "-") else ROWS
    if cell_len(plain[:hang]) > width // 2:
        hang = 0
    room = width - cell_len(plain[:hang]) - len(MARK)
    if room < 8:  # too narrow to hang: continuation rows start at the left edge
        hang, room = 0, width - len(MARK)
    spans: list[tuple[int, int]] = []  # each row's characters
    marker = ""
    start = 0
    while start < len(plain):
        cells = width if not spans else room
        end = _take(plain, start, cells, ascii_)
        if len(spans) == rows - 1 and end < len(plain):
            # The last row: the marker says how much is left out. The count's own width moves
            # the cut; the count only shrinks from one step to the next, so it settles.
            left = len(plain) - start
            for _ in range(6):
                end = _take(plain, start, max(0, cells - len(_cut_marker(left, cells))), ascii_)
                if len(plain) - end == left:
                    break
                left = len(plain) - end
            marker = _cut_marker(len(plain) - end, cells)
            spans.append((start, end))
            break
        if end < len(plain):
            end = _break_at(plain, start, end)
        spans.append((start, end))
        start = end
    cells_at = (lambda i: i) if ascii_ else (lambda i: cell_len(plain[:i]))
    pieces = list(Segment.divide(line, [cells_at(e) for _, e in spans]))
    prefix = next(iter(Segment.divide(line, [cells_at(hang)])), []) if hang else []
    styles = [s.style for s in prefix if s.style]  # none: a plain line (`watch` echoes the run's output)
    lead = Style.combine(styles) if styles else None
    out: list[list[Segment]] = []
    for n, piece in enumerate(pieces[: len(spans)]):
        row = list(piece) if n == 0 else [*prefix, Segment(MARK, lead + _DIM if lead else _DIM), *piece]
        out.append(row)
    if marker:
        out[-1].append(Segment(marker, _BOLD))
    return out
