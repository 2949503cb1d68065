"""Two kernels in one script (vadd: C = A + B, vmul: C = A * B), each with its own working files.

`tltrace run --mode both examples/two_kernels.py` writes codegen_device.cpp for the first
kernel (vadd) and codegen_vmul_device.cpp for the second. The script prints what each
kernel computed (a+b, a-b, a*b, ...) and exits 1 when one of them is wrong.
"""

import argparse
import sys

import tilelang
import tilelang.language as T
import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
from _common import compile_kwargs, device  # noqa: E402


def make(op: str, n: int, block: int, dtype: str = "float32", serial: bool = False):
    if op == "add" and serial:  # the same kernel at the same launch shape, with other code

        @T.prim_func
        def vadd(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
            with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                for i in T.serial(block):
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

        return vadd
    if op == "add":

        @T.prim_func
        def vadd(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
            with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

        return vadd

    @T.prim_func
    def vmul(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * B[bx * block + i]

    return vmul


def what(x, y, z) -> str:
    """Return which elementwise operation z holds."""
    for name, ref in (("a+b", x + y), ("a-b", x - y), ("a*b", x * y), ("a/b", x / y)):
        if torch.allclose(z, ref, atol=1e-5):
            return name
    return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1024, help="size of vadd (changing it changes vadd's codegen)")
    ap.add_argument("--m", type=int, default=1024, help="size of vmul")
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument(
        "--serial",
        action="store_true",
        help="vadd with a serial loop: other code at the same launch shape (its edit CONFLICTs)",
    )
    a = ap.parse_args(argv)
    ok = True
    for op, size, want in (("add", a.n, "a+b"), ("mul", a.m, "a*b")):
        kernel = tilelang.compile(make(op, size, a.block, serial=a.serial), **compile_kwargs())
        x = torch.randn(size, device=device())
        y = torch.rand(size, device=device()) + 0.5
        z = torch.empty(size, device=device())
        kernel(x, y, z)
        got = what(x, y, z)
        print(f"v{op}: computes {got} (expected {want})")
        ok = ok and got == want
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
