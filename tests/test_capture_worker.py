"""The background worker: order, drain, priority, back-pressure; and what a traced compile leaves on disk
when it fails, when the process exits without disable(), and after kill -9."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tltrace.config import Settings
from tltrace.format.records import COMPLETE, ERROR
from tltrace.history.runs import load_manifest, text_of
from tltrace.session import worker as worker_mod
from tltrace.session.worker import NICE, Worker

from ._kernels import KERNELS

REPO = Path(__file__).resolve().parent.parent


def test_jobs_run_in_order_and_drain_waits_for_those_before_it() -> None:
    w = Worker(max_jobs=4)
    seen: list[int] = []
    gate = threading.Event()
    w.submit(gate.wait)
    for i in range(3):
        w.submit(lambda i=i: seen.append(i))
    assert not w.drain(timeout=0.2)  # the first job still waits on the gate
    gate.set()
    assert w.drain(timeout=10)
    assert seen == [0, 1, 2]


def test_a_full_queue_makes_the_submitter_wait() -> None:
    w = Worker(max_jobs=1)
    gate, started = threading.Event(), threading.Event()
    w.submit(lambda: (started.set(), gate.wait()))
    assert started.wait(10)  # the worker holds the first job
    w.submit(lambda: None)  # fills the queue
    done = threading.Event()

    def third() -> None:
        w.submit(lambda: None)
        done.set()

    t = threading.Thread(target=third)
    t.start()
    assert not done.wait(0.3)  # blocked: the queue holds one job
    gate.set()
    assert done.wait(10)
    t.join()
    assert w.drain(timeout=10)


def test_no_job_is_lost_or_reordered_when_threads_submit_while_the_worker_sleeps_and_wakes() -> None:
    """The queue's wake-up: a worker that empties its queue sleeps; every submit after that must
    wake it, however the threads interleave (and through a small queue that fills: submitters wait)."""
    w = Worker(max_jobs=16)
    seen: dict[int, list[int]] = {t: [] for t in range(4)}

    def submitter(t: int) -> None:
        for i in range(3000):
            w.submit(lambda t=t, i=i: seen[t].append(i))
            if i % 97 == 0:
                time.sleep(0.0005)  # let the worker run dry and sleep

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert w.drain(timeout=30)
    assert all(seen[t] == list(range(3000)) for t in seen)
    for _ in range(50):  # a worker asleep wakes for a lone job every time
        time.sleep(0.001)
        got = threading.Event()
        w.submit(got.set)
        assert got.wait(10)


def test_a_fork_while_another_thread_holds_the_workers_lock_leaves_the_child_free() -> None:
    """The workers' lock, held by another thread at the fork, would never be released in the child."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with worker_mod._lock:
            held.set()
            release.wait(30)

    t = threading.Thread(target=holder, daemon=True)
    t.start()
    assert held.wait(10)
    try:
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: look up its worker, then say so (a hang is killed by the alarm)
            signal.alarm(10)
            worker_mod.worker()
            os.write(wfd, b"ok")
            os._exit(0)
        os.close(wfd)
        _, status = os.waitpid(pid, 0)
        said = os.read(r, 8)
        os.close(r)
        assert said == b"ok" and os.waitstatus_to_exitcode(status) == 0, (said, status)
    finally:
        release.set()
        t.join(10)


