"""The PTX/SASS recorder: the device source built as TileLang's CUDA backend builds it, kept as stages.

A recorder (session/recorder.py) registered by tracing/recorders.py, on with `tltrace run
--ptx` / `--sass` (TLTRACE_PTX=1, TLTRACE_SASS=1; --sass records the PTX too). It keeps the
device codegen record's text and map as they are recorded (`recorded`, the worker), and when
the compile ends (`stages`, the same worker, after the compile has returned: only a compile
under Settings.wait waits for it; docs/usage.md) it builds the source
once with nvcc (toolchain/nvcc.build: the build --ptxas's machine facts reuse) and hands back
the PTX stage and, from the cubin, the SASS stage, each with its Python lines
(stages/maps.py). Nothing here can fail a compile: no toolchain, a failed build, each is one
notice per process, and the records stand without the stages.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from ..config import Settings
from ..format.records import CODEGEN, STAGE_ROLES, PassRecord, RunManifest
from ..session.recorder import Recorder, Stage
from ..toolchain import nvcc
from ..toolchain.nvcc import say_once
from . import maps, ptx, sass

Warn = Callable[[str], None]
PTX, SASS = STAGE_ROLES  # the records' names and roles

_ARCH = re.compile(r'"arch"\s*:\s*"([^"]+)"')  # as facts/tir.py reads it


def arch_of(codegen_input: str) -> str | None:
    """Return the target arch ("sm_90a") named in the IR handed to device codegen, else None."""
    m = _ARCH.search(codegen_input)
    return m.group(1) if m else None


class StagesRecorder(Recorder):
    """PTX and SASS stages of the device source (no manifest field: they are records)."""

    name = "PTX/SASS stages"

    def __init__(self, want_ptx: bool, want_sass: bool) -> None:
        self.want_ptx = want_ptx or want_sass
        self.want_sass = want_sass
        self.source: str | None = None
        self.cmap: Any = None
        self.arch: str | None = None
        self.configs: dict[str, Any] | None = None  # the build's pass configs (toolchain/nvcc.configs_now)

    def codegen(self, event: Any, call: Any) -> Any:
        # Compiling thread: a few reads of the PassContext, so that the build uses TileLang's flags
        # (and is the one build --ptxas's machine facts share).
        if self.configs is None and event.role != "host":
            self.configs = nvcc.configs_now()
        return None

    def recorded(self, record: PassRecord, before: str, after: str, extras: tuple[Any, Any]) -> None:
        if record.status == CODEGEN and record.role == "device" and record.after_file:
            self.source, self.cmap = after, extras[1]
            self.arch = arch_of(before)

    def stages(self, manifest: RunManifest) -> list[Stage] | None:
        if self.source is None:
            return None
        return build_stages(self.source, self.cmap, self.arch, self.want_sass, self.warn, self.configs)


def build_stages(
    source: str,
    cmap: Any,
    arch: str | None,
    want_sass: bool,
    warn: Warn,
    configs: dict[str, Any] | None = None,
) -> list[Stage]:
    """Return the PTX stage (and the SASS stage) of one device source; [] when there is no toolchain."""
    if not arch or not arch.startswith("sm_"):
        say_once(
            "arch",
            warn,
            f"--ptx/--sass: not a CUDA compile for an sm_ arch ({arch or 'none'}): no PTX or SASS stage",
        )
        return []
    t0 = time.perf_counter()
    try:
        b = nvcc.build(source, arch, configs=configs)
    except nvcc.Unavailable as exc:
        say_once("unavailable", warn, f"--ptx/--sass: {exc}; no PTX or SASS stage")
        return []
    except Exception as exc:
        say_once("build", warn, f"--ptx/--sass: the nvcc build failed, no PTX or SASS stage: {exc}")
        return []
    if b.ptx is None:
        say_once("no-ptx", warn, "--ptx/--sass: nvcc kept no PTX; no PTX or SASS stage")
        return []
    cu, _ = ptx.loc_lines(b.ptx)
    seconds = (
        b.seconds if time.perf_counter() - t0 > 0.5 * b.seconds else 0.0
    )  # a shared build costs nothing here
    out = [Stage(PTX, source, b.ptx, "ptx", PTX, b.tool, seconds, (cmap, maps.through(cu, cmap)))]
    if not want_sass:
        return out
    if b.cubin is None:
        say_once("no-cubin", warn, "--sass: nvcc wrote no cubin; no SASS stage")
        return out
    t1 = time.perf_counter()
    try:
        text, tool = sass.disassemble(b.cubin)
    except sass.Unavailable as exc:
        say_once("no-sass", warn, f"--sass: {exc}")
        return out
    except Exception as exc:
        say_once("sass", warn, f"--sass: the disassembly failed, no SASS stage: {exc}")
        return out
    smap = maps.through(sass.cu_lines(text), cmap)
    pmap = out[0].maps[1]
    out.append(Stage(SASS, b.ptx, text, "sass", SASS, tool, time.perf_counter() - t1, (pmap, smap)))
    return out


def make(settings: Settings) -> StagesRecorder | None:
    """The factory tracing/recorders.py registers: a recorder when --ptx or --sass is on, else None."""
    # --ptxas alone records no stage: its build runs after the compile returns, where a stage
    # would make the compile wait for nvcc. With --ptx too, the two share one nvcc run.
    want_ptx, want_sass = settings.ptx, settings.sass
    return StagesRecorder(want_ptx, want_sass) if (want_ptx or want_sass) else None
