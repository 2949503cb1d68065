"""A stage's Python lines: each line's kernel.cu line, looked up in the CUDA source's map.

Pure. The CUDA map (sourcemap/lines.py's, recorded with the device codegen) gives the
Python line of each generated line; a PTX or SASS line gets the one of its kernel.cu line.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..format.sourcemap import LineMap, Loc


def through(cu: Sequence[int | None], cmap: LineMap | None) -> LineMap | None:
    """Return the map of a stage text whose lines have the kernel.cu lines `cu` (None: no map to go through)."""
    if cmap is None:
        return None
    lines: list[Loc] = []
    for n in cu:
        if n is None:
            lines.append(None)
            continue
        v = cmap.lines[n - 1] if 0 < n <= len(cmap.lines) else None
        lines.append(v if isinstance(v, tuple) else 0)
    return LineMap(
        cmap.files,
        tuple(lines),
        frozenset(i for i, n in enumerate(cu) if n is not None and (n - 1) in cmap.inferred),
    )


def coverage(
    lmap: LineMap | None, rows: Sequence[int], inside: set[tuple[str, int]] | None = None
) -> dict[str, int]:
    """Return {total, mapped, inside, outside} over the 0-based `rows` of a stage text.

    mapped: rows with a Python line; with `inside` (the (file, line)s of the kernel's body),
    how many of those fall in it and how many in the same files outside it.
    """
    total = len(rows)
    mapped = ins = out = 0
    files = {f for f, _ in inside} if inside else set()
    for i in rows:
        src = lmap.src(i) if lmap is not None else None
        if src is None:
            continue
        mapped += 1
        if inside is not None:
            if src in inside:
                ins += 1
            elif src[0] in files:
                out += 1
    return {"total": total, "mapped": mapped, "inside": ins, "outside": out}
