"""TileLang's upstream examples traced on a CUDA GPU (run on the device machine: `bash bench/gpu.sh`).

The examples are not part of this repository: `.upstream/examples/...` holds copies of
tile-ai/tilelang's `examples/gemm/example_gemm_autotune.py`,
`examples/flash_attention/example_mha_fwd_bshd.py` and
`examples/deepseek_mla/example_mla_decode.py` (ignored by git; `$TLTRACE_UPSTREAM`
points elsewhere). Without CUDA, or without the copies, every test here skips.

The full-grid autotuner check reads the trace dirs that `bench/gpu.sh autotune` left
(`$TLTRACE_GPU_AUTOTUNE_TRACE`, holding `quiet/` and `html/`), so the 288 compiles run
once for both the benchmark and the checks; without it the test traces the grid itself.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._records import read_manifest, rec_text
from .conftest import cuda_available

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("need_gpu")]

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = Path(os.environ.get("TLTRACE_UPSTREAM") or REPO / ".upstream")
AUTOTUNE = UPSTREAM / "examples/gemm/example_gemm_autotune.py"
FLASH = UPSTREAM / "examples/flash_attention/example_mha_fwd_bshd.py"
MLA = UPSTREAM / "examples/deepseek_mla/example_mla_decode.py"


def _need(script: Path) -> None:
    if not script.is_file():
        pytest.skip(f"{script} missing: copy tile-ai/tilelang's example there (see bench/gpu.sh)")


def _env() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TLTRACE_EXAMPLES_CPU", "TL_LOWER_TRACE", "TL_LOWER_TRACE_DIR")
    }
    env.update(TILELANG_DISABLE_CACHE="1", TILELANG_AUTO_TUNING_DISABLE_CACHE="1")
    return env


def _trace(script: Path, trace_dir: Path, *opts: str, args: tuple[str, ...] = (), timeout: int = 540):
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", *opts, "--trace-dir", str(trace_dir), str(script), *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=trace_dir.parent,
        timeout=timeout,
    )
    print(p.stdout[-4000:], p.stderr[-4000:])
    return p


def _manifests(script_dir: Path) -> dict[str, dict]:
    return {
        m.parent.name: read_manifest(m.parent)
        for m in sorted(script_dir.glob(".run_records/run_*/manifest.json"))
    }


def _grid_size() -> int:
    """How many configs the upstream example's autotuner compiles (its get_configs(), no roller)."""
    spec = importlib.util.spec_from_file_location("_upstream_gemm_autotune", AUTOTUNE)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return len(mod.get_configs(4096, 4096, 4096))


def _check_cuda_codegen(m: dict, run_dir: Path) -> None:
    assert m["target"] == "cuda", m["target"]
    assert any(r["phase"] == "pipeline_cuda" for r in m["records"])
    cg = [r for r in m["records"] if r["phase"] == "codegen" and r.get("status") == "codegen"]
    dev = [r for r in cg if r.get("role") == "device"]
    assert dev, [(r["name"], r.get("role")) for r in cg]
    src = rec_text(run_dir, dev[0])
    assert "__global__" in src
    assert not [r for r in m["records"] if r.get("status") == "failed"]


@pytest.fixture(scope="module")
def autotune_traces(tmp_path_factory) -> Path:
    """Trace dirs of the upstream autotuner's full grid: `quiet/` (records only) and `html/`."""
    if not cuda_available():  # module-scoped: set up before the autouse skip would run
        pytest.skip("no CUDA GPU")
    _need(AUTOTUNE)
    given = os.environ.get("TLTRACE_GPU_AUTOTUNE_TRACE")
    if given:
        return Path(given)
    root = tmp_path_factory.mktemp("autotune")
    p = _trace(AUTOTUNE, root / "html", "--quiet", "--mode", "html", args=("--use_autotune",), timeout=900)
    assert p.returncode == 0
    return root


@pytest.mark.parametrize("mode", ["quiet", "html"])
def test_autotune_full_grid_every_compile_kept(autotune_traces, mode):
    script_dir = autotune_traces / mode / AUTOTUNE.stem
    if not script_dir.is_dir():
        pytest.skip(f"no {mode} trace in {autotune_traces}")
    ms = _manifests(script_dir)
    n = _grid_size()
    print(f"{mode}: {len(ms)} compiles kept of {n} configs")
    assert n == 288
    assert len(ms) >= n  # default --keep: nothing of this invocation pruned
    invocations = {m.get("invocation") for m in ms.values()}
    assert len(invocations) == 1 and None not in invocations, invocations
    signatures = [m.get("signature") for m in ms.values()]
    assert None not in signatures and len(set(signatures)) == len(signatures)
    assert all(m["target"] == "cuda" for m in ms.values())


def test_autotune_index_lists_every_compile(autotune_traces):
    script_dir = autotune_traces / "html" / AUTOTUNE.stem
    if not script_dir.is_dir():
        pytest.skip(f"no html trace in {autotune_traces}")
    index = script_dir / "report.html"
    assert index.is_file()
    text = index.read_text()
    runs = _manifests(script_dir)
    missing = [run for run in runs if run not in text]
    assert not missing, f"{len(missing)} of {len(runs)} compiles not named in the index, e.g. {missing[:3]}"
    for run in runs:
        assert (script_dir / ".run_records" / run / "report.html").is_file()


@pytest.mark.parametrize("script", [FLASH, MLA], ids=["flash_attention_fwd", "mla_decode"])
def test_upstream_kernel_cuda_codegen_recorded(tmp_path, script):
    _need(script)
    if script is MLA and importlib.util.find_spec("einops") is None:
        pytest.skip("the MLA example needs einops")
    p = _trace(script, tmp_path / "t", "--quiet", "--mode", "both")
    assert p.returncode == 0
    script_dir = tmp_path / "t" / script.stem
    ms = _manifests(script_dir)
    assert ms
    for run, m in ms.items():
        _check_cuda_codegen(m, script_dir / ".run_records" / run)
    assert (script_dir / "report.html").is_file()
    assert (script_dir / "codegen_device.cpp").is_file() or list(script_dir.glob("codegen_*device.cpp"))
    print(script.stem, {run: len(m["records"]) for run, m in ms.items()})
