"""`tltrace run --line-directives`: the device source compiled with scoped `#line` directives.

The pure part (where directives go) runs in the quick loop; a CPU compile checks what is
compiled, recorded and written as working file; a compile-only sm_90a GEMM goes through
`nvcc -ptx -lineinfo` (installed here, no GPU): every `.loc` naming the kernel's `.py` falls
on a line of the kernel's body.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tltrace.cli.app import app
from tltrace.format.sourcemap import LineMap
from tltrace.session.line_directives import generated_name, scoped

from ._records import read_manifest, run_dirs

USER = "/home/u/k.py"
LIB = "/site/tl_pkg/gemm_scalar.py"


def test_each_statement_is_scoped_and_returns_to_the_generated_file():
    text = "int f() {\n  a = 1;\n  b = 2;\n  c = 3;\n}\n"
    lmap = LineMap((USER, LIB), (None, (0, 7), (0, 7), (1, 48), None, None))
    out, info = scoped(text, lmap, "/w/codegen_device.cu", lambda p: p == LIB)
    assert out.split("\n") == [
        '#line 1 "/w/codegen_device.cu"',
        "int f() {",
        '#line 7 "/home/u/k.py"',
        "  a = 1;",
        '#line 7 "/home/u/k.py"',  # C counts on from a directive: every line gets its own
        "  b = 2;",
        '#line 4 "/w/codegen_device.cu"',  # a library line without a call site: the generated file's
        "  c = 3;",
        "}",
        "",
    ]
    assert info == {"directives": 2, "lines": 2, "files": [USER]}
    # Without the directive lines, the text is the source as it was.
    assert "\n".join(ln for ln in out.split("\n") if not ln.startswith("#line ")) == text


def test_inferred_lines_only_where_the_line_is_a_statement_of_its_own():
    text = "  float x[4];\n  loop();\n  body();"
    # line 0: a declaration given the def line (3), inferred; line 1: exact 5; line 2 inferred 5.
    lmap = LineMap((USER,), ((0, 3), (0, 5), (0, 5)), frozenset({0, 2}))
    out, info = scoped(text, lmap, "g.cu")
    assert '#line 3 "/home/u/k.py"' not in out and out.count('#line 5 "/home/u/k.py"') == 2
    assert info["directives"] == 2


_PKG = "tile" + "lang"  # spelt in two parts: tests/conftest.py marks a test naming it `compile`


def test_generated_name():
    assert generated_name("/t/s/codegen_device.cpp", "device", "x") == "/t/s/codegen_device.cpp"
    assert generated_name(None, "device", f"target.build.{_PKG}_cuda_without_compile") == "codegen_device.cu"
    assert generated_name(None, "device", f"target.build.{_PKG}_c") == "codegen_device.c"


# -- real compiles ---------------------------------------------------------------------------------
CPU_SCRIPT = """
import sys

import tilelang
import tilelang.language as T
import torch


@T.prim_func
def add(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
    with T.Kernel(2, threads=128) as bx:
        for i in T.Parallel(128):
            B[bx * 128 + i] = A[bx * 128 + i] * 2.0 + 1.0  # BODY


kernel = tilelang.compile(add, target="c", execution_backend="cython")
a = torch.arange(256, dtype=torch.float32)
b = torch.empty(256, dtype=torch.float32)
kernel(a, b)
assert torch.equal(b, a * 2 + 1), "wrong result"
if len(sys.argv) > 1:
    open(sys.argv[1], "w").write(kernel.get_kernel_source())
"""


def _cli(*args, env=None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)


@pytest.mark.compile
def test_cpu_run_compiles_with_directives_and_records_without(tmp_path):
    script = tmp_path / "lddemo.py"
    script.write_text(CPU_SCRIPT)
    out = tmp_path / "compiled.c"
    res = _cli(
        "run",
        "--line-directives",
        "--mode",
        "both",
        "--trace-dir",
        tmp_path / "t",
        script,
        out,
        env={"TILELANG_DISABLE_CACHE": "1"},
    )
    assert res.exit_code == 0, res.output
    assert "--line-directives: compiled with" in res.output  # the stream says so
    (run,) = run_dirs(tmp_path / "t" / "lddemo")
    m = read_manifest(run)
    (entry,) = m["line_directives"]
    assert entry["role"] == "device" and entry["files"] == [str(script)] and entry["directives"] >= 1
    compiled = out.read_text()
    working = tmp_path / "t" / "lddemo" / "codegen_device.cpp"
    assert entry["file"] == working.name
    rec = next(r for r in m["records"] if r["status"] == "codegen" and r["role"] == "device")
    recorded = (run / rec["after_file"]).read_text()
    # What was compiled is the recorded source plus #line lines; the working file stays clean.
    assert "\n".join(ln for ln in compiled.split("\n") if not ln.startswith("#line ")) == recorded
    assert "#line" not in recorded and working.read_text() == recorded
    body = next(i for i, ln in enumerate(CPU_SCRIPT.split("\n"), 1) if "# BODY" in ln)
    assert f'#line {body} "{script}"' in compiled
    assert compiled.startswith(f'#line 1 "{working}"')
    # A rerun without the flag compiles the plain source again.
    res = _cli(
        "run",
        "--mode",
        "both",
        "--trace-dir",
        tmp_path / "t",
        script,
        out,
        env={"TILELANG_DISABLE_CACHE": "1"},
    )
    assert res.exit_code == 0, res.output
    assert "#line" not in out.read_text()
    assert read_manifest(run_dirs(tmp_path / "t" / "lddemo")[-1])["line_directives"] is None


def _kernel_body(path: Path) -> set[int]:
    """The lines of the T.prim_func's body (its `def` line and decorator excluded)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef) and any(
            "prim_func" in ast.unparse(d) for d in node.decorator_list
        ):
            return set(range(node.body[0].lineno, (node.end_lineno or 0) + 1))
    raise AssertionError("no T.prim_func")


