"""Source maps: coverage (share of statement lines with a Python line) and what mapping costs.

* Coverage per pass and for the generated device source, on the CPU examples (target c)
  and on upstream's GEMM, FlashAttention fwd and MLA decode lowered for sm_90a on the CPU
  (CUDA codegen, no nvcc: `tilelang.lower(..., enable_device_compile=False)`), with the
  passes where a Python line first disappears (TileLang dropping a span). The generated
  source counts as issue 22 does: the statement lines of the device source (indented,
  not braces, comments or preprocessor lines; the host source is left out), exact
  (TileLang's span) and with inferred lines (an enclosing statement's).
* Cost: `tilelang.compile` of the CPU examples, untraced and traced (records only and
  html) with TLTRACE_SOURCE_MAP=0 and =1, interleaved rep by rep in one process;
  and the bytes `sourcemap.jsonl` adds to the records.

Run: `python bench/sourcemap.py [--reps 7] [--gpu]` (--gpu: the same coverage for
CUDA compiles on a GPU machine, `tilelang.compile(..., target="cuda")`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

os.environ["TILELANG_DISABLE_CACHE"] = "1"
os.environ.pop("TL_LOWER_TRACE", None)
if "--gpu" not in sys.argv:
    os.environ.setdefault("TLTRACE_EXAMPLES_CPU", "1")
HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "examples"))
sys.path.insert(0, str(HERE))

from bench_common import bench_settings, disk_bytes, md_head, median_s, report_listeners, session  # noqa: E402

HEADING = "## Source maps: coverage and cost"
UPSTREAM = Path(os.environ.get("TLTRACE_UPSTREAM") or REPO / ".upstream")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cpu_kernels():
    """The examples at bench/capture.py's sizes (CUDA sizes on a GPU)."""
    from capture import kernels

    return kernels()


def upstream_funcs():
    """(name, prim_func, pass configs) of upstream's GEMM (sm_90 heuristic config), FlashAttention fwd
    and MLA decode (its `main` sizes; einops, which only its reference uses, stubbed when missing)."""
    out = []
    g = UPSTREAM / "examples/gemm/example_gemm_autotune.py"
    if g.is_file():
        m = _load(g, "_up_gemm")
        cfg = {"block_M": 128, "block_N": 256, "block_K": 64, "num_stages": 3, "thread_num": 256}
        out.append(
            ("gemm (upstream)", m.matmul.get_tir(4096, 4096, 4096, enable_rasteration=True, **cfg), {})
        )
    f = UPSTREAM / "examples/flash_attention/example_mha_fwd_bshd.py"
    if f.is_file():
        import tilelang

        m = _load(f, "_up_flash")
        func = m.flashattn.jit_impl.get_tir(
            8, 32, 4096, 128, False, block_M=128, block_N=128, num_stages=1, threads=128
        )
        out.append(("flash attention (upstream)", func, {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}))
    d = UPSTREAM / "examples/deepseek_mla/example_mla_decode.py"
    if d.is_file():
        import types

        import tilelang

        if importlib.util.find_spec("einops") is None:
            sys.modules.setdefault("einops", types.ModuleType("einops"))
            sys.modules["einops"].rearrange = sys.modules["einops"].einsum = None  # type: ignore[attr-defined]
        m = _load(d, "_up_mla")
        jit = m.flashattn if hasattr(m.flashattn, "get_tir") else m.flashattn.jit_impl
        func = jit.get_tir(1, 128, 1, 8192, 512, 64, 64, 64, 1, (512 + 64) ** -0.5)
        out.append(("mla decode (upstream)", func, {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}))
    return out


def _session(sub: Path, mode: str = "terminal"):
    """Return (enter, leave) for tltrace records-only (or html) into `sub`."""
    s = bench_settings(sub, mode)
    return session(s, report_listeners(s))


def _traced(sub: Path, build) -> Path:
    enter, leave = _session(sub)
    enter()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            build()
    finally:
        leave()
    return sorted((sub / "bench" / ".run_records").glob("run_*"))[-1]


