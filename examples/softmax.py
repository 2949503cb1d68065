"""Row softmax with T.reduce_max / T.reduce_sum: `tltrace run examples/softmax.py`."""

import argparse
import os
import sys

import tilelang
import tilelang.language as T
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import compile_kwargs, device, has_cuda  # noqa: E402


def make_softmax(M: int, N: int, block_M: int, dtype: str = "float32"):
    gpu = has_cuda()
    # The CPU backend has no fragments: thread-private local buffers and serial loops there.
    alloc = T.alloc_fragment if gpu else T.alloc_local
    loop = T.Parallel if gpu else T.grid

    @T.prim_func
    def softmax(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = alloc((block_M, N), dtype)
            row_max = alloc((block_M,), dtype)
            row_sum = alloc((block_M,), dtype)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in loop(block_M, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in loop(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return softmax


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--m", type=int, default=256)
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--block", type=int, default=8, help="rows per block")
    a = ap.parse_args(argv)
    kernel = tilelang.compile(make_softmax(a.m, a.n, a.block), **compile_kwargs())
    X = torch.randn(a.m, a.n, device=device())
    Y = torch.empty_like(X)
    kernel(X, Y)
    err = (Y - torch.softmax(X, dim=1)).abs().max().item()
    print(f"softmax: {a.m}x{a.n} block {a.block} on {device()} max error {err:.3g}")
    if err > 1e-5:
        print("softmax: WRONG RESULT")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