def _until(cond, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def test_a_failing_job_does_not_stop_the_worker() -> None:
    w = Worker()
    seen: list[str] = []
    w.submit(lambda: 1 / 0)
    w.submit(lambda: seen.append("after"))
    assert w.drain(timeout=10)
    assert seen == ["after"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's")
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_waits_for_the_workers_so_the_child_finds_no_lock_held() -> None:
    """A job that holds a lock when the process forks would leave the child's copy held forever."""
    from tltrace.session import worker as W

    held = threading.Lock()
    started = threading.Event()

    def job() -> None:
        with held:
            started.set()
            time.sleep(1.0)

    W.worker().submit(job)
    assert started.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the lock must be free (the fork waited for the job)
        os._exit(0 if held.acquire(timeout=5) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_a_worker_made_before_a_fork_runs_the_childs_jobs_on_a_thread_of_the_child() -> None:
    """A submit compares the pid (no thread probe per job): in a forked child the same Worker
    starts a thread of its own, and the child's jobs run there."""
    w = Worker()
    w.submit(lambda: None)
    assert w.drain(timeout=10)
    r, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread is not here
        try:
            ran: list[int] = []
            w.submit(lambda: ran.append(threading.get_native_id()))
            ok = w.drain(timeout=10) and ran and ran[0] != threading.get_native_id()
            os.write(wr, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(wr)
    _, status = os.waitpid(pid, 0)
    assert os.read(r, 1) == b"1"
    os.close(r)


def test_jobs_queued_for_a_worker_whose_thread_is_gone_run_when_a_caller_waits() -> None:
    """A worker's thread never dies of a job; were it gone, `drain` and a full queue start it again
    rather than leave the jobs (and a waiting compile) stranded."""
    gone = threading.Thread(target=lambda: None)
    gone.start()
    gone.join()
    ran: list[int] = []
    w = Worker(max_jobs=2)
    w._thread = gone  # as if the worker's thread had ended (and no other thread of it runs)
    w.submit(lambda: ran.append(-1))  # queued: a submit no longer probes the thread
    assert ran == [] and w.drain(timeout=10) and ran == [-1]
    w = Worker(max_jobs=2)
    w._thread = gone
    for i in range(4):  # past the bound: the submit waiting for room starts the thread again
        w.submit(lambda i=i: ran.append(i))
    assert w.drain(timeout=10) and ran == [-1, 0, 1, 2, 3]


def test_the_worker_runs_at_a_lower_priority() -> None:
    w = Worker()
    tid: list[int] = []
    w.submit(lambda: tid.append(threading.get_native_id()))
    assert w.drain(timeout=10)
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert os.getpriority(os.PRIO_PROCESS, tid[0]) == min(19, mine + NICE)


FAILING = (
    KERNELS
    + """

import tilelang.language as T


def make_bad():
    @T.prim_func
    def bad(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            frag = T.alloc_fragment((64,), "float32")  # the CPU backend rejects fragments
            T.copy(A, frag)
            T.copy(frag, B)

    return bad
"""
)


def test_a_failed_compile_is_on_disk_before_its_error_reaches_the_caller(tmp_path: Path) -> None:
    import runpy

    import tilelang

    from tltrace.session import controller

    (tmp_path / "failing_kernels.py").write_text(FAILING)
    bad = runpy.run_path(str(tmp_path / "failing_kernels.py"))["make_bad"]()
    settings = Settings(mode="terminal", trace_dir=tmp_path, script_name="failing", quiet=True)
    controller.install(settings, lambda e: None)
    try:
        failed: BaseException | None = None
        try:
            tilelang.compile(bad, target="c", execution_backend="cython")
        except Exception as exc:
            failed = exc
        assert failed is not None
        # Still installed (no drain by uninstall or the invocation): the compile itself waited.
        (run_dir,) = (tmp_path / "failing" / ".run_records").glob("run_*")
        m = load_manifest(run_dir)
        assert m.status == ERROR and m.error and m.records
        assert all(text_of(run_dir, r, "before") is not None for r in m.records)
    finally:
        controller.uninstall()


@pytest.mark.parametrize("wait", [False, True], ids=["early", "TLTRACE_WAIT"])
def test_a_compile_returns_before_its_records_and_flush_completes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait: bool
) -> None:
    """A compile that succeeded returns without waiting for its worker; tltrace.flush() waits.
    Its worker is held on a gate first, so the order is certain, not a race. TLTRACE_WAIT=1: the
    compile waits (here: with the gate opened by a timer, since it would wait for ever)."""
    import runpy

    import tilelang

    import tltrace
    from tltrace.config import build_settings
    from tltrace.session import controller, worker

    if wait:
        monkeypatch.setenv("TLTRACE_WAIT", "1")
    else:
        monkeypatch.delenv("TLTRACE_WAIT", raising=False)
    settings = build_settings(mode="terminal", trace_dir=tmp_path, script_name="early", quiet=True)
    assert settings.wait is wait
    (tmp_path / "k.py").write_text(KERNELS)
    make_add = runpy.run_path(str(tmp_path / "k.py"))["make_add"]
    controller.install(settings, lambda e: None)
    gate = threading.Event()
    try:
        worker.worker().submit(gate.wait)  # this thread's worker: busy until the gate opens
        timer = threading.Timer(1.0, gate.set) if wait else None
        if timer is not None:
            timer.start()
        tilelang.compile(make_add(128), target="c", execution_backend="cython")
        runs = list((tmp_path / "early" / ".run_records").glob("run_*"))
        if wait:
            (run_dir,) = runs
            assert load_manifest(run_dir).status == COMPLETE
        else:
            assert not runs  # nothing written yet: the worker has not reached this compile's jobs
            gate.set()
            assert tltrace.flush(timeout=60)
            (run_dir,) = (tmp_path / "early" / ".run_records").glob("run_*")
            m = load_manifest(run_dir)
            assert m.status == COMPLETE and m.records
    finally:
        gate.set()
        controller.uninstall()


EXITING = (
    KERNELS
    + """

if __name__ == "__main__":
    import tltrace

    tltrace.enable(quiet=True, keep=1, trace_dir=TRACE_DIR)
    build_in_threads([64, 128, 192, 256], threads=4)
    # no disable(): the process exits with the worker's queue possibly full
"""
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["TILELANG_DISABLE_CACHE"] = "1"
    env.pop("TLTRACE_SYNC", None)
    return env


def test_a_thread_pool_script_loses_no_record_at_exit(tmp_path: Path) -> None:
    """Four compiles in four threads, returning before their records: the exit's drain writes them all."""
    script = tmp_path / "pool.py"
    script.write_text(EXITING.replace("TRACE_DIR", repr(str(tmp_path / "trace"))))
    r = subprocess.run([sys.executable, str(script)], env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    runs = sorted((tmp_path / "trace" / "pool" / ".run_records").glob("run_*"))
    assert len(runs) == 4
    counts = set()
    for run_dir in runs:
        m = load_manifest(run_dir)
        assert m.status == COMPLETE, (run_dir, m.status)
        assert not (run_dir / "records.jsonl").exists()  # the final manifest replaced the log
        assert [r.index for r in m.records] == list(range(len(m.records)))
        assert all(text_of(run_dir, r, "after") is not None for r in m.records)
        counts.add(len(m.records))
    assert len(counts) == 1  # the same kernel at four sizes: the same passes


KILLED = (
    KERNELS
    + """

if __name__ == "__main__":
    import sys
    sys.stdout.write("ready\\n")
    sys.stdout.flush()
    for n in (64, 128, 192, 256, 320, 384):
        build(n)
"""
)


@pytest.mark.slow
def test_kill_9_at_random_points_leaves_readable_records(tmp_path: Path) -> None:
    """Every run on disk after a kill -9 reads back, and every record it lists has its texts."""
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    rng = random.Random(17)
    total = 0
    for attempt in range(3):
        trace = tmp_path / f"trace{attempt}"
        cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", "--trace-dir", str(trace), str(script)]
        p = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert p.stdout is not None
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and p.stdout.readline().strip() != "ready":
                pass
            time.sleep(rng.uniform(1.0, 6.0))
        finally:
            p.send_signal(signal.SIGKILL)
            p.wait()
        for run_dir in sorted((trace / "killed" / ".run_records").glob("run_*")):
            m = load_manifest(run_dir)
            for r in m.records:
                assert text_of(run_dir, r, "before") is not None, (run_dir, r.index)
            total += len(m.records)
            json.dumps(m.to_json())
    assert total > 0  # at least one kill landed after records were written


@pytest.mark.parametrize(
    "env, workers, jobs",
    [({"TLTRACE_WORKERS": "1", "TLTRACE_QUEUE": "40"}, 1, 40), ({}, None, 1024)],
)
def test_worker_count_and_queue_bound_come_from_the_settings(env, workers, jobs) -> None:
    """TLTRACE_WORKERS and TLTRACE_QUEUE (Settings.workers, .queue): four compiling threads share that many
    workers, each bound at that many jobs; a bad value is an error (tests/test_knobs.py)."""
    code = (
        "import os, threading; from tltrace.config import build_settings; from tltrace.session import worker as w\n"
        "s = build_settings(mode='terminal', trace_dir='T', script_name='x')\n"
        "got = []\n"
        "for _ in range(4):\n"
        "    t = threading.Thread(target=lambda: got.append(w.worker(s.workers, s.queue))); t.start(); t.join()\n"
        "print(len({id(x) for x in got}), *{x.max_jobs for x in got}, min(4, max(1, min(8, (os.cpu_count() or 2) - 1))))"
    )
    clean = {k: v for k, v in os.environ.items() if k not in ("TLTRACE_WORKERS", "TLTRACE_QUEUE")}
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True
    ).stdout.split()
    made, max_jobs, default_workers = map(int, out)
    assert made == (workers if workers is not None else default_workers)
    assert max_jobs == jobs


def test_a_later_compile_s_settings_resize_its_thread_s_worker() -> None:
    w = worker_mod.worker(queue=64)
    assert worker_mod.worker(queue=32) is w and w.max_jobs == 32
    worker_mod.worker()  # the default again, for the tests after this one
