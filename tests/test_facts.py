"""Facts (docs/facts.md) on real compiles: compile-only CUDA builds for sm_90a and sm_80 on this CPU machine.

One traced invocation (module fixture) compiles a pipelined GEMM four ways: sm_90a with
3 stages (TileLang warp-specializes it), sm_90a with 1 stage, sm_90a with
`tl.disable_warp_specialized`, and sm_80 with 3 stages. The facts are checked against
the CUDA text and the IR TileLang produced, read here independently, and against
properties (the stage ratio of the dynamic shared memory), never against numbers of one
pipeline. `diff-runs` must name what a flip changes.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tltrace.facts import FACTS, NAMES, changes, describe, facts_of
from tltrace.facts import ptxas as ptxas_mod
from tltrace.facts.device import device_facts, vector_bits
from tltrace.facts.tir import dtype_bytes
from tltrace.history import runs
from tltrace.toolchain import nvcc as nvcc_mod

from ._cli import cli_proc
from ._kernels import gemm_script
from ._schema import check

REPO = Path(__file__).resolve().parent.parent

GEMM = gemm_script(
    "A pipelined GEMM lowered for CUDA on the CPU (no GPU): one compile per config in argv.",
    """


for arch, stages, config in json.loads(sys.argv[1]):
    target = tvm.target.Target({"kind": "cuda", "arch": arch})
    with tvm.transform.PassContext(config=config), target:
        tilelang.lower(make(stages=stages), target=target)
""",
)

CONFIGS = {
    "sm90_s3": ("sm_90a", 3, {}),
    "sm90_s1": ("sm_90a", 1, {}),
    "sm90_nows": ("sm_90a", 3, {"tl.disable_warp_specialized": True}),
    "sm80_s3": ("sm_80", 3, {}),
}


def _tltrace(*args: str, cwd: Path, check_rc: bool = True) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, rc=0 if check_rc else None, timeout=None)


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> dict[str, runs.Run]:
    """The four compiles of one traced invocation, by config name."""
    home = tmp_path_factory.mktemp("facts")
    (home / "gemm.py").write_text(GEMM)
    _tltrace("run", "-q", "--no-codegen-output", "gemm.py", json.dumps(list(CONFIGS.values())), cwd=home)
    script_dir = home / "tmp" / "lower_trace_dir" / "gemm"
    # -q: the facts are left to the reader (history/derived.py), who computes and caches them.
    found = [runs.load_run(p, derive=True) for p in runs.run_dirs(script_dir)]
    assert len(found) == len(CONFIGS)
    return dict(zip(CONFIGS, found))  # run ids carry their start time: oldest first, argv's order


def _text(run: runs.Run, source: str) -> str:
    where = run.require().facts["texts"][source]
    rec = next(r for r in run.require().records if where["file"] == getattr(r, f"{where['side']}_file"))
    text = runs.text_of(run.path, rec, where["side"])
    assert text is not None
    return text


def _calls(text: str, name: str) -> int:
    """Call sites of `name` (a template argument list allowed), comments kept out by the kernels' shape."""
    return len(re.findall(rf"\b{name}\w*\s*(?:<[^;(){{}}]*>)?\s*\(", text))


def test_every_compile_stores_every_fact_with_the_text_it_came_from(traced) -> None:
    for run in traced.values():
        facts = run.require().facts
        assert facts is not None and set(facts["values"]) == set(NAMES)
        for source in ("device", "codegen_input", "frontend"):
            where = facts["texts"][source]
            rec = run.require().records[where["record"]]
            assert where["file"] == (rec.after_file if where["side"] == "after" else rec.before_file)
        assert run.require().records[facts["texts"]["device"]["record"]].role == "device"
        assert facts_of(run) == facts["values"]


