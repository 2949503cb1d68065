"""Each block's layout map read off an IR module, as plain data (the layouts recorder's worker side).

A block carries its layouts in the `layout_map` annotation: after layout inference the keys
are buffers, before it (`T.annotate_layout`) the buffers' data variables. Each value is a
`tilelang.layout.Layout` (shared memory) or `Fragment` (registers). What is kept is text and
numbers only: the forward expressions as TileLang prints them (`+ * // %` on the index
variables, expr.py evaluates them), the shapes, the replicate count and the thread range.
Imports TileLang's tvm lazily: this runs on the printing worker of a traced compile.
"""

from __future__ import annotations

from typing import Any

from ..session.native import array_items, ffi_handle, sequence
from ..session.native import map_pairs as _items  # walked with handles that keep the GIL


def _get(m: Any, key: str) -> Any:
    """`m[key]`, or None (an FFI map of string keys, walked as `_items` does)."""
    for k, v in _items(m):
        if k == key:
            return v
    return None


FRAGMENT_SCOPES = ("local.fragment",)


def _ints(shape: Any) -> list[Any]:
    # An FFI Array by tltrace's handles (the GIL kept), not its Python iterator (two native calls
    # an element, each giving the GIL away: issue 51, round 5).
    dims = sequence(shape)
    out: list[Any] = []
    for d in shape if dims is None else dims:
        try:
            out.append(int(d))
        except Exception:
            out.append(str(d))
    return out


def _scope_of(key: Any) -> str | None:
    scope = ffi_handle("tirx.BufferStorageScope")  # `key.scope()`'s function, the GIL kept
    if scope is not None and hasattr(key, "data"):
        try:
            return str(scope(key))
        except Exception:
            pass
    try:
        return str(key.scope())
    except Exception:
        pass
    try:
        return str(key.type_annotation.storage_scope)
    except Exception:
        return None


def _buffer_info(buf: Any) -> dict[str, Any]:
    return {
        "buffer": str(buf.name),
        "scope": _scope_of(buf),
        "dtype": str(buf.dtype),
        "shape": _ints(buf.shape),
    }


class Seen:
    """The layouts already read, by object (a layout map keeps its Layout objects from pass to
    pass; printing an expression goes through the script printer, a millisecond each)."""

    def __init__(self) -> None:
        self._items: list[tuple[Any, dict[str, Any]]] = []
        self._maps: list[tuple[Any, list[dict[str, Any]]]] = []  # layout maps keyed by buffers

    def entries(self, lm: Any, allocs: dict[Any, Any]) -> list[dict[str, Any]]:
        """Return a layout map's entries (one map is often on many blocks, and kept by many passes)."""
        for obj, data in self._maps:
            if obj.same_as(lm):
                return data
        pairs = _items(lm)
        data = [entry(key, layout, allocs, self) for key, layout in pairs]
        if all(hasattr(key, "data") for key, _ in pairs):  # keyed by buffers: allocs play no part
            self._maps.append((lm, data))
        return data

    def layout(self, layout: Any) -> dict[str, Any]:
        for obj, data in self._items:
            if obj.same_as(layout):
                return data
        data = layout_data(layout)
        self._items.append((layout, data))
        return data


def entry(key: Any, layout: Any, buffers: dict[Any, Any], seen: Seen | None = None) -> dict[str, Any]:
    """Return one buffer's layout as data: `key` a buffer or its data var, `buffers` data var -> buffer."""
    buf = key if hasattr(key, "data") else buffers.get(key)
    if buf is not None:
        out = _buffer_info(buf)
    else:  # a data var whose buffer is allocated elsewhere
        out = {
            "buffer": str(getattr(key, "name", key)),
            "scope": _scope_of(key),
            "dtype": None,
            "shape": None,
        }
    out.update(seen.layout(layout) if seen is not None else layout_data(layout))
    return out