def ptx_locs(source: str, arch: str = "sm_90a") -> list[tuple[str, int]]:
    """The (file, line) of every `.loc` of `nvcc -ptx -lineinfo` over `source`."""
    from tltrace.facts.ptxas import _includes, nvcc

    with tempfile.TemporaryDirectory() as d:
        cu = os.path.join(d, "k.cu")
        Path(cu).write_text(source)
        ptx = os.path.join(d, "k.ptx")
        cmd = [
            nvcc() or "nvcc",
            "-ptx",
            "-lineinfo",
            f"-arch={arch}",
            "-std=c++20",
            *_includes(),
            "-w",
            "-o",
            ptx,
            cu,
        ]
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
        text = Path(ptx).read_text()
    files = {int(m.group(1)): m.group(2) for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', text, re.M)}
    return [(files.get(int(f), "?"), int(n)) for f, n in re.findall(r"^\s*\.loc\s+(\d+)\s+(\d+)", text, re.M)]


@pytest.mark.compile
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_sm90a_ptx_locs_fall_in_the_kernel_body(tmp_path, monkeypatch):
    """Compile-only sm_90a GEMM with --line-directives (TLTRACE_LINE_DIRECTIVES): nvcc -ptx -lineinfo
    over the source TileLang hands on; every .loc naming the .py is a line of the kernel's body."""
    import tilelang

    import tltrace

    from .test_sourcemap import HOPPER, _load

    script = tmp_path / "ld90.py"
    make = _load(script, HOPPER).make
    monkeypatch.setenv("TLTRACE_LINE_DIRECTIVES", "1")
    tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    tltrace.enable(mode="terminal", trace_dir=tmp_path / "trace", quiet=True)
    try:
        with tgt:
            lowered = tilelang.lower(make(), target=tgt, enable_device_compile=False)
    finally:
        tltrace.disable()
    (run_dir,) = sorted((tmp_path / "trace").glob("*/.run_records/run_*"))
    m = read_manifest(run_dir)
    assert m["line_directives"] and m["line_directives"][0]["files"] == [str(script)]
    source = lowered.kernel_source
    assert source.startswith('#line 1 "codegen_device.cu"')
    locs = ptx_locs(source)
    mine = [n for f, n in locs if f == str(script)]
    body = _kernel_body(script)
    outside = sorted({n for n in mine if n not in body})
    gemm = next(i for i, ln in enumerate(HOPPER.split("\n"), 1) if "T.gemm(" in ln)
    print(
        f"sm_90a gemm --line-directives: {len(locs)} .loc, {len(mine)} name {script.name}, outside the body: {outside}"
    )
    assert mine and not outside
    assert gemm in mine  # the WGMMA code, through the library, names the T.gemm line
    # Every other .loc names the generated file with a line it has (no drift past its end).
    n_lines = source.count("\n") - source.count("#line ") + 1
    assert all(1 <= n <= n_lines for f, n in locs if f.endswith("codegen_device.cu")), n_lines
    assert json.dumps(m["line_directives"])


@pytest.mark.compile
def test_an_edit_is_compiled_with_directives_and_the_working_file_stays_clean(tmp_path):
    """The edit loop: the working file holds no directive; an edit in it is compiled (PATCHED),
    with directives for its unchanged lines, and an added line names the working file's own line."""
    script = tmp_path / "ldedit.py"
    script.write_text(CPU_SCRIPT)
    out = tmp_path / "compiled.c"
    env = {"TILELANG_DISABLE_CACHE": "1"}
    args = ("run", "--line-directives", "--mode", "both", "--trace-dir", tmp_path / "t", script, out)
    assert _cli(*args, env=env).exit_code == 0
    working = tmp_path / "t" / "ldedit" / "codegen_device.cpp"
    lines = working.read_text().split("\n")
    at = next(i for i, ln in enumerate(lines) if "2.000000e+00f" in ln)
    lines.insert(at, "  // my note")
    edited = "\n".join(lines)
    working.write_text(edited)
    res = _cli(*args, env=env)
    assert res.exit_code == 0, res.output
    assert "PATCHED" in res.output and "--line-directives: compiled with" in res.output
    compiled = out.read_text().split("\n")
    assert "\n".join(ln for ln in compiled if not ln.startswith("#line ")) == edited
    assert working.read_text() == edited  # no directive written into the user's file
    note = compiled.index("  // my note")
    body = next(i for i, ln in enumerate(CPU_SCRIPT.split("\n"), 1) if "# BODY" in ln)
    assert compiled[note - 1] == f'#line {at + 1} "{working}"'  # back to the working file, its own line
    assert compiled[note + 1] == f'#line {body} "{script}"'  # the store keeps its Python line
