"""What tells one compile apart from its siblings: launch shape, buffers, input-IR hash.

`launch_info` reads the compile's input IR objects (never their printed text): the
grid (blockIdx extents), the threads per block (threadIdx extents or TileLang's
`tl.launch_threads` block attribute), the shared memory its root block allocates
and the PrimFunc's parameter buffers. It walks statements only, down to the first
kernel body, so it costs microseconds. Everything is duck-typed: a TileLang whose IR
looks different yields fewer keys, never an error.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from .native import elements

_MAX_STMTS = 400  # statements visited at most; launch attributes sit near the top
_SHORT_DTYPES = {
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "float8_e4m3": "f8e4m3",
    "float8_e5m2": "f8e5m2",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "bool": "bool",
}


def input_hash(text: str) -> str:
    """Return the short hash of a compile's first input IR text (12 hex digits)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def launch_info(mod: Any, kernel: str | None = None) -> dict[str, Any]:
    """Return {"function", "grid": [..], "threads": [..], "shared_bytes": int, "buffers": [{name, shape, dtype}]}.

    `mod` is an IRModule (or a PrimFunc); with several functions, the one named
    `kernel` wins, else the first that launches a grid. Keys that cannot be read are
    left out; nothing here raises.
    """
    try:
        funcs = _functions(mod)
    except Exception:
        return {}
    best: dict[str, Any] = {}
    for name, func in funcs:
        try:
            info = _func_info(func)
        except Exception:
            continue
        info["function"] = name
        if kernel is not None and name == kernel:
            return info
        if not best or ("grid" in info and "grid" not in best):
            best = info
    return best


def _functions(mod: Any) -> list[tuple[str, Any]]:
    if hasattr(mod, "functions"):
        out = []
        for gv, func in mod.functions.items():
            if hasattr(func, "buffer_map") and hasattr(func, "body"):
                # The PrimFunc's own name (global_symbol), as codegen names it; else its key in the module
                out.append((_global_symbol(func) or str(getattr(gv, "name_hint", gv)), func))
        return out
    if hasattr(mod, "buffer_map") and hasattr(mod, "body"):
        return [(_global_symbol(mod) or "main", mod)]
    return []


def _global_symbol(func: Any) -> str | None:
    try:
        attrs = func.attrs
        return str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else None
    except Exception:
        return None


def _int(value: Any) -> int | str:
    """Return an IR extent as an int, or its text when it is symbolic."""
    v = getattr(value, "value", value)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return str(value)


def _shape(shape: Any) -> list[int | str]:
    return [_int(d) for d in elements(shape)]


def _func_info(func: Any) -> dict[str, Any]:
    info: dict[str, Any] = {}
    buffers: list[dict[str, Any]] = []
    bmap = func.buffer_map
    for param in elements(func.params):
        buf = bmap.get(param) if hasattr(bmap, "get") else (bmap[param] if param in bmap else None)
        if buf is None:
            buffers.append(
                {
                    "name": str(getattr(param, "name", param)),
                    "shape": [],
                    "dtype": str(getattr(param, "dtype", "")),
                }
            )
            continue
        buffers.append({"name": str(buf.name), "shape": _shape(buf.shape), "dtype": str(buf.dtype)})
    info["buffers"] = buffers
    grid: dict[str, int | str] = {}
    threads: dict[str, int | str] = {}
    launch_threads: list[int | str] | None = None
    shared = 0
    stack = [func.body]
    seen = 0
    while stack and seen < _MAX_STMTS:
        node = stack.pop()
        if node is None:
            continue
        seen += 1
        kind = type(node).__name__
        if kind == "For":
            tb = getattr(node, "thread_binding", None)
            tag = str(getattr(tb, "thread_tag", "") or "") if tb is not None else ""
            _note_thread(tag, node.extent, grid, threads)
        elif kind == "AttrStmt":
            if str(node.attr_key) == "thread_extent":
                _note_thread(str(getattr(node.node, "thread_tag", "")), node.value, grid, threads)
        elif kind in ("SBlock", "Block"):
            ann = getattr(node, "annotations", None) or {}
            if launch_threads is None and "tl.launch_threads" in ann:
                launch_threads = [_int(x) for x in ann["tl.launch_threads"]]
            allocs = getattr(node, "alloc_buffers", None)
            for buf in elements(allocs) if allocs is not None else ():
                shared += _shared_bytes(buf)
        elif kind in ("AllocBuffer", "DeclBuffer") and hasattr(node, "buffer"):
            if kind == "AllocBuffer":
                shared += _shared_bytes(node.buffer)
        for child in _children(node, kind):
            stack.append(child)
    # Trailing extents of 1 are dropped: TileLang 0.1.14 binds threadIdx.y/z to 1 where 0.1.15
    # binds nothing, and the same launch should read (and key working files) the same.
    if grid:
        info["grid"] = _trim([grid.get(a, 1) for a in "xyz"][: max(_axes(grid), 1)])
    if threads:
        info["threads"] = _trim([threads.get(a, 1) for a in "xyz"][: max(_axes(threads), 1)])
    elif launch_threads is not None:
        info["threads"] = _trim(launch_threads)
    if shared:
        info["shared_bytes"] = shared
    return info


def _trim(dims: list[int | str]) -> list[int | str]:
    while len(dims) > 1 and dims[-1] == 1:
        dims = dims[:-1]
    return dims


