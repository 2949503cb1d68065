"""Source maps on real CPU compiles: Python line -> every pass's IR and the generated source, and back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tltrace.history import sourcemaps
from tltrace.history.texts import stored_text
from tltrace.render.pages import chunk_values
from tltrace.sourcemap import lines as sm
from tltrace.sourcemap import store as sms

from ._cli import cli_invoke as _cli
from ._cli import script_traced
from ._kernels import CPU_GEMM, HOPPER_GEMM, lower_hopper_traced
from ._kernels import load_script as _load
from ._observer import observe
from ._records import read_manifest, run_dirs
from ._schema import check
from .conftest import wait_js

KERNEL = (
    CPU_GEMM
    + """


if __name__ == "__main__":
    kernel = tilelang.compile(make(), target="c", execution_backend="cython")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            fh.write(kernel.get_kernel_source())
"""
)
STORE_LINE = next(i for i, ln in enumerate(KERNEL.split("\n"), 1) if "# STORE" in ln)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """One traced compile (html mode) of KERNEL; returns (script, trace dir, run dir, traced source)."""
    tmp = tmp_path_factory.mktemp("smap")
    out = tmp / "traced_source.c"
    script, _ = script_traced(tmp, "smgemm.py", KERNEL, "--mode", "html", args=(out,))
    (run_dir,) = run_dirs(tmp / "trace" / "smgemm")
    return script, tmp / "trace", run_dir, out.read_text()


def _codegen(run_dir: Path) -> tuple[dict, str, sm.LineMap]:
    m = read_manifest(run_dir)
    rec = next(r for r in m["records"] if r["status"] == "codegen")
    text = stored_text(run_dir, rec["after_file"], rec["after_hash"])
    assert text is not None
    lmap = sourcemaps.load(run_dir).of(rec["index"], "after")
    assert lmap is not None
    return rec, text, lmap


def test_store_line_maps_to_the_python_store(traced):
    script, _, run_dir, _ = traced
    _, text, lmap = _codegen(run_dir)
    stores = [
        i for i, ln in enumerate(text.split("\n")) if " = " in ln and re.search(r"\bC\b", ln.split(" = ")[0])
    ]
    assert stores, text
    for i in stores:
        assert lmap.src(i) == (str(script), STORE_LINE)


def test_most_generated_statement_lines_carry_a_python_line(traced):
    _, _, run_dir, _ = traced
    _, text, lmap = _codegen(run_dir)
    assert len(lmap.lines) == len(text.split("\n"))
    stmts, mapped = lmap.coverage()
    assert stmts > 10 and mapped / stmts >= 0.6, (stmts, mapped)


def test_compiled_source_is_byte_identical_to_an_untraced_compile(traced):
    import tilelang

    script, _, run_dir, traced_source = traced
    make = _load(script.parent / "smgemm_untraced.py", KERNEL).make
    plain = tilelang.compile(make(), target="c", execution_backend="cython").get_kernel_source()
    assert traced_source == plain
    _, recorded, _ = _codegen(run_dir)
    assert recorded == plain


def test_ir_texts_are_the_plain_print_on_every_pass(tmp_path):
    """print_module's one tagged print gives str(mod) exactly, on every module of a real compile."""
    import tilelang

    seen: list[tuple[bool, int, int]] = []

    def started(mod, event) -> None:
        text, lmap = sm.print_module(mod)
        seen.append((text == str(mod), *(lmap.coverage() if lmap else (0, 0))))

    make = _load(tmp_path / "smgemm_print.py", KERNEL).make
    with observe("test-sourcemap-print", started=started):
        tilelang.compile(make(), target="c", execution_backend="cython")
    assert seen and all(same for same, _, _ in seen)
    assert sum(mapped for _, _, mapped in seen) > 0


