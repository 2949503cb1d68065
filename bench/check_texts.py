"""Issue 51's truth check on the kernels its author may bring: `tltrace run --check-texts` per kernel.

    PYTHONPATH=<tree> python bench/check_texts.py [--kernels fa_fwd,mla_decode,gemm_autotune,examples]
        [--gemm-configs 8]

`--check-texts` prints every IR inline at its pass callback, on the compiling thread, and
compares each text tltrace recorded with that print; each compile ends with a line saying
how many texts it checked and how many differed. This runs one `tltrace run --quiet
--check-texts` process per kernel and adds those lines up:

- fa_fwd: the upstream FlashAttention forward (.upstream/examples/flash_attention/
  example_mha_fwd_bshd.py, the kernel its `main` builds untuned, and the causal one), lowered
  for sm_90a on the CPU (`tilelang.lower`, no GPU, no nvcc);
- mla_decode: the upstream MLA decode (.upstream/examples/deepseek_mla/example_mla_decode.py,
  `main`'s sizes), sm_90a;
- gemm_autotune: the upstream autotuner's GEMM (.upstream/examples/gemm/example_gemm_autotune.py,
  `matmul`) at --gemm-configs configs spread over its 288-config grid, sm_90a;
- examples: each script of examples/ as it is (compiled for the CPU, TLTRACE_EXAMPLES_CPU=1).

The upstream files are imported unmodified from $TLTRACE_UPSTREAM, else <tree>/.upstream, else
the main checkout's (/work/main/.upstream); `einops` (only the MLA file's reference program
uses it) is stood in for when it is not installed. Exit status: 0 when no text differed, 1
when one did, 2 when a kernel's run failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from bench_common import md_head  # noqa: E402

HEADING = "## Truth check (`--check-texts`) on upstream kernels (issue 51)"
# --check-texts' line per compile (session/capture.py): texts checked, of them printed (the rest reused).
CHECKED = re.compile(r"(\d+) IR texts checked against an inline print: all equal \((\d+) printed")
DIFFERED = re.compile(r"(\d+) of (\d+) IR texts differed from an inline print \((\d+) printed")


def upstream() -> Path:
    """Where the upstream examples are (see the module's doc)."""
    for p in (os.environ.get("TLTRACE_UPSTREAM"), REPO / ".upstream", "/work/main/.upstream"):
        if p and Path(p, "examples").is_dir():
            return Path(p)
    raise SystemExit("check_texts.py: error: no .upstream/examples (set TLTRACE_UPSTREAM)")


# The script lowering one upstream kernel's prim_funcs (`funcs`, made by the kernel's body) for sm_90a.
LOWER = """
import importlib.util
import itertools
import sys
import types

try:
    import einops  # noqa: F401
except ImportError:  # only the MLA file's reference program uses it
    sys.modules["einops"] = types.SimpleNamespace(einsum=None, rearrange=None)

import tilelang
from tilelang import tvm


def load(rel):
    spec = importlib.util.spec_from_file_location(rel.rsplit("/", 1)[-1][:-3], {up!r} + "/examples/" + rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


{body}
target = tvm.target.Target({{"kind": "cuda", "arch": "sm_90a"}})
for func in funcs:
    with target:
        tilelang.lower(func, target=target)
"""

BODIES = {
    "fa_fwd": """
fa = load("flash_attention/example_mha_fwd_bshd.py").flashattn.jit_impl
funcs = [fa.get_tir(8, 32, 4096, 128, causal, block_M=128, block_N=128, num_stages=1, threads=128)
         for causal in (False, True)]
""",
    "mla_decode": """
mla = load("deepseek_mla/example_mla_decode.py").flashattn
funcs = [mla.get_tir(132, 128, 1, 8192, 512, 64, 64, 64, 1)]
""",
    "gemm_autotune": """
g = load("gemm/example_gemm_autotune.py")
grid = g.get_configs(4096, 4096, 4096)
step = len(grid) / {configs}
funcs = [g.matmul.get_tir(4096, 4096, 4096, **grid[int(i * step)]) for i in range({configs})]
""",
}


def run_checked(script: Path, work: Path, env: dict[str, str]) -> tuple[int, int, int, int, str]:
    """Run `script` under `tltrace run --quiet --check-texts`; return (compiles, checked, printed, differed,
    output)."""
    cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", "--check-texts", "--trace-dir", str(work / "t")]
    p = subprocess.run([*cmd, str(script)], cwd=work, env=env, capture_output=True, text=True)
    out = p.stdout + p.stderr
    if p.returncode:
        raise RuntimeError(f"{script.name}: exit {p.returncode}: {out[-800:]}")
    equal = [(0, int(m.group(1)), int(m.group(2))) for m in CHECKED.finditer(out)]
    differed = [(int(m.group(1)), int(m.group(2)), int(m.group(3))) for m in DIFFERED.finditer(out)]
    lines = equal + differed  # (differed, checked, printed) per compile
    checked, printed, wrong = (sum(x[i] for x in lines) for i in (1, 2, 0))
    return len(lines), checked, printed, wrong, out


def scripts(kernels: list[str], work: Path, gemm_configs: int) -> list[tuple[str, Path]]:
    """(name, script) of each kernel to check."""
    out = []
    for k in kernels:
        if k == "examples":
            out += [(f"examples/{p.name}", p) for p in sorted((REPO / "examples").glob("[!_]*.py"))]
            continue
        script = work / f"{k}.py"
        body = BODIES[k].format(configs=gemm_configs)
        script.write_text(LOWER.format(up=str(upstream()), body=body))
        out.append((k, script))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="fa_fwd,mla_decode,gemm_autotune,examples")
    ap.add_argument("--gemm-configs", type=int, default=8)
    a = ap.parse_args(argv)
    kernels = [k.strip() for k in a.kernels.split(",") if k.strip()]
    if unknown := [k for k in kernels if k not in (*BODIES, "examples")]:
        ap.error(f"unknown kernel {unknown[0]!r} (choose from {', '.join([*BODIES, 'examples'])})")
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "TLTRACE_EXAMPLES_CPU": "1"}
    env.pop("TL_LOWER_TRACE", None)
    lines = [HEADING, "", f"`python bench/check_texts.py --kernels {','.join(kernels)}`", ""]
    lines += md_head("kernel", "compiles", "texts checked", "of them printed", "reused", "differed")
    status = 0
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-check-") as td:
        for i, (name, script) in enumerate(scripts(kernels, Path(td), a.gemm_configs)):
            work = Path(td) / str(i)
            work.mkdir()
            try:
                compiles, checked, printed, differed, out = run_checked(script, work, env)
            except RuntimeError as exc:
                print(f"check_texts.py: {exc}", file=sys.stderr)
                lines.append(f"| {name} | failed | - | - | - | - |")
                status = 2
                continue
            if differed:
                status = max(status, 1)
                print(
                    *(line for line in out.splitlines() if DIFFERED.search(line)), sep="\n", file=sys.stderr
                )
            lines.append(
                f"| {name} | {compiles} | {checked} | {printed} | {checked - printed} | {differed} |"
            )
            print(f"{name}: {compiles} compiles, {checked} checked, {differed} differed", file=sys.stderr)
    print("\n".join(lines))
    return status


if __name__ == "__main__":
    sys.exit(main())
