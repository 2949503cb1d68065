"""A compile's hot lines read back: its `ncu.json` (runtime/profiled.py stores it) folded by history/hot.py.

- `load_compile`: the texts of one recorded compile that hot lines read (its device source,
  SASS stage, source map, Python sources, and the kernel.cu lines a pass dropped).
- `read_profile`: a run directory's `ncu.json`, or None.
- `hot_lines`: a compile's hot lines from its `ncu.json` (`show --hot`; the report's Source
  pane shades Python lines by them: history/report_reads.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RecordsError
from ..format.layout import NCU_PROFILE
from ..format.records import CHANGED, CODEGEN
from ..fs import safe_read
from ..sourcemap.dropped import PassText, Recovered, recover
from . import hot, sourcemaps
from .loading import load_run
from .runs import text_of

PROFILE = NCU_PROFILE
_GLOBAL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(")


@dataclass
class Compile:
    """The texts of one recorded compile that hot lines read."""

    run_dir: Path
    cu: str | None  # the device source (kernel.cu)
    sass: str | None  # the SASS stage (run --sass)
    cmap: Any  # the device source's LineMap
    sources: dict[str, str]  # the Python sources kept at capture
    recovered: dict[int, Recovered] = field(default_factory=dict)  # sourcemap/dropped.py

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
    passes = [
        PassText(
            text_of(run.path, r, "before", errors="surrogateescape") or "",
            maps.of(r.index, "before"),
            text_of(run.path, r, "after", errors="surrogateescape") or "",
            maps.of(r.index, "after"),
        )
        for r in run.manifest.records
        if r.status == CHANGED and r.before_file and r.after_file
    ]
    return Compile(run.path, cu, sass, cmap, dict(maps.sources), recover(passes, cu, cmap))


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
    """Return the hot lines of each kernel profiled in one compile (history/hot.fold's, with `launches`)."""
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
        res = hot.fold(hot.merged(actions), c.cmap, c.sass, kernel, c.cu, c.sources, c.recovered)
        res["launches"] = len(actions)
        res["notes"] = list(data.get("notes") or [])
        out.append(res)
    return out
