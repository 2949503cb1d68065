"""Tables that fit the terminal: every table tltrace prints goes through `fit`.

A table is columns and rows of (text, style) cells. When the rows are wider than
the terminal, columns a reader can do without go first (each column says how
soon: `drop`), then the columns that may be cut are cut, widest first, down to
their `min_width`; a column with drop=0 and no cut (a handle you type next, a
status) is never touched. Signatures are cut by `distinct_cut`, which drops
first what every row shares, so two compiles that differ only in their tail
still read differently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.text import Text

from .fold import ELLIPSIS

Cell = tuple[str, str]  # (text, style)
Cut = Callable[[str, int], str]


def cut_end(text: str, width: int) -> str:
    """Return text cut to width at its end, marked with an ellipsis."""
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS if width > 0 else ""


def cut_middle(text: str, width: int) -> str:
    """Return text cut to width in its middle (paths, ids: both ends tell things apart)."""
    if len(text) <= width:
        return text
    if width < 5:
        return cut_end(text, width)
    head = (width - 1) // 2
    return text[:head] + ELLIPSIS + text[len(text) - (width - 1 - head) :]


def distinct_cut(values: Sequence[str]) -> Cut:
    """Return a cut for one column of signatures: words every row shares go first, then the end.

    `add 1024 f32 grid 16 thr 64 #a1b2c3` beside `add 2048 f32 grid 32 thr 64 #d4e5f6`
    cut to 20 columns reads `add 1024 16 #a1b2c3`: the kernel (the first word) and
    what tells the rows apart are kept, the shared dtype and thread count are left out.
    """
    split = [v.split(" ") for v in values if v]
    common: set[tuple[int, str]] = set()
    if len(split) > 1:
        n = min(len(s) for s in split)
        common = {(i, split[0][i]) for i in range(1, n) if all(s[i] == split[0][i] for s in split)}
    # Words naming a field (grid, thr, smem) whose value is shared go with it.
    keyed = {"grid", "thr", "smem"}

    def cut(text: str, width: int) -> str:
        if len(text) <= width:
            return text
        words = text.split(" ")
        keep = [True] * len(words)
        for i in range(len(words) - 1, 0, -1):  # shared words, from the right
            if (i, words[i]) in common:
                keep[i] = False
                if i > 0 and words[i - 1] in keyed:
                    keep[i - 1] = False
            if len(" ".join(w for w, k in zip(words, keep) if k)) <= width:
                break
        for i in range(1, len(words)):  # a field name whose value stays keeps its value's meaning
            if keep[i] and words[i] in keyed and not (i + 1 < len(words) and keep[i + 1]):
                keep[i] = False
        short = " ".join(w for w, k in zip(words, keep) if k)
        if len(short) <= width:
            return short
        # Still too wide: keep the kernel and the hash (the end tells siblings apart), cut between.
        if words[-1].startswith("#") and len(words) > 1 and keep[-1]:
            tail = " " + words[-1]
            return cut_end(short[: len(short) - len(tail)], width - len(tail)) + tail
        return cut_end(short, width)

    return cut


@dataclass(frozen=True)
class Column:
    """One column: its header, how it is justified, when it goes, and how it is cut."""

    header: str
    justify: str = "left"  # left | right
    drop: int = 0  # 0: never dropped; otherwise the higher, the sooner it goes
    cut: Cut | None = None  # None: never cut
    min_width: int = 6
    cut_first: bool = False  # a droppable column that goes only after the cuttable ones are cut


def fit(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    width: int | None,
    *,
    gap: int = 2,
    rule: bool = True,
) -> list[Text]:
    """Return the table's lines (header, rule, rows) no wider than `width` (None: as wide as they are).

    A cell is one line: its text goes through `visible(..., one_line=True)` (render/visible.py).
    """
    from .visible import visible

    rows = [[(visible(str(text), one_line=True), style) for text, style in r] for r in rows]
    ncol = len(columns)
    natural = [max([len(columns[k].header)] + [len(r[k][0]) for r in rows]) for k in range(ncol)]
    shown = list(range(ncol))
    widths = list(natural)

    def total() -> int:
        return sum(widths[k] for k in shown) + gap * (len(shown) - 1)

    def cut() -> None:
        assert width is not None
        while total() > width:
            cuttable = [
                k
                for k in shown
                if columns[k].cut is not None
                and widths[k] > max(columns[k].min_width, len(columns[k].header))
            ]
            if not cuttable:
                break
            k = max(cuttable, key=lambda c: widths[c])
            floor = max(columns[k].min_width, len(columns[k].header))
            widths[k] = max(floor, widths[k] - (total() - width))

    if width is not None:
        droppable = sorted((k for k in range(ncol) if columns[k].drop), key=lambda k: (-columns[k].drop, -k))
        for k in droppable:
            if total() <= width:
                break
            if columns[k].cut_first:
                continue
            shown.remove(k)
        cut()
        for k in droppable:  # the columns worth a cut: they go last
            if total() <= width:
                break
            if columns[k].cut_first:
                shown.remove(k)
                cut()
    last = shown[-1] if shown else -1

    def line(cells: Sequence[Cell], bold: bool = False) -> Text:
        t = Text()
        for n, k in enumerate(shown):
            text, style = cells[k]
            col = columns[k]
            if len(text) > widths[k]:
                text = (col.cut or cut_end)(text, widths[k])
                text = text[: widths[k]]
            if n:
                t.append(" " * gap)
            if col.justify == "right":
                text = text.rjust(widths[k])
            elif k != last:
                text = text.ljust(widths[k])
            t.append(text, style="bold" if bold else style)
        t.rstrip()
        return t

    out = [line([(c.header, "") for c in columns], bold=True)]
    if rule:
        out.append(Text((" " * gap).join("-" * widths[k] for k in shown), style="dim"))
    out.extend(line(r) for r in rows)
    return out
