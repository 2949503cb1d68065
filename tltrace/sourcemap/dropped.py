"""Python lines for the generated source's statements whose span a TileLang pass dropped.

`ProducerConsumerWarpSpecialized` (sm_90a) rebuilds the pipelined loop without spans
(docs/sourcemap.md, "What TileLang itself drops"): the producer's TMA loads and the barrier
waits and arrives it inserts reach kernel.cu with no Python line. The records hold every
pass's input and output text with their maps, so two things can be said at read time:

* **A TMA load** (`tl::tma_load(K_desc, ..., &K_shared[..])`, no Python line of its own:
  none, or an enclosing statement's, inferred) gets the
  line of the one `T.copy(K[..], K_shared[..])` of the input of the pass whose output has
  that copy as a `T.tma_copy` with no span. Exact only when that `T.copy` is the only one
  with those buffers there; otherwise no line.
* **A barrier wait or arrive** (`mbarrier[i].wait(..)` / `.arrive()`, no Python line) inside
  a loop with no Python line, when that pass's input has one pipelined loop (a loop with a
  `num_stages` annotation): labelled approximate, "pipeline barrier of T.Pipelined at line
  N", never an exact line.

`recover` returns {kernel.cu line (1-based): Recovered}; nothing when no pass dropped them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..format.sourcemap import LineMap

EXACT, APPROX = "exact", "approximate"

_CU_TMA = re.compile(r"\btl::tma_load(?:_\w+)?\(\s*(\w+)_desc\s*,.*?,\s*\(*&\(*\(\([\w:]+\*\)\s*(\w+)\)")
_CU_BARRIER = re.compile(r"\bmbarrier\w*\[[^\]]*\]\.(?:wait|arrive)\(")
_CU_FOR = re.compile(r"^\s*for\s*\(")
_TIR_REGION = r"T\.region\((\w+)\["
_TIR_COPY = re.compile(r"^\s*T\.copy\(" + _TIR_REGION + r".*?,\s*" + _TIR_REGION)
_TIR_TMA = re.compile(r"^\s*T\.tma_(?:copy|load)\(" + _TIR_REGION + r".*?,\s*" + _TIR_REGION)
_TIR_PIPELINED = re.compile(r"^\s*for\s+\w+\s+in\s+T\.serial\(.*\"num_stages\"")


@dataclass(frozen=True)
class Recovered:
    """A Python line given to a generated line whose span a pass dropped."""

    kind: str  # EXACT or APPROX
    file: str
    line: int
    label: str  # what it is: "T.copy(K, K_shared)", "pipeline barrier of T.Pipelined at line 135"


@dataclass(frozen=True)
class PassText:
    """One pass's input and output text with their maps (None where not mapped)."""

    before: str
    before_map: LineMap | None
    after: str
    after_map: LineMap | None


def _spanned(
    text: str, lmap: LineMap | None, pattern: re.Pattern[str]
) -> list[tuple[re.Match[str], tuple[str, int] | None]]:
    out = []
    for i, line in enumerate(text.split("\n")):
        m = pattern.match(line)
        if m:
            out.append((m, lmap.src(i) if lmap is not None else None))
    return out


def _pair(m: re.Match[str]) -> tuple[str, str]:
    return m.group(1), m.group(2)


def _spanless_tma(text: str, lmap: LineMap) -> set[tuple[str, str]]:
    return {_pair(m) for m, src in _spanned(text, lmap, _TIR_TMA) if src is None}


def _dropping(p: PassText) -> tuple[dict[tuple[str, str], Recovered | None], Recovered | None] | None:
    """Return the copies (buffers -> line, None when not unique) and pipelined loop of a pass
    whose output has a T.tma_copy with no span that its input did not have; None when this
    pass dropped none."""
    if p.before_map is None or p.after_map is None:
        return None
    lost = _spanless_tma(p.after, p.after_map) - _spanless_tma(p.before, p.before_map)
    if not lost:
        return None
    copies: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for m, src in _spanned(p.before, p.before_map, _TIR_COPY):
        copies.setdefault(_pair(m), []).append(src or ("", 0))
    found: dict[tuple[str, str], Recovered | None] = {}
    for pair in lost:
        srcs = copies.get(pair, [])
        ok = len(srcs) == 1 and srcs[0][1] > 0
        found[pair] = (
            Recovered(EXACT, srcs[0][0], srcs[0][1], f"T.copy({pair[0]}, {pair[1]})") if ok else None
        )
    loops = [src for _m, src in _spanned(p.before, p.before_map, _TIR_PIPELINED) if src is not None]
    loop = None
    if len(loops) == 1:
        loop = Recovered(
            APPROX, loops[0][0], loops[0][1], f"pipeline barrier of T.Pipelined at line {loops[0][1]}"
        )
    return found, loop


def _no_own_line(cmap: LineMap, i: int) -> bool:
    """Whether 0-based line `i` is a statement with no Python line of its own (none, or inferred)."""
    return i < len(cmap.lines) and (cmap.lines[i] == 0 or (cmap.lines[i] is not None and i in cmap.inferred))


def _in_unmapped_loop(cu: list[str], cmap: LineMap, i: int) -> bool:
    """Whether 0-based line `i` of kernel.cu lies inside a `for` loop with no Python line of its own."""
    depth = 0
    for j in range(i - 1, -1, -1):
        line = cu[j]
        depth += line.count("}") - line.count("{")
        if depth < 0:  # an enclosing block opens here
            depth = 0
            if _CU_FOR.match(line):
                return _no_own_line(cmap, j)
    return False


def recover(passes: Sequence[PassText], cu_text: str | None, cmap: LineMap | None) -> dict[int, Recovered]:
    """Return {kernel.cu line (1-based): Recovered} for its statements a pass left with no Python line."""
    if not cu_text or cmap is None:
        return {}
    copies: dict[tuple[str, str], Recovered | None] = {}
    loops: list[Recovered | None] = []
    for p in passes:
        got = _dropping(p)
        if got is not None:
            for pair, rec in got[0].items():
                copies[pair] = rec if pair not in copies else None  # dropped by two passes: not unique
            loops.append(got[1])
    if not copies:
        return {}
    loop = loops[0] if len(loops) == 1 else None
    cu = cu_text.split("\n")
    out: dict[int, Recovered] = {}
    for i, line in enumerate(cu):
        if not _no_own_line(cmap, i):
            continue
        m = _CU_TMA.search(line)
        if m:
            rec = copies.get((m.group(1), m.group(2)))
            if rec is not None:
                out[i + 1] = rec
        elif loop is not None and _CU_BARRIER.search(line) and _in_unmapped_loop(cu, cmap, i):
            out[i + 1] = loop
    return out
