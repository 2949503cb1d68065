"""Nsight Compute's source page as CSV, read when ncu's Python module is missing (the fallback).

`ncu --import R --page source --print-source cuda,sass --csv` prints, per source file, the
file's path (`"File Path","..."`), the function, a header row, then each source line with
its totals and under it the SASS instructions it holds (an empty "Line No" cell, then
"Address", "Source" and the same metric columns). An instruction inlined from a header is
listed under several frames of its chain, so the same address can come several times; the
CSV does not say which is innermost, so a PC gets its line in the kernel's own .cu where ncu
lists it there, else the first line it is listed under. Only the first kernel of the report
is read (the fallback profiles one launch well; ncu's module reads them all). Pure: text in, the dumper's JSON shape out (runtime/_ncu_dump.py).
"""

from __future__ import annotations

import csv
from typing import Any

# The CSV's stall columns, spelled as the metric names' tails (smsp__pcsamp_warps_issue_stalled_*).
STALL_COLUMNS = {
    "stall_barrier": "barrier",
    "stall_branch_resolving": "branch_resolving",
    "stall_dispatch": "dispatch_stall",
    "stall_drain": "drain",
    "stall_imc": "imc_miss",
    "stall_lg": "lg_throttle",
    "stall_long_sb": "long_scoreboard",
    "stall_math": "math_pipe_throttle",
    "stall_membar": "membar",
    "stall_mio": "mio_throttle",
    "stall_misc": "misc",
    "stall_no_inst": "no_instructions",
    "stall_not_selected": "not_selected",
    "stall_selected": "selected",
    "stall_short_sb": "short_scoreboard",
    "stall_sleep": "sleeping",
    "stall_tex": "tex_throttle",
    "stall_wait": "wait",
}
SAMPLES, EXECUTED = "Warp Stall Sampling (All Samples)", "Instructions Executed"


def rows(text: str) -> list[list[str]]:
    """Return the CSV's rows, one per physical line: ncu does not escape the quotes in a source line
    (`"r"(0xFFFFFFFF));"`), so a row is never let to run on into the next line."""
    return [next(csv.reader([raw])) for raw in text.splitlines() if raw.strip()]


def cell(row: list[str], head: list[str], name: str) -> str:
    """Return `row`'s cell of column `name`, counted from the row's end (a broken source cell may have
    split in two; the metric columns after it stand)."""
    i = len(row) - len(head) + head.index(name)
    return row[i] if 0 <= i < len(row) else ""


def _int(cell: str) -> int:
    try:
        return int(float(cell))
    except ValueError:
        return 0


def line_totals(text: str) -> dict[tuple[str, int], int]:
    """Return ncu's own per-line view: {(file, line): warp-stall samples} of every source line row."""
    out: dict[tuple[str, int], int] = {}
    path: str | None = None
    head: list[str] = []
    for row in rows(text):
        if row[0] == "File Path" and len(row) > 1:
            path = row[1]
        elif row[0] == "Line No":
            head = row
        elif path is not None and row[0].isdigit() and SAMPLES in head:
            out[(path, int(row[0]))] = _int(cell(row, head, SAMPLES))
    return out


def parse(text: str, kernel_cu: str = ".cu") -> dict[str, Any]:
    """Return the dumper's JSON shape (one action) from `--print-source cuda,sass --csv` text.

    A PC listed under several lines gets the line of the file ending in `kernel_cu` (the
    kernel's generated source), else the first it is listed under.
    """
    kernel: str | None = None
    path: str | None = None
    line: int | None = None
    head: list[str] = []
    by_pc: dict[int, dict[str, Any]] = {}
    for row in rows(text):
        if row[0] == "File Path" and len(row) > 1:
            path = row[1]
        elif row[0] == "Function Name" and len(row) > 1:
            kernel = kernel or row[1]
        elif row[0] == "Line No":
            head = row
        elif row[0].isdigit():
            line = int(row[0])
        elif row[0] == "" and len(row) >= len(head) > 4 and row[2].startswith("0x"):
            pc = int(row[2], 16)
            if pc in by_pc and not (path or "").endswith(kernel_cu):
                continue
            stalls = {v: n for k, v in STALL_COLUMNS.items() if k in head and (n := _int(cell(row, head, k)))}
            by_pc[pc] = {
                "pc": pc,
                "sass": row[3].strip(),
                "file": path,
                "line": line,
                "samples": _int(cell(row, head, SAMPLES)),
                "inst": _int(cell(row, head, EXECUTED)),
                "stalls": stalls,
            }
    base = min(by_pc) if by_pc else 0
    pcs = []
    for pc in sorted(by_pc):
        r = by_pc[pc]
        r["offset"] = r.pop("pc") - base
        pcs.append(r)
    action = {"kernel": kernel, "function_pc": None, "grid": None, "block": None, "pcs": pcs}
    return {"version": 1, "source": "csv", "actions": [action] if pcs else []}
