"""Module prints composed from per-function prints (issue 51).

After SplitHostDevice a module holds a host and a device function, and most passes
change one of them: the other comes back as a new object with the same fields' values.
`ModulePrinter` (the source-map recorder's printer, one per compile) remembers each
function's lines, with their locations, per function name and module shape (the names of
the module's functions). A module whose functions are all new is printed whole
(`lines.print_module`); one where some function is the same as one remembered under its
name (the same object, or equal by the capture's redundant-print rule,
session/snapshot.equal_rule: equal fields print equal text, spans included, so the same
locations; or a new object whose every field is the same object, which
`--exact` keeps) is printed with a stub in that function's place (the same GlobalVar, so a call
prints `Module.name` as before), and the remembered lines go where the stub's are. Lines
printed beside other functions are reused beside the same ones, or beside fewer that
they do not name: a call prints `Module.name` beside its callee and the bare name without.

TVM's printer sorts the functions itself (`main` last, the others by name), puts one
blank line between two, and prints each function in a frame of its own: the composition
takes the order, the header and the separators from the stub module's own print, never
from a rule of its own. Where anything is not as expected (a function other than a
PrimFunc, two of one name, metadata, a chunk it cannot find) the module is printed whole.
The first 4 compositions of a process are checked against the whole print (text and map);
one difference turns composition off for the rest of it, as lines.print_module does for
its tags. `--exact` (TLTRACE_EXACT=1): identity (of the function, or of its every field) alone, no rule.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from ..format.sourcemap import LineMap
from ..session import native
from ..session.snapshot import same_fields
from . import lines as sm

_VERIFY_FIRST = 4
_state = {"verified": 0, "broken": False}
_lock = threading.Lock()

# A function's lines in a module's text, from its decorator to its last line, and their
# locations: None, 0 or (file name, line).
_Chunk = tuple[list[str], list[Any]]


class ModulePrinter:
    """`lines.print_module` for one compile, reusing the lines of functions that did not change."""

    def __init__(self, same: Callable[[Any, Any], bool] | None = None) -> None:
        self._same = same  # the redundant-print rule on two functions; None: identity alone
        # (name, the names of the functions of the module it was printed in) -> (function, its
        # chunk: as lines, or still in the whole text it was printed in). One entry per module
        # shape: the codegen's host module comes between two of host and device.
        self._funcs: dict[tuple[str, frozenset[str]], tuple[Any, _Chunk | _Whole | None]] = {}
        self._stub: Any = None
        self._last: list[str] = []  # the functions' names of the last module printed
        self._tags = sm.Tags()  # the compile's statements and their tags (lines.print_module)
        self.composed = 0  # texts composed (some function's lines reused)
        self.reused = 0  # functions whose lines were reused

    def __call__(self, mod: Any) -> tuple[str, LineMap | None]:
        try:
            items = _functions(mod)
            done = self._try_compose(mod, items) if items is not None else None
        except Exception:  # composition is only a shortcut: the whole print is always right
            items = done = None
            self._funcs.clear()
        if done is not None:
            return done
        text, lmap = sm.print_module(mod, self._tags)
        if items is not None:
            whole, module = _Whole(text, lmap), frozenset(name for name, _, _ in items)
            self._funcs.update(((name, module), (f, whole)) for name, _, f in items)
        return text, lmap

    def _try_compose(self, mod: Any, items: list[tuple[str, Any, Any]]) -> tuple[str, LineMap | None] | None:
        if _state["broken"]:
            return None
        # One function, as in the last module: the capture's rule on the module said changed.
        names = [name for name, _, _ in items]
        rule = len(names) > 1 or names != self._last
        self._last = names
        module = frozenset(names)
        keep = {}
        for name, _, f in items:
            chunk = self._unchanged(name, f, rule, module)
            if chunk is not None:
                keep[name] = chunk
        return self._compose(mod, items, keep) if keep else None

    def _unchanged(self, name: str, func: Any, rule: bool, module: frozenset[str]) -> _Chunk | None:
        """The lines held for `name` when `func` prints as the function they were printed from,
        in a module of these functions' names.

        A call of another function prints `Module.name` (or `cls.name`) when the module has it,
        and its bare name else: lines printed beside other functions are reused beside the same
        ones, or beside fewer when they name none of those left out."""
        held = self._funcs.get((name, module))
        if held is not None:
            chunk = self._reuse(name, func, rule, module, held)
            if chunk is not None:
                return chunk
        for (other, shape), held in list(self._funcs.items()):
            if other == name and module < shape:
                chunk = self._reuse(name, func, rule, shape, held)
                if chunk is not None and not _calls(chunk, shape - module):
                    return chunk
        return None

    def _reuse(self, name: str, func: Any, rule: bool, shape: frozenset[str], held: tuple) -> _Chunk | None:
        """The lines held under (name, shape) when `func` prints as the function they were printed from:
        the same object, or every field the same object (exact, `--exact` too), or equal by the rule."""
        if not same_fields(func, held[0]):
            if self._same is None or not rule:
                return None
            try:
                if not self._same(func, held[0]):
                    return None
            except Exception:
                return None
        chunk = held[1]
        if isinstance(chunk, _Whole):
            chunk = chunk.chunk(name)
            self._funcs[(name, shape)] = (held[0], chunk)
        return chunk

    def _compose(
        self, mod: Any, items: list[tuple[str, Any, Any]], keep: dict[str, _Chunk]
    ) -> tuple[str, LineMap | None] | None:
        try:
            stub = self._stub_func()
            sub = _module(mod, {gv: (stub if name in keep else f) for name, gv, f in items})
            text, lmap = sm.print_module(sub, self._tags)
        except Exception:
            return None
        split = _split(text, lmap)
        if split is None:
            return None
        head, order, chunks = split
        if sorted(order) != sorted(name for name, _, _ in items):
            return None
        out, locs = list(head[0]), list(head[1])
        for k, name in enumerate(order):
            if k:
                out.append("")
                locs.append(None)
            chunk = keep.get(name) or chunks[name]
            out.extend(chunk[0])
            locs.extend(chunk[1])
        done = "\n".join(out), _line_map(locs)
        with _lock:
            verify = _state["verified"] < _VERIFY_FIRST
            if verify:
                _state["verified"] += 1
        if verify:
            whole = sm.print_module(mod)
            if whole != done:
                _state["broken"] = True
                self._funcs.clear()
                return whole
        self.composed += 1
        self.reused += len(keep)
        module = frozenset(order)
        self._funcs.update(((name, module), (f, keep.get(name) or chunks[name])) for name, _, f in items)
        return done

    def _stub_func(self) -> Any:
        if self._stub is None:
            from tilelang import tvm  # type: ignore[import-not-found]

            tir = tvm.tirx
            self._stub = tir.PrimFunc([], tir.Evaluate(tir.const(0, "int32")))
        return self._stub


class _Whole:
    """A module's whole text and map, split into its functions' chunks once, when first asked."""

    __slots__ = ("chunks", "lmap", "text")

    def __init__(self, text: str | None, lmap: LineMap | None) -> None:
        self.text, self.lmap = text, lmap
        self.chunks: dict[str, _Chunk] | None = None

    def chunk(self, name: str) -> _Chunk | None:
        if self.chunks is None:
            split = _split(self.text, self.lmap) if self.text is not None else None
            self.chunks = split[2] if split is not None else {}
            self.text = self.lmap = None
        return self.chunks.get(name)


def _calls(chunk: _Chunk, names: frozenset[str]) -> bool:
    """True when a line of `chunk` may refer to one of these functions (`.name` as a word:
    `Module.name(...)`; a buffer field of that name too, which only costs a print)."""
    pattern = re.compile(r"\.(?:" + "|".join(re.escape(n) for n in sorted(names)) + r")(?![A-Za-z0-9_])")
    return any(pattern.search(ln) for ln in chunk[0])


def _functions(mod: Any) -> list[tuple[str, Any, Any]] | None:
    """[(name, global var, PrimFunc)] of `mod`; None where composition does not apply."""
    from tilelang import tvm  # type: ignore[import-not-found]

    pairs = native.map_items(mod.functions)
    if not pairs:
        return None
    prim = tvm.tirx.PrimFunc
    out = []
    for gv, f in pairs:
        if not isinstance(f, prim):
            return None
        out.append((str(gv.name_hint), gv, f))
    if len({name for name, _, _ in out}) != len(out):
        return None
    return out


def _module(mod: Any, funcs: dict[Any, Any]) -> Any:
    from ..session.snapshot import module_of

    return module_of((mod.attrs, funcs, getattr(mod, "global_infos", None)))


_DECORATOR = "    @"
_DEF = "    def "


def _split(text: str, lmap: LineMap | None) -> tuple[_Chunk, list[str], dict[str, _Chunk]] | None:
    """Return (the header's lines and locations, the functions' names in printed order, each
    function's chunk), or None where the text is not one class of functions one blank line apart."""
    if lmap is None or "metadata" in text:
        return None
    lines = text.split("\n")
    if len(lines) != len(lmap.lines):
        return None
    files = lmap.files
    locs = [(files[v[0]], v[1]) if isinstance(v, tuple) else v for v in lmap.lines]
    starts = [i for i, ln in enumerate(lines) if ln.startswith(_DECORATOR)]
    if not starts:
        return None
    order: list[str] = []
    chunks: dict[str, _Chunk] = {}
    for k, i in enumerate(starts):
        end = starts[k + 1] - 1 if k + 1 < len(starts) else len(lines)
        if k + 1 < len(starts) and (lines[end] != "" or locs[end] is not None):
            return None
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if not nxt.startswith(_DEF) or "(" not in nxt:
            return None
        name = nxt[len(_DEF) : nxt.index("(")]
        if name in chunks:
            return None
        order.append(name)
        chunks[name] = (lines[i:end], locs[i:end])
    head = (lines[: starts[0]], locs[: starts[0]])
    return head, order, chunks


def _line_map(locs: list[Any]) -> LineMap:
    """The map of composed lines: files numbered in the order of their first line, as strip_tags does."""
    files = sm.Files()
    lines = tuple((files.ix(v[0]), v[1]) if isinstance(v, tuple) else v for v in locs)
    return LineMap(tuple(files.names), lines)
