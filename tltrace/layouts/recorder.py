"""The layouts recorder: each block's layout map, each time it changes, as the manifest's `layouts`.

A recorder (session/recorder.py) registered by tracing/recorders.py. Which pass infers
layouts is read off the IR, never off pass names: every pass's input snapshot is looked at
on the printing worker (the compiling thread only hands over the snapshot it already took),
and when the blocks' `layout_map` annotations differ from the last ones seen, the pass that
produced that input (the record stored just before) is the one that fixed or changed them.
A function whose body is the one walked last, or equal to it field by field (a pass that
rebuilt it and changed nothing: `capture.same_body`), is not walked again. When a pass fails, its input's fragment and shared buffers and
whatever layouts were already fixed are kept with the failed record, and the buffers the
error names are marked (docs/layouts.md).

The field (docs/manifest.schema.json):
    {"version": 1,
     "snapshots": [{"record": index or null (the compile's input), "pass": name,
                    "funcs": [{"func", "layouts": [entry]}]}],
     "failed": {"record", "pass", "funcs": [{"func", "layouts", "buffers"}], "named": [buffer]} or null}
"""

from __future__ import annotations

import re
from typing import Any

from ..session.recorder import Job, PassEvent, Recorder
from ..session.snapshot import Side
from . import capture

VERSION = 1


class LayoutsRecorder(Recorder):
    """The manifest's `layouts`: snapshots of the layout maps where they changed, and a failure's buffers."""

    name = "layouts"
    field = "layouts"

    def __init__(self) -> None:
        self.snapshots: list[dict[str, Any]] = []
        self.failed: dict[str, Any] | None = None
        self._last: list[dict[str, Any]] = []  # the funcs of the last snapshot
        self._prev: tuple[int, str] | None = None  # the record stored last: it made the next input
        self._seen = capture.Seen()
        self._marked = True  # whether the last top-level record's output text shows a layout_map
        self._errors: dict[int, str] = {}  # failed records' errors, by index
        self._cache: dict[str, tuple[Any, dict[str, Any]]] = {}  # func name -> (func, its layouts)
        self._walked: tuple[Any, list[dict[str, Any]]] | None = None  # (function map, _funcs of it) last

    # compiling thread: references only
    def pass_failed(self, event: PassEvent, before: Side) -> Job | None:
        if before.head is None or event.codegen:
            return None
        return lambda: self._fail(event, before)

    # worker
    def pass_input(self, event: PassEvent, before: Side) -> None:
        if before.head is None or event.codegen or event.depth:
            return  # a nested pass's input is its parent's work in progress
        self._look(before)

    def _funcs(self, functions: Any) -> list[dict[str, Any]]:
        last = self._walked
        if last is not None and capture.same_object(last[0], functions):
            return last[1]  # the function map walked last (a pass that changed nothing returns it)
        out = []
        for name, func in capture.prim_funcs(functions):
            hit = self._cache.get(name)
            if hit is not None and capture.same_body(hit[0], func):
                f = hit[1]
            else:
                f = capture.func_layouts(name, func, seen=self._seen)
            self._cache[name] = (func, f)  # the newest: it shares the most with the next one
            if f["layouts"]:
                out.append(f)
        self._walked = (functions, out)
        return out

    def _look(self, before: Side) -> None:
        if before.head is None or not self._marked:
            return  # its text (the last record's output) has no layout_map: nothing to walk
        funcs = self._funcs(before.head[1])  # the function map: no module is built
        if funcs and not _same(funcs, self._last):
            prev = self._prev
            self.snapshots.append(
                {"record": prev[0] if prev else None, "pass": prev[1] if prev else None, "funcs": funcs}
            )
            self._last = funcs

    def _fail(self, event: PassEvent, before: Side) -> None:
        if before.head is None:
            return
        funcs = capture.module_layouts(before.head[1], with_buffers=True)
        if funcs:
            self.failed = {"record": event.index, "pass": event.name, "funcs": funcs, "named": []}
            if event.index in self._errors:
                self._name(self._errors[event.index])

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        if not record.depth:
            self._prev = (record.index, record.name)
            self._marked = "layout_map" in after
        if record.error:
            self._errors[record.index] = record.error
            f = self.failed
            if f is not None and f["record"] == record.index:
                self._name(record.error)

    def _name(self, error: str) -> None:
        """Mark the failure's buffers that `error` names; drop a failure that is not about layouts."""
        f = self.failed
        assert f is not None
        names = {b["buffer"] for fn in f["funcs"] for b in fn.get("buffers", []) + fn["layouts"]}
        f["named"] = sorted(n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", error))
        if not f["named"] and "layout" not in error.lower():
            self.failed = None  # a failure that is not about layouts: nothing to keep

    def value(self) -> Any:
        if not self.snapshots and self.failed is None:
            return None
        return {"version": VERSION, "snapshots": self.snapshots, "failed": self.failed}


def _same(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Whether two inputs' layouts are the same layouts (their buffers' shapes and scopes aside)."""
    if len(a) == len(b) and all(x is y for x, y in zip(a, b)):
        return True  # the very entries (functions not walked again)
    if [f["func"] for f in a] != [f["func"] for f in b]:
        return False
    for fa, fb in zip(a, b):
        la, lb = (sorted(f["layouts"], key=lambda e: str(e.get("buffer"))) for f in (fa, fb))
        if len(la) != len(lb) or not all(capture.same_layout(x, y) for x, y in zip(la, lb)):
            return False
    return True


def make(settings: Any) -> LayoutsRecorder:
    """The factory tracing/recorders.py registers: one recorder per compile."""
    return LayoutsRecorder()
