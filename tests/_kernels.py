"""Small CPU kernels for the profile, Chrome-trace, pytest-plugin, remarks and call-site tests (target c, cython)."""

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