def coverage(run_dir: Path) -> dict:
    """Return {"passes": [(name, lines, mapped)], "codegen": (lines, mapped, exact), "lost": Counter(pass)}.

    "codegen": the statement lines of the last generated device source of each kernel
    (the host source is not counted), those with a Python line, those with an exact one;
    "codegen_body": the same without declaration lines (`float acc_o[128];`: no `=`, no call).
    """
    from tltrace.format.layout import SOURCEMAP_LOG
    from tltrace.history import runs
    from tltrace.history import sourcemaps as V

    m = runs.load_manifest(run_dir)
    maps = V.load(run_dir)
    rows = V.passes(m, maps)
    lost: Counter[str] = Counter()
    for r in rows:
        for x in r.get("lost") or ():
            if not V._library(x["file"]):
                lost[r["name"]] += 1
    roles = {rec.index: rec.role for rec in m.records}
    cg = [r for r in rows if r["status"] == "codegen" and roles.get(r["index"]) in ("device", None)]
    ir = [r for r in rows if r["status"] != "codegen"]
    body = [0, 0, 0]
    run = runs.load_run(run_dir)
    for rec in m.records:
        if rec.status == "codegen" and rec.role in ("device", None) and maps.of(rec.index, "after"):
            for x in V.annotated(run, rec, "after", maps):
                if _is_statement(x["text"]) and not _declaration(x["text"]):
                    body[0] += 1
                    body[1] += x["src"] is not None
                    body[2] += x["src"] is not None and not x["src"].get("inferred")
    return {
        "codegen_body": tuple(body),
        "passes": [(r["name"], r["lines"], r["mapped"]) for r in ir],
        "codegen": (
            sum(r["lines"] for r in cg),
            sum(r["mapped"] for r in cg),
            sum(r["exact"] for r in cg),
        ),
        "lost": lost,
        "smap_bytes": (run_dir / SOURCEMAP_LOG).stat().st_size if (run_dir / SOURCEMAP_LOG).exists() else 0,
    }


_DECL = re.compile(
    r"^(?:extern\s+)?(?:__shared__\s+)?(?:__align__\(\d+\)\s+)?(?!return\b)[\w:<>, ]+?[\s*&]+[A-Za-z_]\w*(?:\[\d*\])*;$"
)


def _is_statement(line: str) -> bool:
    from tltrace.sourcemap.lines import _is_statement as is_stmt

    return is_stmt(line)


def _declaration(line: str) -> bool:
    """A C/CUDA declaration without an initializer: `float acc_o[128];`, `tl::GmmaDescriptor desc_a;`."""
    return bool(_DECL.match(line.strip()))


def _pct(a: int, b: int) -> str:
    return f"{a / b:.0%}" if b else "-"


def coverage_rows(name: str, cov: dict) -> list[str]:
    ps = cov["passes"]
    shares = [m / n for _, n, m in ps if n]
    first, last = ps[0], ps[-1]
    lost = ", ".join(f"{p} ({n})" for p, n in cov["lost"].most_common(4)) or "none"
    n, mapped, exact = cov["codegen"]
    bn, bm, be = cov["codegen_body"]
    return [
        f"| {name} | {len(ps)} | {_pct(first[2], first[1])} | {_pct(last[2], last[1])} | "
        f"{min(shares):.0%}–{max(shares):.0%} | {_pct(exact, n)} ({exact}/{n}) | "
        f"{_pct(mapped, n)} ({mapped}/{n}) | {_pct(be, bn)} ({be}/{bn}), {_pct(bm, bn)} | {lost} |"
    ]


COV_HEAD = [
    "| kernel | IR texts | first pass | last pass | range over passes | generated device source, exact | "
    "with inferred | without declarations: exact, with inferred | "
    "passes where a Python line first disappears (lines) |",
    "|---|---|---|---|---|---|---|---|---|",
]


def changes(name: str, cov: dict) -> list[str]:
    """A <details> block: the passes after which the share of mapped lines changes."""
    out = [
        f"<details><summary>{name}: passes that change the share</summary>",
        "",
        "| pass | mapped / lines |",
        "|---|---|",
    ]
    prev = None
    for pname, n, m in cov["passes"]:
        if (n, m) != prev:
            out.append(f"| {pname} | {m}/{n} ({_pct(m, n)}) |")
            prev = (n, m)
    return out + ["", "</details>", ""]


