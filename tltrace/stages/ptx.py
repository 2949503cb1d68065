"""The kernel.cu line behind each line of a PTX text, read off its `.file` and `.loc` directives.

Pure: text in, lines out. nvcc -lineinfo writes `.loc FILE LINE COL` before the
instructions of a source line; an inlined call adds `, function_name L, inlined_at F L C`,
one level at a time. The chain is followed out to the generated file (kernel.cu) through
the call sites seen so far, the latest one first.
"""

from __future__ import annotations

import re

CU_NAME = "kernel.cu"
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:.*?\binlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
_FUNC_START = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\b")


def cu_file(ptx: str, name: str = CU_NAME) -> int | None:
    """Return the `.file` index of the generated source (`name`, or a path ending in /name), else None."""
    for line in ptx.splitlines():
        m = _FILE.match(line) if ".file" in line else None
        if m and (m.group(2) == name or m.group(2).endswith("/" + name)):
            return int(m.group(1))
    return None


def is_instruction(line: str) -> bool:
    """Return True for a PTX instruction line (not a directive, label, brace, comment or blank)."""
    s = line.strip()
    return bool(s) and s[0] not in ".{}/$" and not s.endswith(":") and not s.startswith("//")


def loc_lines(ptx: str, name: str = CU_NAME) -> tuple[list[int | None], list[int]]:
    """Return (per 0-based line: its kernel.cu line or None, the 0-based indices of the `.loc` lines).

    A `.loc` line and the instructions after it (up to the next `.loc` or function) get the
    `.loc`'s kernel.cu line; every other line gets None.
    """
    lines = ptx.split("\n")
    cu = cu_file(ptx, name)
    out: list[int | None] = [None] * len(lines)
    locs: list[int] = []
    sites: dict[tuple[int, int, int], int | None] = {}  # a call site in a header -> its kernel.cu line
    cur: int | None = None
    for i, line in enumerate(lines):
        if ".loc" in line:
            m = _LOC.match(line)
            if m:
                f, ln, col = int(m.group(1)), int(m.group(2)), int(m.group(3))
                if m.group(4) is None:
                    cur = ln if f == cu else None
                else:
                    site = (int(m.group(4)), int(m.group(5)), int(m.group(6)))
                    cur = site[1] if site[0] == cu else sites.get(site)
                    sites[(f, ln, col)] = cur
                out[i] = cur
                locs.append(i)
                continue
        if _FUNC_START.match(line) or line.startswith("}"):
            cur = None
            continue
        if cur is not None and is_instruction(line):
            out[i] = cur
    return out, locs