def test_per_pass_coverage_is_consistent(traced):
    script, trace, run_dir, _ = traced
    res = _cli("show", "--trace-dir", trace, "smgemm", "-1", "--source-map", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    m = read_manifest(run_dir)
    assert [p["index"] for p in data["passes"]] == [r["index"] for r in m["records"]]
    maps = sourcemaps.load(run_dir)
    for p in data["passes"]:
        lmap = maps.of(p["index"], p["side"])
        assert (p["lines"], p["mapped"]) == lmap.coverage()
        assert 0 <= p["mapped"] <= p["lines"]
    # A pass that changes nothing keeps its input's map; the map of a text is the map of the next pass's input.
    recs = m["records"]
    for a, b in zip(recs, recs[1:]):
        if (
            b.get("before_hash") == a.get("after_hash")
            and a["status"] != "codegen"
            and b["phase"] == a["phase"]
        ):
            assert maps.records[a["index"]][1] == maps.records[b["index"]][0]
    # The kernel's source, as the JSON carries it, is the script.
    assert data["source"]["file"] == str(script)
    assert data["source"]["lines"] == KERNEL.split("\n")[:-1]
    device = data["codegen"]["device"]
    assert device and any(x["src"] == {"file": str(script), "line": STORE_LINE} for x in device)
    assert all(set(x) == {"line", "text", "src"} for x in device)


def test_show_source_map_gutter(traced):
    _, trace, _, _ = traced
    res = _cli("show", "--trace-dir", trace, "smgemm", "-1", "--source-map")
    assert res.exit_code == 0, res.output
    store = [ln for ln in res.stdout.splitlines() if re.search(rf"^\s*{STORE_LINE} \u2502 .*\bC\b.* = ", ln)]
    assert store, res.stdout
    res = _cli(
        "show", "--trace-dir", trace, "smgemm", "-1", "--pass", "LowerTileOp", "--source-map", "--json"
    )
    assert res.exit_code == 0, res.output
    data = check(json.loads(res.stdout), "source_map_pass")  # docs/show.schema.json
    assert data["record"]["name"] == "LowerTileOp" and data["side"] == "after"
    assert any(x["src"] and x["src"]["line"] == STORE_LINE for x in data["lines"])
    res = _cli("show", "--trace-dir", trace, "smgemm", "-1", "--source-map", "--json")
    assert res.exit_code == 0, res.output
    assert check(json.loads(res.stdout), "source_map")["codegen"]["device"]


def test_report_holds_the_python_source_and_the_maps(traced):
    _, _, run_dir, _ = traced
    html = (run_dir / "report.html").read_text()
    chunks = [c for c in chunk_values(html.encode()) if c is not None]
    srcs = {c["path"]: c["s"] for c in chunks if c["t"] == "src"}
    assert any(s == KERNEL for s in srcs.values())
    assert any(c["t"] == "srec" for c in chunks) and any(c["t"] == "smap" for c in chunks)
    # A report rebuilt from the records carries the same maps.
    rebuilt = _cli("show", "--html", run_dir)
    assert rebuilt.exit_code == 0, rebuilt.output
    html2 = (run_dir / "report.html").read_text()
    chunks2 = [c for c in chunk_values(html2.encode()) if c is not None]
    assert sum(c["t"] == "srec" for c in chunks2) == sum(c["t"] == "srec" for c in chunks) > 0


def test_source_map_off(tmp_path):
    script = tmp_path / "smoff.py"
    script.write_text(KERNEL)
    res = _cli("run", "-q", "--trace-dir", tmp_path / "t", script, env={"TLTRACE_SOURCE_MAP": "0"})
    assert res.exit_code == 0, res.output
    (run_dir,) = run_dirs(tmp_path / "t" / "smoff")
    assert not (run_dir / sms.SOURCEMAP_LOG).exists()
    res = _cli("show", "--trace-dir", tmp_path / "t", "smoff", "-1", "--source-map")
    assert res.exit_code == 3 and "no source map" in res.stderr


# -- pure parts ------------------------------------------------------------------------------------
def test_directive_map():
    text = "\n".join(
        [
            "int f(float* C) {",
            '#line 7 "k.py"',
            "  float a[4];",
            "  float b[4];",
            '#line 9 "k.py"',
            "  #pragma unroll",
            "  for (int i = 0; i < 4; ++i) {",
            "    a[i] = 0.f;",
            "  }",
            "  return 0;",
            "}",
        ]
    )
    plain, lmap = sm.directive_map(text)
    assert "#line" not in plain and len(plain.split("\n")) == len(lmap.lines) == 9
    assert [lmap.src(i) for i in range(9)] == [
        None,
        ("k.py", 7),
        ("k.py", 7),  # a declaration in a row shares its directive
        None,  # the pragma between a directive and its loop
        ("k.py", 9),
        None,  # inside a block that has no directive of its own
        None,
        None,
        None,
    ]
    assert lmap.lines[5] == 0 and lmap.lines[6] is None and lmap.coverage() == (5, 3)


def test_line_map_json_round_trip_and_damaged_log(tmp_path):
    lmap = sm.LineMap(("a.py", "b.py"), (None, 0, (0, 3), (1, 9)))
    assert sm.LineMap.from_json(json.loads(json.dumps(lmap.to_json()))) == lmap
    inf = sm.LineMap(("a.py",), (None, (0, 3), (0, 3)), frozenset({2}))
    assert sm.LineMap.from_json(json.loads(json.dumps(inf.to_json()))) == inf
    assert (inf.coverage(), inf.exact()) == ((2, 2), 1)
    with pytest.raises(TypeError):
        sm.LineMap.from_json({"files": ["a.py"], "lines": [None], "inferred": [5]})
    log = sms.MapLog(tmp_path)
    log.record(4, lmap, None)
    log.close()
    with open(tmp_path / sms.SOURCEMAP_LOG, "a") as fh:
        fh.write('{"t":"rec","index":5,"bef')  # a kill mid-line
    maps = sourcemaps.load(tmp_path)
    assert maps.of(4, "before") == lmap and maps.of(4, "after") is None and 5 not in maps.records
    with pytest.raises(TypeError):
        sm.LineMap.from_json({"files": ["a.py"], "lines": [[3, 1]]})


def test_equal_maps_printed_apart_are_stored_once_and_read_back_each(tmp_path):
    """Equal maps from separate prints (a text printed again) are one `map` line; each record reads
    back its own sides, and a map differing only in `via` or `inferred` is its own line."""
    lines = (None, 0, (0, 3), (1, 9))
    a, b = sm.LineMap(("a.py", "b.py"), lines), sm.LineMap(("a.py", "b.py"), tuple(list(lines)))
    via = sm.LineMap(("a.py", "b.py"), lines, via={2: (1, 40)})
    inf = sm.LineMap(("a.py", "b.py"), lines, frozenset({3}))
    log = sms.MapLog(tmp_path)
    log.record(0, a, via)
    log.record(1, inf, b)
    log.record(2, b, a)
    log.close()
    stored = [json.loads(x) for x in (tmp_path / sms.SOURCEMAP_LOG).read_text().splitlines()]
    written = [d for d in stored if d["t"] == "map"]
    assert len(written) == 3 and len({d["h"] for d in written}) == 3
    for d in written:  # each map's name is the hash of its own JSON, as the reader keys it
        assert d["h"] == sm.LineMap.from_json(d).digest()
    maps = sourcemaps.load(tmp_path)
    assert (maps.of(0, "before"), maps.of(0, "after")) == (a, via)
    assert maps.of(0, "after").via == {2: (1, 40)}
    assert (maps.of(1, "before").inferred, maps.of(1, "after")) == (frozenset({3}), a)
    assert (maps.of(2, "before"), maps.of(2, "after")) == (a, a)


def test_error_location():
    err = "ValueError: bad shape\n  --> /home/u/k.py:17:9\n   |\n17 |     T.copy(A, B)"
    assert sm.error_location(err) == ("/home/u/k.py", 17)
    assert sm.error_location("RuntimeError: no marker") is None


def test_carry_keeps_equal_lines():
    lmap = sm.LineMap(("k.py",), ((0, 1), (0, 2), None))
    moved = sm.carry(lmap, "  a;\n  b;\n}", "  a;\n  x;\n  b;\n}")
    assert moved.lines == ((0, 1), 0, (0, 2), None)
    inf = sm.carry(
        sm.LineMap(("k.py",), ((0, 1), (0, 2), None), frozenset({1})), "  a;\n  b;\n}", "  x;\n  a;\n  b;\n}"
    )
    assert inf.lines == (0, (0, 1), (0, 2), None) and inf.inferred == frozenset({2})


@pytest.mark.browser
def test_report_click_python_line_and_back(traced, open_page):
    """On a real GEMM report: a Python line marks IR lines before and after, and generated source; and back."""
    script, _, run_dir, _ = traced
    page = open_page(run_dir / "report.html", "#LowerTileOp", viewport={"width": 1600, "height": 1000})
    assert page.locator("#tl-source").is_hidden()  # closed at first: the diff gets the page
    page.keyboard.press("s")
    assert page.locator("#tl-source").is_visible()
    assert (
        page.locator(f'#tl-source tr[data-py="{STORE_LINE}"] td.code')
        .text_content()
        .strip()
        .startswith("T.copy(C_l")
    )
    page.locator(f'#tl-source tr[data-py="{STORE_LINE}"]').click()
    assert page.locator("#tl-view td.code.l.tl-sm-hit").count() >= 1  # before LowerTileOp: the tile op
    assert page.locator("#tl-view td.code.r.tl-sm-hit").count() >= 1  # after: its loops and the store
    info = page.locator("#tl-source-info").inner_text()
    assert f"{script.name}:{STORE_LINE}" in info
    # The generated lines of that Python line are listed; one click opens the codegen pass on them.
    gen = page.locator(".tl-sm-genline")
    assert gen.count() >= 1
    gen.first.click()
    assert page.eval_on_selector("li.tl-pass.selected", "li => li.dataset.status") == "codegen"
    hits = page.locator("#tl-view .tl-panes > .tl-pane:last-child td.code.tl-sm-hit")
    assert hits.count() >= 1 and " = " in hits.last.text_content()
    # A line whose Python line is inferred (a declaration given the kernel's def line) says so on hover.
    assert _codegen(run_dir)[2].inferred
    wait_js(page, "document.querySelector('#tl-view [title^=\"inferred\"]') !== null")
    store = hits.last.element_handle()
    # Back: a line of generated source picks its Python line.
    page.locator(f'#tl-source tr[data-py="{STORE_LINE - 4}"]').click()  # another line first
    store.click()
    assert page.locator("#tl-source tr.sel").get_attribute("data-py") == str(STORE_LINE)
    # ... and so does a line of IR.
    page.evaluate("location.hash = '#LowerTileOp'")
    wait_js(page, "document.querySelector('li.tl-pass.selected .nm').textContent.includes('LowerTileOp')")
    page.locator(f'#tl-source tr[data-py="{STORE_LINE - 4}"]').click()  # the T.clear line
    page.locator("#tl-view td.code.r.tl-sm-hit").first.click()
    assert page.locator("#tl-source tr.sel").get_attribute("data-py") == str(STORE_LINE - 4)
    # Passes whose output has lines without a Python line carry a badge.
    assert page.locator("li.tl-pass .tl-sm-badge").count() >= 1


def test_working_file_gets_a_map_beside_it(traced):
    """codegen_device.cpp.map: the Python line of each line of the working file, which stays as compiled."""
    _, trace, _, traced_source = traced
    working = trace / "smgemm" / "codegen_device.cpp"
    assert working.read_text() == traced_source  # what is compiled is the working file, unchanged
    data = json.loads((trace / "smgemm" / "codegen_device.cpp.map").read_text())
    assert data["format"] == "tltrace-sourcemap/1" and data["file"] == "codegen_device.cpp"
    lmap = sm.LineMap.from_json(data)
    lines = traced_source.split("\n")
    assert len(lmap.lines) == len(lines)
    assert any(lmap.src(i) and lmap.src(i)[1] == STORE_LINE and " = " in ln for i, ln in enumerate(lines))
    # A .map that tltrace did not write is never replaced.
    other = trace / "smgemm" / "other.cpp"
    other.write_text("x\n")
    mine = trace / "smgemm" / "other.cpp.map"
    mine.write_text("my notes")
    assert sms.write_working_map(other, lmap, "x\n") is None and mine.read_text() == "my notes"


FAILING = """
import tilelang
import tilelang.language as T


def make(n=256, block=64):
    @T.prim_func
    def frag(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            F = T.alloc_fragment((block,), "float32")  # the CPU cannot lay out a fragment
            T.copy(A[bx * block], F)
            T.copy(F, B[bx * block])

    return frag


if __name__ == "__main__":
    tilelang.compile(make(), target="c", execution_backend="cython")
"""
FRAGMENT_LINE = next(i for i, ln in enumerate(FAILING.split("\n"), 1) if "alloc_fragment" in ln)


def _first_use_line(source: str, buffer: str) -> tuple[int, str]:
    """The line and name of the first `T.op(...)` call that takes `buffer`, read with `ast` (not by tltrace)."""
    import ast

    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "T"
        and any(isinstance(a, ast.Name) and a.id == buffer for a in ast.walk(n) if a is not n.func.value)
    ]
    first = min(calls, key=lambda n: n.lineno)
    return first.lineno, f"T.{first.func.attr}"


