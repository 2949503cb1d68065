"""What a compile needs to be rerun, saved while it runs: the reproducer capture, a recorder.

One ReproRecorder per compile (session/recorder.py). The frontend IR is the module
the first pass receives, saved with `tvm.ir.save_json`; the PassContext (opt level,
config) and the target are the ones current at that moment. A pass's input is the
snapshot capture took of it (its fields: attributes, function map, global infos,
which change only by copy-on-write), so when a pass fails its input is rebuilt and
saved although the pass may have updated the module object in place. The compiling
thread only keeps references; the JSON is made on the worker.

The files go into the run directory as `repro_frontend.json`, `repro_context.json` and
`repro_NN_input.json` (runs before them: under `repro/`, a directory that cost a block
for two files); the manifest's `repro` field names them, and readers follow it. Everything here is best effort: a failure is one warning upstream,
never a broken compile.
"""

from __future__ import annotations

import json
import platform
import sys
from typing import Any

from .._version import __version__
from ..session.native import attrs_map, elements, is_object, is_target, map_items, map_pairs, sequence
from ..session.recorder import Job, PassEvent, Recorder
from ..session.snapshot import Side, field

REPRO_PREFIX = "repro_"  # older runs: a `repro/` directory; the manifest's `repro` field names either
FRONTEND = f"{REPRO_PREFIX}frontend.json"
CONTEXT = f"{REPRO_PREFIX}context.json"
CONTEXT_SCHEMA = 1


