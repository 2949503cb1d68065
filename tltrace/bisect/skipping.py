"""`tltrace bisect`'s skip set: top-level passes a step's compiles leave out, through the seam.

The bisector (tltrace/bisect/) runs each step as a traced child process with TLTRACE_BISECT
in its environment: the positions of the top-level passes to skip, and the kernels this
applies to. When tracing is installed, tracing/recorders.py reads the variable (one dict
lookup when it is unset) and `SkipTool` is registered next to the tracing tool, as a seam
tool of its own (session/recorder.register_tool): skipping a pass is answering TVM's
`should_run`, which TileLang's stacked instrument does not carry. TileLang makes one per compile session;
its instrument answers TVM's `should_run(mod, info)` with False for a top-level pass whose
position (0, 1, ... in the order the compile reaches its top-level passes, skipped ones
counted) is in the set. A skipped pass runs no callback of any instrument, so the tool
notes what it skipped in the compile's manifest (`skipped`: position, name, phase), which
`show` prints. Nothing of TileLang is patched.

`bisect --configs` passes pass configs the same way (`configs`: name -> value). The tool
applies them through the seam: around each backend pipeline (`pipeline_scope`) and each
codegen call (`run_codegen`) it enters a PassContext nested in the compile's own, with the
same opt level and the compile's config updated by the plan's, and fresh instruments of
the same compile session (as TileLang's nested helpers make them). The passes of the
pipeline, and the pipeline code that reads `PassContext.current().config`, see the flipped
values; what TileLang reads outside the pipelines (the pre-lowering semantic check, the
host/device split, the build's compiler flags) keeps the script's.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from ..session.configscope import configs_applied

ENV = "TLTRACE_BISECT"
TOOL_NAME = "tltrace-bisect"
_CONTEXT = "tltrace-bisect: configs"  # the nested PassContext's name
_VERSION = 1


@dataclass(frozen=True)
class SkipPlan:
    """Which top-level pass positions to skip, in the compiles of which kernels (None: every kernel)."""

    positions: frozenset[int]
    kernels: str | None = None
    configs: tuple[tuple[str, bool | int | float], ...] = field(default=())  # pass configs to set, sorted

    def to_env(self) -> str:
        """Return TLTRACE_BISECT's value for this plan."""
        data: dict[str, Any] = {"v": _VERSION, "skip": sorted(self.positions), "kernels": self.kernels}
        if self.configs:
            data["configs"] = dict(self.configs)
        return json.dumps(data)

    @classmethod
    def of(
        cls,
        positions: Iterable[int],
        kernels: str | None = None,
        configs: Mapping[str, bool | int | float] | None = None,
    ) -> SkipPlan:
        return cls(frozenset(int(p) for p in positions), kernels, tuple(sorted((configs or {}).items())))

    @classmethod
    def from_env(cls, text: str) -> SkipPlan:
        """Read TLTRACE_BISECT's value; raise ValueError when it is not one."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("v") != _VERSION:
            raise ValueError(f"{ENV} is not version {_VERSION} of tltrace's skip set")
        skip = data.get("skip")
        if not isinstance(skip, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in skip
        ):
            raise ValueError(f"{ENV}'s 'skip' is not a list of pass positions")
        kernels = data.get("kernels")
        if kernels is not None:
            if not isinstance(kernels, str):
                raise ValueError(f"{ENV}'s 'kernels' is not a regular expression")
            try:
                re.compile(kernels)
            except re.error as exc:
                raise ValueError(f"{ENV}'s 'kernels' is not a regular expression ({exc})") from None
        configs = data.get("configs", {})
        if not isinstance(configs, dict) or not all(
            isinstance(k, str) and isinstance(v, (bool, int, float)) for k, v in configs.items()
        ):
            raise ValueError(f"{ENV}'s 'configs' is not a map of pass config names to values")
        return cls(frozenset(skip), kernels, tuple(sorted(configs.items())))


def plan_in(environ: Mapping[str, str] | None = None) -> SkipPlan | None:
    """Return the skip set this process's compiles follow, or None (the normal trace path)."""
    text = (os.environ if environ is None else environ).get(ENV)
    return SkipPlan.from_env(text) if text else None