COPY_LINE, COPY_OP = _first_use_line(FAILING, "F")  # T.copy(A[bx * block], F): the op that fails


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """A compile that fails in a pass whose error names the user's line (TileLang's `-->` marker)."""
    tmp = tmp_path_factory.mktemp("smfail")
    script, res = script_traced(tmp, "smfrag.py", FAILING, "--mode", "html", rc=None)
    assert res.exit_code != 0
    (run_dir,) = run_dirs(tmp / "trace" / "smfrag")
    failed = next(r for r in read_manifest(run_dir)["records"] if r["status"] == "failed")
    return script, tmp / "trace", run_dir, failed


def test_failed_pass_points_at_the_python_line(failed):
    script, trace, _, rec = failed
    # TileLang's marker points at the fragment's allocation; the operation that failed is the T.copy into it.
    assert sm.error_location(rec["error"]) == (str(script), FRAGMENT_LINE)
    assert COPY_OP == "T.copy" and COPY_LINE == FRAGMENT_LINE + 1
    res = _cli("show", "--trace-dir", trace, "smfrag", "-1", "--pass", str(rec["index"]))
    (at,) = [ln.strip() for ln in res.stdout.splitlines() if ln.strip().startswith(f"at {script}:")]
    assert at.startswith(f"at {script}:{COPY_LINE} ({COPY_OP}, the first use of F "), at
    assert f"allocation, line {FRAGMENT_LINE})" in at
    res = _cli(
        "show", "--trace-dir", trace, "smfrag", "-1", "--pass", str(rec["index"]), "--source-map", "--json"
    )
    data = check(json.loads(res.stdout), "source_map_pass")
    assert data["error_src"] == {"file": str(script), "line": FRAGMENT_LINE} and data["side"] == "before"
    assert data["fail_site"] == {
        "file": str(script),
        "line": COPY_LINE,
        "op": COPY_OP,
        "buffer": "F",
        "error_line": FRAGMENT_LINE,
    }
    assert any(x["src"] == {"file": str(script), "line": COPY_LINE} for x in data["lines"])  # T.copy


