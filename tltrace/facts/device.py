"""Facts read from generated device source (CUDA; C for CPU builds) by regular expressions.

Pure: text in, values out. Each pattern counts call sites in the text, not executions
(a call inside an unrolled loop counts once). Comments are dropped before counting.
"""

from __future__ import annotations

import re

from .registry import Value

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_CALL = r"\s*(?:<[^;{}()]*>)?\s*\("  # an optional template argument list, then the call's parenthesis

# fact: (a keyword every match contains, the pattern). Only the lines holding the keyword are
# searched: a plain substring test per line is far cheaper than a pattern over the whole text.
_COUNTS: dict[str, tuple[str, re.Pattern[str]]] = {
    "tma_load": ("tma_load", re.compile(r"\btma_load\w*" + _CALL)),
    "tma_store": ("tma_store", re.compile(r"\btma_store\w*" + _CALL)),
    "wgmma": ("wgmma_", re.compile(r"\bwgmma_(?!desc)\w+" + _CALL)),
    "mma": ("mma_sync", re.compile(r"\bmma_sync\w*" + _CALL)),
    "cp_async": ("cp_async_gs", re.compile(r"\bcp_async_gs\w*" + _CALL)),
    "ldmatrix": ("ldmatrix", re.compile(r"\b\w*ldmatrix\w*" + _CALL)),
    "syncthreads": ("__syncthreads", re.compile(r"\b__syncthreads\s*\(")),
    "fences": ("fence", re.compile(r"(?<![\w])(?:__threadfence\w*|fence_\w+)" + _CALL)),
    "mbarrier": (
        "mbarrier",
        re.compile(r"\bmbarrier\w*\s*\[[^\]\n]*\]\s*\.\s*\w+\s*\(|\bmbarrier_\w+" + _CALL),
    ),
}
_KERNEL = re.compile(r"__global__[^;{]*\{")
_BOUNDS = re.compile(r"__launch_bounds__\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)")
_DEREF = re.compile(r"\*\s*\(\s*(?:const\s+)?(\w+)\s*\*\s*\)")

# Bits of one element of a CUDA vector type's base (`uint4`: uint, 4 lanes).
_BASE_BITS = {
    "char": 8, "uchar": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32, "float": 32,
    "long": 64, "ulong": 64, "longlong": 64, "ulonglong": 64, "double": 64, "half": 16,
    "bfloat16": 16, "nv_bfloat16": 16,
}  # fmt: skip
_VECTOR = re.compile(r"^(" + "|".join(sorted(_BASE_BITS, key=len, reverse=True)) + r")([1-4])(?:_\d+a)?$")


def vector_bits(type_name: str) -> int | None:
    """Return the width in bits of a CUDA vector type (`uint4` -> 128), None for anything else."""
    m = _VECTOR.match(type_name)
    return _BASE_BITS[m.group(1)] * int(m.group(2)) if m else None


def _vector_widths(text: str) -> tuple[int | None, int | None]:
    """Return the widest vector (load, store) in bits: `*(T*)(...)` right of a statement's `=`, or left of it."""
    load = store = None
    for stmt in text.split(";"):
        if "*" not in stmt:
            continue
        eq = _assignment(stmt)
        for m in _DEREF.finditer(stmt):
            bits = vector_bits(m.group(1))
            if bits is None:
                continue
            if eq is not None and m.start() < eq:
                store = max(store or 0, bits)
            else:
                load = max(load or 0, bits)
    return load, store


def _assignment(stmt: str) -> int | None:
    """Return the position of a statement's top-level `=` (not `==`, `<=`, `>=`, `!=`, `+=`...), or None."""
    depth = 0
    for i, ch in enumerate(stmt):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "=" and depth == 0:
            before = stmt[i - 1] if i else ""
            after = stmt[i + 1] if i + 1 < len(stmt) else ""
            if after != "=" and before not in "=<>!+-*/%&|^":
                return i
    return None


def device_facts(text: str) -> dict[str, Value]:
    """Return the device-source facts of docs/facts.md from one generated source text."""
    code = _COMMENTS.sub("", text) if ("//" in text or "/*" in text) else text
    lines = code.split("\n")

    def having(word: str) -> str:
        return "\n".join(ln for ln in lines if word in ln)

    out: dict[str, Value] = {"kernels": len(_KERNEL.findall(having("__global__")))}
    for name, (word, pat) in _COUNTS.items():
        out[name] = len(pat.findall(having(word)))
    bounds = [(int(a), int(b) if b else None) for a, b in _BOUNDS.findall(having("__launch_bounds__"))]
    if bounds:
        top = max(bounds, key=lambda ab: ab[0])
        out["launch_bounds"], out["launch_min_blocks"] = top
    else:
        out["launch_bounds"] = out["launch_min_blocks"] = None
    out["vector_load_bits"], out["vector_store_bits"] = _vector_widths(having("*)"))
    return out
