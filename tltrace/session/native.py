"""The checks before tltrace calls TileLang's or TVM's native code with arguments of its own choosing.

TVM's FFI checks an argument's type, but lets None through where the C++ side takes an
object, and some functions then dereference it: `target.build.tilelang_c(mod, None)`
dies with SIGSEGV in `TargetNode::str`, `tirx.stmt_functor.post_order_visit(None, f)`
likewise. A Python exception is something tltrace can turn into a warning; a segfault
kills the user's program with nothing recorded. So every such call is preceded by an
`isinstance` check against TileLang's own classes, and the second codegen of the source
map (sourcemap/lines.py) runs only on what TileLang's own codegen already accepted
(`may_rerun_codegen`). docs/architecture.md ("Native calls tltrace makes") lists every call.

Nothing here imports TVM until a check is asked for; a check that cannot import it says no.
"""

from __future__ import annotations

import importlib
import sys
from types import CodeType
from typing import Any

# The event's codegen FFI -> TileLang's source-only codegen the source map runs again
# (TileLang 0.1.15 registers all of them, 0.1.14 all but ascend's; tests/test_seam_crash.py
# checks). Those that compile inside the FFI (cuda, hip, metal, ascend) map to their
# `_without_compile` twin, the same code generator without the compiler behind it.
# Not here: webgpu and llvm (no source-only twin).
SOURCE_CODEGENS: dict[str, str] = {
    "target.build.tilelang_c": "target.build.tilelang_c",
    "target.build.tilelang_c_host": "target.build.tilelang_c_host",
    "target.build.tilelang_cuda": "target.build.tilelang_cuda_without_compile",
    "target.build.tilelang_cuda_without_compile": "target.build.tilelang_cuda_without_compile",
    "target.build.tilelang_cutedsl": "target.build.tilelang_cutedsl_without_compile",
    "target.build.tilelang_cutedsl_without_compile": "target.build.tilelang_cutedsl_without_compile",
    "target.build.tilelang_hip": "target.build.tilelang_hip_without_compile",
    "target.build.tilelang_hip_without_compile": "target.build.tilelang_hip_without_compile",
    "target.build.tilelang_metal": "target.build.tilelang_metal_without_compile",
    "target.build.tilelang_metal_without_compile": "target.build.tilelang_metal_without_compile",
    "target.build.tilelang_ascend": "target.build.tilelang_ascend_without_compile",
    "target.build.tilelang_ascend_without_compile": "target.build.tilelang_ascend_without_compile",
}

_classes: dict[str, Any] = {}


def _tvm() -> Any:
    mod = sys.modules.get("tilelang")
    if mod is not None and getattr(mod, "tvm", None) is not None:
        return mod.tvm
    try:
        from tilelang import tvm  # type: ignore[import-not-found]
    except Exception:
        import tvm  # type: ignore[import-not-found,no-redef]
    return tvm


def _ffi() -> Any:
    import tvm_ffi  # type: ignore[import-not-found]

    return tvm_ffi


_FIND = {
    "module": lambda: _tvm().ir.IRModule,
    "target": lambda: _tvm().target.Target,
    "runtime_module": lambda: _ffi().Module,
    "object": lambda: _ffi().Object,
}


def _cls(name: str) -> Any:
    """TileLang's TVM class `name` (cached); None when TVM cannot be imported or has no such class."""
    try:
        return _classes[name]
    except KeyError:
        pass
    try:
        cls = _FIND[name]()
        if not isinstance(cls, type):
            cls = None
    except Exception:
        cls = None
    _classes[name] = cls
    return cls


def _is(value: Any, kind: str) -> bool:
    cls = _cls(kind)
    return cls is not None and isinstance(value, cls)


def is_module(value: Any) -> bool:
    """True for a real `tvm.IRModule` (never None, a mock, or an object that only looks like one)."""
    return _is(value, "module")


def is_target(value: Any) -> bool:
    """True for a real `tvm.target.Target`."""
    return _is(value, "target")


def is_runtime_module(value: Any) -> bool:
    """True for a real TVM runtime module (what TileLang's codegen FFIs return)."""
    return _is(value, "runtime_module")


def is_object(value: Any) -> bool:
    """True for any real TVM FFI object (what `save_json` can serialize)."""
    return _is(value, "object")


# -- TileLang's own codegen call ----------------------------------------------------------------
_codes: list[tuple[frozenset[CodeType], frozenset[CodeType]]] = []  # one entry, set whole (threads read it)


def _lambdas(code: CodeType) -> set[CodeType]:
    out: set[CodeType] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        for k in c.co_consts:
            if isinstance(k, CodeType):
                (out.add if k.co_name == "<lambda>" else stack.append)(k)  # type: ignore[func-returns-value]
    return out


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:
        return None


def _known_codes() -> tuple[frozenset[CodeType], frozenset[CodeType]]:
    """(the `call` lambdas TileLang's codegen wrappers pass to the seam, the seam's own chaining closure)."""
    if _codes:
        return _codes[0]
    # Both sets are made before either is seen: a thread never reads one without the other.
    builds: set[CodeType] = set()
    chain: set[CodeType] = set()
    for module, name in (
        ("tilelang.backend.device_codegen", "global_func_device_codegen"),
        ("tilelang.backend.host_codegen", "global_func_host_codegen"),
    ):
        fn = getattr(_import(module), name, None)
        code = getattr(fn, "__code__", None)
        if isinstance(code, CodeType):
            builds |= _lambdas(code)
    bind = getattr(_import("tilelang.instrumentation.session"), "_bind_codegen_tool", None)
    code = getattr(bind, "__code__", None)
    if isinstance(code, CodeType):
        chain |= {k for k in code.co_consts if isinstance(k, CodeType) and k.co_name == "run"}
    found = (frozenset(builds), frozenset(chain))
    if not _codes:
        _codes.append(found)
    return _codes[0]


