"""`run --launches` (docs/launches.md): each launch of a compiled kernel recorded, read back, compared.

The oracles: the script's own torch tensors (it writes their shape, dtype, strides and device as
torch says them), the script's ast for the calling line, the kernel's definition for the grid
(ceil(n / block)), the run directory TileLang's compile left for the compile, and Python's own
`sys.getprofile()` / `sys.monitoring.get_tool()` for what the recorder leaves installed.
"""

from __future__ import annotations

import ast
import glob
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tltrace.format import launches as log_format

from ._cli import cli_proc
from ._kernels import DYNAMIC_SCALE, SCALE_BLOCK, load_script
from ._schema import check


def _launch_lines(script: str) -> list[int]:
    """The lines of the script that call `kernel(...)`: where each launch comes from."""
    tree = ast.parse(script)
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "kernel"
    ]


def _run_scale(d: Path, *device: str, opts: tuple[str, ...] = ()) -> tuple[Path, list]:
    """The dynamic-size script run under `tltrace run --launches` (and `opts`) in `d`: (d, what the script saw)."""
    (d / "scale.py").write_text(DYNAMIC_SCALE)
    cli_proc(
        "run",
        "-q",
        "--launches",
        *opts,
        "--trace-dir",
        d / "td",
        "scale.py",
        d / "seen.json",
        *device,
        cwd=d,
        rc=0,
    )
    return d, json.loads((d / "seen.json").read_text())


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """The dynamic-size script run once on the CPU under `tltrace run --launches`."""
    return _run_scale(tmp_path_factory.mktemp("launches"))


def _show(d: Path, *args: object, rc: int = 0) -> subprocess.CompletedProcess:
    return cli_proc("show", "--trace-dir", d / "td", "scale", "-1", "--launches", *args, cwd=d, rc=rc)


def test_three_sizes_three_launch_records(traced) -> None:
    _check_three_sizes(*traced)


@pytest.mark.gpu
def test_three_sizes_on_the_gpu(need_gpu, tmp_path) -> None:
    """The same on CUDA (tvm_ffi; the GPU machine's Python 3.12: sys.monitoring): records equal the
    CUDA tensors' own; prints what it checked."""
    _check_three_sizes(*_run_scale(tmp_path, "cuda"))


