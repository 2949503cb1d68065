"""Questions about one recorded layout (capture.py's entry): which thread and register, or
which offset and bank, hold an element; a whole grid of them; which elements one thread
holds; bank conflicts of an access.

Threads are physical: `threadIdx.x`, the forward thread expression's value (TileLang's
`map_forward_thread`, numbered from the fragment's first thread) plus the first thread of the
fragment's `thread_range` (a warp-specialized kernel's consumers start at 128). Answers carry
the expression's value too, as `logical_thread`.

Plain data in, plain data out; numpy when it is there (a grid in one pass), else element by
element with the same expressions (expr.py). Every entry is checked first (check.py: a
manifest is anyone's file). The report's layouts.js asks the same questions of the same entry
and must answer alike (tests/test_layouts_expr.py).
"""

from __future__ import annotations

import itertools
from typing import Any

from . import check, expr

BANKS = 32  # 4-byte banks of shared memory
WARP = 32

_BITS = {"bool": 8, "int8": 8, "uint8": 8, "float16": 16, "bfloat16": 16, "int16": 16, "uint16": 16}


def dtype_bytes(dtype: str | None) -> int:
    """Return an element's width in bytes (float8/int4 round up to one byte; unknown: 4)."""
    if not dtype:
        return 4
    if dtype in _BITS:
        return _BITS[dtype] // 8
    digits = "".join(c for c in dtype.split("x")[0] if c.isdigit())
    return max(1, int(digits) // 8) if digits else 4


def is_fragment(entry: dict[str, Any]) -> bool:
    return entry.get("kind") == "fragment"


def rep_var(entry: dict[str, Any]) -> str | None:
    """Return the replicate variable's name (the forward vars beyond the input's dims, first), else None."""
    extra = len(entry["vars"]) - len(entry["input_shape"])
    return entry["vars"][0] if extra > 0 else None


def index_vars(entry: dict[str, Any]) -> list[str]:
    return entry["vars"][len(entry["vars"]) - len(entry["input_shape"]) :]


def first_thread(entry: dict[str, Any]) -> int:
    """Return the threadIdx.x a fragment's threads start at (its thread_range's first; 0 when unrecorded)."""
    rng = entry.get("thread_range")
    return rng[0] if rng else 0


def _linear(values: list[Any], shape: list[int]) -> Any:
    out: Any = 0
    for v, d in zip(values, shape):
        out = out * d + v
    return out


def at(entry: dict[str, Any], index: list[int]) -> dict[str, Any]:
    """Return what holds element `index`: {thread: [threadIdx.x per replica], register,
    logical_thread: [the expression's value per replica], thread_range} or {offset, bank, width}."""
    check.entry(entry)
    shape = entry["input_shape"]
    if len(index) != len(shape):
        raise ValueError(f"{entry['buffer']} has {len(shape)} dimensions ({shape}); got {len(index)} indices")
    for i, d in zip(index, shape):
        if not (isinstance(d, int) and 0 <= i < d):
            raise ValueError(f"index {index} is outside {entry['buffer']}'s shape {shape}")
    env: dict[str, Any] = dict(zip(index_vars(entry), index))
    out_idx = [expr.value(t, env) for t in entry["index"]]
    if is_fragment(entry):
        rv = rep_var(entry)
        reps = entry.get("replicate") or 1
        threads = []
        for r in range(reps if rv else 1):
            if rv:
                env[rv] = r
            threads.append(int(expr.value(entry["thread"], env)))
        first = first_thread(entry)
        return {
            "thread": [t + first for t in threads],
            "register": int(_linear(out_idx, entry["output_shape"])),
            "logical_thread": threads,
            "thread_range": entry.get("thread_range"),
        }
    offset = int(_linear(out_idx, entry["output_shape"]))
    width = dtype_bytes(entry.get("dtype"))
    return {"offset": offset, "bank": offset * width // 4 % BANKS, "width": width}


def grid(entry: dict[str, Any], lead: tuple[int, ...] = ()) -> dict[str, Any]:
    """Return the last two dims' answers for fixed leading indices `lead` (1-D: one row).

    {"rows", "cols", and per cell (lists of rows): "thread" ([replica][row][col]) and "register",
    or "offset" and "bank"}; threads are threadIdx.x, as `at` gives them.
    """
    check.entry(entry)
    shape = entry["input_shape"]
    if len(lead) != max(0, len(shape) - 2):
        lead = tuple(lead[: len(shape) - 2]) + (0,) * max(0, len(shape) - 2 - len(lead))
    if len(shape) == 1:
        rows, cols = 1, shape[0]
    else:
        rows, cols = shape[-2], shape[-1]
    if rows * cols > check.MAX_CELLS:
        raise check.LayoutError(
            f"{entry['buffer']}: a {rows}x{cols} grid is more than {check.MAX_CELLS} cells"
        )
    names = index_vars(entry)
    np = expr.numpy()
    if np is None:  # element by element
        cells = [
            at(entry, [*lead, c] if len(shape) == 1 else [*lead, r, c])
            for r in range(rows)
            for c in range(cols)
        ]
        return _plain_grid(entry, cells, rows, cols)
    env: dict[str, Any] = dict(zip(names, lead))
    if len(shape) == 1:
        env[names[-1]] = np.arange(cols, dtype=np.int64)[None, :]
    else:
        env[names[-2]] = np.arange(rows, dtype=np.int64)[:, None]
        env[names[-1]] = np.arange(cols, dtype=np.int64)[None, :]
    full = np.zeros((rows, cols), dtype=np.int64)
    out_idx = [full + expr.value(t, env) for t in entry["index"]]
    linear = full + _linear(out_idx, entry["output_shape"])
    out: dict[str, Any] = {"rows": rows, "cols": cols}
    if is_fragment(entry):
        rv = rep_var(entry)
        reps = (entry.get("replicate") or 1) if rv else 1
        threads = []
        for r in range(reps):
            if rv:
                env[rv] = r
            threads.append((full + expr.value(entry["thread"], env) + first_thread(entry)).tolist())
        out["thread"], out["register"] = threads, linear.tolist()
    else:
        width = dtype_bytes(entry.get("dtype"))
        out["offset"], out["bank"] = linear.tolist(), (linear * width // 4 % BANKS).tolist()
    return out


def _plain_grid(entry: dict[str, Any], cells: list[dict[str, Any]], rows: int, cols: int) -> dict[str, Any]:
    def shaped(vals: list[Any]) -> list[list[Any]]:
        return [vals[r * cols : (r + 1) * cols] for r in range(rows)]

    out: dict[str, Any] = {"rows": rows, "cols": cols}
    if is_fragment(entry):
        reps = len(cells[0]["thread"]) if cells else 1
        out["thread"] = [shaped([c["thread"][k] for c in cells]) for k in range(reps)]
        out["register"] = shaped([c["register"] for c in cells])
    else:
        out["offset"] = shaped([c["offset"] for c in cells])
        out["bank"] = shaped([c["bank"] for c in cells])
    return out


def held_by(entry: dict[str, Any], thread: int) -> dict[str, Any]:
    """Return the elements of a fragment that threadIdx.x `thread` holds, `at` read the other way:
    {thread, logical_thread (None outside the fragment's threads), thread_range,
    elements: [{index, register}] by register, then index}. LayoutError beyond check.MAX_CELLS."""
    check.entry(entry)
    if not is_fragment(entry):
        raise ValueError(f"{entry['buffer']} is a shared buffer: no thread holds it")
    check.cells(entry)
    shape = entry["input_shape"]
    first = first_thread(entry)
    rng = entry.get("thread_range")
    inside = 0 <= thread < check.MAX_THREADS and (rng is None or first <= thread < first + rng[1])
    out: dict[str, Any] = {
        "thread": thread,
        "logical_thread": thread - first if inside else None,
        "thread_range": rng,
        "elements": [],
    }
    if not inside:
        return out
    np = expr.numpy()
    found: list[tuple[int, list[int]]] = []
    if np is None:
        for idx in itertools.product(*(range(d) for d in shape)):
            got = at(entry, list(idx))
            if thread in got["thread"]:
                found.append((got["register"], list(idx)))
    else:
        grids = np.indices(shape, dtype=np.int64)
        env: dict[str, Any] = dict(zip(index_vars(entry), grids))
        full = np.zeros(tuple(shape), dtype=np.int64)
        regs = full + _linear([full + expr.value(t, env) for t in entry["index"]], entry["output_shape"])
        rv = rep_var(entry)
        hit = np.zeros(tuple(shape), dtype=bool)
        for r in range((entry.get("replicate") or 1) if rv else 1):
            if rv:
                env[rv] = r
            hit |= (full + expr.value(entry["thread"], env)) == thread - first
        if hit.any():
            for idx in zip(*(a.tolist() for a in np.nonzero(hit))):
                found.append((int(regs[idx]), list(idx)))
    out["elements"] = [{"index": idx, "register": reg} for reg, idx in sorted(found)]
    return out


def conflicts(entry: dict[str, Any], access: str = "row", lead: tuple[int, ...] = ()) -> dict[str, Any]:
    """Return the bank conflicts of a warp reading the buffer element by element, `access`
    "row" (lane k takes the k-th element in row-major order) or "col" (column-major), one
    element per lane at the element width: {"warps", "max_ways", "mean_ways", "ways": [...]}.

    A warp's ways: the most distinct 4-byte words any one bank serves (1: no conflict; the
    same word twice is a broadcast).
    """
    if is_fragment(entry):
        raise ValueError(f"{entry['buffer']} is a fragment (registers): no banks")
    g = grid(entry, lead)
    rows, cols = g["rows"], g["cols"]
    width = dtype_bytes(entry.get("dtype"))
    order = (
        [(r, c) for r in range(rows) for c in range(cols)]
        if access == "row"
        else [(r, c) for c in range(cols) for r in range(rows)]
    )
    ways = []
    for w in range(0, len(order), WARP):
        banks: dict[int, set[int]] = {}
        for r, c in order[w : w + WARP]:
            word = g["offset"][r][c] * width // 4
            banks.setdefault(word % BANKS, set()).add(word)
        ways.append(max(len(s) for s in banks.values()))
    return {
        "access": access,
        "width": width,
        "warps": len(ways),
        "max_ways": max(ways) if ways else 0,
        "mean_ways": round(sum(ways) / len(ways), 3) if ways else 0,
        "ways": ways,
    }


def leads(entry: dict[str, Any]) -> list[tuple[int, ...]]:
    """Return every value of the leading indices (the dims before the last two)."""
    shape = entry["input_shape"]
    return list(itertools.product(*(range(d) for d in shape[:-2]))) if len(shape) > 2 else [()]


def final(layouts: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Return the layouts as the compile left them: each buffer's last recorded layout, with
    `record` and `pass` (where it was fixed or last changed); the failure's when inference failed."""
    if not isinstance(layouts, dict):
        return []
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for snap in _dicts(layouts.get("snapshots")):
        for f in _dicts(snap.get("funcs")):
            for e in _dicts(f.get("layouts")):
                key = (str(f.get("func", "")), str(e.get("buffer", "")))
                prev = out.get(key)
                if prev is not None and _same_layout(prev, e):
                    continue
                out[key] = {
                    **e,
                    "func": f.get("func"),
                    "record": snap.get("record"),
                    "pass": snap.get("pass"),
                }
    failed = layouts.get("failed")
    if isinstance(failed, dict):
        for f in _dicts(failed.get("funcs")):
            for e in _dicts(f.get("layouts")):
                key = (str(f.get("func", "")), str(e.get("buffer", "")))
                out.setdefault(
                    key, {**e, "func": f.get("func"), "record": None, "pass": "fixed before the failure"}
                )
    return list(out.values())


def _dicts(items: Any) -> list[dict[str, Any]]:
    """The objects of a manifest's list (a damaged one's other items, or a non-list: none)."""
    return [x for x in items if isinstance(x, dict)] if isinstance(items, list) else []


def _same_layout(a: dict[str, Any], b: dict[str, Any]) -> bool:
    from .capture import LAYOUT_KEYS

    return all(a.get(k) == b.get(k) for k in LAYOUT_KEYS)


def find(layouts: dict[str, Any] | None, buffer: str) -> dict[str, Any] | None:
    """Return the final layout of the buffer named `buffer` (the last function's, when several have one)."""
    hits = [e for e in final(layouts) if e.get("buffer") == buffer]
    return hits[-1] if hits else None


def changed(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Return the buffers whose final layout differs between two compiles' `layouts`:
    [{"buffer", "func", "change": "changed"|"added"|"removed", "a", "b"}] (a, b: the entries)."""
    return changed_final(final(a), final(b))


def changed_final(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`changed` on two compiles' final layouts (`final`'s lists: what the report carries). The
    report's comparison asks layouts-expr.js's `changed`, its twin (tests/test_layouts_expr.py)."""
    fa = {(e.get("func"), e.get("buffer")): e for e in a}
    fb = {(e.get("func"), e.get("buffer")): e for e in b}
    out = []
    for key in sorted(set(fa) | set(fb), key=lambda k: (str(k[0]), str(k[1]))):
        ea, eb = fa.get(key), fb.get(key)
        if ea is not None and eb is not None and _same_layout(ea, eb):
            continue
        change = "changed" if ea is not None and eb is not None else ("added" if ea is None else "removed")
        out.append({"buffer": key[1], "func": key[0], "change": change, "a": ea, "b": eb})
    return out


def failure_of(layouts: Any) -> dict[str, Any] | None:
    """Return what a failed layout inference left (`layouts["failed"]`) as the views show it:
    {record, pass, named, buffers}; None when nothing failed."""
    failed = layouts.get("failed") if isinstance(layouts, dict) else None
    if not isinstance(failed, dict) or not failed:
        return None
    return {
        "record": failed.get("record"),
        "pass": failed.get("pass"),
        "named": failed.get("named") or [],
        "buffers": [b for f in failed.get("funcs") or [] for b in f.get("buffers") or []],
    }
