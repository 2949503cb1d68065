"""Source maps through TileLang's library code: a `T.gemm` expanded into `gemm_scalar.py` maps to
the user's `T.gemm` line, with the library line kept as "via"; "lost in" only names passes after
which a line never comes back; a kernel defined in a `%%tltrace` cell has its source."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tltrace.callsites.library import CallSites
from tltrace.format.sourcemap import LineMap
from tltrace.history import runs as R
from tltrace.history import sourcemaps as V

from ._cli import cli_invoke as _cli
from ._cli import py_proc, script_traced
from ._kernels import CPU_GEMM
from ._node import run_node
from .conftest import wait_js

KERNEL = (
    CPU_GEMM
    + """


if __name__ == "__main__":
    tilelang.compile(make(), target="c", execution_backend="cython")
"""
)
LINE = {
    tag: i
    for i, ln in enumerate(KERNEL.split("\n"), 1)
    for tag in ("GEMM", "COPY", "STORE")
    if f"# {tag}" in ln
}
LIB = "/site/tl_pkg/cpu/op/gemm/gemm_scalar.py"  # a library file by the roots CallSites is given
USER = "/home/u/k.py"


def _sm90a_device_rows(make, trace: Path) -> list[dict]:
    """Lower make() for sm_90a (CUDA codegen on the CPU) under tltrace.enable(); the device codegen's
    rows of the source-map view, each with its `src`."""
    import tilelang

    import tltrace

    tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    tltrace.enable(mode="terminal", trace_dir=trace, quiet=True)
    try:
        with tgt:
            tilelang.lower(make(), target=tgt, enable_device_compile=False)
    finally:
        tltrace.disable()
    (run_dir,) = sorted(trace.glob("*/.run_records/run_*"))
    return V.summary(R.load_run(run_dir))["codegen"]["device"]


# -- the pure part (quick loop) --------------------------------------------------------------------
IR = """\
for k in range(2):
    with T.sblock("_gemm_scalar"):
        T.reads()
        for i, j, k_1 in T.grid(32, 32, 16):
            C_l[i, j] = C_l[i, j] + A_s[i, k_1] * B_s[k_1, j]
    for i in range(4):
        lib_in_a_loop()"""


def _calls() -> CallSites:
    return CallSites(roots=("/site/tl_pkg/",))


def test_call_site_learned_from_the_block_then_used_without_it():
    calls = _calls()
    lmap = LineMap((USER, LIB), ((0, 16), (0, 19), None, (1, 48), (1, 49), (0, 16), (1, 60)))
    out = calls.apply(IR, lmap, True)
    assert out is not None
    assert [out.src(i) for i in (3, 4)] == [(USER, 19), (USER, 19)]
    assert [out.via_src(i) for i in (3, 4)] == [(LIB, 48), (LIB, 49)]
    # Library code under a loop, not under a tile operator's block: no call site is made up.
    assert out.src(6) == (LIB, 60) and out.via_src(6) is None
    assert LineMap.from_json(json.loads(json.dumps(out.to_json()))) == out
    # Generated source (the block is gone): the library line takes what the IR taught, every copy of it.
    gen = LineMap((LIB, USER), ((1, 16), (0, 48), (0, 48), (0, 48), (0, 49), None))
    g = calls.apply("", gen, False)
    assert g is not None and [g.src(i) for i in range(1, 5)] == [(USER, 19)] * 4
    assert g.via_src(4) == (LIB, 49) and g.src(0) == (USER, 16)
    # A map without library lines is returned as it is.
    plain = LineMap((USER,), ((0, 3),))
    assert calls.apply("x", plain, True) is plain


def test_a_map_applied_again_gives_what_it_gave_until_another_map_teaches():
    calls = _calls()
    lmap = LineMap((USER, LIB), ((0, 16), (0, 19), None, (1, 48), (1, 49), (0, 16), (1, 60)))
    out = calls.apply(IR, lmap, True)
    # A pass's output map is the next pass's input map: the same result, worked out afresh or not.
    again = calls.apply(IR, lmap, True)
    assert again is out and out == calls._apply(IR, lmap, True)
    # Not the same text, or not IR: worked out again.
    assert calls.apply("", lmap, False) == calls._apply("", lmap, False)
    # Generated source seen before any IR taught its library line keeps it; once a later IR
    # text has taught it, the same map is mapped.
    fresh = _calls()
    gen = LineMap((LIB,), ((0, 48), None))
    assert fresh.apply("", gen, False) is gen
    fresh.apply(IR, lmap, True)
    taught = fresh.apply("", gen, False)
    assert taught is not None and taught.src(0) == (USER, 19) and taught.via_src(0) == (LIB, 48)


def test_two_calls_into_one_library_line():
    calls = _calls()
    text = 'with T.sblock("a"):\n    lib()\nwith T.sblock("b"):\n    lib()'
    lmap = LineMap((USER, LIB), ((0, 10), (1, 5), (0, 20), (1, 5)))
    out = calls.apply(text, lmap, True)
    assert out is not None and (out.src(1), out.src(3)) == ((USER, 10), (USER, 20))
    # Later, as many copies: each in its turn; a different count: ambiguous, the library line stays.
    same = calls.apply("", LineMap((LIB,), ((0, 5), None, (0, 5))), False)
    assert same is not None and (same.src(0), same.src(2)) == ((USER, 10), (USER, 20))
    more = calls.apply("", LineMap((LIB,), ((0, 5), (0, 5), (0, 5))), False)
    assert more is not None and {more.src(i) for i in range(3)} == {(LIB, 5)} and not more.via


def test_lost_in_names_only_a_pass_that_loses_a_line_for_good(tmp_path):
    """tirx.Filter's host half drops the device lines its device half keeps: not 'lost'."""
    chunks = [
        {"t": "smap", "h": "k", "files": [USER], "lines": [[0, 5]]},
        {"t": "smap", "h": "n", "files": [USER], "lines": [0]},
        {"t": "srec", "i": 1, "b": "k", "a": "n"},  # host Filter
        {"t": "srec", "i": 2, "b": "k", "a": "k"},  # device Filter
        {"t": "srec", "i": 3, "b": "k", "a": "k"},  # codegen
        {"t": "srec", "i": 4, "b": "k", "a": "n"},  # a pass that really loses it, the last to see it
    ]
    recs = [
        {"index": 1, "status": "changed"},
        {"index": 2, "status": "changed"},
        {"index": 3, "status": "codegen"},
        {"index": 4, "status": "changed"},
    ]
    js = """
    const S = require(process.argv[1] + "/sourcemap.js");
    const m = { maps: new Map(), srcs: new Map(), byRec: new Map() };
    const feed = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
    feed.chunks.forEach(c => S.addChunk(m, c));
    const keys = h => new Set(m.maps.get(h).lines.filter(Array.isArray).map(v => m.maps.get(h).files[v[0]] + "\\u0000" + v[1]));
    const k = feed.user + "\\u0000" + 5;
    const out = { all: S.lostIn(feed.recs, m.byRec, keys, k), reach: S.lostIn(feed.recs.slice(0, 3), m.byRec, keys, k) };
    process.stdout.write(JSON.stringify(out));
    """
    out = run_node(js, {"chunks": chunks, "recs": recs, "user": USER}, tmp_path)
    assert out == {"all": [3], "reach": []}


