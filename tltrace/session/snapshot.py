"""IR snapshots taken on the compiling thread, and the rule that turns them into text.

Printing is the main cost of tracing, so the compiling thread only takes a
snapshot: the module's fields (attributes, function map, global infos), three
field reads and no FFI call (a few microseconds). The text is printed later (by
the background worker, or at once with `--sync`) from a module rebuilt around
those fields, and comes out byte-identical to printing the module at the callback.

Why fields and never the module object: a pass may update its input module in
place (`mod->Update`, as tirx.AnnotateEntryFunc and tl.SplitHostDevice do) and
return it, so a held module can change under the holder. Its fields change only
by copy-on-write: while a snapshot holds the function map, an update makes a new
map (the held one is shared), and a held function is copied before it is changed.
So identity of the fields means identical text, which is also the reuse rule that
skips most prints (passes that change nothing return the same map or functions).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from . import native

Head = tuple  # (attrs, function map, global infos) of an IRModule


class Side:
    """One side (before or after) of a record: a snapshot until printed, then its text."""

    __slots__ = ("extra", "head", "mod", "text", "truth")

    def __init__(self, head: Head | None = None, mod: Any = None, text: str | None = None) -> None:
        self.head = head  # the module's fields, held so that they cannot change (copy-on-write)
        self.mod = mod  # something that is not an IRModule: printed as it is
        self.text = text
        self.extra: Any = None  # what the recorders' printer gave with the text (a source map)
        self.truth: str | None = None  # --check-texts: the module printed inline at its callback

    def module(self) -> Any:
        """Return the module these fields make (what the pass saw), or None for a stand-in."""
        return module_of(self.head) if self.head is not None else None

    @classmethod
    def of(cls, mod: Any) -> Side:
        """Return a snapshot of `mod` (field reads; a non-module is printed now)."""
        head = module_head(mod)
        if head is None:
            return cls(text=str(mod))
        return cls(head=head)

    @classmethod
    def of_text(cls, text: str) -> Side:
        return cls(text=text)


class TextCache:
    """Prints snapshots in callback order, reusing the last text when nothing in a module is new.

    One per compile; used by one thread at a time (the worker, or the compiling
    thread with --sync). The held head keeps the last printed fields alive, which is
    what makes comparing them by identity sound.
    """

    def __init__(
        self, printer: Callable[[Any], tuple[str, Any] | None] | None = None, *, exact: bool = False
    ) -> None:
        self.printer = printer  # module -> (text, extra), or None: print plainly (session/recorder.py)
        self._extra: Any = None  # the printer's extra of the last text
        self._text: str | None = None
        self._head: Head | None = None
        self._items: tuple | None = None  # ((global_var, func), ...) of the held map, once walked
        self._mod: Any = None  # the module of the last text, for the equality rule
        self._equal = None if exact else equal_rule()  # exact (--exact): identity alone
        self.printed = 0  # prints made
        self.equal_skips = 0  # prints the equality rule saved
        self.checked = 0  # --check-texts: texts compared with an inline print
        self.differed = 0  # ... and found different (then replaced by it)

    def resolve(self, side: Side) -> str:
        """Set and return `side`'s text (its fields stay, for the recorders, while the side is held)."""
        if side.text is None:
            side.text = self.text(side.head) if side.head is not None else str(side.mod)
            side.extra = self._extra if side.head is not None else None
            truth, side.truth = side.truth, None
            if truth is not None:
                self.checked += 1
                if truth != side.text:
                    # The record keeps the truth, without a map made for another text; the next
                    # module is printed, not compared with a text that was wrong.
                    self.differed += 1
                    side.text, side.extra = truth, None
                    self._text = self._head = self._items = self._mod = None
        side.mod = None
        return side.text

    def text(self, head: Head) -> str:
        """Return the text of the module with these fields (the last text when they are the same objects)."""
        lh = self._head
        if lh is not None and _same_obj(head[0], lh[0]) and _same_obj(head[2], lh[2]):
            if _same_obj(head[1], lh[1]):
                return self._text or ""
            items = native.map_items(head[1])
            if self._items is None:
                self._items = native.map_items(lh[1])
            if items is not None and self._items is not None and _same_items(items, self._items):
                self._head, self._items = head, items
                return self._text or ""
        mod = module_of(head)
        if self._equal is not None and self._mod is not None and self._text is not None:
            try:
                same = self._equal(mod, self._mod)
            except Exception:
                same = False
            if same:  # rebuilt, not changed: the last text (and its map) again
                self.equal_skips += 1
                self._head, self._items, self._mod = head, None, mod
                return self._text
        printed = self.printer(mod) if self.printer is not None else None
        if printed is not None:
            text, self._extra = printed
        else:
            text, self._extra = str(mod), None
        self.printed += 1
        self._text, self._head, self._items, self._mod = text, head, None, mod
        return text


