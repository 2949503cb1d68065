"""Source maps: the Python `file:line` behind each line of every recorded text.

Two sources, both from TileLang itself:

* **IR texts.** TIR statements carry spans (`TILELANG_ENABLE_IR_SPAN`, on by default).
  `print_module` prints a module once, with each statement tagged by TVM's own
  `script(obj_to_annotate=...)` comments, and strips the tags again: the text is the
  plain print byte for byte, and the tags say which line each statement landed on.
  `AttrStmt` is never tagged: a comment on it makes TVM print it as a `with` block
  instead of its one-line form, which would change the text.
* **Generated source.** `codegen_map` runs the same device codegen a second time, on the
  worker (sourcemap/recorder.py),
  with the pass config `tl.emit_line_directives` on and TileLang's source-only entry
  point, and reads the `#line` directives. Only for TileLang's own codegen of a real
  module and Target (session/native.py): a custom caller's build gets no map. The map is kept only when the source
  without those lines is the compiled source, byte for byte; the compiled source
  itself is never touched.

A `LineMap` holds, per line, None (no statement starts there), 0 (a statement with
no Python line) or (file index, line): format/sourcemap.py, with its codec on disk;
sourcemap/store.py writes it, history/sourcemaps.py reads it back.
"""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

from ..format.sourcemap import LineMap, Loc
from ..session.native import array_items as _items
from ..session.native import elements as _elements
from ..session.native import ffi_handle as _ffi
from ..session.native import map_pairs as _map_pairs
from .cstring import c_unstring

LINE_DIRECTIVES = "tl.emit_line_directives"


class Files:
    """Interns file names into indices while a map is built."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._ix: dict[str, int] = {}

    def ix(self, name: str) -> int:
        i = self._ix.get(name)
        if i is None:
            i = self._ix[name] = len(self.names)
            self.names.append(name)
        return i


# -- IR texts ------------------------------------------------------------------------------------
# The tag is unique to this process, so no IR text can hold it by chance.
_TAG = f"tltrace{uuid.uuid4().hex[:10]}:"
_LEAD = "# " + _TAG
_TRAIL = "  # " + _TAG
_NO_LOC = "-"
# The printer's identity with a plain print is checked on the first texts of a process; one
# difference turns the tags off for the rest of it (the text is then printed plainly, unmapped).
_VERIFY_FIRST = 8
_printer_state = {"verified": 0, "broken": False}
_printer_lock = threading.Lock()


# statement type -> (tagged: not a SeqStmt or AttrStmt, a SeqStmt, its fields that may hold statements)
_KINDS: dict[type, tuple[bool, bool, tuple[str, ...]]] = {}


def _kind(stmt: Any) -> tuple[bool, bool, tuple[str, ...]]:
    kind = type(stmt)
    info = _KINDS.get(kind)
    if info is None:
        name = kind.__name__
        names = ("seq",) if name == "SeqStmt" else ("body", "then_case", "else_case", "block", "init")
        fields = tuple(n for n in names if hasattr(stmt, n))
        info = _KINDS[kind] = (name not in ("SeqStmt", "AttrStmt"), fields == ("seq",), fields)
    return info


_IS_STMT: dict[type, bool] = {}


def _is_stmt(node: Any, stmt_type: type) -> bool:
    """isinstance(node, stmt_type) by a dict of types: TVM's classes have an ABC metaclass, whose
    check for a class it has not cached (or has cached and forgotten) walks all of Stmt's
    subclasses; in a busy process that was a twentieth of the worker's samples."""
    t = type(node)
    r = _IS_STMT.get(t)
    if r is None:
        r = _IS_STMT[t] = issubclass(t, stmt_type)
    return r


def _stmt_kids(stmt: Any, stmt_type: type) -> list[Any]:
    _, seq, fields = _kind(stmt)
    if seq:
        return [c for c in _items(stmt.seq) if _is_stmt(c, stmt_type)]
    out = []
    for name in fields:
        c = getattr(stmt, name)
        if c is not None and _is_stmt(c, stmt_type):
            out.append(c)
    return out