# -- real compiles ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("calls")
    script, _ = script_traced(tmp, "csgemm.py", KERNEL, "--mode", "html")
    (run_dir,) = sorted((tmp / "trace" / "csgemm" / ".run_records").glob("run_*"))
    return script, tmp / "trace", run_dir


@pytest.mark.compile
def test_gemm_reaches_the_generated_source_via_the_library(traced):
    script, trace, run_dir = traced
    data = V.summary(R.load_run(run_dir))
    device = data["codegen"]["device"]
    gemm = [x for x in device if x["src"] and x["src"]["line"] == LINE["GEMM"]]
    assert gemm and all(x["src"]["file"] == str(script) for x in gemm)
    vias = {os.path.basename(x["src"]["via"]["file"]) for x in gemm if "via" in x["src"]}
    assert vias and all(v.endswith(".py") for v in vias), gemm
    assert any("+" in x["text"] and "*" in x["text"] for x in gemm)  # the multiply-add itself
    # No line of the generated source is left on the library's file, and the copy lines reach it too.
    assert not [x for x in device if x["src"] and x["src"]["file"] != str(script)]
    assert any(x["src"] and x["src"]["line"] == LINE["COPY"] for x in device)
    # The working file's .map says the same.
    wmap = json.loads((trace / "csgemm" / "codegen_device.cpp.map").read_text())
    assert wmap.get("via") and all(wmap["files"][f] != str(script) for _, f, _ in wmap["via"])
    # show: the gutter names the call site, then the library line.
    res = _cli("show", "--trace-dir", trace, "csgemm", "-1", "--source-map")
    assert res.exit_code == 0, res.output
    assert any(ln.strip().startswith(f"{LINE['GEMM']} via ") for ln in res.stdout.splitlines()), res.stdout


