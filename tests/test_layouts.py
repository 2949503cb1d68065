"""Layouts (docs/layouts.md) on real compile-only CUDA gemms (sm_90a, sm_80) on this CPU machine.

The recorded layouts are checked against TileLang itself: the thread and register of 200
random elements of every fragment, and the offset of 200 random elements of every shared
buffer, as the recorded expressions give them (layouts/model.py) and as TileLang's own
`map_forward_thread` / `map_forward_index` do. Then `show --layouts`, `--at` and its errors,
`diff-runs` between two block sizes, and an inference failure.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tltrace
from tltrace.layouts import capture, model

from ._cli import cli_env, cli_proc
from ._cuda_stores import launch_threads, stores
from ._kernels import MATMUL, load_script
from ._records import require_tltrace_executable
from ._schema import check

GEMM = (
    MATMUL
    + """

if __name__ == "__main__":
    target = tvm.target.Target({"kind": "cuda", "arch": os.environ["ARCH"]})
    bm = int(os.environ.get("BM", "128"))
    with target:
        art = tilelang.lower(matmul(256, 256, 256, bm, 128, 32, 3, 128, bad=bool(os.environ.get("BAD"))), target=target)
    with open(os.environ["SRC"], "w") as f:  # the generated CUDA: the oracle of the thread tests
        f.write(art.kernel_source)
