"""Test kernels: small CPU kernels for the profile, Chrome-trace, pytest-plugin, remarks and call-site
tests (target c, cython), and the pipelined GEMM that the CUDA-codegen tests lower on the CPU."""

from __future__ import annotations

from pathlib import Path

# The elementwise add kernel's source, shared by the test scripts that compile it.
ADD = """import tilelang
import tilelang.language as T


def make_add(n, block=64):
    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add
"""

KERNELS = (
    "\n"
    + ADD
    + '''

def build(n, block=64):
    return compile_(make_add(n, block))


def compile_(func):
    return tilelang.compile(func, target="c", execution_backend="cython")


def build_in_threads(sizes, threads=2):
    """Compile the variants in a thread pool. The prim_funcs are made here first: CPython 3.11's
    ast.parse (which T.prim_func runs) is not safe in concurrent threads."""
    import concurrent.futures as cf

    funcs = [make_add(n) for n in sizes]
    with cf.ThreadPoolExecutor(threads, thread_name_prefix="compiler") as pool:
        return list(pool.map(compile_, funcs))
'''
)

# A script compiling three variants in a pool of two named threads: one invocation, two tracks.
THREADED_SCRIPT = (
    KERNELS
    + """

if __name__ == "__main__":
    build_in_threads([64, 128, 192])
"""
)


# A pipelined GEMM's `make`, with its imports, for the tests that lower it for CUDA on the CPU
# (no GPU): each test's script is its own docstring, then this, then its own lowering.
GEMM_MAKE = """
import json
import sys

import tilelang
import tilelang.language as T
from tilelang import tvm


def make(M=512, N=512, K=512, bm=128, bn=128, bk=32, stages=3):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])
    return gemm
"""


def _op_lines(code: str) -> list[int]:
    import re

    return [
        i
        for i, ln in enumerate(code.split("\n"))
        if "=" in ln and re.search(r"\bA\b", ln) and re.search(r"\bB\b", ln) and re.search(r"\bC\b", ln)
    ]


def op_line(code: str) -> int:
    """The index of the one line of an elementwise kernel's generated C that combines A and B (C = A op B),
    found in the code TileLang generated rather than spelled here."""
    hits = _op_lines(code)
    assert len(hits) == 1, f"not one line computes C from A and B in the generated code: {hits}"
    return hits[0]


def _operator(line: str) -> tuple[int, int]:
    """Where the operator between the A and the B operand of `line` stands: (start, end), the binary
    operator between them at the shallowest nesting of parentheses."""
    import re

    rhs = line.index("=") + 1
    a = re.search(r"\bA\b", line[rhs:])
    b = re.search(r"\bB\b", line[rhs:])
    assert a is not None and b is not None and a.start() < b.start(), line
    depth, best = 0, None
    for i in range(rhs + a.end(), rhs + b.start()):
        c = line[i]
        depth += (c in "([") - (c in ")]")
        if c in "+-*/" and line[i - 1] == " " and line[i + 1] == " " and (best is None or depth < best[0]):
            best = (depth, i)
    assert best is not None, f"no operator between A and B in {line!r}"
    return best[1], best[1] + 1


def op_of(code: str) -> str:
    """The operator between A and B in `op_line` (`+` in elementwise_add as generated)."""
    (op,) = ops(code) if len(_op_lines(code)) == 1 else (None,)
    assert op is not None, f"not one line computes C from A and B: {_op_lines(code)}"
    return op


def ops(code: str) -> list[str]:
    """The operator between A and B on every line that computes C from them (a file with conflict markers
    holds two such lines)."""
    lines = code.split("\n")
    out = []
    for at in _op_lines(code):
        start, end = _operator(lines[at])
        out.append(lines[at][start:end])
    return out


def swap_op(code: str, new: str) -> str:
    """The generated C with the operator between A and B in `op_line` turned into `new` (an edit that
    changes the kernel's numbers: the sum becomes a difference)."""
    lines = code.split("\n")
    at = op_line(code)
    start, end = _operator(lines[at])
    lines[at] = lines[at][:start] + new + lines[at][end:]
    return "\n".join(lines)


# The transposed-B pipelined GEMM (`matmul`) the sm_90a / sm_80 compile-only tests lower with
# tilelang.lower (CUDA codegen on the CPU), with its imports; each test appends its own lowering.
# `bad` adds a fixed swizzle and a fragment layout the gemm cannot use (a layout inference failure).
MATMUL = """
import os
import sys

import tilelang
import tilelang.language as T
from tilelang import tvm
from tilelang.layout import Fragment, make_swizzled_layout


def matmul(M, N, K, bm, bn, bk, stages, threads, dtype="float16", accum="float32", bad=False):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bn, bk), dtype)
            C_l = T.alloc_fragment((bm, bn), accum)
            if bad:  # a fixed swizzle, and a fragment layout the gemm cannot use
                T.annotate_layout({
                    A_s: make_swizzled_layout(A_s),
                    C_l: Fragment([bm, bn], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j),
                })
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C[by * bm, bx * bn])

    return main
"""


def lowered(arch: str = "sm_90a", stages: int = 2) -> str:
    """A script lowering MATMUL for `arch` (tilelang.lower: CUDA codegen on the CPU, no GPU)."""
    return (
        MATMUL
        + f"""

target = tvm.target.Target({{"kind": "cuda", "arch": "{arch}"}})
with target:
    tilelang.lower(matmul(256, 256, 256, 128, 128, 32, {stages}, 128), target=target)
"""
    )


SM90A = lowered()

