"""Where PTX `.loc` entries land: TileLang's own `#line` directives against `tltrace run --line-directives`.

A compile-only sm_90a GEMM (tilelang.lower, no GPU), built twice: once with the pass config
`tl.emit_line_directives` (TileLang's directives, never scoped), once traced with
TLTRACE_LINE_DIRECTIVES=1 (tltrace's scoped ones). Each source goes through
`nvcc -ptx -lineinfo -arch=sm_90a`; the script prints, per build, the `.loc` entries, those
naming the kernel's `.py`, and how many of those fall outside the kernel's body (drift).

    python bench/line_directives.py          (needs nvcc; about 20 s on the CPU)
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests._kernels import HOPPER_GEMM  # noqa: E402
from tests._kernels import prim_func_body as body_lines  # noqa: E402

KERNEL = HOPPER_GEMM  # tests/_kernels.py


def locs(source: str) -> list[tuple[str, int]]:
    from tltrace.toolchain.nvcc import _includes, nvcc

    with tempfile.TemporaryDirectory() as d:
        cu, ptx = os.path.join(d, "k.cu"), os.path.join(d, "k.ptx")
        Path(cu).write_text(source)
        cmd = [
            nvcc() or "nvcc",
            "-ptx",
            "-lineinfo",
            "-arch=sm_90a",
            "-std=c++20",
            *_includes(),
            "-w",
            "-o",
            ptx,
            cu,
        ]
        subprocess.run(cmd, check=True, capture_output=True)
        text = Path(ptx).read_text()
    files = {int(m.group(1)): m.group(2) for m in re.finditer(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', text, re.M)}
    return [(files.get(int(f), "?"), int(n)) for f, n in re.findall(r"^\s*\.loc\s+(\d+)\s+(\d+)", text, re.M)]


def main() -> int:
    import tilelang

    import tltrace

    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "bench_hgemm.py"
        script.write_text(KERNEL)
        spec = importlib.util.spec_from_file_location("bench_hgemm", script)
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        body = body_lines(script)
        tgt = tilelang.tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
        with tgt, tilelang.tvm.transform.PassContext(config={"tl.emit_line_directives": True}):
            raw = tilelang.lower(mod.make(), target=tgt, enable_device_compile=False).kernel_source
        os.environ["TLTRACE_LINE_DIRECTIVES"] = "1"
        tltrace.enable(mode="terminal", trace_dir=Path(d) / "trace", quiet=True)
        try:
            with tgt:
                ours = tilelang.lower(mod.make(), target=tgt, enable_device_compile=False).kernel_source
        finally:
            tltrace.disable()
        for name, src in (("TileLang tl.emit_line_directives", raw), ("tltrace --line-directives", ours)):
            all_locs = locs(src)
            py = [n for f, n in all_locs if f == str(script)]
            outside = [n for n in py if n not in body]
            print(
                f"{name}: {src.count(chr(10) + '#line ')} #line directives, {len(all_locs)} .loc, "
                f"{len(py)} name the .py, {len(outside)} of them outside the kernel body "
                f"(lines {sorted(set(outside))[:12]})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
