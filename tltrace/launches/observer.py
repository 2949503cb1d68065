"""Calls of one Python code object observed, without replacing anything (docs/launches.md).

TileLang 0.1.15 has no launch event on its instrumentation seam, and monkeypatching is not
how tltrace hooks TileLang. Every adapter's launch goes through `JITKernel.__call__`, so the
calls of that one code object are what is watched:

- Python 3.12 and later: `sys.monitoring`, a tool id of its own and the LOCAL event PY_START
  on that code object only. One callback per launch; no other code pays anything.
- Python 3.11: `sys.setprofile` (this thread) and `threading.setprofile` (threads started
  from now on), a callback that returns at once unless the frame runs that code object.
  Every Python and C call of the program then pays one call of it (bench/launch_cost.py
  measures it). A profiler already installed (cProfile, a debugger, coverage's profile
  mode) is left alone: `start` says why nothing is observed, and nothing is.

`on_call(frame)` gets the frame of each call, at its start; it must not raise. `on_return(frame,
value)`, when given (run --save-inputs), gets the same frame as the call returns (3.12: the
LOCAL event PY_RETURN on that code object; 3.11: the profile's 'return' event, whose value is
None when the call raised); it must not raise either.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

TOOL_NAME = "tltrace-launches"
# sys.monitoring's ids 0, 1, 2 and 5 are named for debuggers, coverage, profilers and
# optimizers; 3 and 4 are free for tools like this one.
TOOL_IDS = (3, 4)

OnCall = Callable[[FrameType], None]
OnReturn = Callable[[FrameType, Any], None]


def monitoring() -> Any:
    """Return `sys.monitoring` where Python has it (3.12 and later), else None."""
    return getattr(sys, "monitoring", None)


class Observer:
    """Watches the calls of one code object from `start()` to `stop()`."""

    def __init__(self, code: CodeType, on_call: OnCall, on_return: OnReturn | None = None) -> None:
        self.code = code
        self.on_call = on_call
        self.on_return = on_return
        self.how: str | None = None  # "monitoring" or "profile" while on
        self._tool: int | None = None
        self._profile: Callable[..., Any] | None = None

    def start(self) -> str | None:
        """Start observing; return None when on, else why not (one line: nothing is observed then)."""
        mon = monitoring()
        if mon is not None:
            return self._start_monitoring(mon)
        return self._start_profile()

    def _start_monitoring(self, mon: Any) -> str | None:
        tool = next((t for t in TOOL_IDS if mon.get_tool(t) is None), None)
        if tool is None:
            return f"no free sys.monitoring tool id ({', '.join(map(str, TOOL_IDS))} are taken)"
        mon.use_tool_id(tool, TOOL_NAME)
        on_call, get_frame = self.on_call, sys._getframe

        def py_start(code: CodeType, offset: int) -> None:
            on_call(get_frame(1))  # the frame that starts: the callback runs on top of it

        mon.register_callback(tool, mon.events.PY_START, py_start)
        events = mon.events.PY_START
        on_return = self.on_return
        if on_return is not None:

            def py_return(code: CodeType, offset: int, value: Any) -> None:
                on_return(get_frame(1), value)

            mon.register_callback(tool, mon.events.PY_RETURN, py_return)
            events |= mon.events.PY_RETURN
        mon.set_local_events(tool, self.code, events)
        self._tool, self.how = tool, "monitoring"
        return None

    def _start_profile(self) -> str | None:
        other = sys.getprofile() or threading.getprofile()
        if other is not None:
            name = getattr(other, "__qualname__", None) or type(other).__name__
            return f"another profiler is installed ({name}); it is left alone"
        watched, on_call, on_return = self.code, self.on_call, self.on_return

        def profile(frame: FrameType, event: str, arg: Any) -> None:
            if frame.f_code is watched:
                if event == "call":
                    on_call(frame)
                elif event == "return" and on_return is not None:
                    on_return(frame, arg)

        self._profile = profile
        sys.setprofile(profile)
        threading.setprofile(profile)
        self.how = "profile"
        return None

    def leave_this_thread(self) -> None:
        """Python 3.11: stop observing the calling thread (tltrace's own worker: its calls are no launches)."""
        profile = self._profile
        if profile is not None and sys.getprofile() is profile:
            sys.setprofile(None)

    def stop(self) -> None:
        """Stop observing: what was installed before `start()` is what is installed again.

        Python 3.11: this thread's profile is taken off when it is still ours; threads that
        started while it was on keep it until they end (it then finds nothing to record:
        the recorder is stopped).
        """
        mon = monitoring()
        if self._tool is not None and mon is not None:
            tool, self._tool = self._tool, None
            try:
                mon.set_local_events(tool, self.code, 0)
                mon.register_callback(tool, mon.events.PY_START, None)
                mon.register_callback(tool, mon.events.PY_RETURN, None)
            finally:
                mon.free_tool_id(tool)
        profile, self._profile = self._profile, None
        if profile is not None:
            if sys.getprofile() is profile:
                sys.setprofile(None)
            if threading.getprofile() is profile:
                threading.setprofile(None)
        self.how = None
