"""GEMM C = A @ B with shared-memory tiles and T.gemm: `tltrace run examples/gemm.py --mode both`."""

import argparse
import os
import sys

import tilelang
import tilelang.language as T
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import compile_kwargs, device, has_cuda  # noqa: E402


def make_gemm(M: int, N: int, K: int, block_M: int, block_N: int, block_K: int, dtype: str, accum: str):
    gpu = has_cuda()

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype, scope="shared.dyn" if gpu else "shared")
            # The CPU backend rejects fragments; a local buffer plays the accumulator there.
            C_local = (
                T.alloc_fragment((block_M, block_N), accum)
                if gpu
                else T.alloc_local((block_M, block_N), accum)
            )
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2 if gpu else 0):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def main(argv=None) -> int:
    gpu = has_cuda()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--m", type=int, default=1024 if gpu else 128)
    ap.add_argument("--n", type=int, default=1024 if gpu else 128)
    ap.add_argument("--k", type=int, default=1024 if gpu else 64)
    ap.add_argument("--block", type=int, default=128 if gpu else 32, help="block_M = block_N")
    ap.add_argument("--block-k", type=int, default=32 if gpu else 16)
    a = ap.parse_args(argv)
    dtype, accum = ("float16", "float32") if gpu else ("float32", "float32")
    func = make_gemm(a.m, a.n, a.k, a.block, a.block, a.block_k, dtype, accum)
    kernel = tilelang.compile(func, **compile_kwargs())
    tdt = torch.float16 if gpu else torch.float32
    A = torch.randn(a.m, a.k, device=device(), dtype=tdt)
    B = torch.randn(a.k, a.n, device=device(), dtype=tdt)
    C = torch.empty(a.m, a.n, device=device(), dtype=tdt)
    kernel(A, B, C)
    ref = (A.float() @ B.float()).to(tdt)
    err = (C.float() - ref.float()).abs().max().item()
    tol = 5e-2 * a.k**0.5 if gpu else 1e-3
    print(f"gemm: {a.m}x{a.n}x{a.k} block {a.block}/{a.block_k} on {device()} max error {err:.3g}")
    if err > tol:
        print("gemm: WRONG RESULT")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