# A printed line, read: (a tag's line of its own, the line without its tag, the tag's value or None).
_Line = tuple[bool, str, Any]
_KEEP_LINES = 100_000  # lines held per compile (Tags.lines) before the cache starts again


class Tags:
    """The statements' tags of one compile's prints, by statement handle.

    A statement never changes (copy-on-write), and most of a module's statements are the
    previous module's: the last module's statements are held here with their tags and child
    statements, so one of them costs a dict lookup instead of the span and field reads (FFI
    calls). Holding a statement keeps its handle from being reused. A tag names a location:
    one tag per (file, line), for the whole compile. The printed lines are held too, each with
    its reading (`strip_tags`): a line printed before costs a dict lookup.
    """

    def __init__(self) -> None:
        self.stmts: dict[int, tuple[Any, str | None, list[Any]]] = {}  # handle -> (stmt, tag, kids)
        self.locs: list[tuple[str, int]] = []
        self._ix: dict[tuple[str, int], str] = {}
        self.lines: dict[str, _Line] = {}  # the strip's lines of the compile's texts (strip_tags)

    def tag(self, loc: tuple[str, int]) -> str:
        t = self._ix.get(loc)
        if t is None:
            t = self._ix[loc] = f"{_TAG}{len(self.locs)}"
            self.locs.append(loc)
        return t


def _tags(mod: Any, held: Tags | None = None) -> tuple[dict[Any, str], list[tuple[str, int]]]:
    """Return ({statement: tag}, locations) for the statements of every PrimFunc in `mod`."""
    from tilelang import tvm  # type: ignore[import-not-found]

    get_span = _ffi("tl.ir.GetStmtSpan")
    if get_span is None:
        return {}, []
    if held is None:
        held = Tags()
    stmt_type, func_type = tvm.tirx.Stmt, tvm.tirx.PrimFunc
    tags: dict[Any, str] = {}
    no_loc = _TAG + _NO_LOC
    seen = held.stmts
    walked: dict[int, tuple[Any, str | None, list[Any]]] = {}
    # Only real statements reach the span getter (it takes a Stmt; None is not one).
    stack = [
        f.body
        for _, f in _map_pairs(mod.functions)
        if isinstance(f, func_type) and isinstance(f.body, stmt_type)
    ]
    pop, extend = stack.pop, stack.extend
    while stack:
        s = pop()
        h = s.__chandle__()
        entry = seen.get(h)
        if entry is None:
            entry = walked.get(h)  # a statement met twice in this module
        if entry is None:
            tag = None
            if _kind(s)[0]:
                span = get_span(s)
                name = span.source_name if span is not None else None
                tag = held.tag((str(name.name), int(span.line))) if name is not None else no_loc
            entry = (s, tag, _stmt_kids(s, stmt_type))
        walked[h] = entry
        if entry[1] is not None:
            tags[entry[0]] = entry[1]
        extend(entry[2])
    held.stmts = walked  # this module's statements only: the next module is mostly made of them
    return tags, held.locs


def _tag_value(s: str, locs: list[tuple[str, int]]) -> tuple[str, int] | int:
    s = s.strip()
    if s == _NO_LOC:
        return 0
    return locs[int(s)]


def _read_line(ln: str, locs: list[tuple[str, int]]) -> _Line | None:
    """A printed line's tag, or None when a tag is where no tag can be."""
    if _TAG not in ln:
        return (False, ln, None)
    body = ln.lstrip(" ")
    if body.startswith(_LEAD):
        return (True, "", _tag_value(body[len(_LEAD) :], locs))
    k = ln.rfind(_TRAIL)
    if k < 0:
        return None
    out = ln[:k]
    if _TAG in out:
        return None
    return (False, out, _tag_value(ln[k + len(_TRAIL) :], locs))


