"""ncu's own views of a report, read from the CSV ncu prints: the oracles of the hot-lines tests."""

from __future__ import annotations

import csv
from collections import Counter, defaultdict


def ncu_view(
    text: str,
) -> tuple[dict[tuple[str, int], int], dict[int, set[tuple[str, int]]], dict[int, int]]:
    """ncu's per-line view: {(file, line): samples}, {address: the lines it is listed under}, {address: samples}."""
    totals: dict[tuple[str, int], int] = {}
    under: dict[int, set[tuple[str, int]]] = defaultdict(set)
    per_addr: dict[int, int] = {}
    path, cur, back = None, None, 0
    for raw in text.splitlines():  # ncu leaves quotes in source lines unescaped: one physical line a row
        row = next(csv.reader([raw]))
        if row and row[0] == "File Path":
            path = row[1]
        elif row and row[0] == "Line No":  # the samples' column, counted from the end of a row
            back = len(row) - row.index("Warp Stall Sampling (All Samples)")
        elif row and row[0].isdigit():
            cur = (path, int(row[0]))
            totals[cur] = int(row[-back])
        elif len(row) > 3 and row[0] == "" and row[2].startswith("0x"):
            under[int(row[2], 16)].add(cur)  # type: ignore[arg-type]
            per_addr[int(row[2], 16)] = int(row[-back])
    return totals, under, per_addr


def expected_cuda(
    ncu: dict[int, int], under: dict[int, set], ours: dict[int, tuple], samples: dict[int, int]
) -> tuple[Counter, int, int]:
    """Per kernel.cu line, what folding should give: ncu's line total, plus the samples of instructions ncu
    lists under no kernel.cu line (inlined from a header: tltrace's SASS map follows the chain out), moved
    for the PCs whose kernel.cu line ncu's table puts elsewhere. Returns (that, moved out of headers, elsewhere)."""
    expect = Counter(ncu)
    moved = other = 0
    for off, lines in under.items():
        cu = {ln for f, ln in lines if f.endswith(".cu")}
        mine = ours[off][0]
        if cu == {mine}:
            continue
        s = samples.get(off, 0)
        expect[mine] += s
        if not cu:
            moved += s
            continue
        other += s
        for ln in cu:
            expect[ln] -= s
    return expect, moved, other