def _query(layout: Any, name: str) -> Any:
    """`layout.get_<name>()`: TileLang's own FFI function `tl.Layout_<name>`, on tltrace's handle
    that keeps the GIL (a microsecond's call), for a real TileLang `Layout` (a Fragment is one;
    the FFI lets None through to C++); the method for anything else or where there is no such
    function."""
    f = ffi_handle(f"tl.Layout_{name}")
    if f is not None and _is_layout(layout):
        return f(layout)
    return getattr(layout, f"get_{name}")()


_LAYOUT: list[Any] = []


def _is_layout(value: Any) -> bool:
    if not _LAYOUT:
        try:
            from tilelang.layout import Layout  # type: ignore[import-not-found]
        except Exception:
            Layout = None
        _LAYOUT.append(Layout if isinstance(Layout, type) else None)
    cls = _LAYOUT[0]
    return cls is not None and isinstance(value, cls)


def _texts(exprs: Any) -> list[str]:
    items = sequence(exprs)
    return [str(e) for e in (exprs if items is None else items)]


def layout_data(layout: Any) -> dict[str, Any]:
    """Return a Layout's or Fragment's shapes, expressions, replicate count and thread range."""
    out: dict[str, Any] = {}
    out["input_shape"] = _ints(_query(layout, "input_shape"))
    out["output_shape"] = _ints(_query(layout, "output_shape"))
    out["vars"] = _texts(_query(layout, "forward_vars"))
    out["index"] = _texts(layout.forward_index)
    if hasattr(layout, "forward_thread"):
        out["kind"] = "fragment"
        out["thread"] = str(layout.forward_thread)
        try:
            out["replicate"] = int(layout.replicate_size)
        except Exception:
            out["replicate"] = None
        rng = None
        try:
            r = layout.thread_range
            if r is not None:
                rng = [int(r.min), int(r.extent)]
        except Exception:
            rng = None
        out["thread_range"] = rng
    else:
        out["kind"] = "layout"
    return out


LAYOUT_KEYS = (
    "buffer",
    "kind",
    "input_shape",
    "output_shape",
    "vars",
    "index",
    "thread",
    "replicate",
    "thread_range",
)


