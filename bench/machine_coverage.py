"""PTX and SASS stages (tltrace run --ptx --sass): how much of them reaches the kernel's Python lines.

Per kernel, lowered for sm_90a on this CPU machine (`tilelang.lower(...,
enable_device_compile=False)`: CUDA codegen, no GPU) and traced with the PTX and SASS
stages on (one nvcc build each, as TileLang's CUDA backend builds it):

* PTX: the `.loc` entries; how many reach a Python line through tltrace's map
  (kernel.cu line -> Python line), how many of those fall inside the kernel (the lines of a
  `@T.prim_func` or `@T.macro` function of the kernel's file), outside it in that file (the
  drift: should be 0), or in TileLang's own library code;
* SASS: the instructions, the same way (nvdisasm's line info: instruction -> kernel.cu line).

The kernels: tests/test_facts.py's pipelined GEMM (the user's file), and upstream's GEMM and
FlashAttention forward (TLTRACE_UPSTREAM, else .upstream/), as bench/sourcemap.py lowers them.
CPU builds (target c) have no PTX: not measured. Needs nvcc and nvdisasm (or cuobjdump: then
no SASS lines).

Run: `python bench/machine_coverage.py` (prints the docs/benchmarks.md section).
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

os.environ["TILELANG_DISABLE_CACHE"] = "1"
os.environ.pop("TL_LOWER_TRACE", None)
HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from tests._kernels import GEMM_MAKE  # noqa: E402

HEADING = "## PTX and SASS stages: Python-line coverage (sm_90a, compile-only)"

GEMM = GEMM_MAKE  # tests/_kernels.py: the pipelined GEMM the facts tests compile


def kernel_lines(path: str) -> set[tuple[str, int]]:
    """Return the (path, line)s of every `@T.prim_func` / `@T.macro` function body in a Python file."""
    tree = ast.parse(Path(path).read_text())
    out: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any(
            "prim_func" in ast.unparse(d) or "macro" in ast.unparse(d) for d in node.decorator_list
        ):
            out.update((path, n) for n in range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


def kernels(tmp: Path) -> list[tuple[str, object, dict, str]]:
    """(label, prim_func, pass configs, the kernel's Python file)."""
    import importlib.util

    out = []
    g = tmp / "gemm_cpu.py"
    g.write_text(GEMM)
    spec = importlib.util.spec_from_file_location("bench_gemm", g)
    assert spec and spec.loader
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    out.append(("gemm, 3 stages (tests/test_facts.py)", m.make(stages=3), {}, str(g)))
    out.append(("gemm, 1 stage", m.make(stages=1), {}, str(g)))
    os.environ.setdefault("TLTRACE_UPSTREAM", str(REPO / ".upstream"))
    if not Path(os.environ["TLTRACE_UPSTREAM"]).is_dir() and Path("/work/main/.upstream").is_dir():
        os.environ["TLTRACE_UPSTREAM"] = "/work/main/.upstream"
    import sourcemap as smb  # bench/sourcemap.py: upstream's kernels as it lowers them

    smb.UPSTREAM = Path(os.environ["TLTRACE_UPSTREAM"])
    files = {
        "gemm (upstream)": smb.UPSTREAM / "examples/gemm/example_gemm_autotune.py",
        "flash attention (upstream)": smb.UPSTREAM / "examples/flash_attention/example_mha_fwd_bshd.py",
    }
    for name, func, configs in smb.upstream_funcs():
        if name in files:
            out.append((name, func, configs, str(files[name].resolve())))
    return out


def traced(sub: Path, func, configs) -> Path:
    import tilelang
    from bench_common import bench_settings

    from tltrace.session import controller
    from tltrace.tracing.recorders import register_defaults

    register_defaults()
    s = bench_settings(sub, ptx=True, sass=True)
    said: list[str] = []
    controller.install(
        s, lambda e: said.append(getattr(e, "message", "")) if getattr(e, "kind", "") == "warning" else None
    )
    try:
        tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
        with contextlib.redirect_stdout(io.StringIO()):
            with tilelang.transform.PassContext(opt_level=3, config=configs), tgt:
                tilelang.lower(func, target=tgt, enable_device_compile=False)
    finally:
        controller.uninstall()
    for m in said:
        print(f"  warning: {m}", file=sys.stderr)
    return sorted((sub / "bench" / ".run_records").glob("run_*"))[-1]


def measure(run_dir: Path, inside: set[tuple[str, int]]) -> dict[str, dict[str, int]]:
    from tltrace.history import runs
    from tltrace.history.sourcemaps import load
    from tltrace.stages import maps, ptx, sass

    run = runs.load_run(run_dir)
    m = run.require()
    smaps = load(run_dir)
    out: dict[str, dict[str, int]] = {}
    for rec in m.records:
        if rec.role not in ("ptx", "sass"):
            continue
        text = runs.text_of(run_dir, rec, "after") or ""
        lmap = smaps.of(rec.index, "after")
        if rec.role == "ptx":
            cu, rows = ptx.loc_lines(text)
        else:
            cu = sass.cu_lines(text)
            rows = [
                i
                for i, line in enumerate(text.split("\n"))
                if sass.opcode_class(line) is not None or sass._INSN.match(line)
            ]
        cov = maps.coverage(lmap, rows, inside)
        cov["cu"] = sum(1 for i in rows if cu[i] is not None)
        cov["library"] = sum(
            1 for i in rows if (s := lmap.src(i) if lmap else None) is not None and "/tilelang/" in s[0]
        )
        out[rec.role] = cov
    return out


def pct(a: int, b: int) -> str:
    return f"{100 * a / b:.0f}%" if b else "-"


def section() -> str:
    lines = [
        HEADING,
        "",
        "Measured by `python bench/machine_coverage.py` (nvcc 13.0, nvdisasm from pip's",
        "nvidia-cuda-nvdisasm). `.loc`: PTX line entries; `insns`: SASS instructions. *kernel.cu*: reach a",
        "line of the generated source (`.loc` and its inlined_at chain; nvdisasm's line info); *mapped*:",
        "reach a Python line through tltrace's map of that source; *kernel*: of all entries, those on a line of the kernel",
        "(its `@T.prim_func` and `@T.macro` functions); *outside*: on another line of the kernel's",
        "file (drift; TileLang's own `#line` directives put 88 of 161 there for a gemm, issue 29);",
        "*library*: in TileLang's package (a `T.gemm` expanded into its templates: call sites through",
        "library code are issue 29 item 1). CPU builds (target `c`) have no PTX: not measured.",
        "What reaches a kernel.cu line and no Python line sits on a CUDA statement that TileLang's",
        "spans leave without one: on the warp-specialized GEMM, the producer's `tma_load`,",
        "`mbarrier` and `tl_shuffle_elect` statements (TileLang drops their spans in",
        'ProducerConsumerWarpSpecialized; docs/sourcemap.md, "What TileLang itself drops").',
        "",
        "| kernel | `.loc` | kernel.cu | mapped | kernel | outside | library | insns | kernel.cu | mapped | kernel | outside | library |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="bench-machine-") as td:
        tmp = Path(td)
        for i, (label, func, configs, path) in enumerate(kernels(tmp)):
            inside = kernel_lines(path)
            run = traced(tmp / f"k{i}", func, configs)
            cov = measure(run, inside)
            p, s = cov.get("ptx"), cov.get("sass")
            cells = [label]
            for c in (p, s):
                if c is None:
                    cells += ["-"] * 6
                else:
                    cells += [
                        str(c["total"]),
                        pct(c["cu"], c["total"]),
                        pct(c["mapped"], c["total"]),
                        pct(c["inside"], c["total"]),
                        str(c["outside"]),
                        str(c["library"]),
                    ]
            lines.append("| " + " | ".join(cells) + " |")
            print(lines[-1], file=sys.stderr)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(section())
