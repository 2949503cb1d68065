import tilelang
import tilelang.language as T
import torch


@tilelang.jit(target="c", execution_backend="cython")
def spin(n: int = 4):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for _i in T.serial(1 << 30):
                for _j in T.serial(1 << 30):
                    B[0] = B[0] * A[1] + A[0]

    return main


k = spin()
a = torch.ones(4)
b = torch.zeros(4)
k(a, b)  # HANG-HERE
print("never")
