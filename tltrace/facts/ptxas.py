"""Machine facts: registers, spills, stack frame and shared memory per kernel, from `nvcc -Xptxas -v`.

The build is toolchain/nvcc.py's (the one nvcc run, kept for the PTX and SASS stages too);
this reads ptxas's report of it. Slow (seconds), so it runs only when asked (`tltrace run
--ptxas`, TLTRACE_PTXAS=1) and never on the compiling thread. Without nvcc it says so once
and the facts stay null.
"""

from __future__ import annotations

import re
from typing import Any

from ..toolchain.nvcc import TIMEOUT_S, Unavailable, build
from .registry import Value

__all__ = ["Unavailable", "machine_facts", "parse", "values_of"]

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse(log: str) -> list[dict[str, Any]]:
    """Return one {kernel, registers, spill_store_bytes, spill_load_bytes, stack_frame, ptxas_smem} per entry."""
    kernels: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            cur = {"kernel": m.group(1)}
            kernels.append(cur)
            continue
        if cur is None:
            continue
        m = _PROPS.search(line)
        if m:
            cur["stack_frame"], cur["spill_store_bytes"], cur["spill_load_bytes"] = (
                int(g) for g in m.groups()
            )
            continue
        m = _USED.search(line)
        if m:
            cur["registers"] = int(m.group(1))
            cur["ptxas_smem"] = int(m.group(2)) if m.group(2) else 0
    return kernels


def values_of(kernels: list[dict[str, Any]]) -> dict[str, Value]:
    """Return the per-compile machine facts of docs/facts.md: maxima, and spills summed over kernels."""
    if not kernels:
        return {}

    def col(k: str) -> list[int]:
        return [int(x[k]) for x in kernels if isinstance(x.get(k), int)]

    stores, loads = sum(col("spill_store_bytes")), sum(col("spill_load_bytes"))
    return {
        "registers": max(col("registers"), default=None),
        "spill_store_bytes": stores,
        "spill_load_bytes": loads,
        "spill_bytes": stores + loads,
        "stack_frame": max(col("stack_frame"), default=None),
        "ptxas_smem": max(col("ptxas_smem"), default=None),
    }


def machine_facts(
    source: str, arch: str | None, timeout: float = TIMEOUT_S, configs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Build `source` for `arch` (and the compile's pass `configs`) with ptxas's report;
    return {tool, arch, seconds, command, configs, kernels, values}.

    Raises Unavailable without nvcc or an sm_ arch; RuntimeError when nvcc fails (its
    last lines in the message).
    """
    b = build(source, arch, timeout, configs)
    kernels = parse(b.log)
    return {
        "tool": b.tool,
        "arch": b.arch,
        "seconds": b.seconds,
        "command": list(b.command),
        "configs": dict(configs or {}),
        "kernels": kernels,
        "values": values_of(kernels),
    }
