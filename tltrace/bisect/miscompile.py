"""A wrong answer on demand: make one named TileLang pass miscompile, for tests and demonstrations.

`tltrace bisect` finds the pass that makes a kernel wrong. To try it (or test it) on a
kernel with no known bug, a script makes one pass "miscompile" on purpose:

    from tltrace.bisect import miscompile
    miscompile.miscompile_from_env()    # TLTRACE_MISCOMPILE=LoopUnswitching, say

or `miscompile.miscompile("LoopUnswitching")`. It registers a tool through TileLang's
public seam (`tilelang.instrumentation.register_pass_instrumentation_tool`), nothing is
patched: right after each top-level pass of that name runs, the tool's instrument rewrites
the module the pass returned, turning the first floating-point `a + b` into `a - b` (or,
with no such add, the first floating-point constant c into c + 1). The corruption belongs
to the pass: tltrace records it as the pass's output, and a compile that skips the pass
is not corrupted. The name is matched as `tltrace show --pass` matches one (exact, any
case, or the end of a dotted name: `BindTarget` for `tirx.BindTarget`); `NAME#k` corrupts
only the k-th top-level pass of that name in a compile (1-based).

`NAME?CONFIG` (or `miscompile(NAME, when_config=CONFIG)`) corrupts only while the pass
config CONFIG is set to a true value in the PassContext the pass runs in: a kernel that is
wrong only when a config is on, for `tltrace bisect --configs`.
"""

from __future__ import annotations

import os
import re
from typing import Any

ENV = "TLTRACE_MISCOMPILE"
TOOL_NAME = "tltrace-miscompile"

__all__ = ["ENV", "miscompile", "miscompile_from_env", "stop"]


def miscompile_from_env() -> str | None:
    """Call `miscompile` with TLTRACE_MISCOMPILE's value when it is set; return that value (else None)."""
    name = os.environ.get(ENV, "").strip()
    if not name:
        return None
    miscompile(name)
    return name


def miscompile(name: str, when_config: str | None = None) -> None:
    """From now on, every TileLang compile in this process corrupts the output of the top-level pass `name`
    (only while the pass config `when_config` is true, when given; `NAME?CONFIG` says the same)."""
    from tilelang.instrumentation import (  # type: ignore[import-not-found]
        PassInstrumentationTool,
        register_pass_instrumentation_tool,
    )
    from tvm.ir.instrument import pass_instrument  # type: ignore[import-not-found]

    m = re.fullmatch(r"([^#?]+?)(?:#(\d+))?(?:\?([A-Za-z0-9_.]+))?", name.strip())
    if not m or not m.group(1):
        raise ValueError(f"{name!r} is not a pass name (NAME, NAME#k, NAME?CONFIG)")
    wanted, k = m.group(1), int(m.group(2)) if m.group(2) else None
    config = when_config or m.group(3)

    @pass_instrument
    class Corrupt:
        def __init__(self, tool: Any) -> None:
            self.tool = tool
            self.depth = 0

        def enter_pass_ctx(self) -> None:
            self.depth = 0

        def run_before_pass(self, mod: Any, info: Any) -> None:
            self.depth += 1

        def run_after_pass(self, mod: Any, info: Any) -> None:
            self.depth -= 1
            if self.depth or not _same_pass(str(info.name), wanted):
                return
            self.tool.seen += 1
            if (k is None or self.tool.seen == k) and (config is None or _config_on(config)):
                _corrupt(mod)

    class MiscompileTool(PassInstrumentationTool):
        pass_instrument_priority = 0  # before tltrace's (1000): its record sees the corruption

        def __init__(self) -> None:
            self.seen = 0

        def create_pass_instrument(self) -> object | None:
            return Corrupt(self)

    register_pass_instrumentation_tool(TOOL_NAME, MiscompileTool)


def stop() -> None:
    """Compile correctly again (unregister the tool)."""
    from tilelang.instrumentation import unregister_pass_instrumentation_tool  # type: ignore

    unregister_pass_instrumentation_tool(TOOL_NAME)


def _config_on(name: str) -> bool:
    from tvm.ir.transform import PassContext  # type: ignore[import-not-found]

    value = PassContext.current().config.get(name)
    try:
        return bool(int(value)) if value is not None else False
    except (TypeError, ValueError):
        return bool(value)


def _same_pass(name: str, wanted: str) -> bool:
    return (
        name == wanted or name.lower() == wanted.lower() or name.rsplit(".", 1)[-1].lower() == wanted.lower()
    )


def _corrupt(mod: Any) -> bool:
    """Rewrite the first float add of `mod` into a subtraction (else bump the first float constant); in place."""
    try:
        from tvm import tirx as tir  # type: ignore[import-not-found]  # TileLang 0.1.15's TVM
    except ImportError:
        from tvm import tir  # type: ignore[import-not-found, no-redef]

    for kind in ("add", "const"):
        for gvar, func in list(mod.functions.items()):
            if not isinstance(func, tir.PrimFunc):
                continue
            done = [False]

            def rewrite(node: Any, kind: str = kind, done: list[bool] = done) -> Any:
                if done[0]:
                    return None
                if kind == "add" and isinstance(node, tir.Add) and "float" in str(node.dtype):
                    done[0] = True
                    return tir.Sub(node.a, node.b)
                if kind == "const" and isinstance(node, tir.FloatImm):
                    done[0] = True
                    return tir.FloatImm(node.dtype, float(node.value) + 1.0)
                return None

            body = tir.stmt_functor.ir_transform(func.body, None, rewrite, None)
            if done[0]:
                mod.update_func(gvar, func.with_body(body))
                return True
    return False
