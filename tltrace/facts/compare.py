"""Facts that changed between two compiles: `wgmma 1 → 0`, `smem_dynamic 49152 → 16384`. Pure."""

from __future__ import annotations

from typing import Any

from .registry import NAMES, Value


def changes(a: dict[str, Value], b: dict[str, Value]) -> list[dict[str, Any]]:
    """Return [{name, a, b}] for every fact whose value differs, in the registry's order.

    A fact known on one side only (null on the other: a run without --ptxas, a CPU build)
    counts as changed only when both sides know it, so `--ptxas` on one side alone names
    no machine fact.
    """
    out = []
    for name in NAMES:
        va, vb = a.get(name), b.get(name)
        if va is None or vb is None or va == vb:
            continue
        out.append({"name": name, "a": va, "b": vb})
    return out


def _show(v: Value) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def describe(changed: list[dict[str, Any]]) -> str:
    """Return the changes as one line: `wgmma 1 → 0, smem_dynamic 49152 → 16384` (the arrow the report draws)."""
    return ", ".join(f"{c['name']} {_show(c['a'])} \u2192 {_show(c['b'])}" for c in changed)
