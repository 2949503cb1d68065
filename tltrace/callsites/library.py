"""Call sites: a line whose span points into TileLang's own code, mapped to the user's line
that called the tile operator (docs/sourcemap.md, "Through library code").

`LowerTileOp` expands a `T.gemm` (or another tile operator) into TileLang's library code
(`gemm_scalar.py`, `wgmma_macro_generator.py`): those statements carry the library's spans,
not the user's. TileLang wraps the expansion in a block that keeps the call's span
(`with T.sblock("_gemm_ssr"):` on the `T.gemm` line). So the first IR text in which a
library line appears says, by its nesting, which call it came from; later texts (the block
is gone after `LowerOpaqueBlock`) and the generated source take it from there, by order of
occurrence. The map then holds the call site, and `LineMap.via` the library line.

Pure: no TileLang, no I/O. One `CallSites` per compile, fed its texts in record order
(sourcemap/recorder.py, on the worker).
"""

from __future__ import annotations

import os
from typing import Any

from ..format.records import CODEGEN
from ..format.sourcemap import LineMap, Loc

Where = tuple[str, int]
# A block line of TVMScript (TileLang wraps a tile operator's expansion in one).
_BLOCKS = ("with T.sblock(", "with T.block(")


def package_roots() -> tuple[str, ...]:
    """Return the directories of TileLang's and TVM's own Python code (with a trailing separator)."""
    roots = []
    for name in ("tilelang", "tvm"):
        try:
            mod = __import__(name)
        except Exception:
            continue
        f = getattr(mod, "__file__", None)
        if f:
            roots.append(os.path.join(os.path.dirname(os.path.abspath(f)), ""))
    return tuple(roots)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class CallSites:
    """What one compile learned: per library line, the call site of each of its occurrences."""

    def __init__(self, roots: tuple[str, ...] | None = None) -> None:
        self.roots = package_roots() if roots is None else roots
        self._sites: dict[Where, list[Where | None]] = {}
        # The last call's (map, text, ir, result), while `_sites` is as that call left it: a map
        # applied again (a pass's output map is the next pass's input map) gives the same result.
        self._last: tuple[LineMap, str, bool, LineMap] | None = None

    def library(self, path: str) -> bool:
        """True for a file of TileLang's (or TVM's) own package."""
        return bool(self.roots) and os.path.abspath(path).startswith(self.roots)

    def apply(self, text: str, lmap: LineMap | None, ir: bool) -> LineMap | None:
        """Return `lmap` (the map of `text`) with its library lines mapped to their call sites.

        `ir`: `text` is TVMScript (its nesting can teach a call site); else generated source,
        which only uses what IR texts taught. A line whose call site is unknown, or ambiguous
        (several calls expand into it and the counts differ), keeps its library line.
        """
        if lmap is None:
            return None
        last = self._last
        if last is not None and last[0] is lmap and last[2] == ir and last[1] == text:
            return last[3]
        out = self._apply(text, lmap, ir)
        self._last = (lmap, text, ir, out)
        return out

    def _apply(self, text: str, lmap: LineMap, ir: bool) -> LineMap:
        occ: dict[Where, list[int]] = {}
        lib = [self.library(f) for f in lmap.files]
        for i, v in enumerate(lmap.lines):
            if isinstance(v, tuple) and lib[v[0]] and i not in lmap.via:
                occ.setdefault((lmap.files[v[0]], v[1]), []).append(i)
        if not occ:
            return lmap
        lines: list[str] | None = None  # split only when a line is first seen
        found: dict[int, Where] = {}
        for where, idxs in occ.items():
            sites = self._sites.get(where)
            if sites is None and ir:
                if lines is None:
                    lines = text.split("\n")
                learned = [self._enclosing_call(lines, lmap, lib, i) for i in idxs]
                if any(s is not None for s in learned):
                    # A map learns from itself only: applied again, it finds these same sites.
                    sites = self._sites[where] = learned
            if sites is None:
                continue
            for i, s in zip(idxs, _assign(sites, len(idxs))):
                if s is not None:
                    found[i] = s
        if not found:
            return lmap
        files = list(lmap.files)
        ix = {f: k for k, f in enumerate(files)}
        out: list[Loc] = list(lmap.lines)
        via = dict(lmap.via)
        for i, (f, n) in found.items():
            k = ix.get(f)
            if k is None:
                k = ix[f] = len(files)
                files.append(f)
            old = out[i]
            assert isinstance(old, tuple)
            via[i] = old
            out[i] = (k, n)
        return LineMap(tuple(files), tuple(out), lmap.inferred, via)

    def _enclosing_call(self, lines: list[str], lmap: LineMap, lib: list[bool], i: int) -> Where | None:
        """The user's line of the nearest block around line `i` with one, else None."""
        if i >= len(lines):
            return None
        depth = _indent(lines[i])
        for j in range(i - 1, -1, -1):
            ln = lines[j]
            if not ln.strip() or _indent(ln) >= depth:
                continue
            depth = _indent(ln)
            v = lmap.lines[j] if j < len(lmap.lines) else None
            if isinstance(v, tuple) and not lib[v[0]]:
                # The first user line around it: a call site only when it is the block
                # TileLang made for the tile operator (a loop around a macro is not one).
                return (lmap.files[v[0]], v[1]) if ln.lstrip().startswith(_BLOCKS) else None
            if depth == 0:
                break
        return None


def _assign(sites: list[Where | None], count: int) -> list[Where | None]:
    """The call site of each of `count` occurrences, from those learned (`sites`)."""
    known = {s for s in sites if s is not None}
    if len(known) == 1 and None not in sites:
        return [next(iter(known))] * count
    if len(sites) == count:
        return list(sites)
    return [None] * count


def refine(
    calls: CallSites, record: Any, before: str, after: str, extras: tuple[Any, Any]
) -> tuple[Any, Any]:
    """Return a record's two maps (`extras`) with their call sites (`after` of a codegen record is source)."""
    b, a = extras
    is_ir = getattr(record, "status", None) != CODEGEN
    b = calls.apply(before, b, True) if isinstance(b, LineMap) else b
    a = calls.apply(after, a, is_ir) if isinstance(a, LineMap) else a
    return b, a
