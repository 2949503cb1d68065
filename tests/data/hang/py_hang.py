import time

import tilelang
import tilelang.language as T


@tilelang.jit(target="c", execution_backend="cython")
def add(n: int = 4):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = A[i] + 1.0

    return main


k = add()
while True:
    time.sleep(0.05)  # HANG-HERE
