"""TileLang's codegen seam called the way custom callers may, under tltrace.enable(): run in a child.

    python tests/seam_child.py TRACE_DIR [sync] [CASE ...]

`tilelang.instrumentation.run_codegen_with_instrumentation(name, mod, target, build)` with
None targets, stand-in modules, builds that return what is not a TVM module, an FFI name
that does not exist, threads sharing one working file through target.build.tilelang_c, and
an edit handed back through that source-only path. Each case checks that its caller gets
exactly what its build returned (or the user's edit) and prints `ok CASE`; `ALL OK` at the
end. A native crash would kill this process: tests/test_seam_crash.py asserts it does not.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import tilelang
import tilelang.language as T
from tilelang import tvm
from tilelang.backend.device_codegen import global_func_device_codegen
from tilelang.instrumentation import (
    PassInstrumentationTool,
    compile_pass_instrumentation,
    run_codegen_with_instrumentation,
)

import tltrace

C = "target.build.tilelang_c"


def _say(line: str) -> None:
    """One line in one write: a worker's stream output never lands inside it (compiles return early)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def source_module(text: str):
    return tvm.runtime._ffi_api.CSourceModuleCreate(text, "c", [], None)


class Fake:
    """A build result that is no TVM object, but carries source as TileLang's modules do."""

    def __init__(self, text: str) -> None:
        self.text = text

    def inspect_source(self) -> str:
        return self.text


def prim_module():
    @T.prim_func
    def add_one(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=1) as _bx:
            for i in T.serial(16):
                B[i] = A[i] + 1.0

    return tvm.IRModule({"main": add_one})


def seam(name, mod, target, build, kernel="custom"):
    with compile_pass_instrumentation(name=kernel):
        return run_codegen_with_instrumentation(name, mod, target, build)


def same(case: str, got, want) -> None:
    assert got is want, f"{case}: the caller got {got!r}, its build returned {want!r}"
    _say(f"ok {case}")


def none_targets(mod, c, work) -> None:
    """None targets: the build's result comes back as it is (source-only FFIs, the host one, a binary one)."""
    for name in (
        C,
        "target.build.tilelang_c_host",
        "target.build.tilelang_cuda",
        "target.build.tilelang_hip",
    ):
        built = source_module(f"int none_target_{name.rsplit('.', 1)[-1]}(void) {{ return 0; }}\n")
        same(f"target None, {name}", seam(name, mod, None, lambda b=built: b), built)
    fake = Fake("int fake(void) { return 1; }\n")
    same("target None, a build returning a non-TVM object", seam(C, mod, None, lambda: fake), fake)
    same("a build returning None", seam(C, mod, None, lambda: None), None)


def stand_ins(mod, c, work) -> None:
    """Stand-ins for the module and the target, as TileLang's own seam tests use them."""
    same("strings for mod and target", seam("target.build.test", "mod", "target", lambda: "result"), "result")
    same("strings, through tilelang_c", seam(C, "mod", "target", lambda: "result"), "result")
    for label, stand_in in (
        ("a MagicMock module", mock.MagicMock()),
        ("a namespace module", SimpleNamespace(functions={}, attrs=None, global_infos=None)),
        ("a None module", None),
        ("a PrimFunc for the module", mod["main"]),
    ):
        built = source_module(f"int stand_in_{len(label)}(void) {{ return 2; }}\n")
        same(f"{label}, target None", seam(C, stand_in, None, lambda b=built: b), built)
        same(f"{label}, a real target", seam(C, stand_in, c, lambda b=built: b), built)
    magic = mock.MagicMock()
    same("a MagicMock module, target and result", seam(C, magic, magic, lambda: magic), magic)
    # A mock's inspect_source() is no source: no working file holds its repr.
    assert not [p for p in work.parent.glob("*.cpp") if "MagicMock" in p.read_text()]


def odd_builds(mod, c, work) -> None:
    """An FFI name that does not exist; custom builds on a real module and target; a build that raises."""
    built = source_module("int no_such_ffi(void) { return 3; }\n")
    same(
        "an FFI name that does not exist", seam("target.build.no_such_codegen", mod, c, lambda: built), built
    )
    built = source_module("int custom_build(void) { return 4; }\n")
    same("a custom build, real module and target", seam(C, mod, c, lambda: built), built)

    def broken():
        raise ValueError("the build broke")

    try:
        seam(C, mod, None, broken)
    except ValueError as exc:
        assert str(exc) == "the build broke"
        _say("ok a build that raises")
    else:
        raise AssertionError("a build that raises: no exception reached the caller")


