"""What a compile needs to be rerun, saved while it runs (IR modules change in place later).

One ReproCapture per compile session. The frontend IR is the module the first pass
receives, saved with `tvm.ir.save_json` at once; the PassContext (opt level,
config) and the target are read at the same moment. Each pass's input module is
remembered by its fields (attributes, function map, global infos: they change
only by copy-on-write), so that when a pass fails its input can be rebuilt and
saved although the pass may have updated the module object in place.

The files go into the run directory under `repro/`; the manifest's `repro` field
names them. Everything here is best effort: a failure is one warning upstream,
never a broken compile.
"""

from __future__ import annotations

import functools
import json
import platform
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from .._version import __version__
from ..session.native import is_module, is_object, is_target

REPRO_DIR = "repro"
FRONTEND = f"{REPRO_DIR}/frontend.json"
CONTEXT = f"{REPRO_DIR}/context.json"
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
    items = getattr(value, "items", None)
    if callable(items):
        return {str(k): plain(v) for k, v in items()}
    if type(value).__name__ in ("String", "Str"):
        return str(value)
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


def compact_json(text: str) -> str:
    """Return TVM's JSON (save_json indents it: half its bytes are spaces) without the layout; as it is when not JSON.

    The same data (`tvm.ir.load_json` reads either); on the worker, not the compiling thread.
    """
    try:
        return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return text


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


def current_context() -> dict[str, Any]:
    """Return the current PassContext and target as plain data (the compile's, at its first pass)."""
    from tilelang import tvm  # type: ignore[import-not-found]

    ctx = tvm.transform.PassContext.current()
    target = tvm.target.Target.current(allow_none=True)
    return {
        "opt_level": int(ctx.opt_level),
        "config": {str(k): plain(v) for k, v in ctx.config.items()},
        "disabled_pass": [str(p) for p in ctx.disabled_pass],
        "required_pass": [str(p) for p in ctx.required_pass],
        "target": plain(target.export()) if target is not None else None,
        "target_text": str(target) if target is not None else None,
    }


def module_head(mod: Any) -> tuple | None:
    """Return (functions, attrs, global infos) of an IRModule (field reads), or None."""
    if not is_module(mod):
        return None
    try:
        return (mod.functions, mod.attrs, getattr(mod, "global_infos", None))
    except Exception:
        return None


def rebuild(head: tuple, fallback: Any) -> Any:
    """Return a module made of fields read earlier (what the pass received), else `fallback`."""
    try:
        from tilelang import tvm  # type: ignore[import-not-found]

        functions, attrs, infos = head
        return tvm.ir._ffi_api.IRModule(functions, attrs, infos)
    except Exception:
        return fallback


def bound_target(mod: Any) -> Any | None:
    """Return the target a function of `mod` is bound to (its "target" attribute), or None."""
    try:
        for _gv, func in mod.functions.items():
            attrs = getattr(func, "attrs", None)
            if attrs is not None and "target" in attrs:
                return attrs["target"]
    except Exception:
        pass
    return None


_F = TypeVar("_F", bound=Callable[..., Any])


def _guarded(method: _F) -> _F:
    """Turn a failure of a capture step into one warning (the first) and a stopped capture."""

    @functools.wraps(method)
    def run(self: ReproCapture, *args: Any) -> Any:
        if self.broken:
            return None
        try:
            return method(self, *args)
        except Exception as exc:
            self.broken = True
            if self._warn is not None:
                self._warn(
                    f"reproducer data not saved for this kernel ({method.__name__}: "
                    f"{type(exc).__name__}: {exc}); the trace is unharmed"
                )
            return None

    return run  # type: ignore[return-value]


class ReproCapture:
    """The frontend IR, context and failed-pass inputs of one compile, until they are written.

    Every public step is guarded: a failure is one warning and the capture stops;
    the records and the user's compile go on.
    """

    def __init__(self, warn: Callable[[str], None] | None = None) -> None:
        self._warn = warn
        self.broken = False
        self.frontend: str | None = None
        self.context: dict[str, Any] | None = None
        self.failed: dict[int, str] = {}  # record index -> input JSON
        self.written: dict[str, Any] = {}  # the manifest's `repro` field
        self.cost_s = 0.0  # time spent saving JSON in the compiling thread
        self._heads: dict[int, tuple[tuple | None, Any]] = {}
        self._store: Any = None

    # -- capture (compiling thread) -----------------------------------------
    @_guarded
    def note_frontend(self, mod: Any) -> None:
        """Save the compile's input module and context (called once, at the first pass)."""
        if self.frontend is not None or not is_module(mod):
            return  # a custom caller's stand-in for a module: nothing to save
        from tilelang import tvm  # type: ignore[import-not-found]

        t0 = time.perf_counter()
        self.frontend = tvm.ir.save_json(mod)
        context = current_context()
        context["versions"] = versions()
        context["schema"] = CONTEXT_SCHEMA
        self.context = context
        self.cost_s += time.perf_counter() - t0

    @_guarded
    def pass_started(self, sequence: int, mod: Any) -> None:
        """Remember what pass `sequence` receives; note the bound target once a pass has set it."""
        self._heads[sequence] = (module_head(mod), mod)
        ctx = self.context
        if ctx is not None and ctx.get("bound_target") is None:
            target = bound_target(mod)
            if target is not None and is_target(target):  # export() is Target's own
                ctx["bound_target"] = plain(target.export())
                if self._store is not None:
                    self._write_context()

    @_guarded
    def pass_finished(self, sequence: int) -> None:
        self._heads.pop(sequence, None)

    @_guarded
    def pass_failed(self, sequence: int) -> None:
        """Save the input of a pass that raised (rebuilt from its fields) and write it if the store is open."""
        head, mod = self._heads.pop(sequence, (None, None))
        if mod is None:
            return
        self.codegen_failed(sequence, rebuild(head, mod) if head is not None else mod)

    @_guarded
    def codegen_failed(self, index: int, mod: Any) -> None:
        if not is_module(mod):
            return  # save_json takes TVM objects only; a stand-in has no IR to rerun
        from tilelang import tvm  # type: ignore[import-not-found]

        t0 = time.perf_counter()
        self.failed[index] = tvm.ir.save_json(mod)
        self.cost_s += time.perf_counter() - t0
        if self._store is not None:
            self._write_failed(index)

    # -- files ----------------------------------------------------------------
    def attach(self, store: Any) -> dict[str, Any] | None:
        """Write what was captured into `store`'s run directory; return the manifest's `repro` field.

        Not guarded: a store that cannot be written is the session's failure (it stops tracing).
        """
        if self.broken:
            return None
        self._store = store
        if self.frontend is not None:
            store.link_text(FRONTEND, compact_json(self.frontend))
            self.written["frontend"] = FRONTEND
        if self.context is not None:
            self._write_context()
        for index in sorted(self.failed):
            self._write_failed(index)
        return dict(self.written) or None

    def info(self) -> dict[str, Any] | None:
        """Return the manifest's `repro` field as it stands (None when nothing was captured)."""
        return dict(self.written) if self.written else None

    def _write_context(self) -> None:
        self._store.link_text(CONTEXT, json.dumps(self.context, indent=1, sort_keys=True) + "\n")
        self.written["context"] = CONTEXT

    def _write_failed(self, index: int) -> None:
        rel = f"{REPRO_DIR}/{index:02d}_input.json"
        self._store.link_text(rel, self.failed[index])
        inputs = dict(self.written.get("inputs") or {})
        inputs[str(index)] = rel
        self.written["inputs"] = inputs
