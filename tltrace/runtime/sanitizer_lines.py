"""compute-sanitizer's errors named at the user's Python lines, through the invocation's records.

An error names a kernel (`main_kernel`), a line of the .cu TileLang compiled (a temporary file
that is gone by now) and the instruction's offset. The compile is found by the kernel's name in
each run's recorded device source (the text TileLang compiled); that source's line goes through
the codegen's source map to the Python line (history/byline.back, what `show --cuda-line` says).
With a SASS stage (`run --sass`), the offset is looked up in the stored SASS too: its kernel.cu
line must be the one compute-sanitizer named, and a disagreement is said on the error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import TltraceError
from ..format.records import CODEGEN, PassRecord
from ..history import byline, runs
from ..stages import sass as sass_text
from .sanitizer_parse import Group, span


@dataclass(frozen=True)
class Named:
    """A group of identical errors, and where they are: the compile, its CUDA and Python lines."""

    group: Group
    run: runs.Run | None = None
    candidates: int = 0  # compiles of the invocation that define the kernel
    cuda: str | None = None  # the text of the device source's line
    python: dict[str, Any] | None = None  # {"file", "line", "text"}
    sass: dict[str, Any] | None = None  # {"line": kernel.cu line at the pc, "agrees": bool}
    note: str | None = None

    def to_json(self, tool: str) -> dict[str, Any]:
        g, r = self.group, self.group.first
        out: dict[str, Any] = {
            "tool": tool,
            "kind": r.kind,
            "level": r.level,
            "what": g.what(),
            "text": r.text,
            "space": r.space,
            "direction": r.direction,
            "size": r.size,
            "error": r.error,
            "address": r.address,
            "count": g.count,
            "threads": span(g.threads) if g.threads else None,
            "blocks": span(g.blocks) if g.blocks else None,
            "n_blocks": g.n_blocks,
            "kernel": r.func,
            "pc": None if r.pc is None else f"{r.pc:#x}",
            "cuda_line": r.line,
            "cuda": self.cuda,
            "python": self.python,
            "sass": self.sass,
            "run_id": self.run.run_id if self.run is not None else None,
            "candidates": self.candidates,
            "launch": None if r.launch is None else {"file": r.launch[0], "line": r.launch[1]},
            "note": self.note,
        }
        return out


def _device(run: runs.Run, role: str) -> tuple[PassRecord, str] | None:
    """The run's last codegen record of `role` (device, sass) and its text."""
    m = run.manifest
    if m is None:
        return None
    recs = [r for r in m.records if r.status == CODEGEN and (r.role or "device") == role and r.after_hash]
    if not recs:
        return None
    text = runs.text_of(run.path, recs[-1], "after", errors="surrogateescape")
    return (recs[-1], text) if text is not None else None


def defines(source: str, func: str) -> bool:
    """True when the CUDA source defines the __global__ function `func`."""
    return re.search(r"__global__\b[^;{(]*\b" + re.escape(func) + r"\s*\(", source) is not None


def sass_line_at(sass: str, func: str, pc: int) -> int | None:
    """Return the kernel.cu line of the instruction at offset `pc` of `func` in a stored SASS text."""
    lines = sass.split("\n")
    cu = sass_text.cu_lines(sass)
    inside = False
    mark = f"/*{pc:04x}*/"
    for i, line in enumerate(lines):
        if line.startswith(".text."):
            inside = line.rstrip(":").strip() == f".text.{func}"
        elif inside and line.strip().startswith(mark):
            return cu[i]
    return None


def name(group: Group, compiles: list[runs.Run]) -> Named:
    """Return the group named at its compile's Python line (a note, and no line, when it cannot be)."""
    r = group.first
    if r.func is None:
        return Named(group)
    found = []
    for run in compiles:
        dev = _device(run, "device")
        if dev is not None and defines(dev[1], r.func):
            found.append(run)
    if not found:
        return Named(group, note=f"no traced compile of this invocation defines {r.func}")
    run = found[-1]  # the newest: compute-sanitizer names no compile; several define it only at several sizes
    note = f"{len(found)} compiles define {r.func}; the newest is named" if len(found) > 1 else None
    sass = _sass(run, r.func, r.pc, r.line)
    line = r.line if r.line is not None else (sass or {}).get("line")
    if line is None:
        why = "compute-sanitizer named no CUDA line (no -lineinfo), and no SASS stage (run --sass) has its pc"
        return Named(group, run, len(found), note=note or why)
    if r.line is None:
        note = f"kernel.cu:{line} from the SASS stage at pc {r.pc:#x} (compute-sanitizer named no line)"
    try:
        back = byline.back(run, "cuda", line)
    except TltraceError as exc:
        return Named(group, run, len(found), note=str(exc))
    py = None
    if back["src"] is not None:
        py = {"file": back["src"]["file"], "line": back["src"]["line"], "text": back["python"]}
    return Named(group, run, len(found), back["text"], py, sass if r.line is not None else None, note)


def _sass(run: runs.Run, func: str, pc: int | None, line: int | None) -> dict[str, Any] | None:
    """The SASS stage's kernel.cu line at `pc`, and whether it is compute-sanitizer's `line` (None: no stage)."""
    stage = _device(run, "sass") if pc is not None else None
    if stage is None or pc is None:
        return None
    at = sass_line_at(stage[1], func, pc)
    return {"line": at, "agrees": at == line}


def name_all(groups: list[Group], compiles: list[runs.Run]) -> list[Named]:
    return [name(g, compiles) for g in groups]
