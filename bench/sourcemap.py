"""Source maps: coverage (share of statement lines with a Python line) and what mapping costs.

* Coverage per pass and for the generated source, on the CPU examples (target c) and on
  upstream's GEMM and FlashAttention lowered for sm_90a on the CPU (CUDA codegen, no
  nvcc: `tilelang.lower(..., enable_device_compile=False)`), with the passes where a
  Python line first disappears (TileLang dropping a span).
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

from bench_common import disk_bytes  # noqa: E402

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
    """(name, prim_func, pass configs) of upstream's GEMM (sm_90 heuristic config) and FlashAttention fwd."""
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
    return out


def _session(sub: Path, mode: str = "terminal"):
    """Return (enter, leave) for tltrace records-only (or html) into `sub`."""
    from tltrace.config import Settings
    from tltrace.session import controller

    s = Settings(mode=mode, trace_dir=sub, script_name="bench", quiet=True, keep=0, codegen_output=None)
    listeners: list = []
    if s.html:
        from tltrace.render.html import HtmlReportListener

        listeners.append(HtmlReportListener(s))

    def emit(e):
        for li in listeners:
            li(e)

    def leave():
        controller.uninstall()
        for li in listeners:
            li.close()

    return (lambda: controller.install(s, emit)), leave


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
    """Return {"passes": [(name, lines, mapped)], "codegen": (lines, mapped), "lost": Counter(pass)}."""
    from tltrace.history import runs
    from tltrace.history import sourcemaps as V
    from tltrace.session import sourcemap_store as sm

    m = runs.load_manifest(run_dir)
    maps = sm.load(run_dir)
    rows = V.passes(m, maps)
    lost: Counter[str] = Counter()
    for r in rows:
        for x in r.get("lost") or ():
            if not V._library(x["file"]):
                lost[r["name"]] += 1
    cg = [r for r in rows if r["status"] == "codegen"]
    ir = [r for r in rows if r["status"] != "codegen"]
    return {
        "passes": [(r["name"], r["lines"], r["mapped"]) for r in ir],
        "codegen": (sum(r["lines"] for r in cg), sum(r["mapped"] for r in cg)),
        "lost": lost,
        "smap_bytes": (run_dir / sm.SOURCEMAP_LOG).stat().st_size
        if (run_dir / sm.SOURCEMAP_LOG).exists()
        else 0,
    }


def _pct(a: int, b: int) -> str:
    return f"{a / b:.0%}" if b else "-"


def coverage_rows(name: str, cov: dict) -> list[str]:
    ps = cov["passes"]
    shares = [m / n for _, n, m in ps if n]
    first, last = ps[0], ps[-1]
    lost = ", ".join(f"{p} ({n})" for p, n in cov["lost"].most_common(4)) or "none"
    return [
        f"| {name} | {len(ps)} | {_pct(first[2], first[1])} | {_pct(last[2], last[1])} | "
        f"{min(shares):.0%}–{max(shares):.0%} | {_pct(cov['codegen'][1], cov['codegen'][0])} "
        f"({cov['codegen'][1]}/{cov['codegen'][0]}) | {lost} |"
    ]


COV_HEAD = [
    "| kernel | IR texts | first pass | last pass | range over passes | generated source | "
    "passes where a Python line first disappears (lines) |",
    "|---|---|---|---|---|---|---|",
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


def section_coverage(tmp: Path, gpu: bool) -> list[str]:
    import tilelang

    lines = [
        "",
        "Coverage: share of statement lines (IR: statements TVM prints; C/CUDA: indented lines that",
        "are not braces, comments or preprocessor lines) that carry a Python line.",
        "",
    ]
    lines += COV_HEAD
    from _common import compile_kwargs

    kw = compile_kwargs()
    details: list[str] = []
    for name, make in cpu_kernels().items():
        run = _traced(tmp / "cov" / name, lambda make=make: tilelang.compile(make(), **kw))
        cov = coverage(run)
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
        "| configuration | seconds | vs untraced | vs the same without maps |",
        "|---|---|---|---|",
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


def section(reps: int = 7, gpu: bool = False, only: str | None = None) -> str:
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-smap-") as td:
        tmp = Path(td)
        lines = [HEADING]
        if only in (None, "coverage"):
            lines += section_coverage(tmp, gpu)
        if not gpu and only in (None, "cost"):
            lines += section_cost(tmp, reps)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--gpu", action="store_true", help="CUDA compiles on a GPU (coverage only)")
    ap.add_argument("--only", choices=("coverage", "cost"), help="one part")
    a = ap.parse_args()
    sys.stdout.write(section(a.reps, a.gpu, a.only))
