"""GPU checks (run on a CUDA machine: `pytest -m gpu`): CUDA codegen traced, device and host apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._records import read_manifest, rec_text
from .conftest import EXAMPLES

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("need_gpu")]


def _trace(tmp_path: Path, backend: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict, Path]:
    env = {k: v for k, v in os.environ.items() if k != "TLTRACE_EXAMPLES_CPU"}
    env.update(TILELANG_DISABLE_CACHE="1", TLTRACE_EXAMPLES_BACKEND=backend)
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "tltrace",
            "run",
            "--quiet",
            "--trace-dir",
            str(tmp_path / "t"),
            *extra,
            str(EXAMPLES / "gemm.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    print(p.stdout[-3000:], p.stderr[-3000:])
    runs = sorted((tmp_path / "t" / "gemm" / ".run_records").glob("run_*"))
    m = read_manifest(runs[-1])
    return p, m, runs[-1]


def test_gemm_tvm_ffi_device_and_host_apart(tmp_path):
    p, m, run = _trace(tmp_path, "tvm_ffi")
    assert p.returncode == 0
    assert m["target"] == "cuda" and m["backend"] == "tvm_ffi"
    cg = [r for r in m["records"] if r["phase"] == "codegen" and r.get("status") == "codegen"]
    roles = [(r["name"], r.get("role"), r.get("ffi")) for r in cg]
    print("codegen records:", roles)
    assert ("codegen_device", "device", "target.build.tilelang_cuda") in roles
    assert any(name == "codegen_host" and role == "host" for name, role, _ in roles)
    dev = next(r for r in cg if r.get("role") == "device")
    host = next(r for r in cg if r.get("role") == "host")
    dsrc = rec_text(run, dev)
    hsrc = rec_text(run, host)
    assert "__global__" in dsrc and "__global__" not in hsrc
    assert dev["after_file"].endswith("_codegen_device_after.cpp")
    assert host["after_file"].endswith("_codegen_host_after.cpp")
    assert any(r["phase"] == "pipeline_cuda" for r in m["records"])
    print(
        "passes:",
        len(m["records"]),
        "pipeline_cuda:",
        sum(r["phase"] == "pipeline_cuda" for r in m["records"]),
    )


def test_gemm_nvrtc_device_only(tmp_path):
    p, m, run = _trace(tmp_path, "nvrtc")
    assert p.returncode == 0
    cg = [r for r in m["records"] if r["phase"] == "codegen" and r.get("status") == "codegen"]
    print("codegen records:", [(r["name"], r.get("ffi")) for r in cg])
    assert [r.get("role") for r in cg] == ["device"]
    assert cg[0]["ffi"].endswith("_without_compile")