@pytest.mark.compile
def test_sm90a_gemm_and_copies_reach_cuda_via_wgmma(tmp_path):
    """Compile-only sm_90a: the WGMMA calls map to the T.gemm line via wgmma_macro_generator.py."""

    from ._kernels import load_script as _load
    from .test_sourcemap import HOPPER

    script = tmp_path / "cs90.py"
    make = _load(script, HOPPER).make
    gemm_line = next(i for i, ln in enumerate(HOPPER.split("\n"), 1) if "T.gemm(" in ln)
    device = _sm90a_device_rows(make, tmp_path / "trace")
    wgmma = [x for x in device if "wgmma" in x["text"] and x["src"]]
    assert wgmma and all(x["src"]["line"] == gemm_line and x["src"]["file"] == str(script) for x in wgmma)
    assert all("wgmma" in os.path.basename(x["src"]["via"]["file"]) for x in wgmma), wgmma


@pytest.mark.browser
def test_report_lists_the_gemms_generated_lines_with_via(traced, open_page):
    script, _, run_dir = traced
    page = open_page(run_dir / "report.html", "#LowerTileOp", viewport={"width": 1600, "height": 1000})
    if page.locator("#tl-source").is_hidden():  # closed at first (the diff gets the page): open it
        page.keyboard.press("s")
    page.locator(f'#tl-source tr[data-py="{LINE["GEMM"]}"]').click()
    info = page.locator("#tl-source-info")
    wait_js(page, "document.querySelectorAll('.tl-sm-genline').length > 0")
    assert page.locator(".tl-sm-genline .tl-sm-via").first.text_content().startswith("via ")
    assert "no pass loses this line" in info.inner_text()  # it reaches the C code
    page.locator(f'#tl-source tr[data-py="{LINE["STORE"]}"]').click()
    assert "no pass loses this line" in info.inner_text()


CELL_DRIVER = r"""
import sys
from IPython.testing.globalipapp import start_ipython
ip = start_ipython()
ip.run_line_magic("load_ext", "tltrace")
cell = open(sys.argv[1]).read()
ip.run_cell_magic("tltrace", "--mode terminal --trace-dir " + sys.argv[2], cell)
"""

CELL = textwrap.dedent(
    """\
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def add(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = A[i] + 1.0  # CELL STORE

    k = tilelang.compile(add, target="c", execution_backend="cython")
    """
)


@pytest.mark.compile
def test_a_kernel_in_a_tltrace_cell_has_its_source(tmp_path):
    """Real IPython: the cell's text comes from linecache (IPython's name for it is no file)."""
    pytest.importorskip("IPython")
    (tmp_path / "cell.txt").write_text(CELL)
    (tmp_path / "drive.py").write_text(CELL_DRIVER)
    py_proc("drive.py", "cell.txt", tmp_path / "trace", cwd=tmp_path, rc=0)
    (run_dir,) = sorted((tmp_path / "trace").glob("*/.run_records/run_*"))
    src = V.source(V.load(run_dir))
    assert src is not None and src["lines"] == CELL.rstrip("\n").split("\n"), src
    assert "ipython-input" in src["file"] or "ipykernel" in src["file"]
    store = next(i for i, ln in enumerate(CELL.split("\n"), 1) if "# CELL STORE" in ln)
    device = V.summary(R.load_run(run_dir))["codegen"]["device"]
    assert any(x["src"] and x["src"]["line"] == store for x in device)


TWO_GEMMS = """
import tilelang.language as T


def make(M=256, N=128, K=128, bM=128, bN=128, bK=64):
    @T.prim_func
    def two(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), E: T.Tensor((N, N), "float16"), D: T.Tensor((M, N), "float16")):
        with T.Kernel(1, T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            E_s = T.alloc_shared((bN, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            C_s = T.alloc_shared((bM, bN), "float16")
            D_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, 0], B_s)
                T.gemm(A_s, B_s, C_l)  # G1
            T.copy(C_l, C_s)
            T.copy(E[0, 0], E_s)
            T.clear(D_l)
            T.gemm(C_s, E_s, D_l)  # G2
            T.copy(D_l, D[by * bM, 0])

    return two
"""


@pytest.mark.compile
def test_two_gemms_into_the_same_library_lines_keep_their_own_calls(tmp_path):
    """Both expand into the same wgmma_macro_generator.py lines: each WGMMA names its own T.gemm."""

    from ._kernels import load_script as _load

    script = tmp_path / "two_gemms.py"
    make = _load(script, TWO_GEMMS).make
    g1, g2 = (
        next(i for i, ln in enumerate(TWO_GEMMS.split("\n"), 1) if tag in ln) for tag in ("# G1", "# G2")
    )
    device = _sm90a_device_rows(make, tmp_path / "trace")
    mma = [x for x in device if "wgmma_ss<" in x["text"]]
    assert len(mma) == 2
    assert [(x["src"]["line"], "via" in x["src"]) for x in mma] == [(g1, True), (g2, True)]
    assert "C_l" in mma[0]["text"] and "D_l" in mma[1]["text"]
