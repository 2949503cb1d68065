"""The TileLang seam: the instrumentation tool TileLang creates once per compile session.

TileLang creates one tool per compile session through the factory registered with
`tilelang.instrumentation.register_pass_instrumentation_tool` (session/controller.py);
the tool owns that compile's TraceSession (session/capture.py) and feeds it the
pass callbacks (through TileLang's StackedPassInstrument) and the codegen calls.
Importing this module imports TileLang; the controller imports it when tracing starts.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from tilelang.instrumentation import (  # type: ignore[import-not-found]
    PassEventObserver,
    PassInstrumentationTool,
    StackedPassInstrument,
    current_compile_pass_instrumentation,
    current_pass_instrument_context,
    current_pass_phase,
    pass_phase,
)

from ..config import Settings
from .capture import UNSCOPED, Emit, OpenPass, TraceSession
from .codegen_call import CODEGEN_PHASE, record_codegen, say_failed_edit
from .configscope import configs_applied
from .hooks import NO_HOOKS, CaptureHooks
from .interrupt import interrupted

_LOWER_NAMES = ("lower", "lower-with-context", "lower-to-host-device-ir")
_CONFIGS_CONTEXT = "tltrace: recorders' pass configs"


class TltraceTool(PassInstrumentationTool):
    """One per TileLang compile session: owns a TraceSession."""

    pass_instrument_priority = 1000  # after other tools: see their effects

    def __init__(self, settings: Settings, emit: Emit, hooks: CaptureHooks = NO_HOOKS) -> None:
        self.session = TraceSession(settings, emit, background=True, hooks=hooks)
        # TVM keeps every PassInstrument it was given, with the Python object behind it (a
        # reference cycle through C++ that Python's collector cannot see): the observers let go
        # of the session when the compile ends, so that a compile's records and IR are not kept
        # for the rest of the process (an autotune's thousands of compiles).
        self._observers: list[_Observer] = []
        # The recorders' pass configs (--remarks=vectorize,...: the verbose planners), asked once:
        # set around each pipeline and codegen call in a nested PassContext; none, nothing nested.
        r = self.session.recorders
        self._configs = (
            (r.pass_configs("pipeline"), r.pass_configs("codegen")) if r.hooked("pass_configs") else ({}, {})
        )

    def create_pass_instrument(self) -> object | None:
        s = self.session
        if s.broken:
            return None
        try:
            s.note_context(current_pass_instrument_context())
            if not s.manifest.kernel:
                n = getattr(current_compile_pass_instrumentation(), "name", None)
                if n and n not in _LOWER_NAMES:
                    s.note(kernel=n)
            obs = _Observer(s)
            self._observers.append(obs)
            return StackedPassInstrument(obs, sequence_allocator=obs.next_index, phase_provider=_phase)
        except Exception as exc:
            s._guard("creating the pass instrument", exc)
            return None

    def pipeline_scope(self, base_phase: str):
        # The target is known here already; a compile that fails before codegen still records it.
        s = self.session
        if not s.manifest.target and isinstance(base_phase, str) and base_phase.startswith("pipeline_"):
            s.note(target=base_phase[len("pipeline_") :] or None)
        # A second pipeline in one compile session is filed as run2_<phase>.
        s.pipelines += 1
        phase: Any = nullcontext()
        if s.pipelines > 1 and isinstance(base_phase, str):
            phase = pass_phase(f"run{s.pipelines}_{base_phase}")
        configs = self._configs[0]
        if not configs:
            return phase
        return _both(phase, configs_applied(configs, _CONFIGS_CONTEXT))

    def run_codegen(self, event: Any, next_call: Callable[[], Any]) -> Any:
        configs = self._configs[1]
        if configs:
            with configs_applied(configs, _CONFIGS_CONTEXT):
                return record_codegen(self.session, event, next_call, lambda: pass_phase(CODEGEN_PHASE))
        return record_codegen(self.session, event, next_call, lambda: pass_phase(CODEGEN_PHASE))

    def finish(self, error: BaseException | None) -> None:
        try:
            say_failed_edit(self.session, error)  # an edit NVRTC refused: its error at the file's line
        finally:  # (a Ctrl+C while NVRTC's log is fetched still ends the run's records)
            try:
                self.session.finish(error)
            finally:
                for obs in self._observers:
                    obs.session = None
                self._observers.clear()


@contextmanager
def _both(first: Any, second: Any) -> Iterator[None]:
    with first, second:
        yield


def make_tool_class() -> type:
    """Return the tool class (kept for the controller's lazy import)."""
    return TltraceTool


def _phase() -> str:
    return current_pass_phase() or UNSCOPED


class _Observer(PassEventObserver):
    """Feeds TileLang's StackedPassInstrument callbacks into a TraceSession: snapshots, then jobs."""

    def __init__(self, session: TraceSession) -> None:
        self.session: TraceSession | None = session  # None once the compile has ended (TltraceTool.finish)

    def next_index(self) -> int:
        """The session's next record index (StackedPassInstrument's sequence allocator), through
        the observer, so that what TVM keeps holds no session once the compile has ended."""
        s = self.session
        return s.next_index() if s is not None else 0

    def pass_started(self, mod: Any, event: Any) -> Any:
        s = self.session
        if s is None:
            return None
        depth, index, phase, name = event.depth, event.sequence, event.phase, str(event.name)
        if depth == 0:  # the inflight line, per top-level pass (session/fatal.py)
            s.inflight.mark("in", name, index, phase)
        if s.broken:
            return None
        try:
            if name == "pass_fn":
                name = anonymous_pass_name(name)
            p = OpenPass(name, index, depth, event.parent_sequence, phase, 0.0, s.capture(mod))
            # The recorders' work on the input and the input's print: one hand-off to the worker.
            s.pass_started(p)
            p.start = time.perf_counter()
            return p
        except Exception as exc:
            s._guard(f"capturing the IR before {event.name}", exc)
            return None

    def pass_finished(self, mod: Any, event: Any, state: Any) -> None:
        s = self.session
        if s is None:
            return
        if event.depth == 0:
            s.inflight.mark("after", str(event.name), event.sequence, event.phase)
        if state is None or s.broken:
            return
        duration = time.perf_counter() - state.start
        if s.recorders.hooked("pass_finished"):
            s.pass_finished(state)  # before the output is looked at: --remarks gives fd 2 back here
        try:
            after = s.capture(mod)
        except Exception as exc:
            s._guard(f"capturing the IR after {state.name}", exc)
            return
        s.record_pass(state, after, duration)

    def passes_incomplete(self, passes: Any, error: BaseException | None) -> None:
        s = self.session
        if s is None or interrupted():
            return  # Ctrl+C: the passes did not fail, the run is recorded as interrupted
        if error is None:
            error = sys.exc_info()[1]
        for frame in passes:
            if frame.event is None or frame.state is None:
                continue
            p = frame.state
            s.pass_failed(p)
            s.record_pass(p, None, time.perf_counter() - p.start, error=error, pending_error=error is None)

    def callback_mismatch(self, actual: str, expected: str | None) -> None:
        if self.session is not None:
            self.session.warn(f"unmatched pass callback: got {actual!r}, expected {expected!r}")


_OWN_FRAMES = (
    f"{os.sep}tvm{os.sep}",
    f"{os.sep}tltrace{os.sep}",
    f"{os.sep}instrumentation{os.sep}",
    "tvm_ffi",
)


def anonymous_pass_name(name: str) -> str:
    """Name an anonymous `pass_fn` after the nearest Python function outside TVM, TileLang's seam and tltrace."""
    frame: Any = sys._getframe()
    while frame is not None:
        filename = frame.f_code.co_filename
        if not any(part in filename for part in _OWN_FRAMES):
            return f"{name}@{frame.f_code.co_name}"
        frame = frame.f_back
    return name