def strip_tags(
    text: str, locs: list[tuple[str, int]], seen: dict[str, _Line] | None = None
) -> tuple[str, LineMap] | None:
    """Return (text without the tags, its map), or None when a tag is where no tag can be.

    `seen`: the lines already read with these `locs` (`Tags.lines`, one compile's): most of a
    text's lines are the last text's, byte for byte, and a line's reading depends on nothing
    else (a tag names one location for the whole compile), so each costs a dict lookup."""
    if seen is None:
        seen = {}
    elif len(seen) > _KEEP_LINES:
        seen.clear()
    get = seen.get
    files = Files()
    out: list[str] = []
    lines: list[Loc] = []
    pending: Any = None
    for ln in text.split("\n"):
        line = get(ln)
        if line is None:
            line = _read_line(ln, locs)
            if line is None:
                return None
            seen[ln] = line
        lead, body, v = line
        if v is not None:
            if pending is None or (pending == 0 and v != 0):
                pending = v
            if lead:
                continue
        out.append(body)
        lines.append((files.ix(pending[0]), pending[1]) if isinstance(pending, tuple) else pending)
        pending = None
    return "\n".join(out), LineMap(tuple(files.names), tuple(lines))


def print_module(mod: Any, held: Tags | None = None) -> tuple[str, LineMap | None]:
    """Return (the module's text, exactly `str(mod)`, and its line map or None).

    One print, with tags, replaces the plain one; None when the module has no
    statements or TileLang gives no spans. `held`: the compile's statements seen so far
    (sourcemap/compose.ModulePrinter), None: this module's alone.
    """
    if _printer_state["broken"]:
        return str(mod), None
    try:
        tags, locs = _tags(mod, held)
    except Exception:
        tags, locs = {}, []
    if not tags:
        return str(mod), None
    try:
        done = strip_tags(mod.script(obj_to_annotate=tags), locs, held.lines if held is not None else None)
    except Exception:  # a printer without annotations, or one that refuses these: print plainly
        done = None
    with _printer_lock:
        verify = _printer_state["verified"] < _VERIFY_FIRST
        if verify:
            _printer_state["verified"] += 1
    if done is None:
        return str(mod), None
    if verify and done[0] != str(mod):
        _printer_state["broken"] = True
        return str(mod), None
    return done


# -- generated source --------------------------------------------------------------------------
_DIRECTIVE = re.compile(r'^#line (\d+) "((?:[^"\\]|\\.)*)"\s*$')


def _is_statement(line: str) -> bool:
    """A line of generated C/CUDA that a statement starts on: indented (inside a body), not a
    brace, a preprocessor line or a comment."""
    if not line[:1].isspace():
        return False
    s = line.strip()
    return bool(s) and not s.startswith(("}", "{", "#", "//", "/*"))


def directive_map(text: str) -> tuple[str, LineMap]:
    """Return (source without its `#line` lines, the map they give).

    A directive names the line after it. The lines that follow it at the same
    indentation, up to a brace or a new block, share its Python line (declarations
    in a row); every other statement line has none.
    """
    files = Files()
    out: list[str] = []
    lines: list[Loc] = []
    cur: tuple[int, int] | None = None  # the directive waiting for its line
    run: tuple[tuple[int, int], int] | None = None  # (location, indentation) that a row may share
    for ln in text.split("\n"):
        if ln.startswith("#line "):
            m = _DIRECTIVE.match(ln)
            if m:
                name = c_unstring(m.group(2))
                cur = (files.ix(name), int(m.group(1)))
                continue
        out.append(ln)
        indent = len(ln) - len(ln.lstrip())
        stmt = _is_statement(ln)
        v: Loc = None
        if cur is not None and not stmt and (not ln.strip() or ln.lstrip().startswith("#")):
            lines.append(None)  # a #pragma (or blank) line between a directive and its statement
            continue
        if cur is not None:
            v = cur if stmt else None
            run = (cur, indent) if stmt and not ln.rstrip().endswith("{") else None
            cur = None
        elif stmt:
            if run is not None and indent == run[1] and not ln.rstrip().endswith("{"):
                v = run[0]
            else:
                v, run = 0, None
        else:
            run = None
        lines.append(v)
    return "\n".join(out), LineMap(tuple(files.names), tuple(lines))


