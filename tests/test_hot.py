"""Hot lines (`run --ncu`, `show --hot`) on a FlashAttention forward profiled on an H100 (tests/data/ncu).

The oracles are ncu's own views of the same report, read from the CSV ncu printed
(`--page source --print-source cuda,sass --csv`: per source line its samples, and under
it the addresses ncu counts for it), TileLang's script (its ast), and the SASS tltrace
disassembled at the run (run --sass); never tltrace's reading twice.
"""

from __future__ import annotations

import ast
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from tltrace.history import hot
from tltrace.runtime import ncu_csv, profiled

from ._ncu import DATA, KERNEL, expected_cuda, ncu_view, profiled_trace, recorded_profile
from ._schema import check

_profile = recorded_profile


def _lines_csv(variant: str) -> str:
    with gzip.open(DATA / f"fa_{variant}_lines.csv.gz", "rt") as f:
        return f.read()


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> dict:
    """The recorded run (with --sass) of the plain variant, its profile attached as run --ncu attaches it."""
    root = tmp_path_factory.mktemp("hot")
    run_dir, prof = profiled_trace(root)
    compile_ = profiled.load_compile(run_dir)
    (result,) = profiled.hot_lines(run_dir)
    totals, under, per_addr = ncu_view(_lines_csv("plain"))
    base = min(under)  # ncu lists every instruction of the kernel: the lowest address is its start
    return {
        "root": root,
        "run_dir": run_dir,
        "compile": compile_,
        "pcs": prof["actions"][0]["pcs"],
        "result": result,
        "ncu_totals": totals,
        "ncu_under": {a - base: v for a, v in under.items()},
        "ncu_per_pc": {a - base: v for a, v in per_addr.items()},
    }


def test_each_instruction_s_samples_are_ncu_s(plain) -> None:
    """Per PC, the samples read through ncu_report are those ncu's source page shows; nothing is lost."""
    mine = {p["offset"]: p["samples"] for p in plain["pcs"]}
    assert {o: s for o, s in plain["ncu_per_pc"].items() if s} == {o: s for o, s in mine.items() if s}
    assert plain["result"]["samples"] == sum(plain["ncu_per_pc"].values()) > 0
    print(f"{len(mine)} PCs, {plain['result']['samples']} samples, as ncu's source page has them")


def test_innermost_lines_and_ncu_s_line_view(plain) -> None:
    """ncu's per-line totals are the sums of our per-PC samples over the addresses it lists under each
    line; the line source_info gives a PC (the innermost we keep) is always one of those."""
    samples = {p["offset"]: p["samples"] for p in plain["pcs"]}
    by_line: Counter = Counter()
    for off, lines in plain["ncu_under"].items():
        for ln in lines:
            by_line[ln] += samples.get(off, 0)
    assert {k: v for k, v in plain["ncu_totals"].items() if v} == {k: v for k, v in by_line.items() if v}
    for p in plain["pcs"]:
        assert (p["file"], p["line"]) in plain["ncu_under"][p["offset"]], p
    inner = hot.innermost(plain["pcs"])
    assert sum(inner.values()) == plain["result"]["samples"]
    same = [k for k, v in inner.items() if plain["ncu_totals"].get(k) == v and v]
    print(f"{len(same)} of {sum(1 for v in inner.values() if v)} innermost lines equal ncu's line total")


def test_sass_agrees_with_the_binary_ncu_measured(plain) -> None:
    """tltrace's own disassembly (run --sass) has, at each measured offset, the instruction ncu measured."""
    r = plain["result"]
    assert r["mode"] == "sass"
    assert r["agree"]["checked"] == len(plain["pcs"])
    assert r["agree"]["same"] >= hot.AGREE * r["agree"]["checked"]
    print(f"SASS text agrees at {r['agree']['same']} of {r['agree']['checked']} offsets")


