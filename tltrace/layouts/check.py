"""Whether a recorded layout entry can be evaluated: its fields' types and sizes, within limits.

A manifest is a file anyone can write; model.py evaluates what it reads only after `entry`
says yes. The limits (docs/layouts.md) are far beyond what TileLang makes and keep every
answer exact and every loop short: at most MAX_DIMS dimensions, shapes whose element count is
at most expr.MAX_INT, at most MAX_REPLICATE replicas, a thread range inside [0, MAX_THREADS),
and forward variables that are names, one per input dimension (and the replicate one).
`cells` caps what a question about a whole buffer (`model.held_by`) walks. The report's
layouts-expr.js `compile` applies the same rules.
"""

from __future__ import annotations

import re
from typing import Any

from .expr import MAX_INT, ExprError

MAX_DIMS = 8
MAX_REPLICATE = 1024
MAX_THREADS = 1 << 20  # threadIdx.x is below 1024 on every NVIDIA GPU; this is room, not a claim
MAX_CELLS = 1 << 24  # elements a whole-buffer question walks (a 4096x4096 buffer)

_NAME = re.compile(r"[A-Za-z_]\w{0,63}")


class LayoutError(ExprError):
    """A recorded layout entry that is damaged or beyond the limits: not evaluated."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def shape(value: Any, what: str, buffer: str) -> list[int]:
    """Return `value` as a shape: a list of 1..MAX_DIMS positive ints, their product at most MAX_INT."""
    if not isinstance(value, list) or not 1 <= len(value) <= MAX_DIMS:
        raise LayoutError(f"{buffer}: {what} is not a list of 1 to {MAX_DIMS} sizes")
    total = 1
    for d in value:
        if not _is_int(d) or d < 1:
            raise LayoutError(f"{buffer}: {what} {_cut(value)} holds {_cut(d)}, not a positive size")
        total *= d
        if total > MAX_INT:
            raise LayoutError(f"{buffer}: {what} {_cut(value)} has more than {MAX_INT} elements")
    return value


def _cut(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:50] + "..."


def entry(e: Any) -> dict[str, Any]:
    """Return `e` if it is a layout entry model.py can evaluate; LayoutError (one line) otherwise."""
    if not isinstance(e, dict):
        raise LayoutError(f"a layout entry is {type(e).__name__}, not an object")
    buffer = e.get("buffer")
    name = buffer if isinstance(buffer, str) else "?"
    name = name if len(name) <= 80 else name[:60] + "..."
    ins = shape(e.get("input_shape"), "input_shape", name)
    shape(e.get("output_shape"), "output_shape", name)
    names = e.get("vars")
    if not isinstance(names, list) or not all(isinstance(v, str) and _NAME.fullmatch(v) for v in names):
        raise LayoutError(f"{name}: vars is not a list of names")
    fragment = e.get("kind") == "fragment"
    extra = len(names) - len(ins)
    if extra not in ((0, 1) if fragment else (0,)):
        raise LayoutError(f"{name}: {len(names)} vars for {len(ins)} dimensions")
    index = e.get("index")
    if not isinstance(index, list) or len(index) != len(e["output_shape"]):
        raise LayoutError(f"{name}: index is not one expression per output dimension")
    if not all(isinstance(t, str) for t in index):
        raise LayoutError(f"{name}: index holds something other than text")
    if fragment:
        if not isinstance(e.get("thread"), str):
            raise LayoutError(f"{name}: a fragment without a thread expression")
        rep = e.get("replicate")
        if rep is not None and (not _is_int(rep) or not 1 <= rep <= MAX_REPLICATE):
            raise LayoutError(f"{name}: replicate {_cut(rep)} is not a count from 1 to {MAX_REPLICATE}")
        rng = e.get("thread_range")
        if rng is not None and not (
            isinstance(rng, list)
            and len(rng) == 2
            and all(_is_int(x) for x in rng)
            and rng[0] >= 0
            and rng[1] >= 1
            and rng[0] + rng[1] <= MAX_THREADS
        ):
            raise LayoutError(
                f"{name}: thread_range {_cut(rng)} is not [first, count] of threads below {MAX_THREADS}"
            )
    return e


def cells(e: dict[str, Any]) -> int:
    """Return the element count of a checked entry's buffer; LayoutError beyond MAX_CELLS."""
    n = 1
    for d in e["input_shape"]:
        n *= d
    if n > MAX_CELLS:
        shp = "x".join(map(str, e["input_shape"]))
        raise LayoutError(
            f"{e.get('buffer')}: {shp} is {n} elements, more than the {MAX_CELLS} walked at most"
        )
    return n
