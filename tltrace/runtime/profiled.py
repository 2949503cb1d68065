"""A profile kept beside the compile it measured: `ncu.json` (and the report, `ncu.ncu-rep`) in the run directory.

- `attach`: which compile each profiled kernel came from. A compile's generated CUDA defines
  the kernel (`__global__ void NAME(`); when several compiles of the invocation define it (two
  shapes of one kernel, an autotuner's configs), the one whose SASS (run --sass) matches the
  measured instructions at their offsets is taken, and the note says which of how many.
- `store`: the launches of one compile written as `ncu.json` (plain JSON, the dumper's
  shape: runtime/_ncu_dump.py, and `report`, `note`).
- `hot_lines`: a compile's hot lines (runtime/hot.py) from its `ncu.json`, its SASS stage,
  its device source, the source map and the Python sources kept in the run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RecordsError
from ..format.layout import NCU_PROFILE, NCU_REPORT
from ..format.records import CODEGEN
from ..fs import safe_read
from ..fs.atomic import atomic_write
from ..history import sourcemaps
from ..history.loading import load_run
from ..history.runs import text_of
from . import hot

PROFILE, REPORT = NCU_PROFILE, NCU_REPORT
_GLOBAL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


@dataclass
class Compile:
    """The texts of one recorded compile that hot lines read."""

    run_dir: Path
    cu: str | None  # the device source (kernel.cu)
    sass: str | None  # the SASS stage (run --sass)
    cmap: Any  # the device source's LineMap
    sources: dict[str, str]  # the Python sources kept at capture

    def kernels(self) -> set[str]:
        """Return the names of the __global__ functions the device source defines."""
        return set(_GLOBAL.findall(self.cu or ""))


def load_compile(run_dir: Path) -> Compile:
    """Return a run directory's device source, SASS stage, map and sources (None where not recorded)."""
    run = load_run(Path(run_dir))
    if run.manifest is None:
        raise RecordsError(f"{run_dir}: no readable manifest")
    gen = {r.role or "device": r for r in run.manifest.records if r.status == CODEGEN and r.after_file}
    maps = sourcemaps.load(run.path)
    dev = gen.get("device")
    cu = text_of(run.path, dev, "after", errors="surrogateescape") if dev else None
    sass = text_of(run.path, gen["sass"], "after", errors="surrogateescape") if "sass" in gen else None
    cmap = maps.of(dev.index, "after") if dev else None
    return Compile(run.path, cu, sass, cmap, dict(maps.sources))


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


def read_profile(run_dir: Path) -> dict[str, Any] | None:
    """Return a run directory's `ncu.json`, or None when it has none; raises RecordsError when damaged."""
    path = Path(run_dir) / PROFILE
    try:
        data = json.loads(safe_read.read_text(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise RecordsError(f"{path}: not a readable profile ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("actions"), list):
        raise RecordsError(f"{path}: not a profile tltrace wrote")
    return data


def hot_lines(run_dir: Path) -> list[dict[str, Any]]:
    """Return the hot lines of each kernel profiled in one compile (runtime/hot.fold's, with `launches`)."""
    data = read_profile(run_dir)
    if data is None:
        raise RecordsError(
            "no Nsight Compute profile for this compile; run the script with 'tltrace run --ncu' (on a GPU)"
        )
    c = load_compile(run_dir)
    by_kernel: dict[str, list[dict[str, Any]]] = {}
    for a in data["actions"]:
        if isinstance(a, dict) and isinstance(a.get("pcs"), list):
            by_kernel.setdefault(str(a.get("kernel")), []).append(a)
    out = []
    for kernel, actions in by_kernel.items():
        res = hot.fold(hot.merged(actions), c.cmap, c.sass, kernel, c.cu, c.sources)
        res["launches"] = len(actions)
        res["notes"] = list(data.get("notes") or [])
        out.append(res)
    return out