def plain(value: Any) -> Any:
    """Return a TVM config or target value as plain JSON data (bool, int, float, str, list, dict).

    A value with no plain form is kept as `{"tvm_json": <tvm.ir.save_json text>}`.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "value"):  # IntImm / FloatImm
        if str(dtype) == "bool":
            return bool(value.value)
        return value.value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    # An FFI Map or Array by tltrace's handles (the GIL kept), not their Python iterators (native
    # calls that each give the GIL away: issue 51, round 5); the same entries in the same order.
    pairs = map_items(value) if type(value).__name__ == "Map" else None
    if pairs is not None:
        return {str(k): plain(v) for k, v in pairs}
    items = getattr(value, "items", None)
    if callable(items):
        return {str(k): plain(v) for k, v in items()}
    if type(value).__name__ in ("String", "Str"):
        return str(value)
    seq = sequence(value)
    if seq is None:
        try:
            seq = list(value)
        except TypeError:
            seq = None
    if seq is not None and not isinstance(value, (bytes, bytearray)):
        return [plain(v) for v in seq]
    if not is_object(value):  # save_json serializes TVM objects only
        return str(value)
    try:
        from tilelang import tvm  # type: ignore[import-not-found]

        return {"tvm_json": tvm.ir.save_json(value)}
    except Exception:
        return str(value)


_LAST_COMPACT: list[tuple[str, str]] = []  # (text, compact_json(text)) of the last call


def compact_json(text: str) -> str:
    """Return TVM's JSON (save_json indents it: half its bytes are spaces) without the layout; as it is when not JSON.

    The same data (`tvm.ir.load_json` reads either); on the worker, not the compiling thread.
    The last text's result is kept: a process that lowers one kernel again (a benchmark's reps,
    a test's re-lowering) compares the text (a memcmp) instead of parsing and writing it again.
    """
    last = _LAST_COMPACT[0] if _LAST_COMPACT else None
    if last is not None and last[0] == text:
        return last[1]
    try:
        out = json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        out = text
    _LAST_COMPACT[:] = [(text, out)]
    return out


def versions() -> dict[str, str | None]:
    """Return the versions a rerun depends on: TileLang, its TVM, Python, tltrace, the platform."""
    tl = sys.modules.get("tilelang")
    tvm_version = None
    try:
        from tilelang import tvm  # type: ignore[import-not-found]

        tvm_version = str(getattr(tvm, "__version__", None))
    except Exception:
        pass
    return {
        "tilelang": getattr(tl, "__version__", None),
        "tvm": tvm_version,
        "python": platform.python_version(),
        "tltrace": __version__,
        "platform": platform.platform(terse=True),
    }


def context_of(ctx: Any, target: Any) -> dict[str, Any]:
    """Return a PassContext and a target (or None) as plain data (the compile's, at its first pass)."""
    return {
        "opt_level": int(ctx.opt_level),
        "config": {str(k): plain(v) for k, v in map_pairs(ctx.config)},
        "disabled_pass": [str(p) for p in elements(ctx.disabled_pass)],
        "required_pass": [str(p) for p in elements(ctx.required_pass)],
        "target": plain(target.export()) if target is not None else None,
        "target_text": str(target) if target is not None else None,
    }


def bound_target(functions: Any) -> Any | None:
    """Return the target a function of a module's function map is bound to (its "target" attribute), or None."""
    try:
        for _gv, func in map_pairs(functions):
            attrs = field(func, "attrs")
            if attrs is None:
                continue
            inner = attrs_map(attrs)  # the DictAttrs' Map, walked with the GIL kept
            if inner is None:
                if "target" in attrs:
                    return attrs["target"]
                continue
            for key, value in map_pairs(inner):
                if key == "target":
                    return value
    except Exception:
        pass
    return None


def _same_map(a: Any, b: Any) -> bool:
    """Whether two function maps are one object (`same_as`: by handle for a Map)."""
    try:
        return a is b or bool(a.same_as(b))
    except Exception:
        return False


class ReproRecorder(Recorder):
    """The frontend IR, context and failed-pass inputs of one compile (session/recorder.py).

    On the compiling thread it only keeps references: the snapshot capture took, the
    current PassContext and Target. Saving JSON, reading the context and looking for
    the bound target run on the worker. A failure is one warning and the capture
    stops (the recorder guard); the records and the user's compile go on.
    """

    name = "reproducer capture"
    field = "repro"

    def __init__(self) -> None:
        self.frontend: str | None = None
        self.context: dict[str, Any] | None = None
        self.failed: dict[int, str] = {}  # record index -> input JSON
        self.written: dict[str, Any] = {}  # the manifest's `repro` field
        self._bound = False  # a bound target was found (or no context to put it in)
        self._looked: Any = None  # the function map looked at last, without a bound target
        self._store: Any = None

    def stopped(self, what: str, exc: BaseException) -> str:
        return f"reproducer data not saved for this kernel ({what}: {type(exc).__name__}: {exc}); the trace is unharmed"

    # -- compiling thread: references only ------------------------------------------
    def input(self, snapshot: Side) -> Job | None:
        """The compile's input module, and the PassContext and target it runs under (read on the worker)."""
        if snapshot.head is None:
            self._bound = True
            return None  # a custom caller's stand-in for a module: nothing to save
        from tilelang import tvm  # type: ignore[import-not-found]

        ctx = tvm.transform.PassContext.current()
        target = tvm.target.Target.current(allow_none=True)
        return lambda: self._note_frontend(snapshot, ctx, target)

    def pass_failed(self, event: PassEvent, before: Side) -> Job | None:
        """Save the input of a pass (or codegen call) that raised: the module its snapshot makes."""
        if event.index is None or before.head is None:
            return None  # a stand-in has no IR to rerun
        index = event.index
        return lambda: self._save_failed(index, before)

    # -- worker ---------------------------------------------------------------------
    def pass_input(self, event: PassEvent, before: Side) -> None:
        """Until a pass's input has a function bound to a target: look for one."""
        if not self._bound and before.head is not None:
            self._look_for_target(before)

    def _note_frontend(self, snapshot: Side, ctx: Any, target: Any) -> None:
        from tilelang import tvm  # type: ignore[import-not-found]

        if self.frontend is not None:
            return
        self.frontend = tvm.ir.save_json(snapshot.module())
        context = context_of(ctx, target)
        context["versions"] = versions()
        context["schema"] = CONTEXT_SCHEMA
        self.context = context

    def _look_for_target(self, before: Side) -> None:
        ctx = self.context
        if self._bound or ctx is None or before.head is None:
            return
        functions = before.head[1]
        if self._looked is not None and _same_map(functions, self._looked):
            return  # the function map looked at last (a pass that changed nothing returns it)
        self._looked = functions  # held: copy-on-write, the same map is the same functions
        target = bound_target(functions)
        if target is not None and is_target(target):  # export() is Target's own
            self._bound = True
            ctx["bound_target"] = plain(target.export())
            if self._store is not None:
                self._write_context()

    def _save_failed(self, index: int, before: Side) -> None:
        from tilelang import tvm  # type: ignore[import-not-found]

        self.failed[index] = tvm.ir.save_json(before.module())
        if self._store is not None:
            self._write_failed(index)

    def attach(self, store: Any) -> None:
        """Write what was captured into `store`'s run directory."""
        self._store = store
        if self.frontend is not None:
            store.write_plain(FRONTEND, compact_json(self.frontend))
            self.written["frontend"] = FRONTEND
        if self.context is not None:
            self._write_context()
        for index in sorted(self.failed):
            self._write_failed(index)

    def value(self) -> dict[str, Any] | None:
        """The manifest's `repro` field as it stands (None when nothing was captured)."""
        return dict(self.written) if self.written else None

    # -- files ----------------------------------------------------------------
    def _write_context(self) -> None:
        """Write context.json, a plain file of the run directory (rewritten once a pass binds the target).

        The reproducer's files stay files (not in the pack): `tltrace repro` and bundles read them so.
        """
        text = json.dumps(self.context, indent=1, sort_keys=True) + "\n"
        self._store.write_plain(CONTEXT, text)
        self.written["context"] = CONTEXT

    def _write_failed(self, index: int) -> None:
        rel = f"{REPRO_PREFIX}{index:02d}_input.json"
        self._store.write_plain(rel, self.failed[index])
        inputs = dict(self.written.get("inputs") or {})
        inputs[str(index)] = rel
        self.written["inputs"] = inputs
