"""Invocation ids, launch shapes and signatures, read from real CPU compiles."""

from __future__ import annotations

import os
import textwrap

import pytest

from tltrace.config import Settings
from tltrace.format.writer import process_start, writer_alive, writer_token
from tltrace.runner import Target, run_target
from tltrace.session.signature import launch_info, signature, variant_key

from ._records import manifests as _manifests
from .conftest import EXAMPLES

SCRIPT = textwrap.dedent(
    """
    import sys, threading
    sys.path.insert(0, {examples!r})
    import tilelang
    import tilelang.language as T
    from elementwise_add import make_add

    def make_sub(n, block):
        @T.prim_func
        def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
                for i in T.Parallel(block):
                    C[bx * block + i] = A[bx * block + i] - B[bx * block + i]
        return add

    def build(n, name):
        tilelang.compile(make_add(n, 128), target="c", execution_backend="cython")

    threads = [threading.Thread(target=build, args=(n, f"size{{n}}"), name=f"size{{n}}") for n in (256, 512)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Same name, same shapes, another body: same variant, other signature.
    tilelang.compile(make_sub(256, 128), target="c", execution_backend="cython")
    """
)


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    """Two invocations of a script compiling `add` at n=256 and 512 in threads, then a variant body."""
    tmp = tmp_path_factory.mktemp("sig")
    script = tmp / "sizes.py"
    script.write_text(SCRIPT.format(examples=str(EXAMPLES)))
    import tilelang  # noqa: F401

    invocations = []
    for _ in range(2):
        settings = Settings(mode="terminal", trace_dir=tmp / "tr", script_name="sizes", quiet=True, keep=0)
        assert run_target(Target(str(script)), settings, lambda e: None) == 0
        invocations.append(settings.invocation)
    return _manifests(tmp / "tr" / "sizes"), invocations


def test_one_invocation_id_per_invocation(sized):
    manifests, invocations = sized
    assert len(manifests) == 6
    assert invocations[0] != invocations[1]
    by_inv = {}
    for m in manifests:
        by_inv.setdefault(m.invocation, []).append(m)
    assert sorted(by_inv) == sorted(invocations)
    assert all(len(v) == 3 for v in by_inv.values())


def test_launch_read_from_the_input_ir(sized):
    manifests, _ = sized
    for m in manifests:
        n = m.launch["buffers"][0]["shape"][0]
        assert n in (256, 512)
        assert m.launch["grid"] == [n // 128]
        assert m.launch["threads"] == [128]
        assert [b["name"] for b in m.launch["buffers"]] == ["A", "B", "C"]
        assert {b["dtype"] for b in m.launch["buffers"]} == {"float32"}
        assert m.signature.startswith(f"add {n},{n},{n} f32 grid {n // 128} thr 128 #")
        assert m.signature.endswith(m.input_hash[:6])


def test_signatures_tell_compiles_apart(sized):
    manifests, invocations = sized
    first = [m for m in manifests if m.invocation == invocations[0]]
    second = [m for m in manifests if m.invocation == invocations[1]]
    # Within one invocation: three different input IRs, three signatures.
    assert len({m.signature for m in first}) == 3
    assert len({m.input_hash for m in first}) == 3
    # Across invocations the same inputs give the same signatures.
    assert {m.signature for m in first} == {m.signature for m in second}
    # The variant key ignores the body: the n=256 add and sub share one key, 512 has its own.
    keys = {m.signature: variant_key(m.kernel, m.launch) for m in first}
    assert len(set(keys.values())) == 2


def test_thread_and_writer_recorded(sized):
    manifests, _ = sized
    names = {m.thread for m in manifests}
    assert {"size256", "size512", "MainThread"} <= names
    assert len({m.thread_id for m in manifests if m.thread != "MainThread"}) >= 1
    me = writer_token()
    for m in manifests:
        assert m.writer == me
        assert writer_alive(m.writer, m.run_id)


def test_writer_alive_needs_the_same_process():
    me = writer_token()
    assert me["pid"] == os.getpid() and me["start"] == process_start(os.getpid())
    # The same pid with another start time is another process: the run's writer is gone.
    assert not writer_alive({**me, "start": str(int(me["start"]) + 1)})
    assert not writer_alive({"pid": 2**22 + 12345, "start": "1", "host": me["host"]})
    # Without a writer record (schema 1), the pid in the run id decides...
    from tltrace.format.ids import new_run_id

    assert writer_alive(None, new_run_id())
    # ... except that our pid in an id dated before this process loaded tltrace is a reused pid.
    assert not writer_alive(None, f"run_20240101_000000_000000_{os.getpid()}_abcd1234")
    assert not writer_alive(None, "run_20240101_000000_000000_4194999_abcd1234")
    assert not writer_alive(None, "not-a-run")


def test_launch_info_never_raises():
    assert launch_info(object()) == {}
    assert launch_info(None) == {}
    assert signature(None, None, None) == "kernel"
    assert variant_key("k", {}) == "k||grid=|threads="