"""
)


def _env(**extra: str) -> dict[str, str]:
    return cli_env(NO_COLOR="1", **extra)


def cli(*args: object, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, env=_env(**env), entry_point=True)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """Traced compile-only gemms: sm_90a and sm_80 at block_M 128, sm_80 at 64, and a failing one."""
    require_tltrace_executable()
    work = tmp_path_factory.mktemp("layouts")
    exe = require_tltrace_executable()
    procs = []
    for arch, bm, bad in (
        ("sm_90a", "128", ""),
        ("sm_80", "128", ""),
        ("sm_80", "64", ""),
        ("sm_80", "128", "1"),
    ):
        name = f"gemm_{arch}_{bm}{'_bad' if bad else ''}"
        (work / f"{name}.py").write_text(GEMM)
        cmd = [exe, "run", "-q", "--trace-dir", "traces", f"{name}.py"]
        env = _env(ARCH=arch, BM=bm, BAD=bad, SRC=str(work / f"{name}.cu"))
        procs.append(
            (
                name,
                bad,
                subprocess.Popen(
                    cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                ),
            )
        )
    for name, bad, p in procs:
        out, err = p.communicate(timeout=600)
        assert (p.returncode != 0) == bool(bad), f"{name}: {err[-2000:]}"
    return work


def _layouts(work: Path, name: str) -> dict[str, Any]:
    m = tltrace.load(work / "traces" / name).compiles[-1].manifest
    assert m.layouts is not None, name
    return m.layouts


def _tilelang_layouts(work: Path, arch: str) -> dict[str, Any]:
    """{buffer: (Layout or Fragment)} as TileLang fixed them, read off the IR after the pass that adds them."""

    import tilelang
    from tilelang import tvm

    mod = load_script(work / "gemm_lib.py", GEMM, "tl_layouts_gemm")
    found: dict[str, Any] = {}

    @tvm.instrument.pass_instrument
    class Grab:
        def run_after_pass(self, m: Any, info: Any) -> None:
            if found:
                return
            for _name, func in capture.prim_funcs(m.functions):
                for block in capture._blocks(func):
                    if "layout_map" in block.annotations:
                        for buf, lay in block.annotations["layout_map"].items():
                            if hasattr(buf, "name"):
                                found[str(buf.name)] = lay

    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    with target, tvm.transform.PassContext(instruments=[Grab()]):
        tilelang.lower(mod.matmul(256, 256, 256, 128, 128, 32, 3, 128), target=target)
    return found


def _int(x: Any) -> int:
    """An int of what map_forward_thread gives (a PrimExpr, or an Array of one)."""
    return int(x[0]) if hasattr(x, "__len__") else int(x)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_elements_agree_with_tilelang(work: Path, arch: str) -> None:
    rec = {e["buffer"]: e for e in model.final(_layouts(work, f"gemm_{arch}_128"))}
    assert {"A_s", "B_s", "C_l"} <= set(rec), rec.keys()
    assert rec["C_l"]["kind"] == "fragment" and rec["A_s"]["kind"] == "layout"
    assert rec["A_s"]["scope"].startswith("shared") and rec["C_l"]["scope"] == "local.fragment"
    real = _tilelang_layouts(work, arch)
    rng = random.Random(arch)
    for name, entry in rec.items():
        lay = real[name]
        shape = entry["input_shape"]
        for _ in range(200):
            idx = [rng.randrange(d) for d in shape]
            got = model.at(entry, idx)
            want_idx = [int(x) for x in lay.map_forward_index(idx)]
            out_shape = entry["output_shape"]
            lin = 0
            for v, d in zip(want_idx, out_shape):
                lin = lin * d + v
            if entry["kind"] == "fragment":
                assert got["register"] == lin, (name, idx)
                reps = entry["replicate"] or 1
                rep = len(entry["vars"]) > len(shape)
                want_t = [
                    _int(lay.map_forward_thread(([r] if rep else []) + idx))
                    for r in range(reps if rep else 1)
                ]
                assert got["logical_thread"] == want_t, (name, idx)
                first = int(lay.thread_range.min)  # the threadIdx.x the fragment's threads start at
                assert got["thread"] == [t + first for t in want_t], (name, idx)
            else:
                assert got["offset"] == lin, (name, idx)
                width = 2  # float16
                assert got["bank"] == (lin * width // 4) % 32, (name, idx)
    # the numbers the issue measured on sm_90: banks of A_s[0, i, 0] and two cells of C_l
    if arch == "sm_90a":
        assert [model.at(rec["A_s"], [0, i, 0])["bank"] for i in range(8)] == [0, 16, 4, 20, 8, 24, 12, 28]
        assert model.at(rec["C_l"], [0, 2]) == {
            "thread": [129],
            "register": 0,
            "logical_thread": [1],
            "thread_range": [128, 128],
        }


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_threads_are_those_of_the_generated_store(work: Path, arch: str) -> None:
    """Every element of C_l: the threadIdx.x and register `--at` names are the ones whose generated
    store writes it (tests/_cuda_stores.py evaluates the CUDA for every threadIdx.x), and each
    thread's elements (`--thread`) are the ones it stores; on sm_90a the gemm is warp-specialized:
    threads 0..127 load with TMA and hold no C_l (issue 48)."""
    src = (work / f"gemm_{arch}_128.cu").read_text()
    want = stores(src, "C_l", "C", 256)  # (threadIdx.x, register) -> (row, col)
    by_cell = {cell: key for key, cell in want.items()}
    assert sorted(by_cell) == [(r, c) for r in range(128) for c in range(128)]
    entry = model.find(_layouts(work, f"gemm_{arch}_128"), "C_l")
    assert entry is not None
    for (r, c), (tx, reg) in by_cell.items():
        got = model.at(entry, [r, c])
        assert (got["thread"], got["register"]) == ([tx], reg), (r, c, got)
    for tx in range(launch_threads(src)):
        held = model.held_by(entry, tx)
        assert {(tuple(x["index"]), x["register"]) for x in held["elements"]} == {
            (cell, reg) for (t, reg), cell in want.items() if t == tx
        }, tx
    first = min(t for t, _ in want)
    assert first == (128 if arch == "sm_90a" else 0)  # the consumers of a warp-specialized kernel
    assert model.held_by(entry, 14)["elements"] == [] if arch == "sm_90a" else True


def test_show_at_and_thread_name_physical_threads(work: Path) -> None:
    """The CLI on the warp-specialized sm_90a gemm: the issue's element, as text and JSON, and a
    thread's elements both ways (a consumer's, read against the generated store; a producer's: none)."""
    src = (work / "gemm_sm_90a_128.cu").read_text()
    want = stores(src, "C_l", "C", 256)
    base = ("show", "--trace-dir", "traces", "gemm_sm_90a_128", "-1", "--layouts")
    res = cli(*base, "--at", "C_l", "3,5", cwd=work)
    assert res.returncode == 0 and res.stdout.startswith("C_l[3,5]: thread 142 register 1 "), res
    assert want[(142, 1)] == (3, 5)
    res = cli(*base, "--at", "C_l", "3,5", "--json", cwd=work)
    data = check(json.loads(res.stdout), "layout_at")
    assert (data["thread"], data["register"], data["logical_thread"]) == ([142], 1, [14])
    assert data["thread_range"] == [128, 128]
    res = cli(*base, "--thread", "142", "--json", cwd=work)
    assert res.returncode == 0, res.stderr
    data = check(json.loads(res.stdout), "layout_thread")
    c_l = next(b for b in data["buffers"] if b["buffer"] == "C_l")
    assert {(tuple(x["index"]), x["register"]) for x in c_l["elements"]} == {
        (cell, reg) for (t, reg), cell in want.items() if t == 142
    }
    assert data["thread"] == 142 and c_l["logical_thread"] == 14 and c_l["thread_range"] == [128, 128]
    res = cli(*base, "--thread", "142", cwd=work)
    assert res.returncode == 0 and "register 1: [3,5]" in res.stdout, res
    res = cli(*base, "--thread", "14", cwd=work)
    assert res.returncode == 0 and "C_l: none" in res.stdout and "128..255" in res.stdout, res
    block = launch_threads(src)  # the generated source's __launch_bounds__: the producers counted
    res = cli(*base, "--thread", block - 1, cwd=work)  # the last thread: a consumer
    assert res.returncode == 0 and re.search(r"^C_l: \d+ elements", res.stdout, re.M), res
    for bad in (
        ["--thread", "-1"],
        ["--thread", "x"],
        ["--thread", "1", "--at", "C_l", "0,0"],
        ["--thread", str(block)],  # past the block: it said "C_l: none", as for a producer thread
    ):
        res = cli(*base, *bad, cwd=work)
        assert res.returncode == 2 and res.stdout == "", res
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"launches {block} threads a block (threadIdx.x 0..{block - 1})" in res.stderr, res.stderr


