"""The redundant-print rule (session/snapshot.equal_rule) against the truth, on real compiles.

A corpus of modules: every pass callback's module (its input and its output) and every
codegen input of real compiles (CPU add, gemm, softmax; two sm_90a GEMM lowerings),
collected in callback order by an instrumentation tool beside nothing else. The
capture's TextCache, with the rule and without it (--exact), turns the sequence into
texts and source maps; each must be what printing that module inline gives. The rule
must also skip prints, or this test proves nothing about it.
"""

from __future__ import annotations

import sys

import pytest

from tltrace.session import snapshot
from tltrace.sourcemap import lines as sm

from ._observer import observe
from .conftest import EXAMPLES


def _corpus(tmp) -> list:
    import tilelang
    from tilelang import tvm

    sys.path.insert(0, str(EXAMPLES))
    try:
        from elementwise_add import make_add
        from gemm import make_gemm
        from softmax import make_softmax
    finally:
        sys.path.remove(str(EXAMPLES))

    from ._kernels import SM90A, load_script

    mods: list = []
    sm90a = load_script(tmp / "sm90a_corpus.py", SM90A.split("\n\ntarget = ")[0])
    with observe(
        "test-print-rule",
        started=lambda mod, event: mods.append(mod),
        finished=lambda mod, event, state: mods.append(mod),
        codegen=lambda event: mods.append(event.mod),
    ):
        for func in (
            make_add(1024, 128),
            make_gemm(128, 128, 64, 32, 32, 16, "float32", "float32"),
            make_softmax(64, 128, 8),
        ):
            tilelang.compile(func, target="c", execution_backend="cython")
        target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
        for args in ((256, 256, 256, 128, 128, 32, 2, 128), (512, 512, 512, 64, 128, 64, 3, 256)):
            with target:
                tilelang.lower(sm90a.matmul(*args), target=target)
    return [m for m in mods if snapshot.module_head(m) is not None]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> list:
    return _corpus(tmp_path_factory.mktemp("corpus"))


def _wrong(cache: snapshot.TextCache, corpus: list, truth: list) -> list[str]:
    """The modules (in callback order) whose text or map from `cache` is not the truth's."""
    wrong = []
    for i, (m, (text, lmap)) in enumerate(zip(corpus, truth)):
        side = snapshot.Side.of(m)
        got = cache.resolve(side)
        if got != text or side.extra != lmap:
            wrong.append(f"{i}: text ok={got == text}, map ok={side.extra == lmap}")
    return wrong


@pytest.fixture(scope="module")
def truth(corpus) -> list:
    return [sm.print_module(m) for m in corpus]  # the annotated print of the module itself


@pytest.mark.parametrize("exact", [False, True], ids=["rule", "exact"])
def test_every_text_and_map_equals_an_inline_print(corpus, truth, exact) -> None:
    assert all(text == str(m) for (text, _), m in zip(truth, corpus))  # the annotated print is the plain one
    cache = snapshot.TextCache(sm.print_module, exact=exact)
    wrong = _wrong(cache, corpus, truth)
    assert not wrong, wrong
    assert len(corpus) > 300
    if exact:
        assert cache.equal_skips == 0
    else:
        # The rule skips prints that identity alone does not (it is not idle).
        assert cache.equal_skips > 20, (cache.equal_skips, cache.printed)


def test_the_rule_tells_a_renamed_variable_apart(corpus) -> None:
    """Structural equality alone calls a renamed parameter equal; the rule does not reuse its text."""
    from tilelang import tvm

    rule = snapshot.equal_rule()
    assert rule is not None
    mod = next(
        m
        for m in corpus
        if any(isinstance(f, tvm.tirx.PrimFunc) and f.buffer_map for f in m.functions.values())
    )
    gv, func = next(
        (g, f) for g, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc) and f.buffer_map
    )
    p = next(q for q in func.params if q in func.buffer_map)
    renamed = tvm.tirx.Var(str(p.name) + "_renamed", p.dtype)
    buffer_map = {(renamed if k.same_as(p) else k): v for k, v in func.buffer_map.items()}
    params = [renamed if q.same_as(p) else q for q in func.params]
    new = tvm.tirx.PrimFunc(params, func.body, func.ret_type, buffer_map, func.attrs)
    mod2 = tvm.IRModule({**{g: f for g, f in mod.functions.items() if not g.same_as(gv)}, gv: new})
    assert str(mod2) != str(mod)
    assert tvm.ir.structural_equal(mod2, mod)  # what structural equality alone would do
    assert not rule(mod2, mod)


