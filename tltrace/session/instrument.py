"""A standalone TVM PassInstrument that feeds a TraceSession: capture for plain TVM pipelines.

`tltrace.create_pass_instrument()` (api/trace.py) returns an instance; each `with
PassContext(instruments=[...])` block becomes one run, recorded like a TileLang compile.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..config import Settings

_instrument_classes: dict[int, type] = {}


def instrument_class(tvm: Any) -> type:
    """Build (once per TVM module) the PassInstrument class that feeds a TraceSession."""
    cls = _instrument_classes.get(id(tvm))
    if cls is not None:
        return cls
    from .capture import UNSCOPED, OpenPass, TraceSession

    def phase_now() -> str:
        mod = sys.modules.get("tilelang.instrumentation.events")
        try:
            return (mod.current_pass_phase() if mod is not None else None) or UNSCOPED
        except Exception:
            return UNSCOPED

    @tvm.instrument.pass_instrument
    class TltracePassInstrument:
        """Pairs TVM's before/after callbacks into tltrace records; one run per PassContext."""

        def __init__(self, settings: Settings, emit: Any, name: str | None = None) -> None:
            self.settings = settings
            self.emit = emit
            self.kernel = name or "pass_context"
            self.session: TraceSession | None = None
            self.stack: list[OpenPass] = []
            self.last_run_dir: Path | None = None

        def enter_pass_ctx(self) -> None:
            self.session = TraceSession(self.settings, self.emit, session_name=self.kernel, background=True)
            self.stack = []

        def exit_pass_ctx(self) -> None:
            s = self.session
            if s is None:
                return
            error = sys.exc_info()[1] if self.stack else None
            unfinished = bool(self.stack)
            while self.stack:
                p = self.stack.pop()
                p = replace(p, phase=phase_now())
                s.record_pass(
                    p, None, time.perf_counter() - p.start, error=error, pending_error=error is None
                )
            if unfinished and error is None:
                error = RuntimeError("a pass did not complete")
            s.finish(error)
            s.wait()  # the caller may read the run as soon as the PassContext ends
            if s.store is not None:
                self.last_run_dir = s.store.run_dir
            self.session = None

        def run_before_pass(self, mod: Any, info: Any) -> None:
            s = self.session
            if s is None or s.broken:
                return
            if not self.stack:
                s.inflight.mark("in", str(info.name))  # session/fatal.py
            try:
                parent = self.stack[-1].index if self.stack else None
                before = s.capture(mod)
                s.resolve(before)
                p = OpenPass(
                    str(info.name), s.next_index(), len(self.stack), parent, None, time.perf_counter(), before
                )
                self.stack.append(p)
            except Exception as exc:
                s._guard(f"capturing the IR before {info.name}", exc)

        def run_after_pass(self, mod: Any, info: Any) -> None:
            s = self.session
            if s is None or s.broken or not self.stack:
                return
            p = self.stack.pop()
            duration = time.perf_counter() - p.start
            try:
                after = s.capture(mod)
            except Exception as exc:
                s._guard(f"capturing the IR after {p.name}", exc)
                return
            s.record_pass(replace(p, phase=phase_now()), after, duration)

    _instrument_classes[id(tvm)] = TltracePassInstrument
    return TltracePassInstrument


__all__ = ["instrument_class"]
