"""A standalone TVM PassInstrument that feeds a TraceSession: capture for plain TVM pipelines.

`tltrace.create_pass_instrument()` (api.py) returns an instance; each `with
PassContext(instruments=[...])` block becomes one run, recorded like a TileLang compile.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from ..config import Settings

_instrument_classes: dict[int, type] = {}


def instrument_class(tvm: Any) -> type:
    """Build (once per TVM module) the PassInstrument class that feeds a TraceSession."""
    cls = _instrument_classes.get(id(tvm))
    if cls is not None:
        return cls
    from .tool import UNSCOPED, TraceSession

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
            self.stack: list[tuple[str, str, float, int, int, int | None]] = []
            self.last_run_dir: Path | None = None

        def enter_pass_ctx(self) -> None:
            self.session = TraceSession(self.settings, self.emit, session_name=self.kernel)
            self.stack = []

        def exit_pass_ctx(self) -> None:
            s = self.session
            if s is None:
                return
            error = sys.exc_info()[1] if self.stack else None
            while self.stack:
                pname, before, t0, idx, depth, parent = self.stack.pop()
                s.pass_record(
                    pname,
                    idx,
                    depth,
                    parent,
                    phase_now(),
                    before,
                    None,
                    time.perf_counter() - t0,
                    error,
                    pending_error=error is None,
                )
            if s.failed_pending and error is None:
                error = RuntimeError("a pass did not complete")
            s.finish(error)
            if s.store is not None:
                self.last_run_dir = s.store.run_dir
            self.session = None

        def run_before_pass(self, mod: Any, info: Any) -> None:
            s = self.session
            if s is None or s.broken:
                return
            try:
                parent = self.stack[-1][3] if self.stack else None
                text = s.text_of(mod)
                if s.manifest.input_hash is None:
                    s.note_input(mod, text)
                self.stack.append(
                    (str(info.name), text, time.perf_counter(), s.next_index(), len(self.stack), parent)
                )
            except Exception as exc:
                s._guard(f"capturing the IR before {info.name}", exc)

        def run_after_pass(self, mod: Any, info: Any) -> None:
            s = self.session
            if s is None or s.broken or not self.stack:
                return
            pname, before, t0, idx, depth, parent = self.stack.pop()
            try:
                after = s.text_of(mod)
            except Exception as exc:
                s._guard(f"capturing the IR after {pname}", exc)
                return
            s.pass_record(pname, idx, depth, parent, phase_now(), before, after, time.perf_counter() - t0)

    _instrument_classes[id(tvm)] = TltracePassInstrument
    return TltracePassInstrument


__all__ = ["instrument_class"]
