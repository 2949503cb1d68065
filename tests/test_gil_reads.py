"""The worker's reads of TVM containers go through tltrace's GIL-keeping handles (issue 51, round 5).

TVM's Python iterators over an FFI Map or Array, and `DictAttrs.items()`/`in`/`[]`, make a
native call per element (or fetch the attributes' map again) through functions that let the
GIL go: on an autotuner's worker each such call waited for the GIL again behind the compiling
threads. These reads (the print rule's attribute comparison, the layouts' shapes, the
reproducer's context and bound target, the codegen context) must give what TVM's own API gives,
without entering tvm_ffi's container code or TVM's `DictAttrs` methods (seen with a profiler).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from tltrace.layouts import capture as layouts
from tltrace.rerun import capture as rerun
from tltrace.session import native, snapshot
from tltrace.sourcemap import lines

_SLOW = ("tvm_ffi/container.py", "tvm/ir/attrs.py", "tvm/ir/function.py")


def _entered(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """(fn(), the Python functions of TVM's container and DictAttrs code it entered)."""
    seen: list[str] = []

    def prof(frame: Any, event: str, arg: Any) -> None:
        name = frame.f_code.co_filename.replace("\\", "/")
        if event == "call" and name.endswith(_SLOW):
            seen.append(f"{name.rsplit('/', 1)[-1]}:{frame.f_code.co_name}")

    sys.setprofile(prof)
    try:
        out = fn()
    finally:
        sys.setprofile(None)
    return out, seen


@pytest.fixture(scope="module")
def func() -> Any:
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((16, 8), "float32")
            T.copy(A, S)

    return main


@pytest.fixture(scope="module")
def target() -> Any:
    from tilelang import tvm

    return tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})


def test_attrs_compared_by_their_map(func, target) -> None:
    # (no `global_symbol`: a key of more than a few bytes is an FFI object, new in each copy)
    base = func.without_attr("global_symbol").with_attr("target", target)
    a = base.with_attr("tl.k", "v3")
    b = base.with_attr("tl.k", "v3")
    assert not a.attrs.same_as(b.attrs)  # two objects: the entries decide
    x, y = a.attrs, b.attrs
    same, entered = _entered(lambda: snapshot._same_map(x, y))
    assert same and entered == []
    same, entered = _entered(lambda: snapshot.same_fields(a, b))
    assert same and entered == []  # `attrs` read in place, not by `BaseFunc.attrs`'s FFI call
    # TVM's own reading of the attributes, against the handles' walk of the map inside them
    assert snapshot.field(a, "attrs").same_as(a.attrs)
    inner = native.attrs_map(a.attrs)
    assert [(k, v) for k, v in native.map_items(inner)] == list(a.attrs.items())
    other = base.with_attr("tl.k", "v4")
    more = b.with_attr("tl.extra", "x")
    new_target = a.with_attr("target", type(target)(target.export()))
    for c in (other, more, new_target):
        z = c.attrs
        differ, entered = _entered(lambda z=z: snapshot._same_map(x, z))
        assert not differ and entered == []
        differ, entered = _entered(lambda c=c: snapshot.same_fields(a, c))
        assert not differ and entered == []
    assert native.attrs_map(func.buffer_map) is None  # a Map is no DictAttrs


def test_bound_target_and_plain_target(func, target) -> None:
    from tilelang import tvm

    mod = tvm.IRModule({"main": func.with_attr("target", target)})
    found, entered = _entered(lambda: rerun.bound_target(mod.functions))
    assert found is not None and found.same_as(mod["main"].attrs["target"]) and entered == []
    assert rerun.bound_target(tvm.IRModule({"main": func}).functions) is None
    data, entered = _entered(lambda: rerun.plain(target.export()))
    assert entered == []
    assert str(tvm.target.Target(data)) == str(target)  # TVM rebuilds the very target from it


def test_plain_containers() -> None:
    import tvm_ffi

    value = tvm_ffi.Map({"a": 1, "b": tvm_ffi.Array([2, "x", True]), "c": tvm_ffi.Map({"d": 5})})
    data, entered = _entered(lambda: rerun.plain(value))
    assert data == {"a": 1, "b": [2, "x", True], "c": {"d": 5}} and entered == []


def test_layout_shapes_and_scopes(func) -> None:
    from tilelang.layout import Layout

    buf = next(iter(func.buffer_map.values()))
    (shape, scope), entered = _entered(lambda: (layouts._ints(buf.shape), layouts._scope_of(buf)))
    assert shape == [int(d) for d in buf.shape] == [16, 8] and scope == buf.scope() and entered == []
    lay = Layout([4, 8], lambda i, j: [j, i])
    data, entered = _entered(lambda: layouts.layout_data(lay))
    assert entered == []
    assert data["input_shape"] == [int(d) for d in lay.get_input_shape()] == [4, 8]
    assert data["output_shape"] == [int(d) for d in lay.get_output_shape()] == [8, 4]
    assert data["vars"] == [str(v) for v in lay.get_forward_vars()]
    assert data["index"] == [str(e) for e in lay.get_forward_index()]
    assert data["kind"] == "layout"
    with pytest.raises(AttributeError):  # None never reaches the native function (C++ would take it)
        layouts.layout_data(None)


def test_codegen_context(target) -> None:
    from tilelang import tvm

    config = {"tirx.disable_vectorize": True, "tl.disable_tma_lower": False}
    with (
        target,
        tvm.transform.PassContext(
            opt_level=2, required_pass=["A", "B"], disabled_pass=["C"], config=config
        ) as cur,
    ):
        (ctx, current), entered = _entered(lines.codegen_context)
        assert ctx == (cur.opt_level, list(cur.required_pass), list(cur.disabled_pass), dict(cur.config))
        assert current.same_as(target)
    assert entered == []
    assert ctx[1:3] == (["A", "B"], ["C"]) and ctx[3] == config