def same_layout(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two entries are one buffer's one layout (the buffer's own shape and scope aside: a
    later pass may replace the buffer by its physical one, the layout staying)."""
    return list(map(a.get, LAYOUT_KEYS)) == list(map(b.get, LAYOUT_KEYS))  # (no generator per key)


def _blocks(func: Any) -> list[Any]:
    """Return the blocks of a PrimFunc, walking statements only (never expressions: a walk of
    every node through the FFI costs 10 ms on a lowered gemm, this one a fraction of that).
    Each node's kind is looked up by its type (`_kind_of`), not found with `isinstance`: TVM's
    classes have an ABC metaclass, whose check is a Python call per node."""
    from tilelang import tvm

    tirx = tvm.tirx
    kinds = _KINDS
    found: list[Any] = []
    stack = [func.body]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        kind = kinds.get(type(node))
        if kind is None:
            kind = _kind_of(type(node), tirx)
        if kind == _SEQ:
            stack.extend(reversed(array_items(node.seq)))
        elif kind == _REALIZE:
            stack.append(node.block)
        elif kind == _BLOCK:
            found.append(node)
            stack.append(node.body)
            if node.init is not None:
                stack.append(node.init)
        elif kind == _BRANCH:
            stack.append(node.else_case)
            stack.append(node.then_case)
        else:
            body = getattr(node, "body", None)  # attr, let, for, while, assert, allocate, decl_buffer
            if body is not None:
                bk = kinds.get(type(body))
                if bk is None:
                    bk = _kind_of(type(body), tirx)
                if bk != _NOT_STMT:
                    stack.append(body)
    return found


_SEQ, _REALIZE, _BLOCK, _BRANCH, _STMT, _NOT_STMT = range(6)
_KINDS: dict[type, int] = {}  # a node's type -> its kind in `_blocks`


def _kind_of(t: type, tirx: Any) -> int:
    """The kind of nodes of type `t` for `_blocks` (what `isinstance` with TVM's classes says), cached."""
    classes = (tirx.SeqStmt, tirx.SBlockRealize, tirx.SBlock, tirx.IfThenElse, tirx.Stmt)
    kind = next(
        (k for k, cls in zip((_SEQ, _REALIZE, _BLOCK, _BRANCH, _STMT), classes) if issubclass(t, cls)),
        _NOT_STMT,
    )
    _KINDS[t] = kind
    return kind


def prim_funcs(functions: Any) -> list[tuple[str, Any]]:
    """Return (name, PrimFunc) of a module's function map (IRModule.functions, or a snapshot's)."""
    from tilelang import tvm

    prim = tvm.tirx.PrimFunc
    out = []
    for gv, func in _items(functions):
        t = type(func)
        is_prim = _PRIM.get(t)
        if is_prim is None:
            is_prim = _PRIM[t] = issubclass(t, prim)  # isinstance, by a dict of types (see _blocks)
        if is_prim:
            out.append((str(gv.name_hint), func))
    return out


_PRIM: dict[type, bool] = {}


def same_object(a: Any, b: Any) -> bool:
    """Whether two FFI objects are one (by handle; `same_as` may compare field by field)."""
    try:
        return a is b or bool(a.__chandle__() == b.__chandle__())
    except Exception:
        return False


def same_body(a: Any, b: Any) -> bool:
    """Whether `func_layouts` of PrimFuncs `a` and `b` is the same, known without a walk: their
    bodies are one object, or equal field by field (tvm_ffi's `RecursiveEq`: block names,
    buffers, annotations, the layouts' own fields, every variable's name; the walk reads only
    the body). A pass that rebuilds a function and changes nothing makes such a twin; the
    comparison stops at the first shared subtree or difference (microseconds, a walk a
    quarter of a millisecond). False where TVM has no `RecursiveEq`."""
    try:
        x, y = a.body, b.body
        if same_object(x, y):
            return True
        eq = ffi_handle("ffi.RecursiveEq")
        return eq is not None and bool(eq(x, y))
    except Exception:
        return False


def func_layouts(
    name: str, func: Any, with_buffers: bool = False, seen: Seen | None = None
) -> dict[str, Any]:
    """Return {"func", "layouts": [entry + block], "buffers": [...]} of one PrimFunc's blocks.

    `buffers` (with_buffers): every fragment and shared allocation of its blocks, laid out or not.
    """
    layouts: list[dict[str, Any]] = []
    buffers: list[dict[str, Any]] = []
    for block in _blocks(func):
        alloc = array_items(block.alloc_buffers)
        if with_buffers:
            for b in alloc:
                scope = _scope_of(b) or ""
                if scope in FRAGMENT_SCOPES or scope.startswith("shared"):
                    buffers.append(_buffer_info(b))
        lm = _get(block.annotations, "layout_map")
        if lm is None:
            continue
        allocs = {b.data: b for b in alloc}
        found = seen.entries(lm, allocs) if seen is not None else [entry(k, v, allocs) for k, v in _items(lm)]
        for e in found:
            e = dict(e)
            same = next((x for x in layouts if same_layout(x, e)), None)
            if same is not None:  # one map on several blocks (a root block and its copy)
                same["blocks"].append(str(block.name_hint))
                continue
            e["blocks"] = [str(block.name_hint)]
            layouts.append(e)
    out: dict[str, Any] = {"func": name, "layouts": layouts}
    if with_buffers:
        out["buffers"] = buffers
    return out


def module_layouts(functions: Any, with_buffers: bool = False) -> list[dict[str, Any]]:
    """Return `func_layouts` of every PrimFunc of a function map (those with layouts, or buffers when asked)."""
    out = []
    for name, func in prim_funcs(functions):
        f = func_layouts(name, func, with_buffers)
        if f["layouts"] or f.get("buffers"):
            out.append(f)
    return out
