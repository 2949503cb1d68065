"""A profile kept beside the compile it measured: `ncu.json` (and the report, `ncu.ncu-rep`) in the run directory.

- `attach`: which compile each profiled kernel came from. A compile's generated CUDA defines
  the kernel (`__global__ void NAME(`); when several compiles of the invocation define it (two
  shapes of one kernel, an autotuner's configs), the one whose SASS (run --sass) matches the
  measured instructions at their offsets is taken, and the note says which of how many.
- `store`: the launches of one compile written as `ncu.json` (plain JSON, the dumper's
  shape: runtime/_ncu_dump.py, and `report`, `note`).
- `load_compile`, `read_profile`, `hot_lines`: read back by history/hotlines.py (the report
  reads them too, and history/ cannot import runtime/), kept here under their old names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..format.layout import NCU_PROFILE, NCU_REPORT
from ..fs.atomic import atomic_write
from ..history import hot
from ..history.hotlines import Compile, hot_lines, load_compile, read_profile

__all__ = [
    "PROFILE",
    "REPORT",
    "Attached",
    "Compile",
    "attach",
    "hot_lines",
    "load_compile",
    "read_profile",
    "store",
]

PROFILE, REPORT = NCU_PROFILE, NCU_REPORT


@dataclass(frozen=True)
class Attached:
    compile: Compile
    kernel: str
    actions: tuple[dict[str, Any], ...]
    note: str | None  # which of several compiles, when it had to choose


def attach(profile: dict[str, Any], compiles: list[Compile]) -> tuple[list[Attached], list[str]]:
    """Return each profiled kernel's launches with the compile they came from, and the kernels none defines."""
    by_kernel: dict[str, list[dict[str, Any]]] = {}
    for a in profile.get("actions", []):
        by_kernel.setdefault(str(a.get("kernel")), []).append(a)
    out: list[Attached] = []
    unmatched: list[str] = []
    for kernel, actions in by_kernel.items():
        cands = [c for c in compiles if kernel in c.kernels()]
        if not cands:
            unmatched.append(kernel)
            continue
        note = None
        if len(cands) > 1:
            pcs = hot.merged(actions)
            scores = [
                hot.agreement(pcs, hot.sass_offsets(c.sass, kernel))[0] if c.sass else -1 for c in cands
            ]
            best = cands[scores.index(max(scores))]
            note = f"{len(cands)} compiles define {kernel}: {best.run_dir.name} matched by its SASS"
            if max(scores) <= 0:
                note = f"{len(cands)} compiles define {kernel} and no SASS tells them apart: {best.run_dir.name} taken"
            cands = [best]
        out.append(Attached(cands[0], kernel, tuple(actions), note))
    return out, unmatched


def store(
    run_dir: Path, kernel_actions: dict[str, list[dict[str, Any]]], source: str, notes: list[str]
) -> Path:
    """Write a compile's launches as `ncu.json`; return its path."""
    actions = [a for acts in kernel_actions.values() for a in acts]
    data = {
        "version": 1,
        "tool": "ncu",
        "source": source,
        "report": REPORT,
        "notes": notes,
        "actions": actions,
    }
    path = Path(run_dir) / PROFILE
    atomic_write(path, json.dumps(data).encode())
    return path