def codegen_context() -> tuple[Any, Any]:
    """The compiling thread's PassContext settings and current Target, for `codegen_map` run on
    another thread (both are thread-local in TVM). Cheap: references and a dict copy, the FFI
    containers read with tltrace's handles that keep the GIL (their Python iterators make native
    calls that each give it away: issue 51, round 5)."""
    from tilelang import tvm  # type: ignore[import-not-found]

    cur = tvm.transform.PassContext.current()
    ctx = (
        cur.opt_level,
        _elements(cur.required_pass),
        _elements(cur.disabled_pass),
        dict(_map_pairs(cur.config)),
    )
    return ctx, tvm.target.Target.current(allow_none=True)


def codegen_map(
    ffi: str, mod: Any, target: Any, generated: str, context: tuple[Any, Any] | None = None
) -> LineMap | None:
    """Return the map of `generated`, the source that codegen `ffi` made from `mod`, or None.

    Runs the source-only codegen again under a PassContext with `#line` directives on and
    no instruments; the result is used only when it is `generated` once the directives go.
    First on a copy of `mod` whose every statement carries a span of its own (`stamped_map`),
    which says exactly which statement each line comes from; else on `mod` itself, whose
    directives name only the statements that kept a span (`directive_map`).

    `context`: `codegen_context()` taken on the compiling thread, when this runs on another
    (the worker); None: this thread's own.

    Native code sees only what it can take: `ffi` must be one of TileLang's own codegens
    (session/native.py `SOURCE_CODEGENS`), `mod` a real IRModule and `target` a real Target;
    anything else is no map. The caller (session/codegen_call.py) also asks that the source
    came from TileLang's own codegen of this very module and target (`native.may_rerun_codegen`).
    """
    from ..session import native

    name = native.source_codegen(ffi)
    if not generated or name is None or not native.is_module(mod) or not native.is_target(target):
        return None
    import tvm_ffi  # type: ignore[import-not-found]

    fn = tvm_ffi.get_global_func(name, allow_missing=True)
    if fn is None:
        return None
    ctx = context if context is not None else codegen_context()
    # A compile under `tl.emit_line_directives` (TileLang's compile-only tool turns it on)
    # holds TileLang's own directives: the map is made for its text without them and
    # spread back over it, each directive line a line of no statement.
    bare, kept = own_directives(generated)
    try:
        lmap = stamped_map(fn, mod, target, bare, ctx)
    except Exception:
        lmap = None
    if lmap is None:
        plain, lmap = directive_map(_codegen_with_directives(fn, mod, target, ctx))
        if plain != bare:
            return None
    return lmap if kept is None else _spread(lmap, kept, generated.count("\n") + 1)


def own_directives(text: str) -> tuple[str, list[int] | None]:
    """Return (`text` without its `#line` lines, the indices of the lines kept), or (`text`,
    None) when it has none: the directives TileLang writes under `tl.emit_line_directives`."""
    if "#line " not in text:
        return text, None
    lines = text.split("\n")
    kept = [i for i, ln in enumerate(lines) if not is_directive(ln)]
    if len(kept) == len(lines):
        return text, None
    return "\n".join(lines[i] for i in kept), kept


def blank_directives(text: str) -> str:
    """Return `text` with each of its `#line` lines emptied: compiled, every line keeps its own
    number (the PTX/SASS stages' kernel.cu lines are then the recorded text's, toolchain/nvcc.py)."""
    if "#line " not in text:
        return text
    return "\n".join("" if is_directive(ln) else ln for ln in text.split("\n"))


