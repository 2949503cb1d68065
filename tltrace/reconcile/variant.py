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

from ..session.signature import buffer_shapes, grid_dims, variant_key


@dataclass(frozen=True)
class Variant:
    key: str  # short hash of the variant key: part of the registry key
    label: str  # what a person reads in a file name, e.g. "512" or "1024x1024"


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
    return Variant(hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:12], _label(launch))
