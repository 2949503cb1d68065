"""`tltrace run --line-directives`: the device source compiled with scoped `#line` directives.

The pure part (where directives go) runs in the quick loop; a CPU compile checks what is
compiled, recorded and written as working file; a compile-only sm_90a GEMM is built once as
TileLang's CUDA backend builds it (`nvcc --cubin -lineinfo`, installed here, no GPU): every PTX
`.loc` naming the kernel's `.py` falls on a line of the kernel's body, and so does every
instruction's row in the cubin's line table (`nvdisasm -gi`: what Nsight Compute's source view
reads; its call-site frames add only the generated-file call sites ptxas writes under the
`.py`). The ncu run itself is tests/test_gpu_line_directives.py, on a GPU.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tltrace.format.sourcemap import LineMap
from tltrace.sourcemap.line_directives import generated_name, scoped
from tltrace.stages.sass import tool

from ._cli import cli_invoke as _cli
from ._kernels import prim_func_body as _kernel_body
from ._records import read_manifest, rec_text, run_dirs

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


@pytest.mark.compile
def _run_both(tmp_path: Path, script: Path, out: Path, *flags: str):
    """`tltrace run FLAGS --mode both` of `script` into tmp_path/t, its working file at `out`."""
    return _cli(
        "run",
        *flags,
        "--mode",
        "both",
        "--trace-dir",
        tmp_path / "t",
        script,
        out,
        env={"TILELANG_DISABLE_CACHE": "1"},
    )


def test_cpu_run_compiles_with_directives_and_records_without(tmp_path):
    script = tmp_path / "lddemo.py"
    script.write_text(CPU_SCRIPT)
    out = tmp_path / "compiled.c"
    res = _run_both(tmp_path, script, out, "--line-directives")
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
    recorded = rec_text(run, rec)
    # What was compiled is the recorded source plus #line lines; the working file stays clean.
    assert "\n".join(ln for ln in compiled.split("\n") if not ln.startswith("#line ")) == recorded
    assert "#line" not in recorded and working.read_text() == recorded
    body = next(i for i, ln in enumerate(CPU_SCRIPT.split("\n"), 1) if "# BODY" in ln)
    assert f'#line {body} "{script}"' in compiled
    assert compiled.startswith(f'#line 1 "{working}"')
    # A rerun without the flag compiles the plain source again.
    res = _run_both(tmp_path, script, out)
    assert res.exit_code == 0, res.output
    assert "#line" not in out.read_text()
    assert read_manifest(run_dirs(tmp_path / "t" / "lddemo")[-1])["line_directives"] is None


def nvcc_build(source: str, d: Path, arch: str = "sm_90a") -> tuple[str, Path]:
    """Build `source` into a cubin as TileLang's CUDA backend does for a profiling build
    (`nvcc --cubin -O3 -lineinfo`, its host compiler and include dirs); return (the PTX nvcc
    kept on the way, the cubin's path). One nvcc run gives both."""
    from tltrace.toolchain.nvcc import _host_compiler, _includes, nvcc

    cu, cubin, keep = d / "k.cu", d / "k.cubin", d / "keep"
    cu.write_text(source)
    keep.mkdir()
    cmd = [nvcc() or "nvcc", *_host_compiler(), "--cubin", "-O3", "-lineinfo", f"-arch={arch}"]
    cmd += ["-std=c++20", *_includes(), "-w", "--keep", "--keep-dir", str(keep), "-o", str(cubin), str(cu)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300, cwd=d)
    return (keep / "k.ptx").read_text(), cubin


def ptx_locs(text: str) -> list[tuple[str, int]]:
    """The (file, line) of every `.loc` of a PTX text written with `-lineinfo`."""
    files = {int(m.group(1)): m.group(2) for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', text, re.M)}
    return [(files.get(int(f), "?"), int(n)) for f, n in re.findall(r"^\s*\.loc\s+(\d+)\s+(\d+)", text, re.M)]


_FRAME = re.compile(r'^\s*//## File "([^"]*)", line (\d+)(?: inlined at "([^"]*)", line (\d+))?')
_SASS_INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+\S")


def sass_frames(cubin: Path) -> list[list[tuple[str, int]]]:
    """Per SASS instruction of `nvdisasm -c -gi`, every (file, line) its line-table entry names:
    the inlined frames and the outermost one (the kernel's own line); [] for an instruction
    without a line. nvdisasm prints an entry where it changes; the instructions after it share it."""
    raw = subprocess.run(
        [str(tool("nvdisasm")), "-c", "-gi", str(cubin)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    out: list[list[tuple[str, int]]] = []
    cur: list[tuple[str, int]] = []
    fresh = False  # the chain being read has no instruction yet
    for line in raw.split("\n"):
        m = _FRAME.match(line)
        if m:
            cur = cur if fresh else []
            cur.append((m.group(1), int(m.group(2))))
            if m.group(3):
                cur.append((m.group(3), int(m.group(4))))
            fresh = True
        elif line.startswith(".text.") or line.startswith("//---"):
            cur, fresh = [], False
        elif _SASS_INSN.match(line):
            out.append(cur)
            fresh = False
    return out


def _lower_sm90a(
    script: Path, directives: bool, trace: Path | None = None, configs: dict | None = None
) -> str:
    """The device source of a compile-only sm_90a lowering of the script's `make()`, traced with
    TLTRACE_LINE_DIRECTIVES when `directives`, else untraced under the pass `configs`."""
    import tilelang

    import tltrace

    from ._kernels import load_script as _load

    make = _load(script, script.read_text()).make
    tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    if not directives:
        with tgt, tilelang.tvm.transform.PassContext(config=configs or {}):
            return tilelang.lower(make(), target=tgt, enable_device_compile=False).kernel_source
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TLTRACE_LINE_DIRECTIVES", "1")
        tltrace.enable(mode="terminal", trace_dir=trace, quiet=True)
        try:
            with tgt:
                return tilelang.lower(make(), target=tgt, enable_device_compile=False).kernel_source
        finally:
            tltrace.disable()


@pytest.fixture(scope="module")
def sm90a_gemm(tmp_path_factory):
    """Compile-only sm_90a GEMM with --line-directives (TLTRACE_LINE_DIRECTIVES), lowered once and
    built once (nvcc --cubin -lineinfo, keeping the PTX): (script, source, manifest, PTX, cubin)."""
    from .test_sourcemap import HOPPER

    d = tmp_path_factory.mktemp("ld90")
    script = d / "ld90.py"
    script.write_text(HOPPER)
    source = _lower_sm90a(script, True, d / "trace")
    (run_dir,) = sorted((d / "trace").glob("*/.run_records/run_*"))
    (d / "build").mkdir()
    ptx, cubin = nvcc_build(source, d / "build")
    return script, source, read_manifest(run_dir), ptx, cubin


@pytest.mark.compile
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_sm90a_ptx_locs_fall_in_the_kernel_body(sm90a_gemm):
    """Compile-only sm_90a GEMM with --line-directives (TLTRACE_LINE_DIRECTIVES): nvcc -lineinfo
    over the source TileLang hands on; every .loc naming the .py is a line of the kernel's body."""
    from .test_sourcemap import HOPPER

    script, source, m, ptx, _ = sm90a_gemm
    assert m["line_directives"] and m["line_directives"][0]["files"] == [str(script)]
    assert source.startswith('#line 1 "codegen_device.cu"')
    locs = ptx_locs(ptx)
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


def _named(
    frames: list[list[tuple[str, int]]], script: Path, body: set[int]
) -> tuple[int, int, list[int], list[int]]:
    """(instructions with a line, those naming the script, the script's lines named, those outside `body`)."""
    lines = sorted({n for chain in frames for f, n in chain if f == str(script)})
    mine = sum(1 for chain in frames if any(f == str(script) for f, _ in chain))
    return sum(1 for chain in frames if chain), mine, lines, [n for n in lines if n not in body]


@pytest.mark.compile
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
@pytest.mark.skipif(tool("nvdisasm") is None, reason="no nvdisasm")
def test_sm90a_cubin_line_table_names_only_kernel_lines(sm90a_gemm, tmp_path):
    """What Nsight Compute's source view reads, on the CPU: the cubin's line table (nvdisasm -gi)
    of the --line-directives build names the .py, only lines of the kernel's body (the T.gemm
    line among them, as the call site of its inlined WGMMA code), and only lines the generated
    file has. TileLang's own `tl.emit_line_directives` build is counted the same way for
    contrast (printed only).

    One defect is ptxas's, not the directives': where the PTX has a generated-file call site
    (`.loc 1 94 5` then `.loc 2 158 5, ..., inlined_at 1 94 5`) right after a row of the .py,
    ptxas (CUDA 13.0) writes that call-site row without switching the file, so `-gi` shows
    `inlined at "ld90.py", line 94`. Those lines are allowed in the call-site frames only when
    the PTX names them as the generated file's and never as the .py's; each instruction's own
    row (what `nvdisasm -g` shows) must have none outside the body."""
    from .test_sourcemap import HOPPER

    script, source, _, ptx, cubin = sm90a_gemm
    body = _kernel_body(script)
    frames = sass_frames(cubin)
    with_line, mine, lines, outside = _named(frames, script, body)
    own = sorted({chain[0][1] for chain in frames if chain and chain[0][0] == str(script)})
    # The PTX's call sites (inlined_at) and .loc lines, per file: the generated file's and the .py's.
    files = {int(k): v for k, v in re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', ptx, re.M)}
    calls = [(files.get(int(f), "?"), int(n)) for f, n in re.findall(r"inlined_at\s+(\d+)\s+(\d+)", ptx)]
    py_in_ptx = {n for f, n in [*ptx_locs(ptx), *calls] if f == str(script)}
    gen_calls = {n for f, n in calls if f.endswith("codegen_device.cu")}
    ptxas_drops = sorted(n for n in outside if n in gen_calls and n not in py_in_ptx)
    print(
        f"sm_90a gemm --line-directives cubin (nvdisasm -gi): {len(frames)} instructions, {with_line} with a line, "
        f"{mine} name {script.name} (lines {lines}); outside the body: {[n for n in own if n not in body]} "
        f"in the instructions' own rows, {outside} in call-site frames "
        f"({ptxas_drops}: codegen_device.cu call sites in the PTX that ptxas wrote under {script.name})"
    )
    assert mine and lines, "the line table names no line of the script"
    assert not [n for n in own if n not in body]
    assert outside == ptxas_drops  # nothing outside that the directives (the PTX) put there
    gemm = next(i for i, ln in enumerate(HOPPER.split("\n"), 1) if "T.gemm(" in ln)
    assert gemm in lines  # the WGMMA instructions' call site is the T.gemm line
    n_lines = source.count("\n") - source.count("#line ") + 1
    generated = [n for chain in frames for f, n in chain if f.endswith("codegen_device.cu")] + ptxas_drops
    assert generated and all(1 <= n <= n_lines for n in generated), (n_lines, max(generated))

    # Contrast: TileLang's own directives (never scoped), the same count.
    raw = _lower_sm90a(script, False, configs={"tl.emit_line_directives": True})
    _, raw_cubin = nvcc_build(raw, tmp_path)
    r_frames = sass_frames(raw_cubin)
    r_with, r_mine, _, r_outside = _named(r_frames, script, body)
    r_insns = sum(1 for chain in r_frames if any(f == str(script) and n not in body for f, n in chain))
    print(
        f"sm_90a gemm tl.emit_line_directives cubin: {len(r_frames)} instructions, {r_with} with a line, "
        f"{r_mine} name {script.name}, {r_insns} of them on lines outside the body: {r_outside}"
    )


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


# -- file names in `#line`: sourcemap/cstring.py, the one C string escaper ----------------------------
# Every control character, DEL, the Unicode line and paragraph separators, and what C itself
# escapes: each in a name of its own.
HARD = [chr(c) for c in range(0x20)] + ["\x7f", "\u2028", "\u2029", '"', "\\", "?", "é"]
SPELT = {"\x00": "^@", "\r": "^M", '"': "'"}  # what no toolchain can carry (sourcemap/cstring.py)


def _hard_name(ch: str) -> str:
    return f"/tmp/k{ch}1/x.py"


def test_c_string_escapes_every_control_character():
    from tltrace.sourcemap.cstring import c_string, c_unstring

    for ch in HARD:
        lit = c_string(_hard_name(ch))
        assert lit[0] == lit[-1] == '"' and all(" " <= c <= "~" for c in lit), (repr(ch), lit)
        body = lit[1:-1]
        assert '"' not in body.replace('\\"', ""), lit  # no quote ends it early
        assert c_unstring(body) == _hard_name(SPELT.get(ch, ch)), (repr(ch), lit)
    assert c_string("plain/k.py") == '"plain/k.py"'


def _directive_program(lang: str) -> str:
    """A program with one `#line` per hard name, each followed by what takes `__FILE__` (an assert in
    a CUDA kernel; a string in C), and which prints every name it got, in C."""
    from tltrace.sourcemap.cstring import c_string

    if lang == "cuda":
        out = ["#include <cassert>", "__global__ void k(int *p) {"]
        for k, ch in enumerate(HARD):
            out += [f"#line 1 {c_string(_hard_name(ch))}", f"  assert(p[{k}] == {k}); p[{k}] = {k} + 1;"]
        return "\n".join([*out, '#line 100 "main.cu"', "}", ""])
    out = ["#include <stdio.h>"]
    for k, ch in enumerate(HARD):
        out += [f"#line 1 {c_string(_hard_name(ch))}", f"static const char f{k}[] = __FILE__;"]
    out += ['#line 100 "main.c"', "int main(void) {"]
    out += [f"  fwrite(f{k}, 1, sizeof f{k} - 1, stdout); fputc(0xff, stdout);" for k in range(len(HARD))]
    return "\n".join([*out, "  return 0;", "}", ""])


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_gcc_reads_every_name_back(tmp_path):
    """GCC takes each `#line` tltrace writes (with -Werror) and its `__FILE__` is the name's bytes."""
    src, exe = tmp_path / "names.c", tmp_path / "names"
    src.write_text(_directive_program("c"))
    subprocess.run(["gcc", "-Wall", "-Werror", "-o", str(exe), str(src)], check=True, capture_output=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True).stdout.split(b"\xff")[:-1]
    assert got == [_hard_name(SPELT.get(ch, ch)).encode() for ch in HARD]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc")
def test_nvcc_builds_a_cubin_under_every_name(tmp_path):
    """nvcc -lineinfo (and ptxas after it, and the host GCC's `__FILE__` for the asserts) builds a
    kernel under each name; the PTX's `.file`s hold them all."""
    src = tmp_path / "names.cu"
    src.write_text(_directive_program("cuda"))
    keep = tmp_path / "keep"
    keep.mkdir()
    cmd = ["nvcc", "-lineinfo", "-arch=sm_80", "--cubin", "--keep", "--keep-dir", str(keep)]
    subprocess.run(
        [*cmd, "-o", str(tmp_path / "n.cubin"), str(src)], check=True, capture_output=True, cwd=tmp_path
    )
    ptx = (keep / "names.ptx").read_text(errors="replace")
    assert (tmp_path / "n.cubin").stat().st_size > 0
    assert len(re.findall(r'^\s*\.file\s+\d+\s+"/tmp/k', ptx, re.M)) == len(HARD)


@pytest.mark.compile
@pytest.mark.parametrize("where", ["a\rb", 'a\rb\nc\td\x1be"f\\g\u2028h\x7fi'], ids=["cr", "many"])
def test_a_script_path_with_control_characters_compiles_with_directives(tmp_path, where):
    """A real CPU compile (`c`, cython: gcc builds it) of a script whose directory name holds a CR
    (the build broke on it), or a CR, a newline, a tab, an ESC, a quote, a backslash, DEL and
    U+2028: --line-directives applies (the map reads TileLang's directives through a stamp, never
    the raw name) and the build works (the script checks the kernel's result)."""
    from tltrace.sourcemap.cstring import c_string

    d = tmp_path / 'a\rb\nc\td\x1be"f\\g\u2028h\x7fi'
    d.mkdir()
    script = d / "ldesc.py"
    script.write_text(CPU_SCRIPT)
    out = tmp_path / "compiled.c"
    res = _cli(
        "run",
        "-q",
        "--line-directives",
        "--trace-dir",
        tmp_path / "t",
        script,
        out,
        env={"TILELANG_DISABLE_CACHE": "1"},
    )
    assert res.exit_code == 0, res.output
    assert "--line-directives: compiled with" in res.output, res.output
    body = next(i for i, ln in enumerate(CPU_SCRIPT.split("\n"), 1) if "# BODY" in ln)
    assert f"#line {body} {c_string(str(script))}" in out.read_text().split("\n")