def is_directive(line: str) -> bool:
    """A `#line N "file"` line, as TileLang writes it (at the start of the line)."""
    return line.startswith("#line ") and _DIRECTIVE.match(line) is not None


def _spread(lmap: LineMap, kept: list[int], n: int) -> LineMap:
    """`lmap`, of the lines `kept` of a text of `n` lines, moved onto that text (None elsewhere)."""
    out: list[Loc] = [None] * n
    for j, i in enumerate(kept):
        out[i] = lmap.lines[j]
    inferred = frozenset(kept[j] for j in lmap.inferred)
    via = {kept[j]: v for j, v in lmap.via.items()}
    return LineMap(lmap.files, tuple(out), inferred, via)


def _codegen_with_directives(fn: Any, mod: Any, target: Any, context: tuple[Any, Any]) -> str:
    import contextlib

    from tilelang import tvm  # type: ignore[import-not-found]

    from ..session.codegen import module_source

    (opt_level, required, disabled, config), current_target = context
    config = dict(config)
    config[LINE_DIRECTIVES] = True
    with contextlib.ExitStack() as stack:
        if current_target is not None and tvm.target.Target.current(allow_none=True) is None:
            stack.enter_context(current_target)  # the compile's `with target:`, on this thread too
        stack.enter_context(
            tvm.transform.PassContext(
                opt_level=opt_level, required_pass=required, disabled_pass=disabled, config=config
            )
        )
        result = fn(mod, target)
    return module_source(result)


_Where = tuple[str, int] | None
_SCOPES = ("SeqStmt", "AttrStmt", "AllocBuffer", "DeclBuffer", "Bind", "LetStmt", "Allocate")
# The file name of the spans stamped on the copy: one line number per statement.
_STAMP = f"<{_TAG}stmt>"
_STAMP_DIRECTIVE = f'"{_STAMP}"'


