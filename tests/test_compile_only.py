"""TileLang's own `#line` directives: `tilelang.tools.compile_only` and `tilelang.lower` under
`tl.emit_line_directives`.

The compile-only tool turns TileLang's directives on, so the generated source it hands back
holds them. The source map is read through them (each directive line a line of no statement),
`--line-directives` replaces them with tltrace's scoped ones, and the PTX/SASS stages build
the source with them blanked. Oracles, none of them tltrace's: TileLang's own directive right
before a statement (it names that statement's span), TileLang's span API on the kernel's
statements, the kernel's body from the script's `ast`, and nvcc -lineinfo's PTX `.loc`s.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tltrace.history import sourcemaps

from ._cli import cli_invoke as _cli
from ._cli import script_traced
from ._kernels import load_script as _load
from ._kernels import prim_func_body as _body
from ._records import read_manifest, rec_text, run_dirs
from .test_line_directives import nvcc_build, ptx_locs

SCRIPT = """import sys

import tilelang.language as T
from tilelang.tools.compile_only import compile_kernel_source

M = N = K = 256


@T.prim_func
def cogemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
    with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=128) as (bx, by):
        A_s = T.alloc_shared((128, 64), "float16")
        B_s = T.alloc_shared((64, 128), "float16")
        C_l = T.alloc_fragment((128, 128), "float32")
        T.clear(C_l)
        for k in T.Pipelined(T.ceildiv(K, 64), num_stages=2):
            T.copy(A[by * 128, k * 64], A_s)
            T.copy(B[k * 64, bx * 128], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 128, bx * 128])


if __name__ == "__main__":
    source = compile_kernel_source(cogemm, sys.argv[2] if len(sys.argv) > 2 else "cuda -arch=sm_90a")
    open(sys.argv[1], "w").write(source)
"""

_DIRECTIVE = re.compile(r'^#line (\d+) "([^"]*)"$')


def _device_codegen(run_dir: Path) -> tuple[str, object]:
    m = read_manifest(run_dir)
    rec = next(r for r in m["records"] if r["status"] == "codegen" and r["role"] == "device")
    return rec_text(run_dir, rec), sourcemaps.load(run_dir).of(rec["index"], "after")


def _statement_spans(func) -> set[tuple[str, int]]:
    """Every (file, line) that a statement of `func` spans, by TileLang's own span API, and the
    function's own line (its `def`, where TileLang's first directive points)."""
    import tilelang

    tvm = tilelang.tvm
    get_span = tvm.get_global_func("tl.ir.GetStmtSpan")
    out: set[tuple[str, int]] = set()

    def visit(node) -> None:
        if isinstance(node, tvm.tirx.Stmt):
            span = get_span(node)
            if span is not None and span.source_name is not None and int(span.line) > 0:
                end = max(int(span.end_line), int(span.line))
                out.update((str(span.source_name.name), n) for n in range(int(span.line), end + 1))

    tvm.tirx.stmt_functor.post_order_visit(func.body, visit)
    out.add((str(func.span.source_name.name), int(func.span.line)))
    return out


@pytest.mark.compile
@pytest.mark.parametrize("path", ["compile_only", "lower"])
def test_each_mapped_line_lies_in_the_spans_of_the_ir_it_came_from(tmp_path, monkeypatch, path):
    """Under TileLang's own directives (the compile-only tool; `tilelang.lower` in a PassContext
    that turns them on), --line-directives compiles the code with tltrace's scoped directives in
    their place, each naming a line of the kernel's body, and the generated source is mapped: each statement line right after one of
    TileLang's directives has that directive's line (TileLang writes it right before the
    statement whose span it names; a library line may be mapped to its call site, `via`), and
    every mapped line's Python line is a line some statement of the kernel spans (TileLang's span
    API), inside the kernel's body when exact."""
    import tilelang

    import tltrace

    script = tmp_path / "cospans.py"
    script.write_text(SCRIPT)
    func = _load(script).cogemm
    target = "cuda -arch=sm_80"
    monkeypatch.setenv("TLTRACE_LINE_DIRECTIVES", "1")  # --line-directives, on both paths too
    tltrace.enable(mode="terminal", trace_dir=tmp_path / "t", quiet=True)
    try:
        if path == "compile_only":
            from tilelang.tools.compile_only import compile_kernel_source

            source = compile_kernel_source(func, target)
        else:
            tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_80"})
            with tilelang.transform.PassContext(opt_level=3, config={"tl.emit_line_directives": True}), tgt:
                source = tilelang.lower(func, target=tgt, enable_device_compile=False).kernel_source
    finally:
        tltrace.disable()
    (run_dir,) = sorted((tmp_path / "t").glob("*/.run_records/run_*"))
    text, lmap = _device_codegen(run_dir)
    assert "#line " in text  # TileLang's own directives, recorded as generated

    # What was compiled: the same code, with tltrace's scoped directives in place of TileLang's.
    def code(t: str) -> list[str]:
        return [ln for ln in t.split("\n") if not ln.startswith("#line ")]

    assert code(source) == code(text)
    named = [(m.group(2), int(m.group(1))) for m in map(_DIRECTIVE.match, source.split("\n")) if m]
    assert {f for f, _ in named} == {str(script), "codegen_device.cu"}
    assert all(n in _body(script) for f, n in named if f == str(script)), named
    assert lmap is not None and len(lmap.lines) == len(text.split("\n"))
    lines = text.split("\n")
    spans = _statement_spans(func)
    body = _body(script)
    checked = mapped = 0
    for i, ln in enumerate(lines):
        src = lmap.src(i)
        m = _DIRECTIVE.match(ln)
        if m:
            assert src is None, (i, ln)  # a directive is no statement
            j = i + 1
            while j < len(lines) and lines[j].lstrip().startswith("#pragma"):
                j += 1
            if j < len(lines) and not _DIRECTIVE.match(lines[j]):  # else its statement wrote nothing
                named = (m.group(2), int(m.group(1)))
                via = lmap.via.get(j)
                got = {lmap.src(j), (lmap.files[via[0]], via[1]) if via else None}
                assert named in got, (j + 1, lines[j], named, got)
                checked += 1
            continue
        if src is None:
            continue
        mapped += 1
        if i in lmap.via:
            continue  # the call site of library code: its library line is the statement's
        assert src in spans, (i + 1, ln, src)
        if i not in lmap.inferred and src[0] == str(script):
            assert src[1] in body, (i + 1, ln, src)
    assert checked >= 5 and mapped >= 20, (checked, mapped)


