"""Small CPU kernels for the profile, Chrome-trace and pytest-plugin tests (target c, cython)."""

from __future__ import annotations

KERNELS = '''
import tilelang
import tilelang.language as T


def make_add(n, block=64):
    @T.prim_func
    def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] + B[bx * block + i]

    return add


def build(n, block=64):
    return tilelang.compile(make_add(n, block), target="c", execution_backend="cython")
'''

# A script compiling three variants in a pool of two named threads: one invocation, two tracks.
THREADED_SCRIPT = KERNELS + '''

if __name__ == "__main__":
    import concurrent.futures as cf

    with cf.ThreadPoolExecutor(2, thread_name_prefix="compiler") as pool:
        list(pool.map(build, [64, 128, 192]))
'''