def _stmt_origins(copy: Any) -> list[tuple[tuple[str, int] | None, bool]] | None:
    """Stamp every statement of `copy` (in place) with a span of its own, `_STAMP`:N for the
    N-th; return, per N-1, (its Python line, inferred) or (None, False).

    A statement's own span is exact; a buffer's declaration (AllocBuffer, DeclBuffer, and the
    Bind of its data pointer) carries the buffer's span, exact too. A statement with neither
    takes its nearest enclosing statement's line, marked inferred (none at the top level: a
    function's own line would say nothing), and a declaration at the top of a function
    (outside any loop or branch) whose buffer lost its span takes the function's line (the
    `def`), marked inferred.
    """
    from tilelang import tvm  # type: ignore[import-not-found]

    # Handles that keep the GIL (session/native.ffi_handle): the walk makes a few native calls
    # a statement, each a microsecond; on a busy autotuner each one that gave the GIL away
    # waited for it again behind the compiling threads (the H100 profile of round 6).
    get_span, set_span = _ffi("tl.ir.GetStmtSpan"), _ffi("tl.ir.SetStmtSpan")
    func_span, buf_span = _ffi("tl.ir.GetPrimFuncSpan"), _ffi("tl.ir.GetBufferSpan")
    make_span, visit_pre = _ffi("ir.Span"), _ffi("tirx.PreOrderVisit")
    if get_span is None or set_span is None:
        return None
    stmt_type, func_type = tvm.tirx.Stmt, tvm.tirx.PrimFunc
    if make_span is None:
        make_span = tvm.ir.Span
    stamp_name = tvm.ir.SourceName(_STAMP)

    def loc(span: Any) -> tuple[str, int] | None:
        if span is None or span.source_name is None or int(span.line) <= 0:
            return None
        return str(span.source_name.name), int(span.line)

    def of_buffer(buf: Any) -> tuple[str, int] | None:
        return loc(buf_span(buf)) if buf_span is not None and buf is not None else None

    funcs = [f for _, f in _map_pairs(copy.functions) if isinstance(f, func_type)]
    data_vars: dict[Any, tuple[str, int]] = {}  # a buffer's data pointer -> the buffer's line
    origins: list[tuple[tuple[str, int] | None, bool]] = []
    seen: set[Any] = set()
    stack: list[tuple[Any, _Where, _Where]] = [
        (f.body, None, loc(func_span(f)) if func_span is not None else None)
        for f in funcs
        if isinstance(f.body, stmt_type)
    ]
    # (statement, its own line or None, the line it would inherit, the function's line, kind)
    order: list[tuple[Any, _Where, _Where, _Where, str]] = []
    while stack:
        s, outer, fn_loc = stack.pop()
        own = loc(get_span(s))
        kind = type(s).__name__
        if own is None and kind in ("AllocBuffer", "DeclBuffer"):
            own = of_buffer(getattr(s, "buffer", None))
            if own is not None:
                data_vars[s.buffer.data] = own
        order.append((s, own, own if own is not None else outer, fn_loc, kind))
        # The function's line reaches only the declarations at its top (not inside a loop or branch).
        inner = fn_loc if kind in _SCOPES else None
        stack.extend(
            (c, own if own is not None else outer, inner) for c in reversed(_stmt_kids(s, stmt_type))
        )
    # No span is set before this loop reads them: a statement met twice (a shared subtree) is
    # stamped once, at its first meeting, so `own` from the walk is still its span here.
    for s, own, outer, fn_loc, kind in order:
        if s in seen:
            continue
        seen.add(s)
        inferred = False
        if own is None and kind == "Bind":
            own = data_vars.get(s.var)
        if own is None and outer is None and kind in ("AllocBuffer", "DeclBuffer", "Bind"):
            outer = fn_loc
        if own is None and outer is not None:
            own, inferred = outer, True
        origins.append((own, inferred))
        n = len(origins)
        set_span(s, make_span(stamp_name, n, n, 1, 1))

    # Any statement the walk above does not reach still gets a span of its own, with no line.
    # A pre-order walk that goes no deeper than a statement's expressions (no statement lies
    # inside an expression): one Python call per statement and per expression directly
    # under one, not per node of every expression tree.
    def visit(node: Any) -> bool:
        if not _is_stmt(node, stmt_type):
            return False
        if node not in seen:
            seen.add(node)
            origins.append((None, False))
            n = len(origins)
            set_span(node, make_span(stamp_name, n, n, 1, 1))
        return True

    for f in funcs:
        if isinstance(f.body, stmt_type):  # pre_order_visit(None, ...) dies in native code
            if visit_pre is not None:
                visit_pre(f.body, visit)  # its callbacks run with the GIL this thread keeps
            else:
                tvm.tirx.stmt_functor.pre_order_visit(f.body, visit)
    # A function's own span too (TileLang's directive at its entry): every directive of the
    # copy then names the stamp, never a user's file name, which TileLang writes unescaped.
    set_func_span = _ffi("tl.ir.SetPrimFuncSpan")
    if set_func_span is not None and func_span is not None:
        for f in funcs:
            origins.append((loc(func_span(f)), False))
            n = len(origins)
            set_func_span(f, make_span(stamp_name, n, n, 1, 1))
    return origins


def _json_copy(mod: Any) -> Any:
    """A copy of `mod` through TVM's JSON graph, kept as an FFI object (`ffi.ToJSONGraph`,
    `ffi.FromJSONGraph`): what `tvm.ir.load_json(tvm.ir.save_json(mod))` makes, every node new
    (operators looked up again, as a load does), without writing the graph as indented text
    and parsing it back (two thirds of the copy's cost on an sm_90a gemm). Where this TVM has
    no graph functions: `node.SaveJSON`/`node.LoadJSON`, without the Python `upgrade_json` in
    between (it only re-indents JSON that is already of this TVM's version)."""
    import tvm_ffi  # type: ignore[import-not-found]
    from tilelang import tvm  # type: ignore[import-not-found]

    to_graph = tvm_ffi.get_global_func("ffi.ToJSONGraph", allow_missing=True)
    from_graph = tvm_ffi.get_global_func("ffi.FromJSONGraph", allow_missing=True)
    if to_graph is not None and from_graph is not None:
        return from_graph(to_graph(mod, None))
    save = tvm_ffi.get_global_func("node.SaveJSON", allow_missing=True)
    load = tvm_ffi.get_global_func("node.LoadJSON", allow_missing=True)
    if save is None or load is None:
        return tvm.ir.load_json(tvm.ir.save_json(mod))
    return load(save(mod))


