"""A kernel variant's stable key: what tells apart one kernel compiled at several shapes.

Built from the compile's launch description (`session/signature.py`: parameter
buffers' shapes and dtypes, grid, threads), read from its input IR at the first pass,
so it is there whether or not the run's records could be written. Compile order,
thread timing and the function body do not enter it: the same variant gets the same
working file in every run, and a change of the kernel's code at the same shape goes
through the decision table (REGENERATED, CONFLICT, ...).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..session.signature import _short_dtype, buffer_shapes, grid_dims, variant_key

# The parts of a launch shape a person tells variants apart by, in the order they are named.
PARTS = ("shape", "dtype", "grid", "threads")
_SHOWN = {"shape": "{}", "dtype": "{}", "grid": "grid {}", "threads": "thr {}"}
_FILE = {"shape": "{}", "dtype": "{}", "grid": "g{}", "threads": "t{}"}


@dataclass(frozen=True)
class Variant:
    key: str  # short hash of the variant key: part of the registry key
    label: str  # what a person reads in a file name, e.g. "512" or "1024x1024"
    parts: tuple[tuple[str, str], ...] = ()  # (part, value) for the PARTS that are known


def launch_parts(launch: dict[str, Any]) -> dict[str, str]:
    """Return the PARTS of a launch description: shape "1024" or "64x64,64", dtype, grid "8", threads "128"."""
    out = {}
    shapes = list(dict.fromkeys(buffer_shapes(launch)))
    if shapes:
        out["shape"] = ",".join(shapes)
    dtypes = list(
        dict.fromkeys(
            _short_dtype(str(b.get("dtype")))
            for b in launch.get("buffers") or ()
            if isinstance(b, dict) and b.get("dtype")
        )
    )
    if dtypes:
        out["dtype"] = "/".join(dtypes)
    if grid_dims(launch):
        out["grid"] = grid_dims(launch)
    threads = "x".join(str(v) for v in launch.get("threads") or ())
    if threads:
        out["threads"] = threads
    return out


def _differing(parts: dict[str, str], other: dict[str, str] | None) -> list[str]:
    if other is None:
        return [p for p in PARTS if parts.get(p)]
    diff = [p for p in PARTS if parts.get(p) and parts.get(p) != other.get(p)]
    if "shape" in diff and "grid" in diff and "threads" not in diff:
        diff.remove("grid")  # the grid follows the size: the size says it
    return diff


def describe(parts: dict[str, str], other: dict[str, str] | None = None) -> str:
    """Say a variant as a person reads it: all parts ("1024 f32 grid 8 thr 128"), or what differs from `other`."""
    keys = _differing(parts, other) or ([] if other is None else [p for p in PARTS if parts.get(p)])
    return " ".join(_SHOWN[p].format(parts[p]) for p in keys)


def file_label(parts: dict[str, str], other: dict[str, str]) -> str:
    """Return what a further variant's file name carries: what differs from the kernel's first variant."""
    keys = _differing(parts, other) or [p for p in ("shape",) if parts.get(p)]
    text = "_".join(_FILE[p].format(parts[p]) for p in keys)
    return text.replace(",", "_").replace("/", "_")[:40].rstrip("_x") or "variant"


def _label(launch: dict[str, Any]) -> str:
    shapes = list(dict.fromkeys(buffer_shapes(launch)))  # each shape once, in parameter order
    if not shapes:
        grid = grid_dims(launch)
        shapes = [f"grid{grid}"] if grid else []
    return "_".join(shapes)[:40].rstrip("_x") or "variant"


def variant_from_launch(kernel: str, launch: dict[str, Any] | None) -> Variant | None:
    """Return the Variant of a compile from its launch description; None when there is none."""
    if not launch or not isinstance(launch, dict):
        return None
    key = variant_key(kernel, launch)
    return Variant(
        hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:12],
        _label(launch),
        tuple(launch_parts(launch).items()),
    )
