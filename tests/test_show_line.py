"""`tltrace show --line N` (what came of a Python line) and `--cuda-line/--ptx-line/--sass-line N`
(the way back), on real compiles, against oracles tltrace does not compute:

- the CUDA lines: TileLang's own `tl.emit_line_directives` build of the same kernel (its `#line`
  right above each statement names the statement's span: the user's line, or the library line a
  `T.gemm` expands into, which tltrace maps to the call);
- the SASS lines and their instruction mix: the recorded CUDA source built again with nvcc and
  disassembled with `nvdisasm -c -gi` here (its line table: each instruction's kernel.cu line),
  the opcodes counted with this file's own regex;
- the report's Source pane: the stage records' maps it reads (sourcemap.jsonl).

One `tltrace run --ptx --sass` of a small sm_90a GEMM (compile-only, no GPU) and one CPU
(`target="c"`) compile, each shared by the module.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tltrace.history import runs
from tltrace.history.sourcemaps import load as load_maps

from ._cli import cli_env as _env
from ._cli import cli_proc
from ._kernels import gemm_script
from ._schema import check

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

GEMM = gemm_script(
    "A GEMM lowered for sm_90a on the CPU (no GPU); argv: the PassContext config, then a file for the source.",
    """


if __name__ == "__main__":
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with tvm.transform.PassContext(config=json.loads(sys.argv[1])), target:
        art = tilelang.lower(make(M=256, N=256, K=256, stages=1), target=target)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(art.kernel_source)