# tilelang.lower without a target context: a pass raises (the fails of the recorded traces, a repro's).
LOWER_FAILS = '''"""tilelang.lower without a target context: tl.LayoutInference raises inside the pass."""
import tilelang
import tilelang.language as T


@T.prim_func
def scale(A: T.Tensor((256,), "float32"), B: T.Tensor((256,), "float32")):
    with T.Kernel(4, threads=64) as bx:
        for i in T.Parallel(64):
            B[bx * 64 + i] = A[bx * 64 + i] * 2.0


tilelang.lower(scale, target="c")
'''


# A small CPU GEMM (target c) whose lines carry markers the source-map and call-site tests find
# (`# COPY`, `# GEMM`, `# STORE`); each test appends its own main.
CPU_GEMM = """
import sys

import tilelang
import tilelang.language as T


def make(M=64, N=64, K=32, bM=32, bN=32, bK=16):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float32")
            B_s = T.alloc_shared((bK, bN), "float32", scope="shared")  # the CPU takes one .dyn
            C_l = T.alloc_local((bM, bN), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=0):
                T.copy(A[by * bM, k * bK], A_s)  # COPY
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)  # GEMM
            T.copy(C_l, C[by * bM, bx * bN])  # STORE

    return gemm
"""

# A Hopper GEMM through shared memory for the compile-only sm_90a source-map tests and the line
# directives bench (markers: `# C_L`, `# CLEAR`, `# STORE`).
HOPPER_GEMM = """
import tilelang.language as T


def make(M=256, N=256, K=256, bM=128, bN=128, bK=64):
    @T.prim_func
    def hgemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_s = T.alloc_shared((bM, bK), "float16")
            B_s = T.alloc_shared((bK, bN), "float16")
            C_l = T.alloc_fragment((bM, bN), "float32")  # C_L
            C_s = T.alloc_shared((bM, bN), "float16")
            T.clear(C_l)  # CLEAR
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.copy(A[by * bM, k * bK], A_s)
                T.copy(B[k * bK, bx * bN], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * bM, bx * bN])  # STORE

    return hgemm
"""


def prim_func_body(path) -> set[int]:
    """The lines of the first T.prim_func's body in a script (its `def` line and decorator excluded),
    read from the script's ast: what a kernel's own lines are, independently of tltrace."""
    import ast
    from pathlib import Path

    for node in ast.walk(ast.parse(Path(path).read_text())):
        if isinstance(node, ast.FunctionDef) and any(
            "prim_func" in ast.unparse(d) for d in node.decorator_list
        ):
            return set(range(node.body[0].lineno, (node.end_lineno or 0) + 1))
    raise AssertionError("no T.prim_func")


def compile_add(n: int = 256, block: int = 64):
    """examples/elementwise_add.py's kernel compiled for the CPU (target c, cython), in this process."""
    import sys
    from pathlib import Path

    examples = str(Path(__file__).resolve().parent.parent / "examples")
    sys.path.insert(0, examples)
    try:
        import tilelang
        from elementwise_add import make_add
    finally:
        sys.path.remove(examples)
    return tilelang.compile(make_add(n, block), target="c", execution_backend="cython")


def load_script(path, text: str | None = None, name: str | None = None):
    """Import a kernel script as a module from its file (T.prim_func reads its source there), without
    running its `__main__` part; `text`, when given, is written to `path` first."""
    import importlib.util
    from pathlib import Path

    path = Path(path)
    if text is not None:
        path.write_text(text)
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# The out-of-bounds store of tests/data/sanitizer/oob.py (the last of 8 blocks writes past B's 1000
# floats) lowered for sm_90a on the CPU (CUDA codegen, no GPU), for `run --sanitize`: the recorded
# script's kernel, its @tilelang.jit line made a comment (the lines keep their numbers), then the
# lowering. The store is the one line `B[...] = ...` (the tests find it with ast).
def _oob_lowered() -> str:
    script = (Path(__file__).resolve().parent / "data" / "sanitizer" / "oob.py").read_text()
    kernel = script.split("\nk = scale(N)", 1)[0].replace("@tilelang.jit(", "# @tilelang.jit(")
    return (
        kernel
        + """
from tilelang import tvm

target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
with target, tvm.transform.PassContext(config={"tl.disable_safe_memory_legalize": True}):
    tilelang.lower(scale(N), target=target)
"""
    )


OOB_LOWERED = _oob_lowered()


# A kernel with a dynamic size (T.dynamic) launched at three sizes: the launch records' test
# (tests/test_launches.py). The script writes each launch's tensors (shape, dtype, strides,
# device, as torch says them) to the JSON file its first argument names: the records' oracle.
# A second argument `cuda` compiles for the GPU (tvm_ffi) and launches on CUDA tensors.
DYNAMIC_SCALE = """import json
import sys

import torch
import tilelang
import tilelang.language as T


def make_scale(block=64):
    n = T.dynamic("n")

    @T.prim_func
    def scale(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * 2.0

    return scale


def tensors(t):
    return [list(t.shape), str(t.dtype).removeprefix("torch."), list(t.stride()), str(t.device)]


if __name__ == "__main__":
    cuda = sys.argv[2:] == ["cuda"]
    where = {"target": "cuda", "execution_backend": "tvm_ffi"} if cuda else {"target": "c", "execution_backend": "cython"}
    kernel = tilelang.compile(make_scale(), **where)
    seen = []
    for size in (64, 200, 1000):
        a = torch.arange(size, dtype=torch.float32, device="cuda" if cuda else "cpu")
        b = torch.empty_like(a)
        kernel(a, b)
        assert torch.equal(b, a * 2)
        seen.append({"size": size, "args": [tensors(a), tensors(b)]})
    with open(sys.argv[1], "w") as f:
        json.dump(seen, f)
"""
SCALE_BLOCK = 64  # make_scale's block: the grid of a launch of n elements is ceil(n / 64)
