"""Long lines folded to the terminal's width, never cut silently.

The stream's lines (a pass, a diff line of IR, a `done:` line) are written as they are
when the output is a file or a pipe. On a terminal a line wider than it is folded:
its continuation rows hang under the line's text (after a diff line's gutter and the
IR's own indentation) behind a `↪` marker, broken at a space when one is in the
row's second half. A line that would take more rows than it may (4; a changed line of a
diff 12, as what changed is often at its end) is cut on the last with `… +N chars`, saying how much is not shown (the report and `tltrace show --pass`
piped to a file have it whole). Widths are terminal cells, so wide characters count twice.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text

from .table import ELLIPSIS

MARK = "\u21aa "  # ↪: this row continues the line above
# Rows one line may take before the rest is cut (an 8 KB constant table is not a screenful).
ROWS = 4
CHANGED_ROWS = 12

_LEAD = re.compile(r" *(?:[-+~] *)?")  # indentation, a diff line's gutter, the IR's own indentation


def _take(text: str, start: int, cells: int) -> int:
    """Return the offset after the most characters from `start` that fit in `cells` terminal cells."""
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


def fold(line: Text, width: int, rows: int | None = None) -> list[Text]:
    """Return `line` as rows of at most `width` cells: itself when it fits, else folded (see the module).

    rows: the most rows it may take; None: CHANGED_ROWS for a diff's changed line, else ROWS.
    """
    if "\t" in line.plain:
        line = line.copy()
        line.expand_tabs(8)
    plain = line.plain
    if width <= 0 or cell_len(plain) <= width:
        return [line]
    hang = _LEAD.match(plain).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    if rows is None:
        gutter = plain[: min(hang, 8)].strip()
        rows = CHANGED_ROWS if gutter in ("+", "-") else ROWS
    if cell_len(plain[:hang]) > width // 2:
        hang = 0
    room = width - cell_len(plain[:hang]) - len(MARK)
    if room < 8:  # too narrow to hang: continuation rows start at the left edge
        hang, room = 0, width - len(MARK)
    out: list[Text] = []
    start = 0
    while start < len(plain):
        last = len(out) == rows - 1
        cells = width if not out else room
        end = _take(plain, start, cells)
        if last and end < len(plain):
            # The last row: the marker says how much is left out. The count's own width moves
            # the cut; the count only shrinks from one step to the next, so it settles.
            left = len(plain) - start
            for _ in range(6):
                end = _take(plain, start, max(0, cells - len(_cut_marker(left, cells))))
                if len(plain) - end == left:
                    break
                left = len(plain) - end
            row = _row(line, hang, start, end, first=not out)
            row.append(_cut_marker(len(plain) - end, cells), style="bold")
            out.append(row)
            return out
        if end < len(plain):
            end = _break_at(plain, start, end)
        out.append(_row(line, hang, start, end, first=not out))
        start = end
    return out


def _cut_marker(left: int, cells: int) -> str:
    """Return the end of a cut row: how many characters are not shown (just `…` when too narrow)."""
    marker = f" {ELLIPSIS} +{left} chars"
    return marker if len(marker) < cells // 2 else ELLIPSIS


def _row(line: Text, hang: int, start: int, end: int, *, first: bool) -> Text:
    if first:
        return line[start:end]
    row = line[:hang]  # the indentation and gutter, styled as the line (a red `-`, a green `+`)
    row.append(MARK, style="dim")
    row.append_text(line[start:end])
    return row


def fold_lines(texts: list[Text], width: int | None) -> list[Text]:
    """Return the lines of `texts` (each may hold several) folded to `width`; None: `texts` as they are."""
    if not width:
        return texts
    out: list[Text] = []
    for text in texts:
        for line in text.split("\n", allow_blank=True) if "\n" in text.plain else [text]:
            out.extend(fold(line, width))
    return out
