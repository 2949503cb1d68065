"""Facts against a computation from another source, on one real sm_90a build (#48).

One traced compile-only sm_90a GEMM with `run --ptxas --sass` (one nvcc build, shared by the
module). Each fact tltrace read is checked against a source it did not read it from:

- registers and stack frame (ptxas `-v`) against `cuobjdump -res-usage` of the cubin that
  the recorded nvcc line builds; spills against the spill instructions (STL, LDL) of the SASS;
- the dynamic shared memory (read from the IR handed to codegen) against the launch in the
  host module TileLang returns (`tilelang.lower(...).host_mod`: its `call_packed` ends with
  the dynamic shared memory bytes);
- the TMA and WGMMA call-site counts (read from the CUDA source) against the SASS
  instructions they become (UTMALDG, HGMMA), and cp.async and mma_sync against theirs (LDGSTS,
  HMMA).

Skipped without nvcc or cuobjdump (CI has both: the test extra installs nvidia-cuda-cuobjdump).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tltrace.history import runs
from tltrace.stages.sass import tool

from ._cli import cli_proc
from ._kernels import gemm_script

REPO = Path(__file__).resolve().parent.parent

GEMM = gemm_script(
    "A pipelined GEMM lowered for sm_90a on the CPU; argv[1]: where to write TileLang's host module.",
    """


target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target:
    artifact = tilelang.lower(make(), target=target)
with open(sys.argv[1], "w") as f:
    f.write(str(artifact.host_mod))
""",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Any]:
    """The traced compile: its facts, machine report, SASS text, host module, and the cubin rebuilt."""
    nvcc, cuobjdump = shutil.which("nvcc"), tool("cuobjdump")
    if nvcc is None or cuobjdump is None:
        pytest.skip("no nvcc or cuobjdump (pip install nvidia-cuda-cuobjdump; CI has both)")
    home = tmp_path_factory.mktemp("oracles")
    (home / "gemm.py").write_text(GEMM)
    p = cli_proc("run", "-q", "--ptxas", "--sass", "gemm.py", "host.txt", cwd=home, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    (run,) = [runs.load_run(d) for d in runs.run_dirs(home / "tmp" / "lower_trace_dir" / "gemm")]
    manifest = run.require()
    facts = manifest.facts
    assert facts and facts.get("machine", {}).get("kernels"), facts
    sass_rec = next((r for r in manifest.records if r.role == "sass"), None)
    assert sass_rec is not None, "run --sass recorded no SASS stage"
    device = next(r for r in manifest.records if r.role == "device")
    # The same cubin: the recorded nvcc line over the recorded device source.
    (home / "k.cu").write_text(runs.text_of(run.path, device, "after"))
    cmd = [nvcc, *facts["machine"]["command"][1:-3], "-o", str(home / "k.cubin"), str(home / "k.cu")]
    subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=900)
    usage = subprocess.run(
        [cuobjdump, "-res-usage", str(home / "k.cubin")], capture_output=True, text=True, check=True
    ).stdout
    return {
        "values": facts["values"],
        "kernels": facts["machine"]["kernels"],
        "sass": runs.text_of(run.path, sass_rec, "after"),
        "host": (home / "host.txt").read_text(),
        "usage": _res_usage(usage),
    }


def _res_usage(text: str) -> dict[str, dict[str, int]]:
    """Return {kernel: {REG, STACK, SHARED, LOCAL, ...}} from `cuobjdump -res-usage` (parsed here, not by tltrace)."""
    out: dict[str, dict[str, int]] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"\s*Function (\S+?):?\s*$", line)
        if m:
            name = m.group(1)
            continue
        if name is not None and "REG:" in line:
            out[name] = {k: int(v) for k, v in re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", line)}
            name = None
    return out


def test_registers_and_stack_agree_with_cuobjdump_res_usage(built) -> None:
    usage = built["usage"]
    assert usage, "cuobjdump -res-usage listed no function"
    assert sorted(usage) == sorted(k["kernel"] for k in built["kernels"])
    for k in built["kernels"]:
        assert k["registers"] == usage[k["kernel"]]["REG"], k
        assert k["stack_frame"] == usage[k["kernel"]]["STACK"], k
        if k["spill_store_bytes"] or k["spill_load_bytes"]:
            assert usage[k["kernel"]]["STACK"] > 0  # spills live in the stack frame
    values = built["values"]
    assert values["registers"] == max(u["REG"] for u in usage.values())
    assert values["stack_frame"] == max(u["STACK"] for u in usage.values())


def test_spills_agree_with_the_sass(built) -> None:
    """A spill store is an STL, a spill load an LDL: none in the SASS, no spill bytes (and the converse)."""
    sass, values = built["sass"], built["values"]
    stores = len(re.findall(r"\bSTL(?:\.\w+)*\b", sass))
    loads = len(re.findall(r"\bLDL(?:\.\w+)*\b", sass))
    if values["spill_store_bytes"]:
        assert stores > 0
    if values["spill_load_bytes"]:
        assert loads > 0
    if not stores:
        assert values["spill_store_bytes"] == 0
    if not loads:
        assert values["spill_load_bytes"] == 0


def test_dynamic_shared_memory_agrees_with_the_launch(built) -> None:
    """TileLang's host module launches the kernel with the dynamic shared memory as its last argument."""
    name = built["kernels"][0]["kernel"]
    launches = re.findall(rf'call_packed\("{re.escape(name)}",([^\n]*)\)', built["host"])
    assert launches, built["host"][-2000:]
    last = int(launches[0].rsplit(",", 1)[1].strip())
    assert built["values"]["smem_dynamic"] == last


@pytest.mark.parametrize(
    "fact, instruction",
    [("tma_load", "UTMALDG"), ("wgmma", "HGMMA"), ("cp_async", "LDGSTS"), ("mma", "HMMA")],
)
def test_call_site_counts_agree_with_the_sass(built, fact: str, instruction: str) -> None:
    """A call site in the CUDA source exactly when its instruction is in the SASS (counts differ: templates unroll)."""
    found = len(re.findall(rf"\b{instruction}\b", built["sass"]))
    assert (built["values"][fact] > 0) == (found > 0), (fact, built["values"][fact], instruction, found)
