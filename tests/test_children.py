"""Child processes: every Python process of a traced job traces its compiles into one invocation.

Real TileLang CPU compiles in real processes (`python -m tltrace run` in a subprocess):
spawn and forkserver pools, a child interpreter, os.fork(), torchrun ranks, a killed
parent, compiles after the script ended, and the --kernels capture filter.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tltrace.config import build_settings
from tltrace.format.records import RunManifest
from tltrace.format.writer import pid_of, rank_of
from tltrace.history import runs
from tltrace.tracing import children

from ._cli import cli_env, cli_proc
from ._kernels import KERNELS

REPO = Path(__file__).resolve().parent.parent

MUL = """
def make_mul(n, block=64):
    @T.prim_func
    def mul(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = A[bx * block + i] * B[bx * block + i]

    return mul
"""


def _env(**extra: str) -> dict[str, str]:
    return cli_env(clean=True, **extra)


def _job(tmp_path: Path, name: str, body: str) -> Path:
    (tmp_path / "kern.py").write_text(KERNELS + MUL)
    script = tmp_path / name
    script.write_text(textwrap.dedent(body))
    return script


def _tltrace(tmp_path: Path, *args: str, timeout: float = 600, **env: str) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=tmp_path, timeout=timeout, env=_env(**env))


def _manifests(script_dir: Path) -> list[RunManifest]:
    return [runs.load_manifest(d) for d in runs.run_dirs(script_dir)]


def _pid(m: RunManifest) -> int | None:
    return pid_of(m)


# -- the hook itself: no compile ---------------------------------------------------------------------
def test_a_child_that_never_imports_tilelang_imports_nothing_and_keeps_its_sitecustomize(tmp_path):
    """The hook adds one finder and imports neither tltrace nor TileLang; the shadowed sitecustomize still runs."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIRS_RAN'] = '1'\n")
    settings = build_settings(mode="terminal", trace_dir=tmp_path / "T", script_name="job")
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([str(theirs), env["PYTHONPATH"]])
    env.update(children.child_environment(settings, env))
    probe = (
        "import sys, os, json; print(json.dumps([m for m in ('tilelang', 'tltrace', 'tvm') if m in sys.modules]"
        " + [os.environ.get('THEIRS_RAN'), sys.modules['sitecustomize'].__file__,"
        " [type(f).__name__ for f in sys.meta_path][:1]]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout)
    assert loaded[:-3] == [], loaded  # nothing heavy imported
    assert loaded[-3] == "1"  # the sitecustomize it shadows ran
    assert loaded[-2] == str(theirs / "sitecustomize.py")
    assert loaded[-1] == ["_TileLangImportHook"]
    assert env["PYTHONPATH"].split(os.pathsep)[0] == children.BOOT_DIR
    assert Path(children.BOOT_DIR).is_relative_to(REPO / "tltrace")  # shipped in the package: nothing written


def test_propagation_puts_the_environment_back(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/x")
    monkeypatch.delenv(children.ENV, raising=False)
    monkeypatch.delenv(children.KERNELS_ENV, raising=False)
    settings = build_settings(mode="html", trace_dir=tmp_path, script_name="job", kernels="^add$")
    prop = children.Propagation(settings).start()
    assert os.environ["PYTHONPATH"] == os.pathsep.join([children.BOOT_DIR, "/x"])
    assert os.environ[children.KERNELS_ENV] == "^add$"
    back, root = children.settings_from_json(os.environ[children.ENV])
    assert (back.invocation, back.script_dir, back.kernels.pattern, back.keep) == (
        settings.invocation,
        settings.script_dir,
        "^add$",
        0,  # children never prune
    )
    assert root["pid"] == os.getpid()
    prop.stop()
    assert os.environ["PYTHONPATH"] == "/x"
    assert children.ENV not in os.environ and children.KERNELS_ENV not in os.environ


# -- real jobs ---------------------------------------------------------------------------------------
EVERY_MODE = """
import multiprocessing as mp, subprocess, sys
from kern import build

def work(n):
    build(n)
    return n

if __name__ == "__main__":
    build(64)
    with mp.get_context("spawn").Pool(1) as p:
        p.map(work, [64])  # the main process's variant: one working file, shared
    with mp.get_context("forkserver").Pool(1) as p:
        p.map(work, [128])
    subprocess.run([sys.executable, "-c", "import kern; kern.build(128)"], check=True)
    print("RESULT ok")
"""


@pytest.mark.slow
def test_spawn_forkserver_and_a_child_interpreter_join_one_invocation(tmp_path):
    _job(tmp_path, "job.py", EVERY_MODE)
    r = _tltrace(tmp_path, "run", "--quiet", "--mode", "both", "--trace-dir", "T", "job.py")
    assert r.returncode == 0, r.stderr
    assert "RESULT ok" in r.stdout
    sd = tmp_path / "T" / "job"
    ms = _manifests(sd)
    assert len(ms) == 4
    assert len({m.invocation for m in ms}) == 1
    assert len({_pid(m) for m in ms}) == 4  # four processes
    assert all(m.status == "complete" for m in ms)
    head = next(ln for ln in r.stdout.splitlines() if "compiles" in ln)
    assert head.startswith("4 compiles, 0 failed, in 4 processes"), r.stdout
    assert ms[0].invocation in head
    # show --json of the newest invocation: every process's compiles, one id.
    shown = _tltrace(tmp_path, "show", "--trace-dir", "T", "job", "-1", "--json")
    assert shown.returncode == 0, shown.stderr
    inv = json.loads(shown.stdout)["invocation"]
    assert inv["invocation"] == ms[0].invocation and inv["counts"] == {"complete": 4}
    assert {c["invocation"] for c in inv["compiles"]} == {ms[0].invocation}
    assert len(inv["compiles"]) == 4
    # Variant rules: two variants, one working file each, whichever processes compiled them.
    working = sorted(p.name for p in sd.glob("codegen*_device.cpp"))
    assert len(working) == 2, working
    # The index lists every compile, with the process that made it.
    rows = re.findall(rb'"t":"c"[^<]*?"pid":(\d+)', (sd / "report.html").read_bytes())
    assert {int(p) for p in rows} == {_pid(m) for m in ms}


@pytest.mark.slow
def test_an_os_fork_child_leaves_the_summary_and_the_index_to_its_parent(tmp_path):
    _job(
        tmp_path,
        "forky.py",
        """
        import os
        from kern import build
        build(64)
        pid = os.fork()
        if pid == 0:
            build(128)  # returns normally: this copy of the script runs on to its end
        else:
            os.waitpid(pid, 0)
        """,
    )
    r = _tltrace(tmp_path, "run", "-q", "--mode", "html", "--trace-dir", "T", "forky.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("compiles,") == 1, r.stdout  # one summary: the parent's, after the child's compile
    assert "2 compiles, 0 failed, in 2 processes" in r.stdout
    sd = tmp_path / "T" / "forky"
    ms = _manifests(sd)
    assert len(ms) == 2 and len({m.invocation for m in ms}) == 1
    # One index, of this invocation, with both compiles (the child did not rewrite it as its own).
    rows = set(re.findall(rb'"t":"c","run_id":"(run_[^"]+)"', (sd / "report.html").read_bytes()))
    assert {r.decode() for r in rows} == {m.run_id for m in ms}


@pytest.mark.slow
def test_a_tltrace_run_inside_a_traced_job_traces_on_its_own(tmp_path):
    """A traced job's child that runs `tltrace run` itself: both start-up hooks find TileLang
    (they asked each other for its spec until the recursion limit), and the inner run traces
    into its own script dir, not the job's."""
    _job(tmp_path, "inner.py", "from kern import build\nbuild(64)\nprint('INNER ok')\n")
    _job(
        tmp_path,
        "outer.py",
        """
        import subprocess, sys
        from kern import build
        build(128)
        r = subprocess.run([sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "I", "inner.py"],
                           capture_output=True, text=True)
        print("INNER rc", r.returncode, r.stdout, r.stderr[-3000:])
        """,
    )
    r = _tltrace(tmp_path, "run", "-q", "--trace-dir", "T", "outer.py")
    assert r.returncode == 0, r.stderr
    assert "INNER rc 0" in r.stdout and "INNER ok" in r.stdout, r.stdout
    outer, inner = _manifests(tmp_path / "T" / "outer"), _manifests(tmp_path / "I" / "inner")
    assert [m.kernel for m in outer] == ["add"] and [m.kernel for m in inner] == ["add"]
    assert outer[0].invocation != inner[0].invocation
    assert not (tmp_path / "T" / "inner").exists()


@pytest.mark.slow
def test_kernels_traces_only_the_matching_kernel_and_says_so_once(tmp_path):
    _job(
        tmp_path,
        "two.py",
        """
        from kern import build, compile_, make_mul
        build(64)
        compile_(make_mul(64))
        compile_(make_mul(128))
        print("RESULT ok")
        """,
    )
    r = _tltrace(tmp_path, "run", "-q", "--kernels", "^add$", "--trace-dir", "T", "two.py")
    assert r.returncode == 0, r.stderr
    ms = _manifests(tmp_path / "T" / "two")
    assert [m.kernel for m in ms] == ["add"]
    said = [ln for ln in (r.stdout + r.stderr).splitlines() if "--kernels" in ln]
    assert len(said) == 1 and "mul" in said[0], r.stdout + r.stderr
    bad = _tltrace(tmp_path, "run", "-q", "--kernels", "(", "two.py")
    assert bad.returncode == 2 and "--kernels" in bad.stderr


@pytest.mark.slow
def test_a_killed_parent_leaves_readable_child_records_and_nothing_installed(tmp_path):
    import site

    _job(
        tmp_path,
        "orphan.py",
        """
        import subprocess, sys, time
        child = "import time; time.sleep(2); import kern; kern.build(64); print('CHILD DONE', flush=True)"
        p = subprocess.Popen([sys.executable, "-c", child])
        print("CHILD", p.pid, flush=True)
        time.sleep(600)
        """,
    )
    where = [Path(p) for p in site.getsitepackages() if Path(p).is_dir()]
    before = {p: sorted(os.listdir(p)) for p in where}
    log = open(tmp_path / "out.txt", "w")
    parent = subprocess.Popen(
        [sys.executable, "-m", "tltrace", "run", "-q", "--trace-dir", "T", "orphan.py"],
        cwd=tmp_path,
        env=_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 300
        while "CHILD " not in (tmp_path / "out.txt").read_text() and time.time() < deadline:
            assert parent.poll() is None, (tmp_path / "out.txt").read_text()
            time.sleep(0.2)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        child = int(re.search(r"CHILD (\d+)", (tmp_path / "out.txt").read_text()).group(1))
        while "CHILD DONE" not in (tmp_path / "out.txt").read_text() and time.time() < deadline:
            time.sleep(0.2)
    finally:
        if parent.poll() is None:
            parent.kill()
        log.close()
    out = (tmp_path / "out.txt").read_text()
    assert "CHILD DONE" in out, out
    ms = _manifests(tmp_path / "T" / "orphan")
    assert len(ms) == 1 and ms[0].status == "complete" and _pid(ms[0]) == child
    assert "outlived the traced job" in out, out
    assert {p: sorted(os.listdir(p)) for p in where} == before  # nothing added to site-packages, or left


@pytest.mark.slow
def test_compiles_after_the_script_ended_are_said(tmp_path):
    _job(
        tmp_path,
        "late.py",
        """
        import atexit, threading, time
        from kern import build, compile_, make_add
        f = make_add(128)
        atexit.register(lambda: build(64))

        def later():
            time.sleep(3)
            compile_(f)

        threading.Thread(target=later, name="late-compiler").start()
        """,
    )
    r = _tltrace(tmp_path, "run", "-q", "--trace-dir", "T", "late.py")
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "after the traced script ended" in ln]
    assert len(said) == 1, r.stderr  # said once, by the first late compile
    assert "late-compiler" in said[0]
    assert not (tmp_path / "T" / "late" / ".run_records").exists() or not runs.run_dirs(
        tmp_path / "T" / "late"
    )


@pytest.mark.slow
def test_torchrun_ranks_are_traced_with_their_rank(tmp_path):
    torchrun = shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("no torchrun")
    _job(
        tmp_path,
        "dist.py",
        """
        import torch.distributed as dist
        from kern import build
        dist.init_process_group("gloo")
        build(64 * (1 + dist.get_rank() % 2))
        dist.barrier()
        dist.destroy_process_group()
        """,
    )
    r = _tltrace(
        tmp_path, "run", "-q", "--trace-dir", "T", torchrun, "--nproc-per-node", "2", "dist.py", timeout=900
    )
    assert r.returncode == 0, r.stderr
    ms = _manifests(tmp_path / "T" / "dist")  # filed under the training script, not 'torchrun'
    assert sorted(rank_of(m) for m in ms) == [0, 1]
    assert len({m.invocation for m in ms}) == 1
    assert "in 2 processes" in r.stdout and "rank 1" in r.stdout


# -- views: grouped by process (recorded manifests, no compile) ----------------------------------------
def _m(run_id: str, pid: int, rank: int | None = None, started: float = 1.0) -> RunManifest:
    writer = {"pid": pid, "start": "1", "host": "h", **({"rank": rank} if rank is not None else {})}
    return RunManifest(
        run_id=run_id,
        script="job",
        kernel="add",
        invocation="inv_1",
        writer=writer,
        started=started,
        finished=started + 1,
        status="complete",
    )


def test_chrome_trace_and_summary_group_compiles_by_process():
    from rich.console import Console

    from tltrace.render.chrome_trace import chrome_trace
    from tltrace.render.html import index_row
    from tltrace.render.terminal import summary_table

    runs = [_m("run_a", 10, 0, 1.0), _m("run_b", 11, 1, 2.0), _m("run_c", 10, 0, 3.0)]
    trace = chrome_trace(runs)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert sorted(names.values()) == ["job (invocation inv_1) rank 0", "job (invocation inv_1) rank 1"]
    assert trace["otherData"]["invocations"] == 1
    slices = [e for e in trace["traceEvents"] if e.get("cat") == "compile"]
    assert {e["args"]["run_id"]: names[e["pid"]] for e in slices}["run_c"].endswith("rank 0")
    # One process: the label is as before.
    one = chrome_trace([_m("run_a", 10)])
    assert [e["args"]["name"] for e in one["traceEvents"] if e.get("name") == "process_name"] == [
        "job (invocation inv_1)"
    ]
    console = Console(width=200, color_system=None, record=True)
    for line in summary_table(runs, processes=True):
        console.print(line)
    text = console.export_text()
    assert text.splitlines()[0].split()[:2] == ["status", "process"]
    assert text.count("rank 0") == 2 and text.count("rank 1") == 1
    assert (index_row(runs[1])["pid"], index_row(runs[1])["rank"]) == (11, 1)
    assert "rank" not in index_row(_m("run_d", 12))


ENABLE_AND_A_CHILD = """
import multiprocessing as mp
import sys


def work(n):
    from kern import build  # the child's own import of TileLang: its tracing starts here

    build(n)


if __name__ == "__main__":
    import tltrace

    tltrace.enable(trace_dir="T", quiet=True)
    assert "tilelang" not in sys.modules  # the one set-up waits for the script's import
    p = mp.get_context("spawn").Process(target=work, args=(64,))
    p.start()
    p.join()
    work(128)
    tltrace.disable()
    print("RESULT", p.exitcode)
"""


def test_enable_and_its_child_end_with_the_same_sequence(tmp_path):
    """enable() and a traced child start and end through the lifecycle alike: the parent's set-up
    waits for its own import, each process's records are whole and complete when it ends, the
    invocation's lock is free, and the parent's summary counts both processes."""
    _job(tmp_path, "job.py", ENABLE_AND_A_CHILD)
    r = subprocess.run(
        [sys.executable, "job.py"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0 and "RESULT 0" in r.stdout, r.stdout + r.stderr
    sd = tmp_path / "T" / "job"
    ms = _manifests(sd)
    assert len(ms) == 2 and len({m.invocation for m in ms}) == 1
    assert len({_pid(m) for m in ms}) == 2
    assert [m.status for m in ms] == ["complete", "complete"]
    child, parent = sorted(ms, key=lambda m: m.started)
    assert child.records and [x.name for x in child.records] == [x.name for x in parent.records]
    from tltrace.format import liveness

    assert not liveness.state(sd / ".run_records", ms[0].invocation)  # every writer let go
    head = next(ln for ln in r.stdout.splitlines() if "compiles" in ln)
    assert head.startswith("2 compiles, 0 failed, in 2 processes"), r.stdout