""",
)

GEMM_LINE = next(i for i, ln in enumerate(GEMM.split("\n"), 1) if "T.gemm(" in ln)
BLANK_LINE = next(i for i, ln in enumerate(GEMM.split("\n"), 1) if i > GEMM_LINE and not ln.strip())
DIRECTIVE = re.compile(r'^#line (\d+) "([^"]*)"$')
OPCODE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")
CLASSES = {  # the mix the issue names: loads, stores, shared, tensor-core MMA, barriers, spills
    "LDG": "LDG",
    "STG": "STG",
    "LDS": "LDS",
    "LDSM": "LDS",
    "STS": "STS",
    "HMMA": "MMA",
    "HGMMA": "MMA",
    "BAR": "BAR",
    "LDL": "LDL",
    "STL": "STL",
}


def _tltrace(*args: str, cwd: Path, rc: int | None = 0) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, rc=rc, timeout=None)


@pytest.fixture(scope="module")
def gemm(tmp_path_factory) -> tuple[Path, runs.Run, str]:
    """(home, the traced sm_90a compile with its PTX and SASS stages, TileLang's own #line source)."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc (CI has one)")
    home = tmp_path_factory.mktemp("byline")
    (home / "gemm.py").write_text(GEMM)
    _tltrace("run", "-q", "--no-codegen-output", "--ptx", "--sass", "gemm.py", "{}", cwd=home)
    (run,) = [runs.load_run(d) for d in runs.run_dirs(home / "tmp" / "lower_trace_dir" / "gemm")]
    out = home / "directives.cu"
    p = subprocess.run(
        [sys.executable, "gemm.py", json.dumps({"tl.emit_line_directives": True}), str(out)],
        cwd=home,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    return home, run, out.read_text()


def _json(home: Path, *args: str) -> dict:
    return json.loads(_tltrace("show", "gemm", "-1", *args, "--json", cwd=home).stdout)


def _record(run: runs.Run, role: str):
    (rec,) = [r for r in run.require().records if r.role == role]
    return rec


def _tilelang_lines(directed: str) -> list[tuple[str, int] | None]:
    """Per line of the source without directives: the (file, line) of TileLang's `#line` right above it
    (past a `#pragma`), else None (a line that shares an earlier directive is not told apart here)."""
    out: list[tuple[str, int] | None] = []
    above: tuple[str, int] | None = None
    for ln in directed.split("\n"):
        m = DIRECTIVE.match(ln)
        if m:
            above = (m.group(2), int(m.group(1)))
            continue
        if ln.strip().startswith("#pragma"):
            out.append(None)
            continue
        out.append(above)
        above = None
    return out


def test_the_gemm_line_s_cuda_lines_are_where_tilelang_s_own_directives_put_it(gemm) -> None:
    home, run, directed = gemm
    data = check(_json(home, "--line", str(GEMM_LINE)), "line_view")
    script = str((home / "gemm.py").resolve())
    assert data["code"] and data["text"].strip().startswith("T.gemm(") and data["line"] == GEMM_LINE
    device = runs.text_of(run.path, _record(run, "device"), "after")
    assert "\n".join(ln for ln in directed.split("\n") if not DIRECTIVE.match(ln)) == device
    tl = _tilelang_lines(directed)
    got = data["generated"]["device"]["lines"]
    assert got, "no CUDA line from the T.gemm line"
    exact = [h for h in got if not h["src"].get("inferred")]
    assert exact and all(h["text"] == device.split("\n")[h["line"] - 1] for h in got)
    named = [h for h in exact if tl[h["line"] - 1] is not None]
    assert len(named) * 2 >= len(exact), (named, exact)
    for h in named:  # TileLang's directive names the call, or the library line it went through
        via = h["src"].get("via")
        want = (via["file"], via["line"]) if via else (script, GEMM_LINE)
        assert Path(tl[h["line"] - 1][0]).resolve() == Path(want[0]).resolve(), (h, tl[h["line"] - 1])
        assert tl[h["line"] - 1][1] == want[1], (h, tl[h["line"] - 1])
    assert any(h["src"].get("via") for h in named)  # a T.gemm goes through TileLang's library
    # ... and every line TileLang itself puts on the T.gemm line is in the answer.
    mine = {
        i + 1 for i, s in enumerate(tl) if s and Path(s[0]).resolve() == Path(script) and s[1] == GEMM_LINE
    }
    assert mine <= {h["line"] for h in got}
    assert any("wgmma" in h["text"] for h in got)
    # Its facts: the WGMMA call sites among its CUDA lines (counted here), its SASS instructions.
    assert (
        data["facts"]["wgmma"] == sum(len(re.findall(r"\bwgmma_(?!desc)\w+\s*<", h["text"])) for h in got) > 0
    )
    assert data["facts"]["sass_instructions"] == data["sass"]["mix"]["insns"]
    # The passes that changed it: its IR before and after differ in each; LowerTileOp expands it.
    assert data["passes"] and all(
        [x["text"].strip() for x in p["before"]] != [x["text"].strip() for x in p["after"]]
        for p in data["passes"]
    )
    assert any(p["name"] == "LowerTileOp" and len(p["after"]) > len(p["before"]) for p in data["passes"])


def test_the_gemm_line_s_sass_and_mix_against_nvdisasm(gemm, tmp_path: Path) -> None:
    """The SASS lines from the T.gemm line are the instructions nvdisasm's line table puts on its
    kernel.cu lines, and the mix is their opcodes counted here."""
    from .test_line_directives import nvcc_build, sass_frames

    home, run, _ = gemm
    data = _json(home, "--line", str(GEMM_LINE))
    cu_lines = {h["line"] for h in data["generated"]["device"]["lines"]}
    device = runs.text_of(run.path, _record(run, "device"), "after")
    _, cubin = nvcc_build(device, tmp_path)
    raw = subprocess.run(
        [str(shutil.which("nvdisasm") or _nvdisasm()), "-c", "-gi", str(cubin)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    opcodes = [m.group(1) for m in map(OPCODE.match, raw.split("\n")) if m]
    frames = sass_frames(cubin)
    assert len(frames) == len(opcodes)
    outer = [next((n for f, n in reversed(ch) if f.endswith("k.cu")), None) for ch in frames]
    picked = [op for op, n in zip(opcodes, outer) if n in cu_lines]
    sass = data["sass"]
    assert sass is not None and picked, "nvdisasm puts no instruction on the T.gemm line's CUDA lines"
    assert sass["mix"]["insns"] == len(picked)
    counted = Counter(CLASSES[op] for op in picked if op in CLASSES)
    for k in ("LDG", "STG", "LDS", "STS", "MMA", "BAR", "LDL", "STL"):
        assert sass["mix"][k] == counted[k], (k, sass["mix"], counted)
    assert sass["mix"]["MMA"] > 0  # the WGMMA: HGMMA instructions on the T.gemm line
    assert sass["spills"] == counted["LDL"] + counted["STL"]
    assert {h["cu"] for h in sass["lines"] if h["insn"]} <= cu_lines


def test_the_answer_is_the_source_pane_s(gemm) -> None:
    """The report's Source pane lists, per codegen record, the lines whose map names the Python line
    (sourcemap.js describe): the same records' maps give the same lines here."""
    home, run, _ = gemm
    data = _json(home, "--line", str(GEMM_LINE))
    maps = load_maps(run.path)
    script = str((home / "gemm.py").resolve())
    for role, got in (("device", data["generated"]["device"]), ("ptx", data["ptx"]), ("sass", data["sass"])):
        rec = _record(run, role)
        lmap = maps.of(rec.index, "after")
        assert lmap is not None
        want = [
            i + 1
            for i in range(len(lmap.lines))
            if lmap.src(i) and Path(lmap.src(i)[0]).resolve() == Path(script) and lmap.src(i)[1] == GEMM_LINE
        ]
        assert [h["line"] for h in got["lines"]] == want and want, role


def test_back_from_a_sass_line_and_a_cuda_line(gemm) -> None:
    """An HGMMA of the SASS: its kernel.cu line is the `//## kernel.cu:N` mark above it (read here),
    and its Python line the T.gemm line; that kernel.cu line gives the same way back."""
    home, run, _ = gemm
    text = runs.text_of(run.path, _record(run, "sass"), "after").split("\n")
    n = next(i for i, ln in enumerate(text, 1) if (m := OPCODE.match(ln)) and m.group(1) == "HGMMA")
    mark = next(
        int(m.group(1))
        for ln in reversed(text[: n - 1])
        if (m := re.match(r"\s*//## kernel\.cu:(\d+)\s*$", ln))
    )
    data = check(_json(home, "--sass-line", str(n)), "line_back")
    assert data["class"] == "MMA" and data["cu"]["line"] == mark
    assert data["src"]["line"] == GEMM_LINE and data["python"].strip().startswith("T.gemm(")
    cu = check(_json(home, "--cuda-line", str(mark)), "line_back")
    assert cu["src"]["line"] == GEMM_LINE and cu["text"] == data["cu"]["text"]
    p = _tltrace("show", "gemm", "-1", "--sass-line", str(n), cwd=home)
    assert f"kernel.cu:{mark}" in p.stdout and f"gemm.py:{GEMM_LINE}" in p.stdout
    ptx = runs.text_of(run.path, _record(run, "ptx"), "after").split("\n")
    k = next(i for i, ln in enumerate(ptx, 1) if "wgmma.mma_async" in ln)
    back = check(_json(home, "--ptx-line", str(k)), "line_back")
    assert back["src"]["line"] == GEMM_LINE


def test_the_terminal_view_and_bad_lines(gemm) -> None:
    home, run, _ = gemm
    out = _tltrace("show", "gemm", "-1", "--line", str(GEMM_LINE), cwd=home).stdout
    assert out.startswith(f"gemm.py:{GEMM_LINE}  T.gemm(") and "LowerTileOp" in out
    assert "generated device source (kernel.cu)" in out and "\nPTX: " in out and "\nSASS: " in out
    assert re.search(r"SASS: \d+ instructions: .*MMA \d+", out)
    assert _tltrace("show", "gemm", "-1", "--line", f"gemm.py:{GEMM_LINE}", cwd=home).stdout == out
    total = len(GEMM.split("\n")) - 1
    for args, words in (
        (["--line", str(total + 5)], f"gemm.py has {total} lines"),
        (["--line", "0"], "lines count from 1"),
        (["--line", "nope.py:3"], "names no file"),
        (["--sass-line", "999999"], "has lines 1 to"),
        (["--cuda-line", "999999"], "has lines 1 to"),
    ):
        p = _tltrace("show", "gemm", "-1", *args, cwd=home, rc=2)
        assert p.stdout == "" and p.stderr.count("\n") == 1 and words in p.stderr, (args, p.stderr)
    p = _tltrace("show", "gemm", "-1", "--line", str(BLANK_LINE), cwd=home)
    assert f"no code from line {BLANK_LINE}" in p.stdout and "nearest lines with code" in p.stdout
    data = check(_json(home, "--line", str(BLANK_LINE)), "line_view")
    assert not data["code"] and data["nearest"] and BLANK_LINE not in data["nearest"]


@pytest.fixture(scope="module")
def cpu(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("byline-cpu")
    for f in ("elementwise_add.py", "_common.py"):
        shutil.copy(EXAMPLES / f, home / f)
    p = cli_proc("run", "-q", "elementwise_add.py", cwd=home, timeout=None, TLTRACE_EXAMPLES_CPU="1")
    assert p.returncode == 0, p.stderr[-2000:]
    return home


def test_a_cpu_compile_answers_with_ir_and_c_and_says_how_to_get_ptx(cpu: Path) -> None:
    script = (cpu / "elementwise_add.py").read_text().split("\n")
    store = next(i for i, ln in enumerate(script, 1) if re.match(r"\s*C\[.*\]\s*=", ln))
    p = _tltrace("show", "elementwise_add", "-1", "--line", str(store), "--json", cwd=cpu)
    data = check(json.loads(p.stdout), "line_view")
    (run,) = [runs.load_run(d) for d in runs.run_dirs(cpu / "tmp" / "lower_trace_dir" / "elementwise_add")]
    device = runs.text_of(run.path, _record(run, "device"), "after").split("\n")
    got = data["generated"]["device"]["lines"]
    # The generated C: the one line that stores into C is the answer.
    stores = [i for i, ln in enumerate(device, 1) if re.search(r"\(C \+ .*\) = ", ln)]
    assert [h["line"] for h in got] == stores and len(stores) == 1
    assert data["ptx"] is None and data["sass"] is None
    assert "--ptx --sass" in data["absent"]["ptx"] and "'c'" in data["absent"]["sass"]
    assert data["passes"] and data["passes"][0]["before"]
    text = _tltrace("show", "elementwise_add", "-1", "--line", str(store), cwd=cpu).stdout
    assert "generated device source (C)" in text and "PTX, SASS: absent" in text and "--ptx --sass" in text
    back = json.loads(
        _tltrace("show", "elementwise_add", "-1", "--cuda-line", str(stores[0]), "--json", cwd=cpu).stdout
    )
    assert back["src"]["line"] == store and not back["cuda_target"]
    p = _tltrace("show", "elementwise_add", "-1", "--sass-line", "3", cwd=cpu, rc=2)
    assert "has no SASS" in p.stderr and p.stderr.count("\n") == 1


def _nvdisasm() -> str:
    from tltrace.stages.sass import tool

    found = tool("nvdisasm")
    if found is None:
        pytest.skip("no nvdisasm")
    return found


PANE = r"""
const fs = require("fs");
const Sm = require(process.argv[1] + "/sourcemap.js");
const Mc = require(process.argv[1] + "/report-machine.js");
const feed = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const maps = new Map(Object.entries(feed.maps));
const keysOf = function (h) {
  const set = new Set(), m = maps.get(h);
  if (m) m.lines.forEach(function (v) { if (Array.isArray(v)) set.add(m.files[v[0]] + "\u0000" + v[1]); });
  return set;
};
const byRec = new Map(feed.recs.map(function (r) { return [r.index, { b: r.b, a: r.a }]; }));
const out = {};
feed.lines.forEach(function (n) {
  out[n] = Sm.lostIn(feed.recs, byRec, keysOf, feed.file + "\u0000" + n).map(function (p) { return feed.recs[p].index; });
});
process.stdout.write(JSON.stringify({ lost: out, mix: Mc.mix(feed.sass, feed.smap) }));
"""


def test_lost_in_and_the_mix_are_the_report_s(gemm, tmp_path: Path) -> None:
    """The report's own code (sourcemap.js lostIn, report-machine.js mix, run under node) on the
    same records gives, line by line, the pass that loses it and the SASS mix `--line` prints."""
    from tests._node import run_node

    home, run, _ = gemm
    maps = load_maps(run.path)
    recs = []
    for r in run.require().records:
        if r.index in maps.records:
            b, a = maps.records[r.index]
            recs.append({"index": r.index, "status": r.status, "b": b, "a": a})
    sass_rec = _record(run, "sass")
    script = str((home / "gemm.py").resolve())
    smap = maps.of(sass_rec.index, "after")
    assert smap is not None
    file = next(f for m in maps.maps.values() for f in m.files if Path(f).resolve() == Path(script))
    lines = list(range(1, len(GEMM.split("\n"))))
    feed = {
        "maps": {h: m.to_json() for h, m in maps.maps.items()},
        "recs": recs,
        "file": file,
        "lines": lines,
        "sass": runs.text_of(run.path, sass_rec, "after"),
        "smap": smap.to_json(),
    }
    got = run_node(PANE, feed, tmp_path)
    mix = {r["line"]: r for r in got["mix"] if r["file"] == file}
    lost_somewhere = 0
    from tltrace.history import byline

    for n in lines:
        data = byline.forward(run, str(n))
        if not data["code"]:
            assert got["lost"][str(n)] == [] and n not in mix
            continue
        assert [x["index"] for x in data["lost_in"]] == got["lost"][str(n)], n
        lost_somewhere += bool(data["lost_in"])
        want = mix.get(n)
        for k in ("insns", "LDG", "STG", "LDS", "STS", "MMA", "BAR", "LDL", "STL"):
            assert data["sass"]["mix"][k] == (want[k] if want else 0), (n, k)
    assert lost_somewhere  # the pipelined loop's lines are lost in ProducerConsumerWarpSpecialized