def test_device_facts_agree_with_the_cuda_text(traced) -> None:
    for name, run in traced.items():
        cuda, values = _text(run, "device"), facts_of(run)
        assert values["tma_load"] == _calls(cuda, "tma_load"), name
        assert values["cp_async"] == _calls(cuda, "cp_async_gs"), name
        assert values["mma"] == _calls(cuda, "mma_sync"), name
        assert values["syncthreads"] == cuda.count("__syncthreads()"), name
        assert bool(values["wgmma"]) == ("tl::wgmma_" in cuda), name
        assert bool(values["ldmatrix"]) == ("ldmatrix" in cuda.split("#endif", 1)[-1]), name
        bounds = re.search(r"__launch_bounds__\((\d+)", cuda)
        assert values["launch_bounds"] == (int(bounds.group(1)) if bounds else None), name
        assert values["kernels"] == len(re.findall(r"__global__ void[^;]*\{", cuda)) >= 1


def test_ir_facts_agree_with_the_codegen_input(traced) -> None:
    for name, run in traced.items():
        tir, values = _text(run, "codegen_input"), facts_of(run)
        arch, stages, _config = CONFIGS[name]
        assert values["arch"] == arch
        assert values["num_stages"] == stages  # the frontend IR carries what the kernel asked for
        dyn = re.search(r'scope="shared.dyn"', tir)
        assert (values["smem_dynamic"] > 0) == bool(dyn), name
        assert f'"dyn_shared_memory_buf": {values["smem_dynamic"]}' in tir, name
        threads = re.search(r'launch_thread\("threadIdx.x", (\d+)\)', tir)
        assert threads is not None and values["threads"] == int(threads.group(1)), name
        assert values["warp_specialized"] == ("kWarpSpecializationScope" in tir), name
        assert values["set_max_nreg"] == tir.count("set_max_nreg("), name


def test_the_paths_each_config_took(traced) -> None:
    ws, nows, sm80 = (facts_of(traced[k]) for k in ("sm90_s3", "sm90_nows", "sm80_s3"))
    assert ws["warp_specialized"] and ws["tma_load"] > 0 and ws["wgmma"] > 0 and ws["max_nreg"]
    assert ws["launch_bounds"] == ws["threads"]  # the producer warps are in the launch
    assert not nows["warp_specialized"] and nows["tma_load"] == 0 and nows["cp_async"] > 0
    assert sm80["wgmma"] == sm80["tma_load"] == 0 and sm80["mma"] > 0 and sm80["ldmatrix"] > 0
    assert sm80["cp_async"] > 0 and sm80["mbarrier"] == 0


def test_dynamic_shared_memory_scales_with_the_stages(traced) -> None:
    s3, s1 = facts_of(traced["sm90_s3"]), facts_of(traced["sm90_s1"])
    assert s3["num_stages"] == 3 and s1["num_stages"] == 1
    assert s3["smem_dynamic"] == 3 * s1["smem_dynamic"] > 0


def test_diff_runs_names_the_facts_a_flip_changes(traced) -> None:
    s3, s1, nows = traced["sm90_s3"], traced["sm90_s1"], traced["sm90_nows"]
    a, b = facts_of(s3), facts_of(s1)
    p = _tltrace("diff-runs", str(s3.path), str(s1.path), cwd=s3.path, check_rc=False)
    assert p.returncode == 1, p.stderr
    assert f"smem_dynamic {a['smem_dynamic']} \u2192 {b['smem_dynamic']}" in p.stdout
    assert "num_stages 3 \u2192 1" in p.stdout
    assert len(p.stdout.splitlines()) < 40  # the effect first (#32 item 6), not a row per pass
    p = _tltrace("diff-runs", "--json", str(s3.path), str(nows.path), cwd=s3.path, check_rc=False)
    named = {c["name"]: (c["a"], c["b"]) for c in json.loads(p.stdout)["facts"]}
    c = facts_of(nows)
    assert named["tma_load"] == (a["tma_load"], 0) and named["cp_async"] == (0, c["cp_async"])
    assert named["warp_specialized"] == (True, False)
    assert "launch_bounds" in named