def stamped_map(
    fn: Any, mod: Any, target: Any, generated: str, context: tuple[Any, Any] | None = None
) -> LineMap | None:
    """The map of `generated` from a codegen run on a stamped copy of `mod`, or None.

    The copy (a JSON round trip, so the compile's own IR is never touched) gives every
    statement a span, so every statement's lines follow a directive naming it: the lines
    between two directives are one statement's, including the temporaries a vector
    expression expands into. Kept only when the output without directives is `generated`.
    """
    from ..session import native

    if not native.is_module(mod):
        return None
    copy = _json_copy(mod)
    if not native.is_module(copy):
        return None
    origins = _stmt_origins(copy)
    if origins is None:
        return None
    text = _codegen_with_directives(fn, copy, target, context if context is not None else codegen_context())
    files = Files()
    out: list[str] = []
    lines: list[Loc] = []
    inferred: set[int] = set()
    cur: tuple[tuple[str, int] | None, bool] | None = None
    for ln in text.split("\n"):
        if ln.startswith("#line "):
            m = _DIRECTIVE.match(ln)
            if m:
                if ln.endswith(_STAMP_DIRECTIVE):
                    k = int(m.group(1)) - 1
                    cur = origins[k] if 0 <= k < len(origins) else (None, False)
                else:  # a function's own span (its entry), where TileLang cannot stamp it
                    name = c_unstring(m.group(2))
                    cur = ((name, int(m.group(1))), False)
                continue
        out.append(ln)
        if not _is_statement(ln):
            lines.append(None)
        elif cur is None or cur[0] is None:
            lines.append(0)
        else:
            if cur[1]:
                inferred.add(len(lines))
            lines.append((files.ix(cur[0][0]), cur[0][1]))
    if "\n".join(out) != generated:
        return None
    return LineMap(tuple(files.names), tuple(lines), frozenset(inferred))


def carry(lmap: LineMap, old: str, new: str) -> LineMap:
    """Return `lmap` (of `old`) moved onto `new`: equal lines keep their location (and library
    line), others have none."""
    import difflib

    a, b = old.split("\n"), new.split("\n")
    out: list[Loc] = [None] * len(b)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            out[j1:j2] = lmap.lines[i1:i2]
        else:
            for j in range(j1, j2):
                out[j] = 0 if _is_statement(b[j]) else None
    inferred = frozenset(
        j1 + k
        for tag, i1, i2, j1, j2 in ops
        if tag == "equal"
        for k in range(i2 - i1)
        if i1 + k in lmap.inferred
    )
    via = {
        j1 + k: lmap.via[i1 + k]
        for tag, i1, i2, j1, j2 in ops
        if tag == "equal"
        for k in range(i2 - i1)
        if i1 + k in lmap.via
    }
    return LineMap(lmap.files, tuple(out), inferred, via)


# -- errors --------------------------------------------------------------------------------------
_ARROW = re.compile(r"-->\s*(.+?):(\d+)(?::(\d+))?\s*$", re.M)


def error_location(text: str | None) -> tuple[str, int] | None:
    """Return the user's (file, line) from a TileLang error's `--> file:line:col` marker, or None."""
    if not text:
        return None
    m = _ARROW.search(text)
    if not m:
        return None
    return m.group(1).strip(), int(m.group(2))
