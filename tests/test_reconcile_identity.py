"""Working-file identity with real CPU compiles: kernel name + launch shape, never compile order or threads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from ._kernels import op_of, swap_op

SCRIPT = textwrap.dedent("""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    import tilelang
    import tilelang.language as T
    import torch

    def make(n):
        @T.prim_func
        def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
                for i in T.Parallel(64):
                    C[bx * 64 + i] = A[bx * 64 + i] + B[bx * 64 + i]
        return add

    def build(n):
        k = tilelang.compile(make(n), target="c", execution_backend="cython")
        a, b, c = torch.randn(n), torch.randn(n), torch.empty(n)
        k(a, b, c)
        return n, "a-b" if torch.allclose(c, a - b) else "a+b" if torch.allclose(c, a + b) else "?"

    sizes = [int(x) for x in sys.argv[1].split(",")]
    if len(sys.argv) > 2:
        with ThreadPoolExecutor(len(sizes)) as ex:
            results = list(ex.map(build, sizes))
    else:
        results = [build(n) for n in sizes]
    for n, what in sorted(results):
        print(f"size {n}: {what}", flush=True)
""")


def _env():
    return {**os.environ, "TILELANG_DISABLE_CACHE": "1"}


def _tltrace_run(
    tmp_path: Path, script: Path, *args: str, options: tuple[str, ...] = ("--quiet",), env=None
) -> subprocess.CompletedProcess:
    """Run `tltrace run OPTIONS --mode both` on `script` with the trace dir under `tmp_path`."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tltrace",
            "run",
            *options,
            "--mode",
            "both",
            "--trace-dir",
            str(tmp_path / "t"),
            str(script),
            *args,
        ],
        cwd=tmp_path,
        env=_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run(tmp_path: Path, script: Path, *args: str) -> subprocess.CompletedProcess:
    p = _tltrace_run(tmp_path, script, *args)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def _tags(out: str) -> list[str]:
    tags = ("PATCHED", "REGENERATED", "SYNCED", "CONFLICT", "INIT-BACKUP", "NOT-APPLIED")
    found = []
    for line in out.splitlines():
        words = line.split("] ", 1)[-1].split()  # after the label: `[add 512] PATCHED ...`
        if line.startswith("[") and len(words) > 1 and words[0] in tags:
            path = next(w for w in words if w.endswith(".cpp"))
            found.append(f"{words[0]} {Path(path).name}")
    return sorted(found)


def test_variants_keep_their_files_in_any_order_and_in_threads(tmp_path):
    script = tmp_path / "sizes.py"
    script.write_text(SCRIPT)
    d = tmp_path / "t" / "sizes"
    _run(tmp_path, script, "256,512")
    registry = json.loads((d / ".codegen_kernels.json").read_text())["kernels"]
    assert sorted(registry.values()) == ["", "_add_512"]
    first, second = d / "codegen_device.cpp", d / "codegen_add_512_device.cpp"
    assert "bx < 4;" in first.read_text() and "bx < 8;" in second.read_text()  # 256 and 512 by 64

    second.write_text(swap_op(second.read_text(), "-"))  # edit the 512 variant only
    for args in (("512,256",), ("1024,512,256", "threads")):  # the other order, then in threads
        p = _run(tmp_path, script, *args)
        assert _tags(p.stdout) == ["PATCHED codegen_add_512_device.cpp"], (args, p.stdout)
        assert "size 512: a-b" in p.stdout and "size 256: a+b" in p.stdout
    assert "size 1024: a+b" in p.stdout
    assert "codegen_add_1024_device.cpp" in p.stdout  # a new variant's file is announced
    assert (
        json.loads((d / ".codegen_kernels.json").read_text())["kernels"]["add|" + _key(registry, "_add_512")]
        == "_add_512"
    )
    assert op_of(first.read_text()) == "+"  # the 256 file never saw the 512 edit

    first.write_text(swap_op(first.read_text(), "-"))  # a second edited variant: 256
    p = _run(tmp_path, script, "1024,256,512", "threads")  # yet another order
    assert _tags(p.stdout) == ["PATCHED codegen_add_512_device.cpp", "PATCHED codegen_device.cpp"], p.stdout
    assert "size 256: a-b" in p.stdout and "size 512: a-b" in p.stdout and "size 1024: a+b" in p.stdout
    listed = p.stdout.split("working files", 1)[1]  # the end-of-run list: which file holds which variant
    for name, size in (("codegen_device.cpp", "256"), ("codegen_add_512_device.cpp", "512")):
        assert any(name in line and f"add {size} " in line for line in listed.splitlines()), listed

    p = _run(tmp_path, script, "256")  # the edited 512 variant is not compiled: said truly, with a way on
    assert _tags(p.stdout) == ["NOT-APPLIED codegen_add_512_device.cpp", "PATCHED codegen_device.cpp"]
    assert "add compiled at 256, not at 512" in p.stdout
    assert "resolve-conflict --onto codegen_device.cpp --from codegen_add_512_device.cpp" in p.stdout