def _axes(found: dict[str, Any]) -> int:
    return max(("xyz".index(a) + 1 for a in found if a in ("x", "y", "z")), default=0)


def _note_thread(tag: str, extent: Any, grid: dict, threads: dict) -> None:
    if tag.startswith("blockIdx.") and tag[-1] not in grid:
        grid[tag[-1]] = _int(extent)
    elif tag.startswith("threadIdx.") and tag[-1] not in threads:
        threads[tag[-1]] = _int(extent)


def _shared_bytes(buf: Any) -> int:
    try:
        scope = str(buf.scope())
    except Exception:
        return 0
    if not scope.startswith("shared"):
        return 0
    n = 1
    for d in elements(buf.shape):
        v = getattr(d, "value", None)
        if not isinstance(v, int):
            return 0  # a symbolic size: not cheap to know
        n *= v
    return n * _bits(str(buf.dtype)) // 8


def _bits(dtype: str) -> int:
    """Return the bits of one element of a dtype name (float16 -> 16, int8x4 -> 32, bool -> 8)."""
    m = re.match(r"[a-z_]*?(\d+)(?:_\w+)?(?:x(\d+))?$", dtype)
    if not m:
        return 8
    return int(m.group(1)) * int(m.group(2) or 1)


def _children(node: Any, kind: str) -> list[Any]:
    if kind == "SeqStmt":
        return elements(node.seq)[::-1]  # reversed: visited in program order
    if kind == "SBlockRealize" or kind == "BlockRealize":
        return [node.block]
    if kind == "IfThenElse":
        return [node.else_case, node.then_case]
    body = getattr(node, "body", None)
    return [body] if body is not None and hasattr(body, "same_as") else []


# -- labels ------------------------------------------------------------------------
def _dims(values: Any) -> str:
    return "x".join(str(v) for v in values)


def buffer_shapes(launch: dict[str, Any]) -> list[str]:
    """Return the shape of each parameter buffer that has one, as `1024x512`, in parameter order."""
    return [_dims(b["shape"]) for b in launch.get("buffers") or () if isinstance(b, dict) and b.get("shape")]


def grid_dims(launch: dict[str, Any]) -> str:
    """Return the launch grid as `8x8` ('' when unknown)."""
    return _dims(launch.get("grid") or ())


def _short_dtype(dtype: str) -> str:
    return _SHORT_DTYPES.get(dtype, dtype)


def signature(kernel: str | None, launch: dict[str, Any] | None, input_hash: str | None) -> str:
    """Return a short human label, e.g. `gemm 1024x512,512x1024,1024x1024 f16 grid 8x8 thr 128 smem 24K #a1b2c3`.

    Two compiles whose input IR differs get different labels (the hash says so even
    when the shapes agree); the shapes are there for people.
    """
    launch = launch or {}
    parts = [kernel or str(launch.get("function") or "kernel")]
    bufs = [b for b in launch.get("buffers") or () if isinstance(b, dict)]
    shapes = buffer_shapes(launch)
    if shapes:
        shown = shapes[:4] + ([f"+{len(shapes) - 4}"] if len(shapes) > 4 else [])
        parts.append(",".join(shown))
    dtypes = list(dict.fromkeys(_short_dtype(str(b.get("dtype"))) for b in bufs if b.get("dtype")))
    if dtypes:
        parts.append("/".join(dtypes))
    if launch.get("grid"):
        parts.append(f"grid {_dims(launch['grid'])}")
    if launch.get("threads"):
        parts.append(f"thr {_dims(launch['threads'])}")
    if launch.get("shared_bytes"):
        parts.append(f"smem {_human_bytes(int(launch['shared_bytes']))}")
    if input_hash:
        parts.append(f"#{input_hash[:6]}")
    return " ".join(parts)


def _human_bytes(n: int) -> str:
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024}K"
    if n >= 1024:
        return f"{n / 1024:.1f}K"
    return f"{n}B"


def variant_key(kernel: str | None, launch: dict[str, Any] | None) -> str:
    """Return a stable key for a kernel variant: name, buffers (shape, dtype), grid, threads.

    Unlike `signature` it holds no IR hash, so an edit of the kernel's body keeps its
    key (the working file stays the same) while a new size or dtype gets a new one.
    """
    launch = launch or {}
    bufs = ",".join(
        f"{b.get('name')}:{_dims(b.get('shape') or ())}:{b.get('dtype')}"
        for b in launch.get("buffers") or ()
        if isinstance(b, dict)
    )
    grid = grid_dims(launch)
    threads = _dims(launch.get("threads") or ())
    name = kernel or str(launch.get("function") or "kernel")
    return f"{name}|{bufs}|grid={grid}|threads={threads}"


def short_label(kernel: str | None, signature: str | None) -> str:
    """Return a compile's short label: its kernel and its first buffer's shape (`add 512`).

    What the stream names a compile by (render/terminal.stream_label); the signature starts
    with it, so it also works as a SIGNATURE prefix for `show`. A compile with no name of its
    own (`tilelang.lower`, a custom caller of the seam) is named as its signature is: by the
    lowered function (`vec_scale 1024`); "?" only while there is no signature yet.
    """
    sig = (signature or "").split(" ")
    name = kernel or sig[0] or "?"
    if len(sig) > 1 and sig[0] == name and sig[1] and sig[1][0].isdigit():
        return f"{name} {sig[1].split(',')[0]}"
    return name