def _progress(name: str, cov: dict) -> None:
    """One line a kernel on stderr: its generated device source's coverage (stdout is the table)."""
    n, mapped, exact = cov["codegen"]
    bn, bm, be = cov["codegen_body"]
    sys.stderr.write(
        f"{name}: device source {exact}/{n} statement lines exact ({_pct(exact, n)}), "
        f"{mapped}/{n} with inferred ({_pct(mapped, n)}); without declarations {be}/{bn} exact "
        f"({_pct(be, bn)}), {bm}/{bn} with inferred ({_pct(bm, bn)})\n"
    )


def section_coverage(tmp: Path, gpu: bool) -> list[str]:
    import tilelang

    lines = [
        "",
        "Coverage: share of statement lines (IR: statements TVM prints; C/CUDA: indented lines of the",
        "device source that are not braces, comments or preprocessor lines) that carry a Python line:",
        "exact (TileLang's span of the statement or of the buffer it declares), and with the lines",
        "inferred from an enclosing statement (docs/sourcemap.md); and the same without declaration",
        "lines (`float acc_o[128];`: no initializer).",
        "",
    ]
    lines += COV_HEAD
    from _common import compile_kwargs

    kw = compile_kwargs()
    details: list[str] = []
    for name, make in cpu_kernels().items():
        run = _traced(tmp / "cov" / name, lambda make=make: tilelang.compile(make(), **kw))
        cov = coverage(run)
        _progress(f"{name} ({kw['target']})", cov)
        lines += coverage_rows(f"{name} ({kw['target']})", cov)
        details += changes(f"{name} ({kw['target']})", cov)
    for name, func, configs in upstream_funcs():
        if gpu:

            def build(func=func, configs=configs):
                return tilelang.compile(func, target="cuda", pass_configs=configs)

            label = f"{name} (cuda, H200)"
        else:

            def build(func=func, configs=configs):
                tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
                with tilelang.transform.PassContext(opt_level=3, config=configs), tgt:
                    return tilelang.lower(func, target=tgt, enable_device_compile=False)

            label = f"{name} (sm_90a lowered on the CPU)"
        run = _traced(tmp / "cov" / name.split()[0], build)
        cov = coverage(run)
        _progress(label, cov)
        lines += coverage_rows(label, cov)
        details += changes(label, cov)
    return lines + [""] + details


def section_cost(tmp: Path, reps: int) -> list[str]:
    import tilelang
    from _common import compile_kwargs

    kw = compile_kwargs()
    ks = cpu_kernels()
    cfgs = ["untraced", "records, map off", "records, map on", "html, map off", "html, map on"]
    times: dict[str, list[float]] = {c: [] for c in cfgs}
    for make in ks.values():
        tilelang.compile(make(), **kw)
    for rep in range(reps):
        for c in cfgs:
            total = 0.0
            for kname, make in ks.items():
                func = make()
                os.environ["TLTRACE_SOURCE_MAP"] = "1" if "map on" in c else "0"
                sub = tmp / "cost" / f"{c.replace(', ', '-').replace(' ', '_')}-{rep}-{kname}"
                if c == "untraced":
                    enter, leave = (lambda: None), (lambda: None)
                else:
                    enter, leave = _session(sub, "html" if c.startswith("html") else "terminal")
                enter()
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        t0 = time.perf_counter()
                        tilelang.compile(func, **kw)
                        total += time.perf_counter() - t0
                finally:
                    leave()
            times[c].append(total)
    os.environ.pop("TLTRACE_SOURCE_MAP", None)
    base = statistics.median(times["untraced"])
    out = [
        "",
        f"Cost: `tilelang.compile` of the three CPU examples, summed, median of {reps} interleaved reps:",
        "",
        *md_head("configuration", "seconds", "vs untraced", "vs the same without maps"),
    ]
    for c in cfgs:
        med = statistics.median(times[c])
        off = c.replace("map on", "map off")
        rel = f"{med / statistics.median(times[off]):.3f}x" if "map on" in c else ""
        out.append(f"| {c} | {med:.3f} | {med / base:.3f}x | {rel} |")
    # Bytes: one traced run per kernel with and without maps.
    out += [
        "",
        "Bytes on disk (one compile into a fresh trace dir):",
        "",
        "| kernel | records without maps | sourcemap.jsonl | added |",
        "|---|---|---|---|",
    ]
    for kname, make in ks.items():
        os.environ["TLTRACE_SOURCE_MAP"] = "0"
        off = tmp / "bytes-off" / kname
        _traced(off, lambda make=make: tilelang.compile(make(), **kw))
        os.environ["TLTRACE_SOURCE_MAP"] = "1"
        on = _traced(tmp / "bytes-on" / kname, lambda make=make: tilelang.compile(make(), **kw))
        os.environ.pop("TLTRACE_SOURCE_MAP", None)
        b_off = disk_bytes(off)[0]
        b_map = (on / "sourcemap.jsonl").stat().st_size
        out.append(f"| {kname} | {b_off:,} | {b_map:,} | {b_map / b_off:.1%} |")
    return out


