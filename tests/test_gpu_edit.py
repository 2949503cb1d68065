"""Edit and recompile on a CUDA GPU (run on the device machine: pytest -m gpu tests/test_gpu_edit.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


@pytest.fixture
def cuda_env(need_gpu, monkeypatch):
    def use(backend: str):
        monkeypatch.setenv("TLTRACE_EXAMPLES_BACKEND", backend)

    return use


def _tags(stdout: str) -> list[str]:
    return re.findall(r"^\[[^\]]+\] (PATCHED|REGENERATED|SYNCED|CONFLICT|INIT-BACKUP|NOTE)\b", stdout, re.M)


def _flip_add(path: Path) -> None:
    text = path.read_text()
    # The value sum: `A[i] + B[i]`, or per component for vectors: `A[i].x + B[i].x`.
    new, n = re.subn(r"(\]|\]\.[xyzw]|\)\.[xyzw]) \+ ([A-Za-z_(])", r"\1 - \2", text, count=1)
    assert n == 1, text
    path.write_text(new)


def test_nvrtc_edit_changes_numbers(cuda_env, run_cli, examples_dir, tmp_path):
    cuda_env("nvrtc")
    script = examples_dir / "elementwise_add.py"
    d = tmp_path / "tmp" / "lower_trace_dir" / "elementwise_add"
    r = run_cli("run", "--quiet", "--mode", "both", script)
    assert r.exit_code == 0, r.stdout + r.stderr
    working = d / "codegen_device.cpp"
    assert working.is_file() and not (d / "codegen_host.cpp").exists()  # nvrtc: no host codegen here
    _flip_add(working)
    r = run_cli("run", "--quiet", "--mode", "both", script)
    assert _tags(r.stdout) == ["PATCHED"]
    assert "WRONG RESULT" in r.stdout and r.exit_code == 1


def test_tvm_ffi_files_stable_and_note(cuda_env, run_cli, examples_dir, tmp_path):
    cuda_env("tvm_ffi")
    script = examples_dir / "elementwise_add.py"
    d = tmp_path / "tmp" / "lower_trace_dir" / "elementwise_add"
    for _ in range(2):  # device and host files do not fight: no REGENERATED on the second run
        r = run_cli("run", "--quiet", "--mode", "both", script)
        assert r.exit_code == 0, r.stdout + r.stderr
        assert _tags(r.stdout) == []
    device, host = d / "codegen_device.cpp", d / "codegen_host.cpp"
    assert device.is_file() and host.is_file() and device.read_text() != host.read_text()
    _flip_add(device)
    r = run_cli("run", "--quiet", "--mode", "both", script)
    assert _tags(r.stdout) == ["NOTE"] and "tvm_ffi" in r.stdout
    assert r.exit_code == 0  # the binary was built from TIR: the numbers are unchanged
    assert " - " in device.read_text()  # the edit stays on disk
    assert os.path.getsize(d / "codegen_host.cpp.original") > 0


def _break_line(working: Path) -> int:
    """Append words that are not CUDA to the line reading threadIdx.x; return its (1-based) number."""
    lines = working.read_text().splitlines()
    n = next(i for i, x in enumerate(lines, 1) if "threadIdx.x" in x)
    lines[n - 1] += " this is not CUDA"
    working.write_text("\n".join(lines) + "\n")
    return n


def test_nvrtc_error_in_an_edit_names_the_working_files_line(cuda_env, run_cli, examples_dir, tmp_path):
    """The edit is compiled behind `#line 1 "W"`; TileLang's nvrtc adapter drops NVRTC's log unless
    verbose, so tltrace fetches it (session/codegen_nvrtc.py) and says the error at W:LINE."""
    cuda_env("nvrtc")
    script = examples_dir / "elementwise_add.py"
    working = tmp_path / "tmp" / "lower_trace_dir" / "elementwise_add" / "codegen_device.cpp"
    r = run_cli("run", "--quiet", "--mode", "both", script)
    assert r.exit_code == 0, r.stdout + r.stderr
    n = _break_line(working)
    edited = working.read_text()
    r = run_cli("run", "--quiet", "--mode", "both", script)
    out = r.stdout + r.stderr
    print(out[-6000:])
    assert r.exit_code != 0
    # one line: "[elementwise_add] COMPILE-ERROR  W:LINE: error: ...", then NVRTC's log: "W(LINE): error: ..."
    assert re.search(rf"COMPILE-ERROR  {re.escape(str(working))}:{n}: error: ", out), out
    assert re.search(rf"{re.escape(str(working))}\({n}\): error", out), out
    assert working.read_text() == edited  # the edit is kept as the user wrote it


def test_nvcc_error_in_an_edit_names_the_working_files_line(need_gpu, examples_dir, tmp_path):
    """cython on CUDA compiles the edit with nvcc, whose output TileLang does not capture:
    the `#line` directive alone makes it name W(LINE). A subprocess: nvcc writes to fd 2."""
    env = {k: v for k, v in os.environ.items() if k != "TLTRACE_EXAMPLES_CPU"}
    env.update(TILELANG_DISABLE_CACHE="1", TLTRACE_EXAMPLES_BACKEND="cython")
    script = examples_dir / "elementwise_add.py"
    working = tmp_path / "tmp" / "lower_trace_dir" / "elementwise_add" / "codegen_device.cpp"
    cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", "--mode", "both", str(script)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    n = _break_line(working)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    out = p.stdout + p.stderr
    print(out[-6000:])
    assert p.returncode != 0 and re.search(r"^\[\w+( \d+)?\] PATCHED\b", p.stdout, re.M)
    assert re.search(rf"{re.escape(str(working))}\({n}\): error", out), out