@pytest.mark.browser
def test_report_links_a_failure_to_its_python_line(failed, open_page):
    _, _, run_dir, rec = failed
    page = open_page(run_dir / "report.html", f"#{rec['index']}", viewport={"width": 1600, "height": 1000})
    chip = page.locator(".tl-error .tl-sm-errloc")
    assert (
        chip.inner_text() == f"at smfrag.py:{COPY_LINE} {COPY_OP}"
    )  # the T.copy's line, not the allocation's
    chip.click()
    assert page.locator("#tl-source tr.sel").get_attribute("data-py") == str(COPY_LINE)


HOPPER = HOPPER_GEMM


def test_the_stamped_copy_is_tvms_json_copy(tmp_path):
    """The codegen map stamps a copy made through TVM's JSON graph, kept as an object (or, where
    TVM has no graph functions, its text without the Python re-indent): the same graph as
    `tvm.ir.load_json(tvm.ir.save_json(mod))`, none of the module's own objects, so stamping it
    leaves the module's spans as they were."""
    import tilelang
    import tvm_ffi

    tvm = tilelang.tvm
    mod = tvm.IRModule({"main": _load(tmp_path / "k.py", KERNEL).make()})
    saved = tvm.ir.save_json(mod)
    real = tvm_ffi.get_global_func
    copies = [sm._json_copy(mod)]
    with pytest.MonkeyPatch.context() as mp:  # a TVM without ffi.ToJSONGraph/FromJSONGraph
        mp.setattr(
            tvm_ffi,
            "get_global_func",
            lambda name, *a, **k: None if "JSONGraph" in name else real(name, *a, **k),
        )
        copies.append(sm._json_copy(mod))
    for copy in copies:
        assert tvm.ir.save_json(copy) == tvm.ir.save_json(tvm.ir.load_json(saved))
        assert str(copy) == str(mod) and not copy.same_as(mod)
        (theirs,) = [f for _, f in copy.functions_items()]
        (ours,) = [f for _, f in mod.functions_items()]
        assert not theirs.body.same_as(ours.body)
        assert sm._stmt_origins(copy)  # every statement of the copy stamped ...
        assert tvm.ir.save_json(copy) != saved
    assert tvm.ir.save_json(mod) == saved  # ... and none of the module's


