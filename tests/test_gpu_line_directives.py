"""`tltrace run --line-directives` under Nsight Compute (run on a CUDA machine: `pytest -m gpu -s`).

A GEMM compiled for the GPU with execution_backend="cython" (nvcc with `-lineinfo`) is run
under `ncu --section SourceCounters`; the report's source correlation (every SASS
instruction's file and line, read through ncu's own Python module `ncu_report`, else
`ncu --page source --print-source cuda --csv`) must name the script's `.py`, and every `.py`
line it names must be a line of the kernel's body: no drift past a statement, nothing
outside the kernel. The output is printed for the record.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ._kernels import prim_func_body as _body

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("need_gpu")]

REPO = Path(__file__).resolve().parent.parent

SCRIPT = """
import tilelang
import tilelang.language as T
import torch


def make(M=1024, N=1024, K=1024, bM=128, bN=128, bK=32):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=3):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bM, bx * bN])

    return gemm


kernel = tilelang.compile(make(), target="cuda", execution_backend="cython")
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
c = torch.empty(1024, 1024, device="cuda", dtype=torch.float16)
kernel(a, b, c)
torch.cuda.synchronize()
err = (c.float() - a.float() @ b.float()).abs().max().item()
print("max error", err)
assert err < 1.0, err
"""

# ncu's own reader of its reports: the source file and line of every SASS instruction.
READER = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import ncu_report
ctx = ncu_report.load_report(sys.argv[1])
out, files = [], set()
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        act = rng.action_by_idx(a)
        try:
            files.update(act.source_files())
        except Exception:
            pass
        # The SASS addresses: the correlation ids of the per-instruction (instanced) metrics.
        addrs = set()
        for name in list(act):
            m = act[name]
            try:
                n = m.num_instances()
                ids = m.correlation_ids() if n else None
            except Exception:
                continue
            if ids is None:
                continue
            for i in range(n):
                try:
                    addrs.add(ids.as_uint64(i))
                except Exception:
                    pass
        for pc in sorted(addrs):
            info = act.source_info(pc)
            if info is not None and info.file_name():
                out.append([act.name(), info.file_name(), info.line()])
print(json.dumps({"rows": out, "files": sorted(files)}))
"""


def _csv_lines_with_counts(text: str, name: str) -> list[int]:
    """From `--page source --csv`: the lines of `name`'s block that some counter is non-zero for."""
    import csv

    out: list[int] = []
    inside = False
    for row in csv.reader(text.splitlines()):
        if not row:
            continue
        if not row[0].strip().isdigit():  # a file's heading (its path) or a table header
            joined = " ".join(row)
            if joined.strip().endswith((".py", '.py"')) or name in joined and "#" not in joined:
                inside = name in joined
            elif any(joined.strip().endswith(x) for x in (".cu", ".cpp", ".c", ".h", ".hpp")):
                inside = False
            continue
        if inside:
            numbers = []
            for cell in row[2:]:
                try:
                    numbers.append(float(cell.replace(",", "")))
                except ValueError:
                    pass
            if any(numbers):
                out.append(int(row[0]))
    return out


def test_ncu_source_counters_name_only_kernel_lines(tmp_path):
    ncu = shutil.which("ncu")
    if ncu is None:
        pytest.skip("no ncu on PATH")
    script = tmp_path / "ncu_gemm.py"
    script.write_text(SCRIPT)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "PYTHONPATH": path}
    report = tmp_path / "ld"
    cmd = [
        ncu,
        "--section",
        "SourceCounters",
        "--clock-control",
        "none",
        "--import-source",
        "yes",
        "-k",
        "regex:gemm",
        "--launch-count",
        "1",
        "-f",
        "-o",
        str(report),
        sys.executable,
        "-m",
        "tltrace",
        "run",
        "--line-directives",
        "--mode",
        "both",
        "--trace-dir",
        str(tmp_path / "t"),
        str(script),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    print(p.stdout[-4000:], p.stderr[-4000:])
    assert p.returncode == 0
    assert "--line-directives: compiled with" in p.stdout + p.stderr
    rep = Path(str(report) + ".ncu-rep")
    assert rep.is_file(), "ncu wrote no report"
    body = _body(script)
    named: list[int] = []
    # ncu's Python module: beside the real ncu in older layouts, under /opt/nvidia/nsight-compute/<v>/
    # where the CUDA toolkit's bin/ncu is a launcher of that install (CUDA 13.0, ncu 2025.3.1).
    candidates = [Path(os.path.realpath(ncu)).parent / "extras" / "python"]
    candidates += sorted(Path("/opt/nvidia/nsight-compute").glob("*/extras/python"), reverse=True)
    python_dir = next((d for d in candidates if (d / "ncu_report.py").is_file()), candidates[0])
    rows = None
    if (python_dir / "ncu_report.py").is_file():
        r = subprocess.run(
            [sys.executable, "-c", READER, str(rep), str(python_dir)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        print(r.stderr[-2000:])
        if r.returncode == 0:
            import json

            got = json.loads(r.stdout)
            print("source files in the report:", got["files"])
            rows = got["rows"] or None
    if rows is not None:
        files = sorted({f for _, f, _ in rows})
        print("source files of the SASS:", files)
        named = [int(n) for _, f, n in rows if os.path.basename(f) == script.name]
    else:  # ncu's source page, as text
        page = subprocess.run(
            [ncu, "--import", str(rep), "--page", "source", "--print-source", "cuda,sass", "--csv"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        print(page.stdout[:4000], page.stderr[-2000:])
        assert page.returncode == 0
        text = page.stdout
        assert script.name in text
        named = _csv_lines_with_counts(text, script.name)
    # ptxas (CUDA 13.0) files a generated-file call site that follows a row of the .py under the
    # .py (tests/test_line_directives.py shows it on the PTX): such a line is past the script's
    # end, so it cannot be one of its lines. Every line the script has must be in the body.
    n_lines = len(SCRIPT.split("\n"))
    past_end = sorted({n for n in named if n > n_lines})
    outside = sorted({n for n in named if n not in body and n <= n_lines})
    print(
        f"--line-directives under ncu: {len(named)} SASS rows name {script.name}; lines {sorted(set(named))}; "
        f"outside the body: {outside}; past the script's {n_lines} lines (ptxas's call-site rows): {past_end}"
    )
    assert named, f"ncu names no line of {script.name}"
    assert not outside, f"lines outside the kernel body: {outside}"
    gemm = next(i for i, ln in enumerate(SCRIPT.split("\n"), 1) if "T.gemm(" in ln)
    assert gemm in named, "the WGMMA instructions' line (the T.gemm call) is not named"
