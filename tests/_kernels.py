"""Test kernels: small CPU kernels for the profile, Chrome-trace, pytest-plugin, remarks and call-site
tests (target c, cython), and the pipelined GEMM that the CUDA-codegen tests lower on the CPU."""

from __future__ import annotations

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