@pytest.fixture(scope="module")
def compile_only_ptx(tmp_path_factory):
    """`tltrace run --ptx --line-directives` of a script that calls TileLang's compile-only tool
    (sm_90a), and the PTX of what it compiled (nvcc -lineinfo, as TileLang builds it; one build,
    beside the PTX stage's own): (script, trace dir, the compiled source, its PTX, show's JSON)."""
    d = tmp_path_factory.mktemp("coptx")
    out = d / "compiled.cu"
    script, res = script_traced(
        d, "coptx.py", SCRIPT, "--ptx", "--line-directives", trace_dir=d / "t", args=(out,)
    )
    assert "no source map" not in res.output and "--line-directives: compiled with" in res.output
    shown = _cli("show", "--trace-dir", d / "t", "coptx", "-1", "--source-map", "--json")
    assert shown.exit_code == 0, shown.output
    source = out.read_text()
    (d / "build").mkdir()
    ptx, _ = nvcc_build(source, d / "build")
    return script, d / "t", source, ptx, json.loads(shown.output)


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")


@pytest.mark.compile
@pytest.mark.slow
@needs_nvcc
def test_compile_only_source_map_and_scoped_directives(compile_only_ptx):
    """The compile-only tool's source gets a map (it had none: "0 of N lines carry a Python line"),
    and is compiled with tltrace's scoped directives in place of TileLang's own: every PTX `.loc`
    naming the script falls inside the kernel's body, the `T.gemm` line among them."""
    script, trace, source, ptx, shown = compile_only_ptx
    device = shown["codegen"]["device"]
    assert sum(1 for ln in device if ln["src"]) >= 20
    (run,) = run_dirs(trace / "coptx")
    (entry,) = read_manifest(run)["line_directives"]
    assert entry["files"] == [str(script)] and entry["directives"] >= 10
    named = {f for f in re.findall(r'^#line \d+ "([^"]*)"$', source, re.M)}
    assert named == {str(script), "codegen_device.cu"}, named  # TileLang's own are gone
    body = _body(script)
    mine = [n for f, n in ptx_locs(ptx) if f == str(script)]
    gemm = next(i for i, ln in enumerate(SCRIPT.split("\n"), 1) if "T.gemm(" in ln)
    assert mine and sorted({n for n in mine if n not in body}) == []
    assert gemm in mine


@pytest.mark.compile
@pytest.mark.slow
@needs_nvcc
def test_compile_only_ptx_stage_names_only_kernel_lines(compile_only_ptx):
    """The PTX stage (`--ptx`) of the compile-only source: no `.loc` names a script line outside the
    kernel's body (TileLang's drifting directives are blanked before the build), and every PTX line
    the stage maps to the script, through kernel.cu, lies inside it."""
    script, trace, _, _, _ = compile_only_ptx
    (run,) = run_dirs(trace / "coptx")
    m = read_manifest(run)
    rec = next(r for r in m["records"] if r["name"] == "ptx")
    stage = rec_text(run, rec)
    body = _body(script)
    assert [n for f, n in ptx_locs(stage) if f == str(script) and n not in body] == []
    pmap = sourcemaps.load(run).of(rec["index"], "after")
    assert pmap is not None
    lines = [pmap.src(i) for i in range(len(pmap.lines))]
    mine = [s[1] for s in lines if s is not None and s[0] == str(script)]
    assert mine and sorted({n for n in mine if n not in body}) == []