@pytest.mark.parametrize("exact", [False, True], ids=["rule", "exact"])
def test_composed_module_texts_and_maps_equal_the_whole_print(corpus, truth, exact, monkeypatch) -> None:
    """The recorder's printer (sourcemap/compose.py) reuses an unchanged function's lines in a module
    of several: every text and map it gives, in callback order, is the whole module's tagged print."""
    from tltrace.sourcemap import compose

    monkeypatch.setattr(
        compose, "_VERIFY_FIRST", 0
    )  # no whole print behind a composition: each is the test's
    monkeypatch.setitem(compose._state, "broken", False)
    printer = compose.ModulePrinter(None if exact else snapshot.equal_rule())
    cache = snapshot.TextCache(printer, exact=exact)
    wrong = _wrong(cache, corpus, truth)
    assert not wrong, wrong
    assert not compose._state["broken"]
    # Host and device functions after SplitHostDevice: most passes change one of them.
    assert printer.composed > 5 and printer.reused >= printer.composed, (printer.composed, cache.printed)
    print(
        f"{len(corpus)} modules: {cache.printed} printed, {printer.composed} composed, {printer.reused} reused"
    )


def test_a_composition_unlike_the_whole_print_turns_composition_off(corpus, truth, monkeypatch) -> None:
    """The first compositions of a process are checked against the whole print: one wrong map (here
    made so) gives the whole print instead, and no composition after it."""
    from tltrace.format.sourcemap import LineMap
    from tltrace.sourcemap import compose

    monkeypatch.setitem(compose._state, "broken", False)
    monkeypatch.setitem(compose._state, "verified", 0)
    monkeypatch.setattr(compose, "_line_map", lambda locs: LineMap((), tuple(None for _ in locs)))
    printer = compose.ModulePrinter(snapshot.equal_rule())
    wrong = _wrong(snapshot.TextCache(printer), corpus, truth)
    assert not wrong, wrong
    assert compose._state["broken"] and printer.composed == 0


def test_a_call_of_another_function_is_printed_as_the_module_has_it(monkeypatch) -> None:
    """`main` calls `callee` by its GlobalVar: beside it the call prints `Module.callee(1)`, alone
    `callee(1)`. The same `main` object in both modules keeps no lines from the other one."""
    from tilelang import tvm

    from tltrace.sourcemap import compose

    monkeypatch.setattr(compose, "_VERIFY_FIRST", 0)
    monkeypatch.setitem(compose._state, "broken", False)
    tir = tvm.tirx
    callee_gv, main_gv = tvm.ir.GlobalVar("callee"), tvm.ir.GlobalVar("main")
    callee = tir.PrimFunc([], tir.Evaluate(tir.const(1, "int32")))
    main = tir.PrimFunc([], tir.Evaluate(tir.Call("int32", callee_gv, [tir.const(1, "int32")])))
    both, alone = tvm.IRModule({main_gv: main, callee_gv: callee}), tvm.IRModule({main_gv: main})
    assert ".callee(1)" in str(both) and ".callee" not in str(alone)  # the printer's own difference
    printer = compose.ModulePrinter(snapshot.equal_rule())
    got = [printer(m)[0] for m in (both, alone, both, tvm.IRModule({callee_gv: callee}))]
    assert got == [str(both), str(alone), str(both), str(tvm.IRModule({callee_gv: callee}))]
    assert printer.composed == 2  # `callee`'s lines are reused (beside `main`, then alone); `main`'s never


# An attribute of short strings (the FFI hands them back as str), and one of long strings (as
# tvm_ffi's String, a str subclass without a handle), as TileLang's "global_symbol" is.
_ATTRS = [("tag", "kept"), ("global_symbol", "a_kernel_of_a_longer_name")]