def test_show_facts_json_validates_and_reads_what_is_stored(traced) -> None:
    run = traced["sm90_s3"]
    p = _tltrace("show", str(run.path), "--facts", "--json", cwd=run.path)
    data = check(json.loads(p.stdout), "facts")
    one = data["compiles"][0]
    assert one["values"] == run.require().facts["values"]
    assert [f["name"] for f in one["facts"]] == list(NAMES)
    assert next(f for f in one["facts"] if f["name"] == "wgmma")["text"].endswith(".cpp")
    p = _tltrace("show", str(run.path), "--facts", cwd=run.path)
    assert re.search(rf"smem_dynamic\s+{one['values']['smem_dynamic']}\s+bytes", p.stdout)
    p = _tltrace("show", str(run.script_dir), "-1", "--facts", "--json", cwd=run.path)
    assert len(check(json.loads(p.stdout), "facts")["compiles"]) == len(CONFIGS)


def test_a_run_without_stored_facts_reads_the_same_from_its_texts(traced, tmp_path: Path) -> None:
    """Traces recorded before facts were stored, or quiet ones (facts left to the reader): the reader
    computes them from the recorded texts, with nothing cached beside the run yet."""
    src = traced["sm80_s3"].path
    dest = tmp_path / "gemm" / ".run_records" / src.name
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("derived.json"))
    data = json.loads((dest / "manifest.json").read_text())
    stored = data.pop("facts") or traced["sm80_s3"].require().facts
    (dest / "manifest.json").write_text(json.dumps(data))
    old = runs.load_run(dest)
    assert old.require().facts is None
    assert facts_of(old) == stored["values"]


def test_recorded_cpu_traces_get_facts_at_read_time(recorded: Path) -> None:
    run = runs.load_run(runs.run_dirs(recorded / "gemm")[-1])
    values = facts_of(run)
    assert values["arch"] is None and values["wgmma"] == 0 and values["launch_bounds"] is None
    assert values["vector_store_bits"] == 128  # the C source stores float4


def test_the_registry_and_docs_agree() -> None:
    page = (REPO / "docs" / "facts.md").read_text()
    for f in FACTS:
        row = next((ln for ln in page.splitlines() if ln.startswith(f"| `{f.name}` |")), None)
        assert row is not None, f"docs/facts.md has no row for {f.name}"
        assert f"| {f.type} |" in row and f"| {f.source} |" in row, row
    assert len(NAMES) == len(set(NAMES))


def test_pure_extraction_edges() -> None:
    assert vector_bits("uint4") == 128 and vector_bits("half2") == 32 and vector_bits("float") is None
    assert dtype_bytes("float16x2") == 4 and dtype_bytes(None) == 4 and dtype_bytes("uint64") == 8
    text = "// tl::tma_load(a, b);\n__global__ void k() { *(uint4*)(x) = *(uint2*)(y); __syncthreads(); }"
    got = device_facts(text)
    assert got["tma_load"] == 0 and got["syncthreads"] == 1 and got["kernels"] == 1
    assert (got["vector_load_bits"], got["vector_store_bits"]) == (64, 128)
    assert changes({"wgmma": 1, "registers": None}, {"wgmma": 0, "registers": 90}) == [
        {"name": "wgmma", "a": 1, "b": 0}
    ]
    assert (
        describe([{"name": "warp_specialized", "a": True, "b": False}])
        == "warp_specialized true \u2192 false"
    )


def test_a_failure_computing_facts_never_breaks_the_run() -> None:
    from tltrace.facts.recorder import with_facts
    from tltrace.format.records import RunManifest

    said: list[str] = []
    m = RunManifest(run_id="run_x", script="s")
    assert with_facts(m, object(), False, said.append)[0] is m  # type: ignore[arg-type]  # not a store
    assert with_facts(m, object(), False, said.append)[0] is m  # type: ignore[arg-type]
    assert len(said) <= 1  # said once per process, never raised


def test_machine_facts_need_a_cuda_arch() -> None:
    with pytest.raises(ptxas_mod.Unavailable):
        ptxas_mod.machine_facts("int main() {}", None)
    with pytest.raises(ptxas_mod.Unavailable):
        ptxas_mod.machine_facts("int main() {}", "x86")