def test_recorded_where_layouts_appear_and_small(work: Path) -> None:
    lay = _layouts(work, "gemm_sm_80_128")
    c = tltrace.load(work / "traces" / "gemm_sm_80_128").compiles[-1]
    first = lay["snapshots"][0]
    rec = next(r for r in c.manifest.records if r.index == first["record"])
    # the record named is the one whose output carries the layouts: its input has none of them
    p = c.pass_(str(rec.index))
    assert rec.status == "changed" and "layout_map" not in p.before and "layout_map" in p.after
    assert len(json.dumps(lay, separators=(",", ":"))) < 4096


def test_show_layouts_cli(work: Path) -> None:
    res = cli("show", "--trace-dir", "traces", "gemm_sm_90a_128", "-1", "--layouts", "--json", cwd=work)
    assert res.returncode == 0, res.stderr
    data = check(json.loads(res.stdout), "layouts")["compiles"][0]
    by = {e["buffer"]: e for e in data["layouts"]}
    assert by["C_l"]["thread"] and by["A_s"]["scope"].startswith("shared")
    res = cli(
        "show", "--trace-dir", "traces", "gemm_sm_90a_128", "-1", "--layouts", "--at", "C_l", "0,2", cwd=work
    )
    assert res.returncode == 0 and "thread 129 register 0" in res.stdout, res.stdout + res.stderr
    res = cli(
        "show",
        "--trace-dir",
        "traces",
        "gemm_sm_90a_128",
        "-1",
        "--layouts",
        "--at",
        "A_s",
        "0,1,0",
        cwd=work,
    )
    assert "bank 16" in res.stdout, res.stdout + res.stderr
    for bad in (["C_l", "0,x"], ["C_l", "0,9999"], ["Nope", "0,0"]):
        res = cli(
            "show", "--trace-dir", "traces", "gemm_sm_90a_128", "-1", "--layouts", "--at", *bad, cwd=work
        )
        assert res.returncode == 2 and res.stdout == "", res
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr


def test_diff_runs_names_changed_layouts(work: Path) -> None:
    a = tltrace.load(work / "traces" / "gemm_sm_80_128").compiles[-1].manifest.layouts
    b = tltrace.load(work / "traces" / "gemm_sm_80_64").compiles[-1].manifest.layouts
    changed = {c["buffer"] for c in model.changed(a, b)}
    assert "A_s" in changed and "C_l" in changed, changed
    res = cli(
        "diff-runs", "--trace-dir", "traces", "gemm_sm_80_128:-1", "gemm_sm_80_64:-1", "--json", cwd=work
    )
    assert res.returncode in (0, 1), res.stderr
    names = {c["buffer"] for c in json.loads(res.stdout)["layouts"]}
    assert names == changed
    res = cli("diff-runs", "--trace-dir", "traces", "gemm_sm_80_128:-1", "gemm_sm_80_64:-1", cwd=work)
    assert "layouts changed" in res.stdout and "C_l" in res.stdout, res.stdout


def test_failed_inference_keeps_the_buffers(work: Path) -> None:
    c = tltrace.load(work / "traces" / "gemm_sm_80_128_bad").compiles[-1]
    lay = c.manifest.layouts
    assert lay is not None and lay["failed"] is not None
    failed = lay["failed"]
    rec = next(r for r in c.manifest.records if r.index == failed["record"])
    assert rec.status == "failed" and "C_l" in (rec.error or "")
    assert "C_l" in failed["named"]
    names = {b["buffer"] for f in failed["funcs"] for b in f["buffers"]}
    assert {"A_s", "B_s", "C_l"} <= names
    fixed = {e["buffer"] for e in model.final(lay)}
    assert "A_s" in fixed  # the swizzle annotated before inference is shown
    res = cli("show", "--trace-dir", "traces", "gemm_sm_80_128_bad", "-1", "--layouts", cwd=work)
    assert res.returncode == 0 and "layout inference failed" in res.stdout and "C_l" in res.stdout, res
    res = cli("show", "--trace-dir", "traces", "gemm_sm_80_128_bad", "-1", "--layouts", "--json", cwd=work)
    data = check(json.loads(res.stdout), "layouts")["compiles"][0]
    assert "C_l" in data["failed"]["named"] and any(e["buffer"] == "A_s" for e in data["layouts"])


REDUCE = textwrap.dedent(
    """
    import tilelang.language as T


    @T.prim_func
    def reduce(A: T.Tensor((128, 64), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_l = T.alloc_fragment((128, 64), "float32")
            B_l = T.alloc_fragment((128,), "float32")
            S = T.alloc_fragment((64,), "float32")
            T.copy(A, A_l)
            T.reduce_max(A_l, B_l, dim=1)
            T.reduce_sum(A_l, S, dim=0)
            T.copy(B_l, B)
            for i in T.Parallel(64):
                A[0, i] = S[i]
    """
)