def _cells(fn: Any) -> dict[str, Any]:
    code, closure = fn.__code__, fn.__closure__ or ()
    out = {}
    for name, cell in zip(code.co_freevars, closure):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            pass
    return out


def is_tilelang_build(call: Any, event: Any) -> bool:
    """True when `call` (a codegen tool's `next_call`) is TileLang's own codegen of this very event.

    That is the lambda of `tilelang.backend.{device,host}_codegen.global_func_*_codegen`, holding
    the event's FFI name, module and target (through the seam's chaining of other tools). A
    custom caller's `build` is not: tltrace would map source that another function produced.
    """
    try:
        builds, chain = _known_codes()
        for _ in range(32):  # the tools inside tltrace's, each a closure around the next
            code = getattr(call, "__code__", None)
            if code in chain:
                call = _cells(call).get("next_call")
                continue
            if code not in builds:
                return False
            cells = _cells(call)
            target = cells["target"] if "target" in cells else cells.get("target_host")
            return (
                cells.get("global_func_name") == getattr(event, "name", None)
                and cells.get("mod") is getattr(event, "mod", None)
                and target is getattr(event, "target", None)
            )
    except Exception:
        return False
    return False


def source_codegen(ffi: str) -> str | None:
    """The source-only codegen FFI to run again for an event of `ffi`, or None (not one of TileLang's)."""
    return SOURCE_CODEGENS.get(ffi)


def may_rerun_codegen(event: Any, call: Any) -> str | None:
    """Return the FFI name the source map may call with the event's module and target, or None.

    All of: the event's FFI is one of TileLang's own (`SOURCE_CODEGENS`), its module a real
    IRModule, its target a real Target, and the call that produced the source was TileLang's
    own codegen of that module and target, which has just returned normally on them.
    """
    name = source_codegen(str(getattr(event, "name", "") or ""))
    if name is None:
        return None
    if not is_module(getattr(event, "mod", None)) or not is_target(getattr(event, "target", None)):
        return None
    return name if is_tilelang_build(call, event) else None


# -- handles that keep the GIL ------------------------------------------------------------------
_HANDLES: dict[str, Any] = {}  # global functions by name, looked up once (None: missing)


def ffi_handle(name: str) -> Any:
    """tltrace's own handle on a global function, set to keep the GIL: each call takes a
    microsecond, and giving the GIL away for it would make the worker wait for it again
    behind the compiling threads, a statement at a time (a new handle: TileLang's are untouched)."""
    f = _HANDLES.get(name, _HANDLES)
    if f is _HANDLES:
        try:
            f = _ffi().get_global_func(name, allow_missing=True)
        except Exception:
            f = None
        if f is not None:
            try:
                f.release_gil = False
            except AttributeError:
                pass
        _HANDLES[name] = f
    return f


def array_items(arr: Any) -> list[Any]:
    """The elements of an FFI Array, with one native call each (its Python iterator makes four)."""
    get, size = ffi_handle("ffi.ArrayGetItem"), ffi_handle("ffi.ArraySize")
    if get is None or size is None:
        return list(arr)
    return [get(arr, i) for i in range(size(arr))]


def map_items(m: Any) -> tuple | None:
    """Return ((key, value), ...) of an FFI map, or None when it cannot be walked.

    Walked through tltrace's own handles on tvm_ffi's map functions, set to keep the GIL:
    each call takes microseconds, and giving the GIL away for it would make this thread
    wait for it again behind the compiling threads, a pass at a time.
    """
    try:
        size_fn, iter_fn = ffi_handle("ffi.MapSize"), ffi_handle("ffi.MapForwardIterFunctor")
        if size_fn is None or iter_fn is None:
            return tuple(m.items())
        n = size_fn(m)
        out = []
        if n:
            it = iter_fn(m)
            it.release_gil = False
            for _ in range(n):
                out.append((it(0), it(1)))
                if not it(2):
                    break
        return tuple(out)
    except Exception:
        return None


def map_pairs(m: Any) -> Any:
    """`map_items(m)`, or the map's own `items()` where that walk fails."""
    items = map_items(m)
    return items if items is not None else tuple(m.items())


def map_size(m: Any) -> int | None:
    """The number of entries of an FFI Map (one native call, the GIL kept), or None when unknown."""
    size_fn = ffi_handle("ffi.MapSize")
    if size_fn is None:
        return None
    try:
        return int(size_fn(m))
    except Exception:
        return None


def attrs_map(attrs: Any) -> Any:
    """The FFI Map inside a `DictAttrs` (one native call, the GIL kept), or None.

    TVM's `DictAttrs.items()`, `in` and `[]` each fetch that map again and walk or query it
    through calls that let the GIL go: on an autotuner's worker each such call waited for the
    GIL again behind the compiling threads (issue 51, round 5)."""
    get = ffi_handle("ir.DictAttrsGetDict")
    if get is None or type(attrs).__name__ != "DictAttrs":
        return None
    try:
        return get(attrs)
    except Exception:
        return None


def sequence(value: Any) -> list[Any] | None:
    """The elements of an FFI Array (`array_items`), of a list or tuple, or None for anything else."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if type(value).__name__ != "Array":
        return None
    try:
        return array_items(value)
    except Exception:
        return None


def elements(value: Any) -> list[Any]:
    """`sequence(value)`, or `list(value)` for any other iterable."""
    items = sequence(value)
    return list(value) if items is None else items