_EQUAL: list[Callable[[Any, Any], bool] | None] = []


def equal_rule() -> Callable[[Any, Any], bool] | None:
    """The redundant-print rule: two modules print the same text when tvm_ffi's `RecursiveEq`
    (every field by value: names, spans, dtypes, but not which variable a use binds to) and
    TVM's `structural_equal` (the binding structure, but not names or spans) both call them
    equal. Neither alone is enough; together they cover what the printer prints. Not a proof:
    `--exact` (TLTRACE_EXACT=1) turns it off, and tests/test_capture_texts.py compares every
    record's text with an inline print with and without it. None where either is missing.
    """
    if not _EQUAL:
        try:
            # Handles that keep the GIL: a comparison takes about a tenth of a print, and one that
            # gave the GIL away waited for it again behind the compiling threads (round 6).
            recursive_eq = native.ffi_handle("ffi.RecursiveEq")
            structural = native.ffi_handle("ffi.StructuralEqual")  # (a, b, assert, map_free_vars)
            if recursive_eq is None or structural is None:
                raise LookupError("ffi.RecursiveEq or ffi.StructuralEqual missing")

            def equal(a: Any, b: Any) -> bool:
                # RecursiveEq first: the cheaper of the two, and it tells most changed modules apart.
                return bool(recursive_eq(a, b)) and bool(structural(a, b, False, False))

            _EQUAL.append(equal)
        except Exception:
            _EQUAL.append(None)
    return _EQUAL[0]


def module_head(mod: Any) -> Head | None:
    """Return (attrs, function map, global infos) of an IRModule (field reads, no FFI call), or None.

    None for anything but a real IRModule (a custom caller's stand-in is printed as it is):
    the fields are later handed to TVM's IRModule constructor (session/native.py).
    """
    try:
        if not native.is_module(mod):
            return None
        return (mod.attrs, mod.functions, getattr(mod, "global_infos", None))
    except Exception:
        return None


def print_head(head: Head) -> str:
    """Return the TVMScript text of the IRModule made of these fields."""
    return str(module_of(head))


def module_of(head: Head) -> Any:
    """Return the IRModule made of these fields (TVM's constructor; the module the snapshot was of)."""
    attrs, funcs, infos = head
    make = _module_ctor()
    return make(funcs, attrs, infos if infos is not None else {})


_CTOR: list[Any] = []


def _module_ctor() -> Any:
    """TVM's IRModule constructor, on a handle that keeps the GIL (session/native.ffi_handle): it
    takes microseconds, and the worker calls it for most records; each call that gave the GIL away
    waited for it again behind the compiling threads."""
    if not _CTOR:
        ctor = native.ffi_handle("ir.IRModule")
        if ctor is not None:
            _CTOR.append(ctor)
            return ctor
        try:
            from tilelang import tvm  # type: ignore[import-not-found]
        except Exception:
            import tvm  # type: ignore[import-not-found,no-redef]
        _CTOR.append(tvm.ir._ffi_api.IRModule)
    return _CTOR[0]


def _same_items(a: tuple, b: tuple) -> bool:
    if len(a) != len(b):
        return False
    return all(_same_obj(g1, g2) and same_fields(f1, f2) for (g1, f1), (g2, f2) in zip(a, b))


def same_fields(a: Any, b: Any) -> bool:
    """Return True when two functions print the same: the same object, or one whose every field is.

    A pass that changes nothing often returns a new function object around the very same
    fields (params, body, attrs, ...): rebuilt, not changed. The printed text is a function of
    the fields, and identical field objects (copy-on-write: a held object never changes) mean
    an identical text, so the print is skipped; exact, unlike structural equality (which calls
    a renamed variable equal). A map field (attrs, buffer_map) also counts as the same when it
    holds the same key and value objects in the same order. About 60% of the prints in a CPU
    gemm plus an sm_90a lowering gave the previous text again; this finds a third of them.
    Exact, so `--exact` keeps it; the composition of module prints (sourcemap/compose.py) asks
    it before the equality rule too: a few field reads against a comparison of whole functions.
    """
    if _same_obj(a, b):
        return True
    if a is None or b is None or type(a) is not type(b):
        return False
    names = _fields(type(a))
    if not names:
        return False
    try:
        for name, read in names:
            x, y = (read(a), read(b)) if read is not None else (getattr(a, name), getattr(b, name))
            if _ident(x, y):
                continue
            if hasattr(x, "items"):
                if not _same_map(x, y):
                    return False
            elif type(x).__name__ == "Array" and type(y) is type(x):
                p, q = native.array_items(x), native.array_items(y)
                if len(p) != len(q) or not all(_ident(u, v) for u, v in zip(p, q)):
                    return False
            else:
                return False
        return True
    except Exception:
        return False