def test_the_build_configs_are_tilelangs_and_reach_the_nvcc_line() -> None:
    """The pass configs TileLang's CUDA build reads, by its own names, and their place on the line."""
    from tilelang.transform import PassConfigKey
    from tvm.ir.transform import PassContext

    assert nvcc_mod.FAST_MATH == PassConfigKey.TL_ENABLE_FAST_MATH.value
    assert nvcc_mod.REGISTER_USAGE_LEVEL == PassConfigKey.TL_PTXAS_REGISTER_USAGE_LEVEL.value
    assert nvcc_mod.DEVICE_COMPILE_FLAGS == PassConfigKey.TL_DEVICE_COMPILE_FLAGS.value
    plain = nvcc_mod.command("nvcc", "sm_90a", "k.cu", "k.cubin")
    config = {nvcc_mod.FAST_MATH: True, nvcc_mod.DEVICE_COMPILE_FLAGS: ["-DTILE=64 -DX"]}
    with PassContext(config=config):
        taken = nvcc_mod.configs_now()
    assert taken == config and nvcc_mod.configs_now() == {}  # read from the PassContext in force
    flipped = nvcc_mod.command("nvcc", "sm_90a", "k.cu", "k.cubin", taken)
    added = [x for x in flipped if x not in plain]
    assert added == ["-DTILE=64", "-DX", "--use_fast_math"]  # extra flags, then fast math (backend.py)
    assert flipped.index("-DX") > max(i for i, x in enumerate(flipped) if x.startswith("-I"))
    assert flipped[-5:] == ["-v", "-w", "-o", "k.cubin", "k.cu"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="no nvcc (CI has one)")
