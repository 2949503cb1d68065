"""Facts read from recorded TIR text: the IR handed to codegen, and the compile's frontend IR.

Pure: text in, values out. The printed TIR is TVMScript; these patterns read what
TileLang prints (`T.func_attr({... "dyn_shared_memory_buf": N ...})`,
`T.launch_thread("blockIdx.x", 8)`, `T.alloc_buffer((N,), "dtype", scope="shared")`).
"""

from __future__ import annotations

import math
import re

from .registry import Value

_ARCH = re.compile(r'"arch"\s*:\s*"([^"]+)"')
_DYN = re.compile(r'"dyn_shared_memory_buf"\s*:\s*(\d+)')
_LAUNCH = re.compile(r'launch_thread\(\s*"(blockIdx|threadIdx)\.([xyz])"\s*,\s*(\d+)\s*\)')
_ALLOC = re.compile(
    r"alloc_buffer\(\s*\(([^()]*)\)\s*,\s*(?:\"([\w.]+)\"\s*,\s*)?[^()\n]*?scope\s*=\s*\"(shared[\w.]*)\""
)
_WS = re.compile(r"\bkWarpSpecializationScope\b")
_NREG = re.compile(r"\bset_max_nreg\(\s*(\d+)")
_STAGES = re.compile(r"""["']?num_stages["']?\s*[:=]\s*(\d+)""")
_DTYPE = re.compile(r"^(?:u?int|float|bfloat|e\d+m\d+_?)(\d+)(?:x(\d+))?")
_PRIM_FUNC = re.compile(r"@T\.prim_func")


def dtype_bytes(dtype: str | None) -> int | None:
    """Return the bytes of one element of a TIR dtype (`float16` 2, `uint64` 8, `float16x2` 4); None if unknown."""
    if dtype is None:
        return 4  # alloc_buffer's default dtype is float32
    if dtype == "bool":
        return 1
    m = _DTYPE.match(dtype.replace("float8_", "e"))
    if not m:
        return None
    bits = int(m.group(1)) * (int(m.group(2)) if m.group(2) else 1)
    return max(1, bits // 8)


def _first_kernel(text: str) -> str:
    """Return the text of the first function that launches threads (the first kernel)."""
    starts = [m.start() for m in _PRIM_FUNC.finditer(text)] + [len(text)]
    for a, b in zip(starts, starts[1:]):
        if "launch_thread(" in text[a:b]:
            return text[a:b]
    return text


def codegen_input_facts(text: str) -> dict[str, Value]:
    """Return the codegen-input facts of docs/facts.md from the IR text handed to device codegen."""
    out: dict[str, Value] = {}
    m = _ARCH.search(text)
    out["arch"] = m.group(1) if m else None
    extents: dict[tuple[str, str], int] = {}
    for kind, axis, n in _LAUNCH.findall(_first_kernel(text)):
        extents.setdefault((kind, axis), int(n))
    if extents:
        grid = [extents.get(("blockIdx", a), 1) for a in "xyz"]
        out["grid"] = "x".join(str(g) for g in grid)
        out["blocks"] = math.prod(grid)
        out["threads"] = math.prod(extents.get(("threadIdx", a), 1) for a in "xyz")
    else:
        out["grid"] = out["blocks"] = out["threads"] = None
    dyn = [int(n) for n in _DYN.findall(text)]
    out["smem_dynamic"] = max(dyn) if dyn else 0
    static = 0
    for shape, dtype, scope in _ALLOC.findall(text):
        if scope == "shared.dyn":
            continue
        dims = [d.strip() for d in shape.split(",") if d.strip()]
        size = dtype_bytes(dtype or None)
        if size is None or not all(d.isdigit() for d in dims):
            continue
        static += math.prod(int(d) for d in dims) * size
    out["smem_static"] = static
    out["warp_specialized"] = bool(_WS.search(text))
    nregs = [int(n) for n in _NREG.findall(text)]
    out["set_max_nreg"] = len(nregs)
    out["max_nreg"] = max(nregs) if nregs else None
    return out


def frontend_facts(text: str) -> dict[str, Value]:
    """Return the frontend facts of docs/facts.md from the compile's first input IR."""
    stages = [int(n) for n in _STAGES.findall(text)]
    return {"num_stages": max(stages) if stages else None}