def _key(registry: dict, suffix: str) -> str:
    return next(k for k, v in registry.items() if v == suffix).split("|", 1)[1]


NOTEBOOK = textwrap.dedent("""
    import sys
    from pathlib import Path

    import tilelang
    import tltrace

    sys.path.insert(0, str(Path(sys.argv[1]).parent))
    from sizes_lib import make

    trace = Path(sys.argv[2])
    tltrace.enable(mode="both", trace_dir=trace, quiet=True)
    tilelang.compile(make(256), target="c", execution_backend="cython")
    w = next(trace.glob("*/codegen_device.cpp"))
    w.write_text(w.read_text().replace("))) + *(float4", "))) - *(float4"))
    print("-- recompiled at 512", flush=True)
    tilelang.compile(make(512), target="c", execution_backend="cython")
    print("-- and at 256 again", flush=True)
    tilelang.compile(make(256), target="c", execution_backend="cython")
    tltrace.disable()
""")


def test_notebook_recompile_at_a_new_size_says_the_edit_is_not_applied(tmp_path):
    lib = tmp_path / "sizes_lib.py"
    lib.write_text(SCRIPT.split("def build")[0])
    nb = tmp_path / "nb.py"
    nb.write_text(NOTEBOOK)
    p = subprocess.run(
        [sys.executable, str(nb), str(lib), str(tmp_path / "t")],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    at512 = p.stdout.split("-- recompiled at 512")[1].split("-- and at 256 again")[0]
    assert "NOT-APPLIED  edit in" in at512 and "codegen_device.cpp not applied" in at512
    again = p.stdout.split("-- and at 256 again")[1]
    assert "PATCHED" in again and "NOT-APPLIED" not in again  # said once; applied when compiled again


def test_edit_is_compiled_when_recording_fails(tmp_path, examples_dir):
    """Tracing stops (here: the records store is unusable), the working file is still reconciled."""
    script = examples_dir / "elementwise_add.py"
    _run(tmp_path, script, "--n", "512")
    d = tmp_path / "t" / "elementwise_add"
    w = d / "codegen_device.cpp"
    w.write_text(swap_op(w.read_text(), "-"))
    records = d / ".run_records"
    shutil.rmtree(records)
    records.write_text("not a directory")  # every record write now fails
    p = _tltrace_run(tmp_path, script, "--n", "512")
    assert "tracing stopped" in p.stderr
    assert "[add 512] PATCHED" in p.stdout, p.stdout + p.stderr
    assert "WRONG RESULT" in p.stdout + p.stderr or p.returncode != 0  # the edit (a-b) really ran


def test_use_cache_hit_says_the_edit_is_not_applied(tmp_path, examples_dir):
    script = examples_dir / "elementwise_add.py"
    _run(tmp_path, script, "--n", "384")
    w = tmp_path / "t" / "elementwise_add" / "codegen_device.cpp"
    w.write_text(swap_op(w.read_text(), "-"))
    env = {**os.environ, "TILELANG_CACHE_DIR": str(tmp_path / "cache"), "TILELANG_DISABLE_CACHE": "0"}
    subprocess.run(
        [sys.executable, str(script), "--n", "384"], env=env, check=True, capture_output=True, timeout=300
    )  # an untraced run puts the unedited kernel in the cache
    p = _tltrace_run(tmp_path, script, "--n", "384", options=("--use-cache",), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[add] cached: not traced" in p.stdout
    assert f"[add] NOT-APPLIED  edit in {w} not applied: add came from TileLang's kernel cache" in p.stdout
