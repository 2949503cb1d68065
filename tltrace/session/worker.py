"""The background worker: printing and everything after it, off the compiling thread.

The compiling thread takes a field snapshot of the IR (session/snapshot.py) and
hands one job per pass callback to its worker thread, which prints, hashes,
counts, stores, appends records.jsonl and calls the listeners.

- Each compiling thread has one worker (up to MAX_WORKERS, then shared) and each
  worker one FIFO queue: the jobs of one compile run in the order its callbacks
  came, so records, the live stream and the report stay in pass order.
- The queue is bounded (`MAX_JOBS`): a compile that outruns the worker waits for
  it rather than holding ever more IR. (Threads that share a worker, past MAX_WORKERS,
  may each add one job at the same instant: the bound is then exceeded by at most
  their number less one.)
- A compile that succeeds returns at once (its worker writes the rest while the
  caller goes on: an autotuner's next compile or its benchmarks); a failed one, and
  every one under TLTRACE_WAIT=1, waits for its worker to reach its last job.
- `drain()` waits for every job handed in before it. The invocation drains when
  it ends (disable(), the end of `tltrace run`, the pytest plugin's test),
  `tltrace.flush()` and `tltrace.load()` drain, a failed
  or interrupted compile drains before its error reaches the caller, and an atexit
  hook drains at interpreter exit. Nothing recorded is lost on a normal exit, nor at an
  `os._exit` while tracing (session/exits.py: it drains first, bounded). An
  `os.fork()` drains first (a worker holding a lock at the fork would hang the child).
- What a hard crash of the compiler (a segfault, an abort in C++) loses: the jobs
  still queued, at most `MAX_JOBS` pass callbacks per worker, the passes just before
  the crash; everything the worker finished is on disk and readable, as after a
  kill -9. `--sync` (TLTRACE_SYNC=1, enable(sync=True)) records each pass before the
  next one runs, for debugging a crashing compiler or tltrace itself.
- On Linux the worker runs at a lower priority (nice +10), so a machine whose cores
  nvcc keeps busy gives them to the compile first.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable

from ..config import QUEUE_DEFAULT, WORKERS_DEFAULT

_getpid = os.getpid

# Pass callbacks waiting to be printed; each holds the fields of one module (Settings.queue,
# TLTRACE_QUEUE): a worker's bound is that of the last compile to use it.
MAX_JOBS = QUEUE_DEFAULT
NICE = 10

Job = Callable[[], object]
# A job is a callable, or a tuple (function, arg, ...) that runs as function(arg, ...): what the
# compiling thread hands over per pass. A tuple is one object where a closure is three to eight
# (the function, its cells, their tuple); the fewer live containers a queued job holds, the
# fewer the garbage collector walks and moves to its oldest generation (docs/benchmarks.md,
# "Issue 51, round 4": a traced lowering made full collections come twice as often).
Call = tuple


def run_job(job: Job | Call) -> object:
    """Run one job (a callable, or a `Call` tuple)."""
    if type(job) is tuple:
        return job[0](*job[1:])
    return job()  # type: ignore[operator]


class Worker:
    """One daemon thread running jobs in the order they were submitted.

    The queue is a deque: a submit is an append and, only when the worker sleeps, the release
    of a plain lock (`queue.Queue` took its mutex and notified a condition per job, on the
    compiling thread, and shared that mutex with the worker). A full queue's submitters wait
    on a condition that the worker signals only while one waits.
    """

    def __init__(self, max_jobs: int = MAX_JOBS) -> None:
        self.max_jobs = max_jobs  # 0: unbounded
        self._jobs: deque[Job | Call | threading.Event] = deque()
        self._gate = threading.Lock()  # held while the worker sleeps on it; a submit releases it
        self._sleeping = False  # the worker is (about to be) asleep on the gate
        self._room = threading.Condition(threading.Lock())  # where a full queue's submitters wait
        self._waiting = 0  # submitters waiting for room
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._pid = os.getpid()

    def resize(self, max_jobs: int) -> None:
        """Bound the queue at `max_jobs` from now on (a compile's Settings.queue)."""
        self.max_jobs = max_jobs

    def pending(self) -> int:
        """Jobs queued and not yet started."""
        return len(self._jobs)

    def submit(self, job: Job | Call | threading.Event) -> None:
        """Queue `job`; waits while the queue is full.

        The thread is started by the first submit, and again in a forked child (threads do not
        survive a fork): a pid compare per job, not `Thread.is_alive()` (a lock probe, on the
        compiling thread, three times a pass). A thread that died otherwise (a worker never
        does: it catches every job's exception) is started again where a caller waits on it:
        a full queue and `drain`."""
        t = self._thread
        if t is None or self._pid != _getpid():
            t = self._ensure_thread()
        if self.max_jobs and len(self._jobs) >= self.max_jobs and threading.current_thread() is not t:
            self._wait_for_room()
        self._jobs.append(job)
        if self._sleeping:  # wake it (see _run); a second release of the gate is harmless
            self._sleeping = False
            try:
                self._gate.release()
            except RuntimeError:
                pass

    def _wait_for_room(self) -> None:
        with self._room:
            self._waiting += 1
            try:
                while len(self._jobs) >= self.max_jobs:
                    t = self._thread
                    if t is None or not t.is_alive():
                        self._ensure_thread()
                    self._room.wait(0.5)  # the worker signals; the timeout is only a safety net
            finally:
                self._waiting -= 1

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every job submitted before this call has run; return False on timeout."""
        if self._thread is None or not self._thread.is_alive():
            if not self._jobs:
                return True
            self._ensure_thread()  # jobs queued for a thread that is gone: run them first
        if threading.current_thread() is self._thread:
            return True  # a job that drains (a listener ending the invocation): its jobs come next
        done = threading.Event()
        self.submit(done)
        return done.wait(timeout)  # (timed out, the worker still writes up to the mark)

    def _ensure_thread(self) -> threading.Thread:
        with self._start_lock:
            t = self._thread
            if t is None or not t.is_alive():
                t = threading.Thread(target=self._run, name="tltrace-capture", daemon=True)
                t.start()
                self._thread = t
            self._pid = os.getpid()
            return t

    def _run(self) -> None:
        _lower_priority()
        jobs, gate = self._jobs, self._gate
        popleft = jobs.popleft
        gate.acquire(False)  # this thread holds the gate; acquiring it again sleeps until a submit
        while True:
            try:
                job = popleft()
            except IndexError:
                # Say so, then look again: a submit that appended before the flag is seen here,
                # and one that appends after it sees the flag and releases the gate. A release
                # that finds the worker awake only makes its next sleep end at once (it looks again).
                self._sleeping = True
                if jobs:
                    self._sleeping = False
                else:
                    gate.acquire()
                continue
            if self._waiting:
                with self._room:
                    self._room.notify_all()
            try:
                if type(job) is tuple:
                    job[0](*job[1:])
                elif isinstance(job, threading.Event):
                    job.set()
                else:
                    job()  # type: ignore[operator]
            except BaseException:  # a job guards itself; the worker never dies of one
                pass
            finally:
                job = None  # type: ignore[assignment]  # drop the IR it held before waiting


def _lower_priority() -> None:
    """Give this thread (Linux: a thread has its own nice value) a lower priority; best effort."""
    try:
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + NICE))
    except (AttributeError, OSError):
        pass


# One worker per compiling thread, up to MAX_WORKERS (then threads share them round-robin): a
# thread's compiles stay in order on one worker, and an autotuner's compiling threads do not
# queue behind one printer.
WORKER_CAP = WORKERS_DEFAULT  # never more workers than this, whatever the machine (docs/usage.md quotes it)
# Settings.workers (TLTRACE_WORKERS=N, enable(workers=N)) lowers the cap (docs/usage.md).
MAX_WORKERS = max(1, min(WORKER_CAP, (os.cpu_count() or 2) - 1))

_lock = threading.Lock()
_workers: list[Worker] = []
_by_thread: weakref.WeakKeyDictionary[threading.Thread, Worker] = weakref.WeakKeyDictionary()
_pid = os.getpid()
_next = 0


def worker(workers: int = WORKER_CAP, queue: int = MAX_JOBS) -> Worker:
    """Return the worker of the calling thread (fresh ones in a forked child: threads do not survive fork).

    A compile's Settings.workers and Settings.queue: a thread without a worker gets one of the
    first `workers` (made while there are fewer, never more than MAX_WORKERS); its queue is
    bound at `queue` from now on. A thread keeps its worker, so its compiles stay in order.
    """
    global _pid, _next
    me = threading.current_thread()
    with _lock:
        if _pid != os.getpid():
            _workers.clear()
            _by_thread.clear()
            _pid = os.getpid()
        w = _by_thread.get(me)
        if w is None:
            limit = max(1, min(MAX_WORKERS, workers))
            if len(_workers) < limit:
                _workers.append(Worker(queue))
            pool = _workers[:limit]
            w = pool[_next % len(pool)]
            _next += 1
            _by_thread[me] = w
    w.resize(queue)
    return w


_late: Worker | None = None
_late_pid = -1


def late_worker() -> Worker:
    """Return the process's one worker for slow jobs after a compile (run --ptxas's nvcc builds).

    Unbounded, and no compile waits for it (a compile waits for its own worker only);
    `drain()` does, after the printing workers, so an invocation ends with its jobs done.
    """
    global _late, _late_pid
    with _lock:
        if _late is None or _late_pid != os.getpid():
            _late, _late_pid = Worker(max_jobs=0), os.getpid()
        return _late


def drain(timeout: float | None = None) -> bool:
    """Wait for every job submitted so far in this process (slow jobs after them); return False on timeout."""
    with _lock:
        workers = list(_workers) if _pid == os.getpid() else []
    ok = True
    for w in workers:
        ok = w.drain(timeout) and ok
    with _lock:
        late = _late if _late_pid == os.getpid() else None
    if late is not None:
        ok = late.drain(timeout) and ok
    return ok


def on_worker() -> bool:
    """Return True on a worker thread (a job emitting an event needs no second queueing)."""
    me = threading.current_thread()
    return any(w._thread is me for w in [*_workers, *([_late] if _late is not None else [])])


@atexit.register
def _drain_at_exit() -> None:
    try:
        drain()
    except BaseException:
        pass


FORK_DRAIN_S = 60.0  # the most a fork waits for the workers (then it goes on, as before)


def _before_fork() -> None:
    """os.fork() in a traced process: let the workers finish first.

    Compiles return before their records (see above), so a fork could come while a worker
    holds a lock (the store's, a listener's, stdout's, TVM's): the child, whose copy of that
    lock is never released, would hang on its first compile. Waiting here leaves the workers
    idle at the fork, as they were when every compile waited for them. A fork from a worker
    thread itself (which would wait for itself) goes on at once.
    """
    try:
        if not on_worker():
            drain(FORK_DRAIN_S)
    except BaseException:
        pass


def _after_fork_in_child() -> None:
    """The child's own lock: another thread of the parent may have held it at the fork (looking
    up its worker), and no thread of the child would ever release it. The child has no worker yet."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
