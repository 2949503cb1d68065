"""Elementwise C = A + B, traced pass by pass: `tltrace run examples/elementwise_add.py`."""

import argparse
import sys

import tilelang
import tilelang.language as T
import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import compile_kwargs, device  # noqa: E402


def make_add(n: int, block: int, dtype: str = "float32"):
    @T.prim_func
    def add(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--block", type=int, default=128)
    a = ap.parse_args(argv)
    kernel = tilelang.compile(make_add(a.n, a.block), **compile_kwargs())
    x = torch.randn(a.n, device=device())
    y = torch.randn(a.n, device=device())
    z = torch.empty(a.n, device=device())
    kernel(x, y, z)
    err = (z - (x + y)).abs().max().item()
    print(f"elementwise_add: n={a.n} block={a.block} max error {err:.3g}")
    if err > 1e-5:
        print("elementwise_add: WRONG RESULT")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
