"""A repro of tl.LowerTileOp of an sm_90a lowering where TileLang is found through PYTHONPATH only.

The H200 machine's TileLang is on PYTHONPATH (`.device/env.sh`), not installed: a repro
whose rerun child ran under `python -I` could not import it, so both paths said "not
reproduced". Here a venv without site packages stands for that machine: the test
process's sys.path goes on PYTHONPATH. A small GEMM lowered for sm_90a (CUDA codegen on
the CPU, no GPU, no nvcc) has a LowerTileOp whose input carries shared-memory layouts,
as FlashAttention's does (they do not survive JSON, so the replay path is taken).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tltrace.history import runs as history_runs

SM90 = '''
"""A small GEMM lowered for sm_90a on the CPU: CUDA codegen, no GPU, no nvcc."""
import tilelang
import tilelang.language as T
from tilelang import tvm


@T.prim_func
def gemm(A: T.Tensor((128, 128), "float16"), B: T.Tensor((128, 128), "float16"),
         C: T.Tensor((128, 128), "float16")):
    with T.Kernel(2, 2, threads=128) as (bx, by):
        A_s = T.alloc_shared((64, 64), "float16")
        B_s = T.alloc_shared((64, 64), "float16")
        C_l = T.alloc_fragment((64, 64), "float32")
        T.clear(C_l)
        for k in T.Pipelined(2, num_stages=2):
            T.copy(A[by * 64, k * 64], A_s)
            T.copy(B[k * 64, bx * 64], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by * 64, bx * 64])


target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target:
    tilelang.lower(gemm, target=target)
'''


def _tltrace_root() -> str:
    import tltrace

    return str(Path(tltrace.__file__).resolve().parent.parent)


def _env(paths: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")}
    env["TILELANG_DISABLE_CACHE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> tuple[Path, list[str]]:
    """A Python with no site packages, and the PYTHONPATH that gives it TileLang and tltrace."""
    home = tmp_path_factory.mktemp("bare")
    venv.create(home / "venv", with_pip=False, system_site_packages=False, symlinks=True)
    paths = [_tltrace_root(), *(p for p in sys.path if p and Path(p).is_dir())]
    python = home / "venv" / "bin" / "python"
    p = subprocess.run([str(python), "-I", "-c", "import tilelang"], capture_output=True, env=_env(paths))
    assert p.returncode != 0  # under -I the venv has no TileLang: the device machine's situation
    return python, paths


def test_repro_of_lower_tile_op_for_sm90a_with_tilelang_on_pythonpath(bare, tmp_path: Path) -> None:
    python, paths = bare
    (tmp_path / "sm90.py").write_text(SM90)

    def tltrace(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(python), "-m", "tltrace", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=_env(paths),
            timeout=600,
        )

    p = tltrace("run", "--quiet", "--trace-dir", "tr", "sm90.py")
    assert p.returncode == 0, p.stderr[-2000:]
    m = history_runs.open_selection("sm90.py", None, tmp_path / "tr", None).one().require()
    assert m.repro  # the run saved reproducer data
    changed = {r.name for r in m.records if r.status == "changed"}
    assert "LowerTileOp" in changed, sorted(changed)
    out = tmp_path / "repro"
    p = tltrace("repro", "--trace-dir", "tr", "sm90.py", "--pass", "LowerTileOp", "-o", str(out))
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    assert p.stdout.splitlines()[-2] == "reproduced"

    # Standalone, elsewhere, the script gone; TileLang through PYTHONPATH, tltrace not on it.
    (tmp_path / "sm90.py").unlink()
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(out, elsewhere / "repro")
    root = _tltrace_root()
    bare_paths = [p for p in paths if p != root and not (Path(p) / "tltrace").is_dir()]
    run = [str(python), str(elsewhere / "repro" / "repro.py")]
    p = subprocess.run(run, cwd=elsewhere, capture_output=True, text=True, env=_env(bare_paths), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    assert p.stdout.strip().endswith("reproduced") and "imported tltrace" not in p.stdout

    # Under -I that Python has no TileLang: one line saying so and what to do, exit 2.
    p = subprocess.run(
        [str(python), "-I", *run[1:]], cwd=elsewhere, capture_output=True, text=True, env=_env(bare_paths)
    )
    assert p.returncode == 2 and not p.stdout
    assert p.stderr.count("\n") == 1 and "TileLang is not importable" in p.stderr and "-I" in p.stderr