def test_stamping_walk_with_gil_keeping_handles_matches_the_wrappers(tmp_path, monkeypatch):
    """The codegen map's stamping walk calls TVM through handles that keep the GIL (an autotuner's
    compiling threads no longer make it wait once per statement); with TVM's own Python wrappers
    in their place it stamps the same spans and finds the same origins."""
    import tilelang

    from tltrace.session import native

    tvm = tilelang.tvm
    mod = tvm.IRModule({"main": _load(tmp_path / "k.py", KERNEL).make()})
    for name in ("tl.ir.GetStmtSpan", "tl.ir.SetStmtSpan", "ir.Span", "tirx.PreOrderVisit"):
        assert native.ffi_handle(name).release_gil is False
    kept_copy = sm._json_copy(mod)
    kept = sm._stmt_origins(kept_copy)
    real = sm._ffi
    monkeypatch.setattr(
        sm, "_ffi", lambda name: None if name in ("ir.Span", "tirx.PreOrderVisit") else real(name)
    )
    plain_copy = sm._json_copy(mod)
    plain = sm._stmt_origins(plain_copy)
    assert kept and kept == plain
    assert tvm.ir.save_json(kept_copy) == tvm.ir.save_json(plain_copy)


def test_sm90a_cuda_codegen_mapped_per_statement(tmp_path):
    """CUDA codegen for sm_90a, lowered on the CPU (no nvcc): the map comes from the stamped copy
    (each statement its own directive), the TMA store maps exactly to the store's Python line,
    and lines without a span of their own are marked inferred or carry none."""

    from tltrace.history import runs as R
    from tltrace.history import sourcemaps as V

    line_of = {
        tag: i
        for i, ln in enumerate(HOPPER.split("\n"), 1)
        for tag in ("# STORE", "# C_L", "# CLEAR")
        if tag in ln
    }
    script, lowered, run_dir = lower_hopper_traced(tmp_path)
    data = V.summary(R.load_run(run_dir))
    device = data["codegen"]["device"]
    assert "\n".join(x["text"] for x in device).rstrip("\n") == lowered.kernel_source.rstrip("\n")
    src = {x["text"].strip(): x["src"] for x in device}
    stores = [x for x in device if "tma_store(" in x["text"]]
    assert stores and all(x["src"] == {"file": str(script), "line": line_of["# STORE"]} for x in stores), (
        stores
    )
    assert any(x["src"] and x["src"].get("inferred") for x in device)  # only the stamped copy infers
    # A fragment's declaration carries the buffer's span, or the function's line marked inferred.
    decl = src["float C_l[128];"]
    assert decl is not None and (decl["line"] == line_of["# C_L"] or decl.get("inferred")), decl
    # The producer's TMA loads: ProducerConsumerWarpSpecialized drops their spans; never claimed exact.
    loads = [x["src"] for x in device if "tma_load(" in x["text"]]
    assert loads and all(s is None or s.get("inferred") for s in loads), loads
    stmts = [x for x in device if sm._is_statement(x["text"])]
    exact = [x for x in stmts if x["src"] and not x["src"].get("inferred")]
    (row,) = [p for p in data["passes"] if p["status"] == "codegen"]
    assert (row["lines"], row["exact"]) == (len(stmts), len(exact))
    assert row["mapped"] >= row["exact"] and len(exact) / len(stmts) >= 0.3, (len(exact), len(stmts))
    # The clear's vector store and its broadcast temporary: one statement, both exact.
    clear = [x["src"] for x in device if "broadcast_var" in x["text"]]
    assert clear and all(s == {"file": str(script), "line": line_of["# CLEAR"]} for s in clear), clear