def test_run_ptxas_gives_registers_and_spills_as_ptxas_reports_them(tmp_path: Path) -> None:
    """One sm_90a compile with --ptxas (one nvcc build); ptxas -v run by hand on its source agrees."""
    (tmp_path / "gemm.py").write_text(GEMM)
    # A build flag from a pass config: the nvcc line must carry it as TileLang's build would.
    flags = {"tl.ptxas_register_usage_level": 5, "tl.enable_fast_math": True}
    _tltrace("run", "-q", "--ptxas", "--ptx", "gemm.py", json.dumps([["sm_90a", 3, flags]]), cwd=tmp_path)
    (run,) = [runs.load_run(p) for p in runs.run_dirs(tmp_path / "tmp" / "lower_trace_dir" / "gemm")]
    facts = run.require().facts
    values, machine = facts["values"], facts["machine"]
    assert machine["configs"] == flags
    assert "--ptxas-options=--register-usage-level=5" in machine["command"]
    assert "--use_fast_math" in machine["command"]
    assert isinstance(values["registers"], int) and values["registers"] > 0, machine
    assert values["spill_bytes"] == values["spill_store_bytes"] + values["spill_load_bytes"]
    # --ptxas with --ptx: one nvcc run (the pass configs' flags on it), the stage's and the facts'.
    (ptx_rec,) = [r for r in run.require().records if r.role == "ptx"]
    assert ptx_rec.duration_s == machine["seconds"] and ".loc" in runs.text_of(run.path, ptx_rec, "after")
    cuda = _text(run, "device")
    names = re.findall(r"__global__ void(?: __launch_bounds__\([^)]*\))? (\w+)\(", cuda)
    assert [k["kernel"] for k in machine["kernels"]] == list(dict.fromkeys(names))
    # By hand: the same nvcc line with its own -Xptxas -v, parsed here, not by tltrace.
    src = tmp_path / "k.cu"
    src.write_text(cuda)
    cmd = [
        shutil.which("nvcc") or "nvcc",
        *machine["command"][1:-3],
        "-o",
        str(tmp_path / "k.cubin"),
        str(src),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    log = out.stdout + out.stderr
    regs = [int(n) for n in re.findall(r"Used (\d+) registers", log)]
    spills = [
        int(a) + int(b) for a, b in re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    ]
    assert values["registers"] == max(regs) and values["spill_bytes"] == sum(spills)
    p = _tltrace("show", str(run.path), "--facts", "--json", cwd=tmp_path)
    assert check(json.loads(p.stdout), "facts")["compiles"][0]["machine"]["arch"] == "sm_90a"


@pytest.mark.browser
def test_the_index_ranks_compiles_by_a_fact(traced, open_page, tmp_path: Path) -> None:
    """The invocation index of the four compiles: a facts column group, sortable (an autotune ranked)."""
    from tltrace.history.report_reads import index_report
    from tltrace.render.index import write_index

    first = next(iter(traced.values()))
    out = write_index(
        index_report(first.script_dir, [r.path for r in traced.values()]), tmp_path / "index.html"
    )
    page = open_page(out)
    heads = page.eval_on_selector_all("#ix-head th.ix-fact", "ths => ths.map(th => th.textContent)")
    assert "smem dyn" in heads and "cp.async" in heads and "wgmma" in heads
    page.click("#ix-head th[data-key='f_smem_dynamic']")
    order = page.eval_on_selector_all("#ix-body tr", "trs => trs.map(tr => tr.dataset.run)")
    smem = {r.run_id: facts_of(r)["smem_dynamic"] for r in traced.values()}
    assert [smem[i] for i in order] == sorted(smem.values())


@pytest.mark.browser
def test_the_compile_report_has_a_facts_strip(traced, open_page) -> None:
    run = traced["sm80_s3"]
    p = _tltrace("show", str(run.path), "--html", "--json", cwd=run.path)
    page = open_page(Path(json.loads(p.stdout)["report"]))
    shown = page.eval_on_selector_all(
        "#tl-facts:not([hidden]) span[data-fact]",
        "ss => Object.fromEntries(ss.map(s => [s.dataset.fact, s.querySelector('code').textContent]))",
    )
    values = facts_of(run)
    assert shown["cp_async"] == str(values["cp_async"]) and shown["mma"] == str(values["mma"])
    assert shown["smem_dynamic"] == str(values["smem_dynamic"]) and shown["warp_specialized"] == "no"


def test_the_facts_table_says_ptxas_facts_come_from_ptxas(run_cli, recorded: Path, tmp_path: Path) -> None:
    """Registers and spills are ptxas's report (stored as facts.machine), never 'read from' the .cpp it built (#48)."""
    from ._records import copy_tree

    traces = copy_tree(recorded, tmp_path / "traces")
    path = sorted((traces / "gemm" / ".run_records").glob("run_*/manifest.json"))[-1]
    data = json.loads(path.read_text())
    kernels = [{"kernel": "k", "registers": 40, "spill_store_bytes": 0, "spill_load_bytes": 0}]
    data["facts"] = {
        "version": 1,
        "values": {"registers": 40, "spill_bytes": 0, "wgmma": 0},
        "texts": {"device": {"file": "codegen/61_codegen_device_after.cpp"}},
        "machine": {"tool": "nvcc", "arch": "sm_90a", "kernels": kernels},
    }
    path.write_text(json.dumps(data))
    res = run_cli("show", "--trace-dir", str(traces), "gemm", "-1", "--facts", "--json")
    rows = {f["name"]: f for f in json.loads(res.stdout)["compiles"][0]["facts"]}
    assert rows["registers"]["text"] == rows["spill_bytes"]["text"] == "manifest.json"
    assert rows["wgmma"]["text"].endswith(".cpp")  # a device-source fact still names the source
    res = run_cli("show", "--trace-dir", str(traces), "gemm", "-1", "--facts")
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("registers "))
    assert "ptxas" in line and ".cpp" not in line, line


def test_a_cuda_compile_report_with_facts_and_layouts_is_at_most_150_kb(traced, tmp_path: Path) -> None:
    """Issue 54: every one-kernel report at most 150 KB: a warp-specialized sm_90a GEMM too (facts,
    layouts, its IR texts, the Python sources behind them, a TileLang library file among them, and
    their source maps: about 240 KB as plain JSON). Its data chunks travel packed (pages.Packer).
    (The report written as a compile runs, and --ptx --sass: tests/test_stages.py.)"""
    from tltrace.history.report_reads import compile_report
    from tltrace.render.html import write_report

    for name, run in traced.items():
        data = write_report(compile_report(run.path), tmp_path / f"{name}.html").read_bytes()
        if name == "sm90_s3":
            assert b"TLLayouts" not in data and run.require().layouts  # the Layouts view, packed
        assert len(data) <= 150_000, (name, "rebuilt", len(data))