def _rebuilt_twice(key: str = "tag", value: str = "kept") -> tuple:
    """Two new objects of one function, every field the same object (the attrs: equal plain values)."""
    from tilelang import tvm

    tir = tvm.tirx
    func = tir.PrimFunc([], tir.Evaluate(tir.const(1, "int32")))
    a, b = func.with_attr(key, value), func.with_attr(key, value)
    assert a.__chandle__() != b.__chandle__() and a.attrs.__chandle__() != b.attrs.__chandle__()
    assert str(a) == str(b)  # the printer's own answer
    return a, b


def test_a_function_rebuilt_around_the_same_fields_keeps_its_lines_under_exact(monkeypatch) -> None:
    """`--exact` (no rule): a function rebuilt around the same fields, attrs of equal plain values
    included, keeps its lines in a composed module, and the text and map are the whole print's."""
    from tilelang import tvm

    from tltrace.sourcemap import compose

    monkeypatch.setattr(compose, "_VERIFY_FIRST", 0)
    monkeypatch.setitem(compose._state, "broken", False)
    tir = tvm.tirx
    kept, other = tvm.ir.GlobalVar("kept"), tvm.ir.GlobalVar("main")
    a, b = _rebuilt_twice()
    mods = [
        tvm.IRModule({kept: a, other: tir.PrimFunc([], tir.Evaluate(tir.const(k, "int32")))})
        for k, a in ((2, a), (3, b))
    ]
    printer = compose.ModulePrinter(None)
    assert [printer(m) for m in mods] == [sm.print_module(m) for m in mods]
    assert printer.composed == 1 and printer.reused == 1


@pytest.mark.parametrize(("key", "value"), _ATTRS, ids=["short", "long"])
def test_a_module_rebuilt_around_the_same_fields_is_not_printed_again_under_exact(key, value) -> None:
    """The capture's field rule (no equality rule) takes attrs of equal plain values as the same,
    strings of any length."""
    from tilelang import tvm

    gv = tvm.ir.GlobalVar("main")
    a, b = _rebuilt_twice(key, value)
    cache = snapshot.TextCache(sm.print_module, exact=True)
    first = snapshot.module_head(tvm.IRModule({gv: a}))
    assert first is not None
    heads = [first, (first[0], tvm.IRModule({gv: b}).functions, first[2])]  # a pass's new map, new function
    assert [cache.text(h) for h in heads] == [str(tvm.IRModule({gv: f})) for f in (a, b)]
    assert cache.printed == 1


def test_a_function_s_attrs_are_walked_as_tvm_reads_them() -> None:
    """The attrs' entries by tltrace's GIL-keeping walk are TVM's own `DictAttrs.items()`, in order."""
    from tilelang import tvm

    from tltrace.session import native

    tir = tvm.tirx
    func = tir.PrimFunc([], tir.Evaluate(tir.const(1, "int32")))
    for key, value in [*_ATTRS, ("tir.noalias", True), ("count", 3)]:
        func = func.with_attr(key, value)
    inner = native.attrs_map(func.attrs)
    got = native.map_items(inner) if inner is not None else None
    assert got is not None and len(got) == 4
    assert [(str(k), v) for k, v in got] == [(str(k), v) for k, v in func.attrs.items()]
    assert native.attrs_map(tvm.ir.GlobalVar("main")) is None  # not a DictAttrs: no walk


def test_one_compile_s_tags_and_read_lines_give_each_module_s_own_print(corpus, truth) -> None:
    """The tag walk and the strip keep the compile's statements and printed lines (`Tags`): each
    text and map of the corpus, printed in order with one `Tags`, is the module's own fresh print."""
    held = sm.Tags()
    got = [sm.print_module(m, held) for m in corpus]
    assert got == truth
    printed = sum(text.count("\n") + 1 for text, _ in truth)
    assert 0 < len(held.lines) < printed / 4, (len(held.lines), printed)  # most lines read once


def test_a_tag_where_none_can_be_is_never_read_from_the_cache() -> None:
    """A line with two tags is no text of the printer's: no map, however often it comes."""
    seen: dict = {}
    text = f"x = 1  # {sm._TAG}0\ny = 2  # {sm._TAG}0  # {sm._TAG}0"
    assert [sm.strip_tags(text, [("a.py", 3)], seen) for _ in range(2)] == [None, None]
    done = sm.strip_tags(text.split("\n")[0], [("a.py", 3)], seen)
    assert done is not None and done[0] == "x = 1" and done[1].lines == ((0, 3),)