def section_map_cost(tmp: Path, reps: int) -> list[str]:
    """The generated source's map alone, per codegen: the stamped copy against TileLang's plain directives.

    Times session/sourcemap.py's two ways on the module each traced codegen hands it
    (wrapping our own `codegen_map`, nothing of TileLang's), median of `reps` calls each.
    """
    import tilelang
    import tvm_ffi
    from _common import compile_kwargs

    from tltrace.session import native
    from tltrace.sourcemap import lines as sm

    seen: list[tuple] = []
    real = sm.codegen_map

    def spy(ffi, mod, target, generated, context=None):
        seen.append((ffi, mod, target, generated, context))
        return real(ffi, mod, target, generated, context)

    def timed(f) -> float:
        return median_s(f, reps) * 1e3

    kw = compile_kwargs()
    builds = [
        (f"{n} (c)", lambda make=make: tilelang.compile(make(), **kw)) for n, make in cpu_kernels().items()
    ]
    for name, func, configs in upstream_funcs():

        def build(func=func, configs=configs):
            tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
            with tilelang.transform.PassContext(opt_level=3, config=configs), tgt:
                return tilelang.lower(func, target=tgt, enable_device_compile=False)

        builds.append((f"{name} (sm_90a)", build))
    out = [
        "",
        f"The generated source's map, per codegen (milliseconds, median of {reps} calls on the module of a",
        "traced compile): the stamped copy (JSON round trip, stamping, codegen with directives) against",
        "the plain directive run it replaces.",
        "",
        "| kernel | stamped copy | plain directives |",
        "|---|---|---|",
    ]
    sm.codegen_map = spy
    try:
        for label, build in builds:
            seen.clear()
            _traced(tmp / "mapcost" / label.split()[0], build)
            ffi, mod, target, generated, ctx = seen[-1]
            fn = tvm_ffi.get_global_func(native.source_codegen(ffi))
            args = (fn, mod, target)
            ctx = ctx if ctx is not None else sm.codegen_context()
            a = timed(lambda args=args, g=generated, c=ctx: sm.stamped_map(*args, g, c))
            b = timed(lambda args=args, c=ctx: sm.directive_map(sm._codegen_with_directives(*args, c)))
            out.append(f"| {label} | {a:.1f} | {b:.1f} |")
    finally:
        sm.codegen_map = real
    return out


def section(reps: int = 7, gpu: bool = False, only: str | None = None) -> str:
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-smap-") as td:
        tmp = Path(td)
        lines = [HEADING]
        if only in (None, "coverage"):
            lines += section_coverage(tmp, gpu)
        if not gpu and only in (None, "cost", "mapcost"):
            lines += section_map_cost(tmp, reps)
        if not gpu and only in (None, "cost"):
            lines += section_cost(tmp, reps)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--gpu", action="store_true", help="CUDA compiles on a GPU (coverage only)")
    ap.add_argument(
        "--only", choices=("coverage", "cost", "mapcost"), help="one part (cost includes mapcost)"
    )
    a = ap.parse_args()
    sys.stdout.write(section(a.reps, a.gpu, a.only))