def _check_three_sizes(d: Path, seen: list) -> None:
    data = check(json.loads(_show(d, "--json").stdout), "launches")  # docs/show.schema.json
    runs = glob.glob(str(d / "td" / "scale" / ".run_records" / "run_*"))
    assert len(runs) == 1  # the one compile; every launch is of it
    (line,) = _launch_lines(DYNAMIC_SCALE)
    assert len(data["launches"]) == len(seen) == 3
    for rec, want in zip(data["launches"], seen):
        got = [[a["shape"], a["dtype"], a["strides"], a["device"]] for a in rec["args"]]
        assert got == want["args"]
        assert [a["param"] for a in rec["args"]] == ["A", "B"]
        assert rec["site"]["file"] == str(d / "scale.py") and rec["site"]["line"] == line
        assert rec["run_id"] == os.path.basename(runs[0]) and rec["kernel"] == "scale"
        assert rec["grid"] == [-(-want["size"] // SCALE_BLOCK)] and rec["block"] == [SCALE_BLOCK]
    assert [r["number"] for r in data["launches"]] == [1, 2, 3]
    assert data["dropped"] == 0 and data["torn_bytes"] == 0 and data["ended"] is True
    table = _show(d).stdout
    print(sys.version.split()[0], table, seen, sep="\n")
    assert f"A=float32[200] (1) {seen[1]['args'][0][3]}" in table and f"scale.py:{line}" in table


def test_two_launches_compared(traced) -> None:
    d, seen = traced
    out = check(json.loads(_show(d, "--compare", "1", "3", "--json").stdout), "launch_compare")
    diffs = {x["what"]: (x["a"], x["b"]) for x in out["differences"]}
    n1, n3 = seen[0]["size"], seen[2]["size"]
    assert diffs == {
        "grid": ([-(-n1 // SCALE_BLOCK)], [-(-n3 // SCALE_BLOCK)]),
        "A shape": ([n1], [n3]),
        "B shape": ([n1], [n3]),
    }
    text = _show(d, "--compare", "2", "2").stdout
    assert "no difference" in text
    bad = _show(d, "--compare", "1", "9", rc=2)
    assert bad.stderr.count("\n") == 1 and "numbered 1 to 3" in bad.stderr


def test_diff_runs_counts_launches_per_kernel(traced) -> None:
    d, seen = traced
    args = ("diff-runs", "--trace-dir", d / "td", "scale:-1", "scale:-1")
    data = json.loads(cli_proc(*args, "--json", cwd=d, rc=0).stdout)
    assert data["launches"] == {"a": {"scale": len(seen)}, "b": {"scale": len(seen)}}
    assert f"scale {len(seen)} → {len(seen)}" in cli_proc(*args, cwd=d, rc=0).stdout


def test_a_torn_log_reads_its_whole_lines(traced, tmp_path) -> None:
    """A writer killed mid-line: the launches before it read, the torn bytes counted (CLI and reader)."""
    import shutil

    d, seen = traced
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    (log,) = glob.glob(str(copy / "td" / "scale" / ".run_records" / "launches.*.jsonl"))
    whole = Path(log).read_bytes()
    lines = whole.splitlines(keepends=True)
    torn = lines[-2][: len(lines[-2]) // 2]  # the third launch's line, half written; no end line
    Path(log).write_bytes(b"".join(lines[:-2]) + torn)
    data = json.loads(_show(copy, "--json").stdout)
    assert len(data["launches"]) == 2 and data["torn_bytes"] == len(torn) and data["ended"] is False
    assert "the log was cut" in _show(copy).stdout
    os.unlink(log)  # an invocation run without --launches: one line, exit 3, and the flag to use
    missing = _show(copy, rc=3)
    assert missing.stderr.count("\n") == 1 and "tltrace run --launches" in missing.stderr


def test_clean_removes_an_invocation_s_launch_log(traced, tmp_path) -> None:
    import shutil

    d, _ = traced
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    records = copy / "td" / "scale" / ".run_records"
    assert glob.glob(str(records / "launches.*.jsonl"))
    cli_proc("clean", "--trace-dir", copy / "td", "--all", cwd=copy, rc=0)
    assert not glob.glob(str(records / "launches.*.jsonl"))


def test_the_log_reader_on_bytes() -> None:
    """The format alone: whole lines by kind, a damaged middle line skipped, a torn tail counted."""
    import tempfile

    kernel = {"kernel": 0, "pid": 7, "name": "k", "source": "ab" * 10, "out_idx": []}
    launch = {"launch": 0, "pid": 7, "t": 5, "thread": 1, "site": None, "args": []}
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / log_format.file_name("inv_1")
        p.write_bytes(
            log_format.encode([kernel, launch]) + b"{not json\n" + log_format.encode([launch]) + b'{"la'
        )
        log = log_format.read(p)
    assert list(log.kernels) == [(7, 0)] and len(log.launches) == 2
    assert log.damaged == 1 and log.cut == len(b'{"la') and log.ends == []
    assert log_format.invocation_of(p.name) == "inv_1"


# -- in this process: what the recorder leaves installed ---------------------------------------------
@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """The dynamic-size kernel compiled once, untraced, in this process (launched by the tests below)."""
    import tilelang

    mod = load_script(tmp_path_factory.mktemp("k") / "scale_mod.py", DYNAMIC_SCALE)
    return tilelang.compile(mod.make_scale(), target="c", execution_backend="cython")


def _launch_traced(kernel, trace_dir: Path, sizes, **knobs) -> None:
    import torch

    import tltrace

    tltrace.enable(mode="terminal", trace_dir=trace_dir, quiet=True, launches=True, **knobs)
    try:
        for n in sizes:
            kernel(torch.zeros(n), torch.zeros(n))
    finally:
        tltrace.disable()


def _log_of(trace_dir: Path) -> log_format.LaunchLog | None:
    found = glob.glob(str(trace_dir / "*" / ".run_records" / "launches.*.jsonl"))
    return log_format.read(found[0]) if found else None


def _tools() -> list[object]:
    mon = getattr(sys, "monitoring", None)
    return [mon.get_tool(t) for t in (3, 4)] if mon is not None else []


def test_what_was_installed_is_installed_again(kernel, tmp_path) -> None:
    import threading

    before = (sys.getprofile(), threading.getprofile(), _tools())
    _launch_traced(kernel, tmp_path / "td", [64, 130], launch_limit=1)
    assert (sys.getprofile(), threading.getprofile(), _tools()) == before
    log = _log_of(tmp_path / "td")
    assert log is not None
    assert [x["args"][0]["shape"] for x in log.launches] == [[64]]  # the limit: the first one kept
    assert log.dropped == 1 and log.ends[0]["recorded"] == 1


def test_an_installed_profiler_is_left_alone(kernel, tmp_path, capfd) -> None:
    """Python 3.11: a profile function already there (cProfile's, a debugger's) stays and sees every
    call; on 3.12+ the same for sys.monitoring's free tool ids taken by someone else."""
    import threading

    from tilelang.jit.kernel import JITKernel

    calls: list[object] = []

    def foreign(frame, event, arg) -> None:
        if event == "call":
            calls.append(frame.f_code)

    mon = getattr(sys, "monitoring", None)
    taken = [t for t in (3, 4) if mon is not None and mon.get_tool(t) is None]
    if mon is None:
        sys.setprofile(foreign)
    for t in taken:
        mon.use_tool_id(t, "someone else")
    try:
        _launch_traced(kernel, tmp_path / "td", [64])
        kept = sys.getprofile()
    finally:
        sys.setprofile(None)
        for t in taken:
            mon.free_tool_id(t)
    assert threading.getprofile() is None
    if mon is None:
        assert kept is foreign and JITKernel.__call__.__code__ in calls
    assert _log_of(tmp_path / "td") is None  # nothing recorded
    err = capfd.readouterr().err
    assert err.count("--launches: ") == 1 and "no launches recorded" in err


def _python_312() -> str | None:
    """An interpreter of Python 3.12 or later on this machine (the sys.monitoring path), else None."""
    import shutil

    found = [sys.executable] if sys.version_info >= (3, 12) else []
    found += [p for p in (shutil.which("python3.12"), shutil.which("python3.13")) if p]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python")))
    for exe in found:
        ok = subprocess.run(
            [exe, "-c", "import sys; assert sys.version_info >= (3, 12)"], capture_output=True
        )
        if ok.returncode == 0:
            return exe
    return None


def test_the_monitoring_path_sees_only_the_watched_code() -> None:
    """Python 3.12+ (the GPU machine's): one callback per call of the watched code object, none for
    any other call, and the tool id given back at stop. Pure Python: the observer imports no TileLang."""
    exe = _python_312()
    if exe is None:
        pytest.skip("no Python 3.12 or later here")
    script = textwrap.dedent(
        """
        import json, sys
        from tltrace.launches.observer import Observer

        class K:
            def __call__(self, *args):
                return helper(*args)

        def helper(*args):
            return len(args)

        seen = []
        obs = Observer(K.__call__.__code__, lambda f: seen.append([f.f_locals["args"], f.f_back.f_lineno]))
        why = obs.start()
        k = K()
        for i in range(3):
            helper(i)
            k(i, i)  # line 18
        obs.stop()
        k(9)
        print(json.dumps([why, obs.how, seen, sys.monitoring.get_tool(3), sys.getprofile() is None]))
        """
    )
    p = subprocess.run(
        [exe, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    assert p.returncode == 0, p.stderr
    why, how, seen, tool, no_profile = json.loads(p.stdout)
    print(exe, how, seen)
    assert why is None and how is None  # started, then stopped
    assert seen == [[[i, i], 18] for i in range(3)] and tool is None and no_profile
