"""Source maps of CUDA compiles on a GPU: upstream FlashAttention and GEMM (run on the device machine).

`.upstream/examples/...` holds copies of tile-ai/tilelang's examples (see
test_gpu_upstream.py); without CUDA or without them every test here skips. Each test
compiles the kernel untraced and traced (tltrace.enable, html mode) in one process and
checks that the compiled CUDA source is byte-identical, that the line storing the output
maps to the Python line of the store, and prints the coverage for docs/benchmarks.md
(`pytest -m gpu tests/test_gpu_sourcemap.py -s`).
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

import pytest

from tltrace.history import runs
from tltrace.history import sourcemaps as V
from tltrace.sourcemap import lines as sm

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("need_gpu")]

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = Path(os.environ.get("TLTRACE_UPSTREAM") or REPO / ".upstream")
FLASH = UPSTREAM / "examples/flash_attention/example_mha_fwd_bshd.py"
GEMM = UPSTREAM / "examples/gemm/example_gemm_autotune.py"


def _load(path: Path, name: str):
    if not path.is_file():
        pytest.skip(f"{path} missing: copy tile-ai/tilelang's example there (see bench/gpu.sh)")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _line_of(path: Path, needle: str, after: str | None = None) -> int:
    """The first line holding `needle` (after the line holding `after`: the traced function's own)."""
    lines = path.read_text().split("\n")
    start = next(i for i, ln in enumerate(lines) if after in ln) if after else 0
    return next(i for i, ln in enumerate(lines[start:], start + 1) if needle in ln)


def _traced_and_plain(tmp_path: Path, func, pass_configs: dict) -> tuple[str, str, Path]:
    import tilelang

    import tltrace

    plain = tilelang.compile(func, target="cuda", pass_configs=pass_configs).get_kernel_source()
    tltrace.enable(mode="html", trace_dir=tmp_path / "trace", quiet=True)
    try:
        traced = tilelang.compile(func, target="cuda", pass_configs=pass_configs).get_kernel_source()
    finally:
        tltrace.disable()
    (run_dir,) = sorted((tmp_path / "trace").glob("*/.run_records/run_*"))
    return plain, traced, run_dir


def _check(run_dir: Path, py_file: Path, store_line: int, out_name: str) -> None:
    run = runs.load_run(run_dir)
    data = V.summary(run)
    device = data["codegen"]["device"]
    assert device, "no generated device source recorded"
    stores = [
        x for x in device if " = " in x["text"] and re.search(rf"\b{out_name}\b", x["text"].split(" = ")[0])
    ]
    stores += [x for x in device if "tma_store(" in x["text"] or f"{out_name}[" in x["text"]]
    assert any(
        x["src"]
        and (x["src"]["file"], x["src"]["line"]) == (str(py_file), store_line)
        and not x["src"].get("inferred")
        for x in stores
    ), stores
    stmts = [x for x in device if sm._is_statement(x["text"])]
    mapped = [x for x in stmts if x["src"]]
    exact = [x for x in mapped if not x["src"].get("inferred")]
    ir = [p for p in data["passes"] if p["status"] != "codegen"]
    lost = sorted({p["name"] for p in ir for x in p.get("lost") or () if x["file"] == str(py_file)})
    print(
        f"\n{py_file.name}: generated device source {len(exact)}/{len(stmts)} statement lines exact "
        f"({len(exact) / max(1, len(stmts)):.0%}), {len(mapped)}/{len(stmts)} with inferred "
        f"({len(mapped) / max(1, len(stmts)):.0%}); IR first pass {ir[0]['mapped']}/{ir[0]['lines']}, "
        f"last pass {ir[-1]['mapped']}/{ir[-1]['lines']}; passes dropping a line of the kernel: {', '.join(lost)}"
    )


def test_flash_attention_cuda_source_map(tmp_path):
    import tilelang

    mod = _load(FLASH, "_smap_flash")
    func = mod.flashattn.jit_impl.get_tir(
        1, 4, 256, 64, False, block_M=64, block_N=64, num_stages=1, threads=128
    )
    plain, traced, run_dir = _traced_and_plain(
        tmp_path, func, {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}
    )
    assert traced == plain
    _check(run_dir, FLASH, _line_of(FLASH, "T.copy(O_shared, Output["), "Output")


def test_gemm_cuda_source_map(tmp_path):
    mod = _load(GEMM, "_smap_gemm")
    cfg = {"block_M": 128, "block_N": 256, "block_K": 64, "num_stages": 3, "thread_num": 256}
    func = mod.matmul.get_tir(1024, 1024, 1024, enable_rasteration=True, **cfg)
    plain, traced, run_dir = _traced_and_plain(tmp_path, func, {})
    assert traced == plain
    _check(run_dir, GEMM, _line_of(GEMM, "T.copy(C_shared, C[by * block_M", after="def matmul("), "C")