def test_a_maps_json_line_is_made_once_and_is_the_json_of_its_fields() -> None:
    """sourcemap.jsonl's map lines come from the map's JSON made once (format/sourcemap.py):
    byte for byte what json.dumps of the line's fields gives, non-ASCII names and every field
    included; the cached JSON and digest are not part of the map's equality. Its record lines
    too are json.dumps's bytes."""
    from tltrace.format.sourcemap import LineMap, map_line, map_line_text, rec_line, rec_line_text

    maps = [
        LineMap(("k.py",), ((0, 3), None, 0)),
        LineMap(("ké.py", 'q"uote.py'), ((1, 3), None, 0, (0, 9)), frozenset({2}), {3: (0, 4)}),
    ]
    for lm in maps:
        expected = json.dumps(map_line("h1", lm), separators=(",", ":")) + "\n"
        assert map_line_text("h1", lm) == expected
        assert lm.json_text() is lm.json_text() and lm.digest() == lm.digest()
        twin = LineMap(lm.files, lm.lines, lm.inferred, dict(lm.via))
        assert twin == lm and hash(twin) == hash(lm) and twin.digest() == lm.digest()
        assert json.loads(map_line_text("h1", lm))["h"] == "h1"
    for index, before, after in ((0, "ab12", None), (7, None, "cd"), (12, "ab", "ab"), (3, None, None)):
        expected = json.dumps(rec_line(index, before, after), separators=(",", ":")) + "\n"
        assert rec_line_text(index, before, after) == expected