def test_replicated_fragments_agree_with_tilelang(tmp_path: Path) -> None:
    """Reductions leave replicated fragments (each element in several threads): every replica's thread."""

    import tilelang
    from tilelang import tvm

    path = tmp_path / "reduce_lib.py"
    mod = load_script(path, REDUCE, "tl_layouts_reduce")
    found: list[Any] = []

    @tvm.instrument.pass_instrument
    class Grab:
        def run_after_pass(self, m: Any, info: Any) -> None:
            if found:
                return
            for name, func in capture.prim_funcs(m.functions):
                f = capture.func_layouts(name, func)
                if f["layouts"]:
                    real = {}
                    for block in capture._blocks(func):
                        if "layout_map" in block.annotations:
                            real.update({str(b.name): v for b, v in block.annotations["layout_map"].items()})
                    found.append((f, real))

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_80"})
    with target, tvm.transform.PassContext(instruments=[Grab()]):
        tilelang.lower(mod.reduce, target=target)
    f, real = found[0]
    reps = [e for e in f["layouts"] if (e["replicate"] or 1) > 1]
    assert reps, f["layouts"]
    rng = random.Random(1)
    for e in f["layouts"]:
        lay = real[e["buffer"]]
        rep = len(e["vars"]) > len(e["input_shape"])
        for _ in range(200):
            idx = [rng.randrange(d) for d in e["input_shape"]]
            got = model.at(e, idx)
            want = [
                _int(lay.map_forward_thread(([r] if rep else []) + idx))
                for r in range(e["replicate"] if rep else 1)
            ]
            first = int(lay.thread_range.min)
            assert got["logical_thread"] == want, (e["buffer"], idx)
            assert got["thread"] == [t + first for t in want], (e["buffer"], idx)
            assert len(set(want)) == len(want)  # replicas are distinct threads


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_a_function_rebuilt_unchanged_is_not_walked_again(tmp_path: Path, monkeypatch, arch: str) -> None:
    """The recorder skips the walk of a function map it walked last and of a function whose body
    equals the one walked last (`capture.same_object`, `capture.same_body`): on real sm_90a and
    sm_80 lowerings the manifest's layouts are those recorded when every input is walked, and
    some walks were skipped."""
    import tilelang
    from tilelang import tvm

    mod = load_script(tmp_path / "gemm_skip.py", GEMM, "tl_layouts_gemm_skip")
    real = capture.same_body
    asked: list[bool] = []

    def counted(a: Any, b: Any) -> bool:
        asked.append(real(a, b))
        return asked[-1]

    def lowered(sub: str) -> dict[str, Any]:
        target = tvm.target.Target({"kind": "cuda", "arch": arch})
        tltrace.enable(mode="terminal", trace_dir=tmp_path / sub, quiet=True)
        try:
            with target:
                tilelang.lower(mod.matmul(256, 256, 256, 128, 128, 32, 3, 128), target=target)
        finally:
            tltrace.disable()
        (run_dir,) = sorted((tmp_path / sub).glob("*/.run_records/run_*"))
        layouts = tltrace.load(run_dir).compiles[-1].manifest.layouts
        assert layouts and layouts["snapshots"], sub
        return layouts

    monkeypatch.setattr(capture, "same_body", counted)
    skipping = lowered("skipping")
    for skip in ("same_body", "same_object"):  # every input walked
        monkeypatch.setattr(capture, skip, lambda a, b: False)
    assert skipping == lowered("walking")
    print(
        f"{arch}: {len(skipping['snapshots'])} snapshots; {asked.count(True)} of {len(asked)} walks skipped"
    )
    assert True in asked


def _tvm_blocks(func: Any) -> list[Any]:
    """The blocks of a PrimFunc as TVM's own `post_order_visit` meets them (every node)."""
    from tilelang import tvm

    found: list[Any] = []
    tvm.tirx.stmt_functor.post_order_visit(
        func.body, lambda n: found.append(n) if isinstance(n, tvm.tirx.SBlock) else None
    )
    return found


def test_the_block_walk_finds_the_blocks_tvm_visits(tmp_path: Path) -> None:
    """`capture._blocks` (statements only, kinds looked up by type) finds, in every pass's
    output of a real sm_90a lowering, exactly the blocks TVM's own `post_order_visit` meets."""
    import tilelang
    from tilelang import tvm

    mod = load_script(tmp_path / "gemm_blocks.py", GEMM, "tl_layouts_gemm_blocks")
    checked: list[int] = []

    @tvm.instrument.pass_instrument
    class Check:
        def run_after_pass(self, m: Any, info: Any) -> None:
            for _name, func in capture.prim_funcs(m.functions):
                theirs = _tvm_blocks(func)
                ours = capture._blocks(func)
                assert sorted(b.__chandle__() for b in ours) == sorted(b.__chandle__() for b in theirs)
                checked.append(len(ours))

    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    with target, tvm.transform.PassContext(instruments=[Check()]):
        tilelang.lower(mod.matmul(256, 256, 256, 128, 128, 32, 3, 128), target=target)
    print(f"{len(checked)} function outputs, {sum(checked)} blocks, at most {max(checked)} in one")
    assert max(checked) >= 2