def tool_factory(environ: Mapping[str, str] | None = None) -> Callable[[], Any] | None:
    """TLTRACE_BISECT's skipping tool, as TileLang's tool factory (None when it is unset).

    Registered beside the tracing tool (tracing/recorders.py, session/recorder.register_tool):
    every later TileLang compile (of a matching kernel) skips the plan's passes."""
    plan = plan_in(environ)
    if plan is None:
        return None
    tool_cls = _tool_class()
    return lambda: tool_cls(plan)


def uninstall() -> None:
    try:
        from tilelang.instrumentation import unregister_pass_instrumentation_tool  # type: ignore

        unregister_pass_instrumentation_tool(TOOL_NAME)
    except Exception:
        pass


_TOOL: Any = None


def _tool_class() -> Any:
    """Return SkipTool, a subclass of TileLang's PassInstrumentationTool (made once, on first use)."""
    global _TOOL
    if _TOOL is not None:
        return _TOOL
    from tilelang.instrumentation import PassInstrumentationTool  # type: ignore[import-not-found]
    from tvm.ir.instrument import pass_instrument  # type: ignore[import-not-found]

    class SkipTool(PassInstrumentationTool):
        """One per compile session: counts its top-level passes and skips the planned ones."""

        pass_instrument_priority = -1000

        def __init__(self, plan: SkipPlan) -> None:
            self.plan = plan
            self.position = 0
            self.skipped: list[dict[str, Any]] = []
            self.names: list[str] = []  # every top-level pass reached, skipped or not
            self.applies: bool | None = None  # decided once the kernel's name is known

        def create_pass_instrument(self) -> object | None:
            if self.applies is None:
                from ..session.kernelfilter import kernel_name

                name = kernel_name()
                if self.plan.kernels is None:
                    self.applies = True
                elif name is not None:
                    self.applies = re.search(self.plan.kernels, name, re.IGNORECASE) is not None
            if self.applies is False:
                return None
            return SkipInstrument(self)

        def pipeline_scope(self, base_phase: str) -> Any:
            if not self.plan.configs or self.applies is False:
                return nullcontext()
            return configs_applied(dict(self.plan.configs), _CONTEXT)

        def run_codegen(self, event: Any, next_call: Callable[[], Any]) -> Any:
            if not self.plan.configs or self.applies is False:
                return next_call()
            with configs_applied(dict(self.plan.configs), _CONTEXT):
                return next_call()

        def skip(self, name: str) -> bool:
            """Return True when the next top-level pass (`name`) is to be skipped; count it either way."""
            pos = self.position
            self.position += 1
            self.names.append(name)
            if pos not in self.plan.positions:
                return False
            from tilelang.instrumentation import current_pass_phase  # type: ignore[import-not-found]

            self.skipped.append({"position": pos, "name": name, "phase": current_pass_phase() or "unscoped"})
            _note_skipped(self.skipped)
            return True

    @pass_instrument
    class SkipInstrument:
        def __init__(self, tool: Any) -> None:
            self.tool = tool
            self.depth = 0

        def enter_pass_ctx(self) -> None:
            self.depth = 0

        def should_run(self, mod: Any, info: Any) -> bool:
            if self.depth:
                return True  # a nested pass: its top-level pass runs, and so does it
            return not self.tool.skip(str(info.name))

        def run_before_pass(self, mod: Any, info: Any) -> None:
            self.depth += 1

        def run_after_pass(self, mod: Any, info: Any) -> None:
            self.depth = max(0, self.depth - 1)

    _TOOL = SkipTool
    return SkipTool


def _note_skipped(skipped: list[dict[str, Any]]) -> None:
    """Put the skipped passes so far into the manifest of this compile's trace (when it is traced)."""
    from tilelang.instrumentation import current_compile_pass_instrumentation  # type: ignore

    from ..session.tool import TltraceTool

    session = current_compile_pass_instrumentation()
    for tool in getattr(session, "tools", ()):
        inner = getattr(tool, "_inner", tool)  # the kernel filter holds the tracing tool
        if isinstance(inner, TltraceTool):
            inner.session.note(skipped=[dict(s) for s in skipped])
