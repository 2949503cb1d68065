"""Hot lines: Nsight Compute's per-instruction samples folded onto tltrace's SASS -> CUDA -> Python map.

Pure: a profiled launch (the dumper's JSON, runtime/_ncu_dump.py) and a compile's texts in,
a ranked table out (plain dicts ready for JSON). Each PC's offset from the function's start
is looked up in tltrace's own SASS stage of the kernel (run --sass: stages/sass.py, whose
`//## kernel.cu:N` marks already follow inline chains out to the kernel's .cu); the
instruction text there must be the one ncu measured (`same_insn`: the two disassemblers
spell a few things differently). When too few agree, the binaries differ (another build
than the one tltrace disassembled) and each PC takes ncu's own line instead (`source_info`,
the innermost): a line of the kernel's .cu as it is; a `.py` line (a `run --line-directives`
build) is the Python line itself; a line in a header (tl_templates, cute, the CUDA includes)
stays apart as "inlined: <header>:<line>", with no Python line. The CUDA
line's Python line is the codegen map's (sourcemap/lines.py, recorded with the device code).
A kernel.cu line a pass left with no Python line may get one from sourcemap/dropped.py:
exact (a TMA load, its `T.copy`) or approximate (a pipeline barrier, a row of its own).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ..format.sourcemap import LineMap
from ..sourcemap.dropped import APPROX, EXACT, Recovered
from ..stages.ptx import CU_NAME

AGREE = 0.98  # the share of measured PCs whose text must match tltrace's SASS at their offset
TOP_STALLS = 3
SASS_SHOWN = 3
_SECTION = re.compile(r"^\.text\.(\S+):\s*$")
_INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$")
_MARK = re.compile(r"^\s*//## (?:" + re.escape(CU_NAME) + r":(\d+)|\?)\s*$")
_TARGET = re.compile(r"`\([^)]*\)|\b0x[0-9a-f]{8,}\b")  # a branch target: a label, or an absolute address


def insn_key(text: str) -> tuple[str, ...]:
    """Return an instruction's text as both disassemblers agree on it: predicate, opcode, operands as a set.

    nvdisasm and ncu differ in register reuse flags, branch targets (a label or an address)
    and the order of a few operands (UTMALDG's descriptor).
    """
    s = _TARGET.sub("T", text.replace(".reuse", "")).strip().rstrip(";").strip()
    pred = ""
    if s.startswith("@"):
        pred, _, s = s.partition(" ")
        s = s.strip()
    op, _, rest = s.partition(" ")
    operands = sorted(o.strip() for o in rest.split(",") if o.strip())
    return (pred, op, *operands)


def sass_offsets(sass: str, kernel: str) -> dict[int, tuple[int | None, str]]:
    """Return {offset: (kernel.cu line or None, instruction text)} of one function of a stored SASS text."""
    out: dict[int, tuple[int | None, str]] = {}
    inside = False
    cu: int | None = None
    for line in sass.split("\n"):
        m = _SECTION.match(line)
        if m:
            inside, cu = m.group(1) == kernel, None
            continue
        if not inside:
            continue
        if "//##" in line:
            mk = _MARK.match(line)
            cu = int(mk.group(1)) if mk and mk.group(1) else None
            continue
        mi = _INSN.match(line)
        if mi:
            out[int(mi.group(1), 16)] = (cu, mi.group(2))
    return out


def innermost(pcs: Iterable[dict[str, Any]]) -> Counter:
    """Return {(file, line): samples} by the line ncu gives each PC (its source_info)."""
    out: Counter = Counter()
    for p in pcs:
        out[(p.get("file"), p.get("line"))] += p.get("samples", 0)
    return out


def merged(actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the PCs of several launches of one kernel, their counts summed by offset."""
    by: dict[int, dict[str, Any]] = {}
    for a in actions:
        for p in a.get("pcs", []):
            q = by.get(p["offset"])
            if q is None:
                by[p["offset"]] = {**p, "stalls": dict(p.get("stalls") or {})}
                continue
            q["samples"] += p.get("samples", 0)
            q["inst"] += p.get("inst", 0)
            for k, v in (p.get("stalls") or {}).items():
                q["stalls"][k] = q["stalls"].get(k, 0) + v
    return [by[o] for o in sorted(by)]


def agreement(pcs: Sequence[dict[str, Any]], ours: dict[int, tuple[int | None, str]]) -> tuple[int, int]:
    """Return (PCs whose text matches tltrace's SASS at their offset, PCs checked)."""
    checked = [p for p in pcs if p.get("sass")]
    same = sum(
        1 for p in checked if p["offset"] in ours and insn_key(ours[p["offset"]][1]) == insn_key(p["sass"])
    )
    return same, len(checked)


def _is_kernel_cu(path: str | None) -> bool:
    return bool(path) and os.path.splitext(str(path))[1] == ".cu"


def fold(
    pcs: Sequence[dict[str, Any]],
    cmap: LineMap | None,
    sass: str | None,
    kernel: str,
    cu_text: str | None = None,
    sources: dict[str, str] | None = None,
    recovered: dict[int, Recovered] | None = None,
) -> dict[str, Any]:
    """Return the hot lines of one kernel's PCs: {mode, agree, totals, lines, other, cuda, inlined}.

    `recovered` (sourcemap/dropped.py): kernel.cu lines a pass left with no Python line; an
    exact one counts on its Python line (the row's `recovered` says how many samples came so),
    an approximate one is a row of `other` of its own, never a Python line."""
    ours = sass_offsets(sass, kernel) if sass else {}
    same, checked = agreement(pcs, ours)
    mode = "sass" if ours and checked and same >= AGREE * checked else "ncu"
    cu_lines = (cu_text or "").split("\n")
    rows: dict[Any, dict[str, Any]] = {}
    cuda: Counter = Counter()
    inlined: Counter = Counter()
    for p in pcs:
        samples, inst = p.get("samples", 0), p.get("inst", 0)
        py = None
        if mode == "sass":
            cu = ours.get(p["offset"], (None, ""))[0]
            header = None
        elif _is_kernel_cu(p.get("file")):
            cu, header = p.get("line"), None
        elif str(p.get("file") or "").endswith(".py") and p.get("line"):  # a run --line-directives build
            cu, header, py = None, None, (str(p["file"]), int(p["line"]))
        else:
            cu, header = None, f"{os.path.basename(str(p.get('file') or '?'))}:{p.get('line') or '?'}"
        src = py or (cmap.src(cu - 1) if (cmap is not None and cu) else None)
        rec = (recovered or {}).get(cu) if (cu and py is None) else None
        if rec is not None and rec.kind == EXACT:
            src = (rec.file, rec.line)
        if cu:
            cuda[cu] += samples
        if header is not None:
            inlined[header] += samples
        key: Any = src if src is not None else ("inlined", header) if header else ("cuda", cu)
        if rec is not None and rec.kind == APPROX:
            key = ("approx", rec.label)
        r = rows.setdefault(
            key, {"samples": 0, "inst": 0, "stalls": Counter(), "cuda": Counter(), "sass": [], "recovered": 0}
        )
        if rec is not None and rec.kind == EXACT:
            r["recovered"] += samples
        r["samples"] += samples
        r["inst"] += inst
        r["stalls"].update(p.get("stalls") or {})
        if cu:
            r["cuda"][cu] += samples
        r["sass"].append((samples, p["offset"], (p.get("sass") or "").strip()))
    total = sum(p.get("samples", 0) for p in pcs)
    lines: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    for key, r in rows.items():
        row = _row(key, r, total, cu_lines, sources or {})
        (lines if "file" in row else other).append(row)
    order = lambda x: (-x["samples"], -x["inst"], x.get("file", ""), x.get("line", 0))  # noqa: E731
    return {
        "kernel": kernel,
        "mode": mode,
        "agree": {"same": same, "checked": checked},
        "samples": total,
        "inst": sum(p.get("inst", 0) for p in pcs),
        "lines": sorted(lines, key=order),
        "other": sorted(other, key=lambda x: (-x["samples"], -x["inst"], x["where"])),
        "cuda": {str(k): v for k, v in sorted(cuda.items())},
        "inlined": dict(sorted(inlined.items())),
    }


def _row(
    key: Any, r: dict[str, Any], total: int, cu_lines: list[str], sources: dict[str, str]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if key[0] == "approx":
        out["where"] = f"~ {key[1]} (approximate)"
        out["approximate"] = True
    elif key[0] in ("inlined", "cuda"):
        out["where"] = f"inlined: {key[1]}" if key[0] == "inlined" else f"kernel.cu:{key[1]} (no Python line)"
    else:
        out["file"], out["line"] = key
        text = sources.get(key[0])
        src_lines = text.split("\n") if text else []
        out["text"] = src_lines[key[1] - 1].strip() if 0 < key[1] <= len(src_lines) else None
    out["samples"] = r["samples"]
    if r["recovered"]:
        out["recovered"] = r["recovered"]  # samples of lines whose span a pass dropped (sourcemap/dropped.py)
    out["share"] = round(r["samples"] / total, 4) if total else 0.0
    out["stalls"] = [[k, v] for k, v in r["stalls"].most_common(TOP_STALLS) if v]
    out["inst"] = r["inst"]
    out["cuda"] = [
        {"line": n, "samples": s, "text": cu_lines[n - 1].strip() if 0 < n <= len(cu_lines) else None}
        for n, s in sorted(r["cuda"].items(), key=lambda x: (-x[1], x[0]))
    ]
    top = sorted(r["sass"], key=lambda x: (-x[0], x[1]))[:SASS_SHOWN]
    out["sass"] = [{"offset": f"{o:04x}", "text": t, "samples": s} for s, o, t in top]
    return out