def test_cuda_lines_are_ncu_s_plus_what_was_folded_out_of_headers(plain) -> None:
    """Per kernel.cu line: our folded samples are ncu's line total, plus the samples of instructions ncu
    lists under no kernel.cu line (inlined from a header; tltrace's SASS follows the chain out), less
    and plus the few PCs whose kernel.cu line the two line tables put elsewhere. Sums preserved."""
    r = plain["result"]
    fold = {int(k): v for k, v in r["cuda"].items()}
    ncu = {ln: v for (f, ln), v in plain["ncu_totals"].items() if f.endswith(".cu")}
    ours = hot.sass_offsets(plain["compile"].sass, KERNEL)
    samples = {p["offset"]: p["samples"] for p in plain["pcs"]}
    expect, moved, other = expected_cuda(ncu, plain["ncu_under"], ours, samples)
    assert {k: v for k, v in fold.items() if v} == {k: v for k, v in expect.items() if v}
    assert sum(fold.values()) == r["samples"]
    assert other <= 0.02 * r["samples"]
    print(f"kernel.cu lines: ncu {sum(ncu.values())} samples, folded out of headers {moved}, "
          f"on another line in ncu's table {other}, total {sum(fold.values())}")  # fmt: skip


def _statement_holds_t_call(tree: ast.AST, line: int) -> bool:
    """The statement at `line`, or a loop/with header around it, calls T.* (T.exp2, T.gemm, T.Parallel ...)."""

    def calls_t(node: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "T"
            for n in ast.walk(node)
        )

    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or not (node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        if isinstance(node, (ast.For, ast.With)):
            header = node.iter if isinstance(node, ast.For) else node.items[0].context_expr
            if calls_t(header):
                return True
        elif node.lineno == line and calls_t(node):
            return True
    return False


def test_python_lines_exist_and_hold_tile_operations(plain) -> None:
    """Every ranked Python line is a line of the script (its ast) inside a T.* call or a T.* loop."""
    r = plain["result"]
    sources = plain["compile"].sources
    lines = [x for x in r["lines"] if x["samples"]]
    assert lines
    for x in lines:
        text = sources[x["file"]]
        assert x["text"] == text.split("\n")[x["line"] - 1].strip()
        assert _statement_holds_t_call(ast.parse(text), x["line"]), x
    for x in lines[:5]:
        print(f"{100 * x['share']:5.1f}%  line {x['line']}: {x['text']}")


def test_line_directives_build_measured_the_same_binary() -> None:
    """The fa_ld recording: TileLang's tvm_ffi build took no #line directives (its manifest says
    line_directives: null), so ncu names no .py line there and measured the same instructions."""
    plain, ld = (_profile(v)["actions"][0]["pcs"] for v in ("plain", "ld"))
    assert [hot.insn_key(p["sass"] or "") for p in plain] == [hot.insn_key(p["sass"] or "") for p in ld]
    totals, _, _ = ncu_view(_lines_csv("ld"))
    assert not [f for f, _ in totals if f.endswith(".py")]


def test_the_csv_fallback_reads_what_the_module_read(plain) -> None:
    """Without ncu's Python module: the CSV gives the same per-PC samples, executed counts and stalls."""
    data = ncu_csv.parse(_lines_csv("plain"))
    (action,) = data["actions"]
    assert action["kernel"] == KERNEL
    got = {p["offset"]: (p["samples"], p["inst"], p["stalls"]) for p in action["pcs"]}
    want = {p["offset"]: (p["samples"], p["inst"], p["stalls"]) for p in plain["pcs"]}
    assert {o: got[o] for o in want} == want
    res = hot.fold(action["pcs"], plain["compile"].cmap, plain["compile"].sass, KERNEL, plain["compile"].cu)
    assert res["mode"] == "sass" and res["cuda"] == plain["result"]["cuda"]


def test_another_binary_falls_back_to_ncu_s_lines(plain) -> None:
    """SASS that is not the measured binary: ncu's own line per PC; header lines kept apart, sums kept."""
    pcs = [{**p, "sass": "NOP"} for p in plain["pcs"]]
    c = plain["compile"]
    res = hot.fold(pcs, c.cmap, c.sass, KERNEL, c.cu, c.sources)
    assert res["mode"] == "ncu" and res["samples"] == plain["result"]["samples"]
    inner = hot.innermost(plain["pcs"])
    headers = {f"{Path(f).name}:{ln}": v for (f, ln), v in inner.items() if v and not f.endswith(".cu")}
    assert {k: v for k, v in res["inlined"].items() if v} == headers
    cu = {str(ln): v for (f, ln), v in inner.items() if v and f.endswith(".cu")}
    assert {k: v for k, v in res["cuda"].items() if v} == cu
    assert sum(x["samples"] for x in res["lines"] + res["other"]) == res["samples"]


def test_show_hot_table_and_json(plain, run_cli) -> None:
    """`show --hot`: the ranked table, and --json with the same first line; --top cuts both."""
    td = plain["root"] / "fa_plain_trace"
    res = run_cli("show", "--trace-dir", td, "example_mha_fwd_bshd", "-1", "--hot", "--json", "--top", "3")
    assert res.exit_code == 0, res.output
    data = check(json.loads(res.stdout), "hot")  # docs/show.schema.json
    assert data["run_id"] == plain["run_dir"].name
    (r,) = data["kernels"]
    top = plain["result"]["lines"][0]
    assert r["lines"][0]["line"] == top["line"] and len(r["lines"]) == 3
    res = run_cli("show", "--trace-dir", td, "example_mha_fwd_bshd", "-1", "--hot", "--top", "3")
    assert res.exit_code == 0, res.output
    assert (
        f"example_mha_fwd_bshd.py:{top['line']}" in res.stdout and f"{100 * top['share']:.1f}%" in res.stdout
    )


def test_show_hot_without_a_profile_is_one_line(plain, run_cli, tmp_path) -> None:
    """A compile no run --ncu profiled: one line, exit 3."""
    import shutil

    td = tmp_path / "t"
    shutil.copytree(plain["root"] / "fa_plain_trace", td)
    next(td.glob("*/.run_records/run_*/ncu.json")).unlink()
    res = run_cli("show", "--trace-dir", td, "example_mha_fwd_bshd", "-1", "--hot")
    assert res.exit_code == 3 and "run --ncu" in res.stderr and res.stderr.count("\n") == 1


def test_ncu_lines_naming_py_are_python_lines() -> None:
    """A run --line-directives build: ncu's line of a PC is a .py line, taken as the Python line itself."""
    pcs = [
        {
            "offset": 0,
            "samples": 5,
            "inst": 8,
            "stalls": {"wait": 5},
            "sass": "NOP",
            "file": "/w/k.py",
            "line": 7,
        },
        {
            "offset": 16,
            "samples": 1,
            "inst": 8,
            "stalls": {},
            "sass": "EXIT",
            "file": "/i/common.h",
            "line": 3,
        },
    ]
    res = hot.fold(pcs, None, None, KERNEL, None, {"/w/k.py": "\n" * 6 + "T.copy(A, B)\n"})
    assert res["mode"] == "ncu"
    assert [(x["file"], x["line"], x["text"], x["samples"]) for x in res["lines"]] == [
        ("/w/k.py", 7, "T.copy(A, B)", 5)
    ]
    assert res["inlined"] == {"common.h:3": 1}


def test_several_compiles_of_the_kernel_are_told_apart_by_their_sass(plain) -> None:
    """Two compiles define main_kernel (another shape, say): the one whose SASS is the measured one is
    taken, and the note says which of how many; without SASS to tell them apart, the note says so."""
    import dataclasses

    c = plain["compile"]
    other = dataclasses.replace(c, run_dir=Path("run_other"), sass=c.sass.replace("FFMA", "FMUL"))
    for order in ([other, c], [c, other]):
        (a,), _ = profiled.attach(_profile("plain"), order)
        assert (
            a.compile is c and a.note == f"2 compiles define {KERNEL}: {c.run_dir.name} matched by its SASS"
        )
    blind = [dataclasses.replace(x, sass=None) for x in (other, c)]
    (a,), _ = profiled.attach(_profile("plain"), blind)
    assert a.note is not None and "no SASS tells them apart" in a.note


# A stand-in for ncu's `ncu_report` (no ncu here): the calls tltrace's dumper makes, as ncu 2025.3.1's
# module answered them on the H100 (/work/gpudata's explore dumper used the same calls there), serving
# the recorded profile. The report "file" is that profile as JSON, with the kernel's first PC.
FAKE_NCU_REPORT = """
import json


class _Ids:
    def __init__(self, ids):
        self.ids = ids

    def as_uint64(self, i):
        return self.ids[i]


class _Metric:
    def __init__(self, by_pc):
        self.by_pc = sorted(by_pc.items())

    def num_instances(self):
        return len(self.by_pc)

    def correlation_ids(self):
        return _Ids([pc for pc, _ in self.by_pc])

    def as_double(self, i=None):
        return float(self.by_pc[i or 0][1])


class _Info:
    def __init__(self, f, ln):
        self.f, self.ln = f, ln

    def file_name(self):
        return self.f

    def line(self):
        return self.ln


class _Action:
    def __init__(self, a):
        base = a["function_pc"]
        self.a, self.pcs = a, {base + p["offset"]: p for p in a["pcs"]}
        self.metrics = {
            "smsp__pcsamp_sample_count": {pc: p["samples"] for pc, p in self.pcs.items()},
            "inst_executed": {pc: p["inst"] for pc, p in self.pcs.items()},
            "launch__function_pcs": {0: base},
        }
        for axis, g, b in zip("xyz", a["grid"], a["block"]):
            self.metrics[f"launch__grid_dim_{axis}"] = {0: g}
            self.metrics[f"launch__block_dim_{axis}"] = {0: b}
        for pc, p in self.pcs.items():
            for k in ("barrier", "wait", "long_scoreboard", "selected"):
                self.metrics.setdefault(f"smsp__pcsamp_warps_issue_stalled_{k}", {})[pc] = p["stalls"].get(k, 0)
                self.metrics.setdefault(f"smsp__pcsamp_warps_issue_stalled_{k}_not_issued", {})[pc] = 99

    def name(self):
        return self.a["kernel"]

    def metric_names(self):
        return tuple(self.metrics)

    def metric_by_name(self, n):
        return _Metric(self.metrics[n]) if n in self.metrics else None

    def sass_by_pc(self, pc):
        return "      " + self.pcs[pc]["sass"]

    def source_info(self, pc):
        return _Info(self.pcs[pc]["file"], self.pcs[pc]["line"])


class _Range:
    def __init__(self, actions):
        self.actions = actions

    def num_actions(self):
        return len(self.actions)

    def action_by_idx(self, i):
        return _Action(self.actions[i])


class _Context:
    def __init__(self, data):
        self.data = data

    def num_ranges(self):
        return 1

    def range_by_idx(self, i):
        return _Range(self.data["actions"])


def load_report(path):
    with open(path) as f:
        return _Context(json.load(f))
"""


def test_the_dumper_reads_ncu_s_module(tmp_path) -> None:
    """runtime/_ncu_dump.py in its child Python, over ncu_report's calls: the profile comes back whole
    (launch attributes from one-instance metrics, the _not_issued stall metrics left out)."""
    from tltrace.runtime import ncu

    (tmp_path / "extras").mkdir()
    (tmp_path / "extras" / "ncu_report.py").write_text(FAKE_NCU_REPORT)
    prof = _profile("plain")
    report = tmp_path / "fa.ncu-rep"
    report.write_text(json.dumps(prof))
    got = ncu.read(ncu.Ncu("ncu", str(tmp_path / "extras")), report, tmp_path / "out.json")
    assert json.loads((tmp_path / "out.json").read_text()) == got
    (a,) = got["actions"]
    (want,) = prof["actions"]
    assert {k: a[k] for k in ("kernel", "function_pc", "grid", "block")} == {
        k: want[k] for k in ("kernel", "function_pc", "grid", "block")
    }
    kept = ("barrier", "wait", "long_scoreboard", "selected")
    assert a["pcs"] == [
        {**p, "stalls": {k: v for k, v in p["stalls"].items() if k in kept}} for p in want["pcs"]
    ]


def _t_calls(tree: ast.AST, name: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == name
    ]


def _buffer(node: ast.expr) -> str | None:
    node = node.value if isinstance(node, ast.Subscript) else node
    return node.id if isinstance(node, ast.Name) else None


def test_tma_loads_whose_span_was_dropped_get_their_t_copy_s_line(plain) -> None:
    """Each spanless `tl::tma_load(X_desc, .., Y)` gets the line of the script's one `T.copy(X[..], Y)`
    (the script's ast), and the pipeline barriers only the `T.Pipelined` loop's line, approximate."""
    c = plain["compile"]
    (text,) = [t for f, t in c.sources.items() if f.endswith("example_mha_fwd_bshd.py")]
    tree = ast.parse(text)
    copies = Counter((_buffer(n.args[0]), _buffer(n.args[1])) for n in _t_calls(tree, "copy"))
    copy_line = {(_buffer(n.args[0]), _buffer(n.args[1])): n.lineno for n in _t_calls(tree, "copy")}
    (pipelined,) = [n.lineno for n in _t_calls(tree, "Pipelined")]
    cu = c.cu.split("\n")
    loads = [i + 1 for i, s in enumerate(cu) if "tl::tma_load(K_desc" in s or "tl::tma_load(V_desc" in s]
    assert len(loads) == 2
    for n in loads:
        rec = c.recovered[n]
        pair = ("K", "K_shared") if "K_desc" in cu[n - 1] else ("V", "V_shared")
        assert copies[pair] == 1 and rec.kind == "exact" and rec.line == copy_line[pair], (n, rec)
        print(f"kernel.cu:{n} {cu[n - 1].strip()[:40]} -> line {rec.line} (T.copy{pair})")
    approx = {n: r for n, r in c.recovered.items() if r.kind == "approximate"}
    assert approx and all(r.line == pipelined for r in approx.values())
    assert all(".wait(" in cu[n - 1] or ".arrive(" in cu[n - 1] for n in approx)
    # in show --hot: the approximate rows stay out of the Python lines
    r = plain["result"]
    rows = [o for o in r["other"] if o.get("approximate")]
    assert rows and all(o["where"].startswith("~ pipeline barrier") for o in rows)
    assert not {c_["line"] for x in r["lines"] for c_ in x["cuda"]} & set(approx)
    old = hot.fold(plain["pcs"], c.cmap, c.sass, KERNEL, c.cu, c.sources)
    before = sum(o["samples"] for o in old["other"])
    after = sum(o["samples"] for o in r["other"] if not o.get("approximate"))
    print(
        f"no Python line: {before} of {r['samples']} before, {after} now (+{sum(o['samples'] for o in rows)} approximate)"
    )
    assert after < before


def test_a_t_copy_that_is_not_the_only_one_gives_no_line() -> None:
    """Two `T.copy(K, K_shared)` in the pass's input: the TMA load gets no line (and one copy does)."""
    from tltrace.format.sourcemap import LineMap
    from tltrace.sourcemap.dropped import PassText, recover

    copy = "    T.copy(T.region(K[0, k], 1, 64), T.region(K_shared[0, 0], 2, 64))"
    tma = "    T.tma_copy(T.region(K[0, k], 1, 64), T.region(K_shared[0, 0], 2, 64), barrier=b[0])"
    cu = "for (int k = 0; k < 4; ++k) {\n  tl::tma_load(K_desc, mbarrier[0], (&(((half_t*)K_shared)[0])), 0);\n}"
    cmap = LineMap(("a.py",), (0, 0, None))

    def passes(n: int) -> list[PassText]:
        before = "\n".join([copy] * n)
        return [
            PassText(
                before,
                LineMap(("a.py",), tuple((0, 10 + i) for i in range(n))),
                tma,
                LineMap(("a.py",), (0,)),
            )
        ]

    assert recover(passes(1), cu, cmap)[2].line == 10
    assert recover(passes(2), cu, cmap) == {}


def test_sm90a_gemm_s_tma_loads_get_their_t_copy_s_line(tmp_path) -> None:
    """A pipelined GEMM lowered for sm_90a on the CPU: each `tl::tma_load(X_desc, .., Y)` of the
    generated source gets the line of the script's `T.copy(X[..], Y)` (found in its ast)."""
    from ._kernels import HOPPER_GEMM, lower_hopper_traced

    tree = ast.parse(HOPPER_GEMM)
    copy_line = {(_buffer(n.args[0]), _buffer(n.args[1])): n.lineno for n in _t_calls(tree, "copy")}
    script, lowered, run_dir = lower_hopper_traced(tmp_path)
    c = profiled.load_compile(run_dir)
    assert c.cu is not None and c.cu.rstrip("\n") == lowered.kernel_source.rstrip("\n")
    cu = c.cu.split("\n")
    loads = {i + 1: s for i, s in enumerate(cu) if "tl::tma_load(" in s}
    assert loads
    for n, s in loads.items():
        (pair,) = [p for p in copy_line if f"{p[0]}_desc" in s and f"){p[1]})" in s]
        rec = c.recovered[n]
        assert (rec.kind, rec.file, rec.line) == ("exact", str(script), copy_line[pair]), (s, rec)
        print(f"kernel.cu:{n} {s.strip()[:40]} -> line {rec.line}")
    (pipelined,) = [n.lineno for n in _t_calls(tree, "Pipelined")]
    assert all(r.line == pipelined for r in c.recovered.values() if r.kind == "approximate")