_PLAIN = (str, int, bool)


def _ident(a: Any, b: Any) -> bool:
    """The same object (by handle: Type.same_as compares structurally, field by field, in Python),
    or the same plain value: the FFI gives a str, int or bool (a DictAttrs key, an attribute's
    value) as a new Python object at each read, and equal values of one type print the same.
    A string longer than the FFI's inline ones comes as tvm_ffi's `String` (bytes as `Bytes`), a
    subclass of str (bytes) with no handle: a value too. Floats are left to identity (0.0 == -0.0)."""
    if a is b:
        return True
    if a is None or b is None:
        return False
    kind = type(a)
    if kind in _PLAIN or isinstance(a, (str, bytes)):
        return kind is type(b) and a == b
    try:
        return bool(a.__chandle__() == b.__chandle__())
    except Exception:
        return _same_obj(a, b)


def _same_map(a: Any, b: Any) -> bool:
    # An FFI Map (buffer_map) by tltrace's walk (three native calls an entry, the GIL kept), not
    # its Python iterator; a DictAttrs by the Map it holds, walked the same way (its items() fetch
    # the map and walk it with calls that give the GIL away: the autotuner's worker waited for the
    # GIL again after each, issue 51 round 5). The same Map object, or Maps of different sizes,
    # answer without a walk. Anything else with items() by its own.
    a, b = _inner(a), _inner(b)
    x = y = None
    if type(a).__name__ == "Map" and type(b).__name__ == "Map":
        if _ident(a, b):
            return True
        n, m = native.map_size(a), native.map_size(b)
        if n is not None and m is not None and n != m:
            return False
        x, y = native.map_items(a), native.map_items(b)
    try:
        if x is None:
            x = tuple(a.items())
        if y is None:
            y = tuple(b.items())
    except Exception:
        return False
    return len(x) == len(y) and all(_ident(k1, k2) and _ident(v1, v2) for (k1, v1), (k2, v2) in zip(x, y))


def _inner(attrs: Any) -> Any:
    """A DictAttrs' Map (`native.attrs_map`), or `attrs` itself."""
    m = native.attrs_map(attrs)
    return attrs if m is None else m


_FIELDS: dict[type, tuple[tuple[str, Any], ...]] = {}


def _fields(t: type) -> tuple[tuple[str, Any], ...]:
    """The reflected fields of an FFI object type and its bases (tvm_ffi type info), () when unknown:
    (name, None: read with getattr, or tvm_ffi's own getter of the field). The getter where TVM's
    Python class puts a property of its own over the field that only asks the FFI for that very
    field (`BaseFunc.attrs`: `ir.BaseFunc_Attrs`, a native call that gives the GIL away, about 60
    a lowering on the worker; issue 51, round 5): tvm_ffi's getter reads it in place."""
    names = _FIELDS.get(t)
    if names is None:
        out: dict[str, Any] = {}
        for c in t.__mro__:
            info = c.__dict__.get("__tvm_ffi_type_info__")
            for f in getattr(info, "fields", None) or ():
                name = getattr(f, "name", None)
                if isinstance(name, str) and name not in out:
                    out[name] = _field_reader(t, name, f)
        names = _FIELDS[t] = tuple(out.items())
    return names


def field(obj: Any, name: str) -> Any:
    """`getattr(obj, name)`, read as `same_fields` reads it (in place where `_fields` can), None when missing."""
    read = dict(_fields(type(obj))).get(name)
    return read(obj) if read is not None else getattr(obj, name, None)


_FIELD_PROPERTIES = {("attrs", "BaseFunc.attrs")}  # (field, TVM's property over it that reads it alone)


def _field_reader(t: type, name: str, field: Any) -> Any:
    try:
        static = inspect.getattr_static(t, name)
    except AttributeError:
        return None
    fget = getattr(static, "fget", None) if isinstance(static, property) else None
    getter = getattr(field, "getter", None)
    if fget is None or not callable(getter):
        return None
    return getter if (name, getattr(fget, "__qualname__", "")) in _FIELD_PROPERTIES else None


def _same_obj(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    try:
        return bool(a.same_as(b))
    except Exception:
        return False
