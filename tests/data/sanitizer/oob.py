"""A kernel with an out-of-bounds store: the last block writes past B's end."""
import tilelang
import tilelang.language as T
import torch

N = 1000


@tilelang.jit(pass_configs={"tl.disable_safe_memory_legalize": True})
def scale(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[(bx * 128 + i) % n] * 2.0

    return main


k = scale(N)
a = torch.randn(N, device="cuda")
b = torch.empty(N, device="cuda")
k(a, b)
torch.cuda.synchronize()
print("done", float(b[:4].sum()))