class Capture(PassInstrumentationTool):
    """A tool of the caller's own (TileLang's public seam): keeps each codegen event."""

    def __init__(self) -> None:
        self.events: list = []

    def run_codegen(self, event, next_call):
        self.events.append(event)
        return next_call()


def own_or_custom(mod, c, work) -> None:
    """A real compile's codegen input, built again by TileLang's wrapper (mapped) and by a custom
    build that calls the same FFI (its result as it is, and no map: tests/test_seam_crash.py reads them)."""
    cap = Capture()
    with compile_pass_instrumentation(name="lowered", tools=[cap]):
        tilelang.lower(mod["main"], target="c")
    newest_run("lowered", work)
    device = next(e for e in cap.events if e.name == C)
    with compile_pass_instrumentation(name="wrapper"):
        global_func_device_codegen(C)(device.mod, device.target)
    newest_run("wrapper", work)
    _say("ok TileLang's wrapper called by a custom caller")
    real = None

    def custom():
        nonlocal real
        real = tvm.ffi.get_global_func(C)(device.mod, device.target)
        return real

    same("TileLang's codegen FFI as a custom build", seam(C, device.mod, device.target, custom), real)
    newest_run("ffi_as_custom", work)


def newest_run(label: str, work: Path) -> None:
    """Say which run directory the compile just finished wrote (the parent reads its maps)."""
    from tltrace.history.runs import run_dirs

    tltrace.flush()  # a compile returns before its worker wrote its run
    _say(f"run {label} {run_dirs(work.parent.parent / 'seam_child')[-1]}")


def threads(mod, c, work) -> None:
    """Two threads sharing the one explicit working file, through target.build.tilelang_c, target None."""
    barrier = threading.Barrier(2)
    errors: list[str] = []

    def thread_run(k: int) -> None:
        try:
            for r in range(6):
                mine = source_module(f"int thread_{k}_round_{r}(void) {{ return {k}; }}\n")
                barrier.wait(timeout=120)
                got = seam(C, mod, None, lambda m=mine: m, kernel=f"t{k}")
                if got is not mine:
                    errors.append(f"thread {k} round {r}: got {got.inspect_source()!r}")
        except BaseException as exc:  # said by the main thread
            errors.append(f"thread {k}: {type(exc).__name__}: {exc}")
            barrier.abort()

    ts = [threading.Thread(target=thread_run, args=(k,), name=f"compile-{k}") for k in (0, 1)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    _say("ok two threads sharing one working file")


def edit(mod, c, work) -> None:
    """An edit handed back through the source-only C path (target None, a custom build)."""
    base = "int edited(void) {\n  return 5;\n}\n"
    mine = base.replace("return 5", "return 6")
    first = source_module(base)
    same("the edit's first run", seam(C, mod, None, lambda: first, kernel="edit"), first)
    (path,) = [p for p in work.parent.glob("*.cpp") if p.read_text() == base]  # the kernel's working file
    path.write_text(mine)
    second = source_module(base)
    got = seam(C, mod, None, lambda: second, kernel="edit")
    assert got is not second and str(got.inspect_source()).endswith(mine), got
    _say("ok an edit through target.build.tilelang_c")
    fake = Fake(base)  # the same edit, but the build returns no TVM module: it comes back untouched
    same("an edit, a build returning a non-TVM object", seam(C, mod, None, lambda: fake, kernel="edit"), fake)


CASES = {f.__name__: f for f in (none_targets, stand_ins, odd_builds, own_or_custom, threads, edit)}


def main(trace_dir: Path, sync: bool, names: list[str]) -> None:
    work = trace_dir / "work" / "shared.cpp"
    tltrace.enable(mode="html", trace_dir=trace_dir, codegen_output=work, quiet=True, sync=sync)
    mod = prim_module()
    c = tvm.target.Target("c")
    for name in names or list(CASES):
        CASES[name](mod, c, work)
    print("ALL OK", flush=True)


if __name__ == "__main__":
    args = sys.argv[2:]
    main(Path(sys.argv[1]), "sync" in args, [a for a in args if a != "sync"])
