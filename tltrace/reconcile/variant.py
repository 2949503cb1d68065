"""A kernel variant's stable key: what tells apart one kernel compiled at several shapes.

Read from the module a codegen call lowers (so it is there whether or not the run's
records could be written): for each function, its buffer parameters' shapes and
dtypes, its launch (grid and thread extents) and its shared-memory bytes. Compile
order, thread timing and the function body do not enter it, so the same variant gets
the same working file in every run, and a change of the kernel's code at the same
shape goes through the decision table (REGENERATED, CONFLICT, ...).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Variant:
    key: str  # short hash of the launch description: part of the registry key
    label: str  # what a person reads in a file name, e.g. "512" or "1024x1024"
    launch: dict[str, Any]


def _tirx() -> Any:
    import tvm  # type: ignore[import-not-found]

    return getattr(tvm, "tirx", None) or tvm.tir


def _dims(shape: Any) -> list[str]:
    return [str(d) for d in shape]


def _shared_bytes(node: Any) -> int:
    """Bytes of a shared-memory allocation (an AllocBuffer, or an older TVM's Allocate); 0 otherwise."""
    try:
        buf = getattr(node, "buffer", None)
        if buf is not None:
            scope, dims, dtype = str(buf.scope()), buf.shape, buf.dtype
        else:
            scope, dims, dtype = str(node.buffer_var.type_annotation.storage_scope), node.extents, node.dtype
        if not scope.startswith("shared"):
            return 0
        n = 1
        for d in dims:
            n *= int(d)
        return n * int(dtype.bits * dtype.lanes) // 8
    except Exception:
        return 0


def launch_of(mod: Any) -> dict[str, Any]:
    """Return {function name: {buffers, grid/threads, shared bytes}} for the PrimFuncs in `mod`."""
    tx = _tirx()
    allocs = tuple(t for t in (getattr(tx, "AllocBuffer", None), getattr(tx, "Allocate", None)) if t is not None)
    out: dict[str, Any] = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, tx.PrimFunc):
            continue
        name = str(func.attrs["global_symbol"]) if func.attrs and "global_symbol" in func.attrs else gv.name_hint
        params = list(func.params)
        bufs: dict[int, list] = {}
        for i, p in enumerate(params):
            b = func.buffer_map.get(p) if hasattr(func.buffer_map, "get") else None
            if b is not None:
                bufs[i] = [_dims(b.shape), str(b.dtype)]
        threads: dict[str, str] = {}
        shared = 0

        def visit(node: Any, params: list = params, bufs: dict = bufs, threads: dict = threads) -> None:
            nonlocal shared
            try:
                if isinstance(node, tx.DeclBuffer):
                    data = node.buffer.data
                    for i, p in enumerate(params):
                        if i not in bufs and p.same_as(data):
                            bufs[i] = [_dims(node.buffer.shape), str(node.buffer.dtype)]
                elif isinstance(node, tx.AttrStmt) and node.attr_key == "thread_extent":
                    tag = getattr(node.node, "thread_tag", None) or str(node.node)
                    threads[str(tag)] = str(node.value)
                elif allocs and isinstance(node, allocs):
                    shared += _shared_bytes(node)
            except Exception:
                pass  # an unexpected node shape: leave it out of the key, never break the compile

        tx.stmt_functor.post_order_visit(func.body, visit)
        out[name] = {"buffers": [bufs[i] for i in sorted(bufs)], "launch": dict(sorted(threads.items())),
                     "shared_bytes": shared}
    return out


def _label(launch: dict[str, Any]) -> str:
    shapes: list[str] = []
    for fn in launch.values():
        for dims, _dtype in fn.get("buffers", []):
            s = "x".join(dims) or "scalar"
            if s not in shapes:
                shapes.append(s)
    if not shapes:
        for fn in launch.values():
            shapes += [f"{k.split('.')[0]}{v}" for k, v in fn.get("launch", {}).items()]
    return "_".join(shapes)[:40].rstrip("_") or "variant"


def variant_of(mod: Any) -> Variant | None:
    """Return the Variant of the module a codegen call lowers, or None when it cannot be read."""
    try:
        launch = launch_of(mod)
    except Exception:
        return None
    if not launch:
        return None
    text = json.dumps(launch, sort_keys=True, separators=(",", ":"))
    return Variant(hashlib.sha1(text.encode()).hexdigest()[:12], _label(launch), launch)
