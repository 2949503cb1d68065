"""Every child process tltrace starts, in a process group of its own that does not outlive tltrace.

A bisect step, a watch run, the bisect probe, ptxas, nvdisasm, the NVRTC log child, the
repro's rerun: each starts here, through `started()` (a Popen) or `run()` (subprocess.run),
in a new session (`setsid`: a group of its own, off the terminal, so a Ctrl+C at the
terminal reaches tltrace alone and tltrace decides). The group, with whatever the child
started in turn (a traced script's own subprocesses), is taken down when the call that
started it ends: normally (what is left of the group), by an exception, or by SIGINT,
SIGTERM or SIGHUP to tltrace. Killing only the child, as subprocess.run does on an
exception, left its children running; SIGTERM, with Python's default action, left
everything running.

How it ends a group: the signal tltrace got (SIGTERM for an exception) goes to the whole
group, so a `tltrace run` child records its run as interrupted; the group leader gets
GRACE seconds to exit; then SIGKILL to the group. The leader is not reaped before the
SIGKILL, so its pid (the group's id) cannot be reused by then. Signals are blocked
while a group is taken down: a second Ctrl+C cannot leave it half done.

While a group is alive, `on_signals()` handles SIGTERM and SIGHUP (where their action is
still the default) by raising `Terminated` in the main thread, and SIGINT (where Python's
default handler is in place) by raising KeyboardInterrupt, after forwarding the signal to
every live group (one started by a worker thread included). The exit statuses, as a
shell reports a death by that signal: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP). A handler
someone else installed (SIG_IGN under nohup, a script's own) is left alone.

What escapes: SIGKILL to tltrace itself (nothing runs), and a grandchild that calls
setsid() itself (it left the group on purpose). The live groups are process-wide state,
as signal handlers are; the lock guards them against worker threads.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

GRACE = 5.0  # seconds the group leader gets to exit after the signal, before SIGKILL
HANDLED = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
POSIX = hasattr(os, "killpg") and hasattr(os, "waitid")  # elsewhere: the child alone, killed as Popen can

_lock = threading.RLock()  # a signal handler may take it in the main thread while it holds it
# The process group ids of the children started here and not yet taken down, each with the
# signal already forwarded to it (0: none), so that take_down does not send it twice.
_live: dict[int, int] = {}
_forwarded = [0, 0]  # how many signals went to the live groups, and the last one
_deferring = [False]  # the main thread is in Popen: its signal handler waits (start() raises it again)
_deferred: list[int] = []


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinding takes the child groups down; exit with `exit_code`.

    A BaseException, as KeyboardInterrupt is: `except Exception` in the code it crosses
    does not swallow it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return exit_code(self.signum)


def exit_code(signum: int) -> int:
    """Return the exit status for a death by `signum`, as a shell reports it: 128 + the number."""
    return 128 + int(signum)


def live_groups() -> list[int]:
    """Return the ids of the process groups started here that are not yet taken down."""
    with _lock:
        return sorted(_live)


def _forward(signum: int) -> None:
    with _lock:
        groups = [g for g, sent in _live.items() if not sent]
        for g in groups:
            _live[g] = signum
        _forwarded[0] += 1
        _forwarded[1] = signum
    for pgid in groups:
        _killpg(pgid, signum)


def _killpg(pgid: int, signum: int) -> bool:
    """Send `signum` to group `pgid`; return False when the group is gone."""
    if not POSIX:
        return False
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@contextlib.contextmanager
def on_signals(mark: Callable[[int], None] | None = None, redeliver: bool = False) -> Iterator[None]:
    """While inside, SIGINT/SIGTERM/SIGHUP forward to the live groups and raise (KeyboardInterrupt, Terminated).

    Only in the main thread, and only for a signal whose handler is still the default one:
    an outer `on_signals` (its handler is not the default), SIG_IGN or a handler of the
    script's is kept; with `mark`, an outer `on_signals`'s handler is stood in for (the
    runner's, inside the CLI's). `mark(signum)` runs first (the runner remembers the interruption).
    The handlers put back at the end are those found, unless someone replaced ours since.
    `redeliver`: a Terminated that leaves is turned back into the signal's default action
    once the handlers are back (a library caller, say tltrace.enable() in a script, dies
    of SIGTERM as it would have without tltrace, its child groups down first).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if _deferring[0]:
            _deferred.append(signum)
            return
        if mark is not None:
            mark(signum)
        _forward(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    handler._tltrace = True  # type: ignore[attr-defined]  # ours: a marking on_signals may stand in for it
    saved: dict[int, Any] = {}
    defaults: set[int] = set()
    for sig in HANDLED:
        try:
            now = signal.getsignal(sig)
            default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            if now is default or (mark is not None and getattr(now, "_tltrace", False)):
                signal.signal(sig, handler)
                saved[sig] = now
                if now is default:
                    defaults.add(sig)
        except (ValueError, OSError):
            continue
    again = 0
    try:
        yield
    except Terminated as exc:
        if not (redeliver and exc.signum in defaults):
            raise
        again = exc.signum
    finally:
        for num, previous in saved.items():
            try:
                if signal.getsignal(num) is handler:
                    signal.signal(num, previous)
            except (ValueError, OSError):
                pass
    if again:
        signal.raise_signal(again)  # the default action: this process ends as the signal says
        raise Terminated(again)  # (a default action that did not end it)


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _exited(pid: int) -> bool:
    """Return True once process `pid` (our child) has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True  # reaped already (by Popen)
    except InterruptedError:
        return False


def take_down(proc: subprocess.Popen, signum: int = signal.SIGTERM, grace: float = GRACE) -> None:
    """End the process group of `proc` (a child of `started`): `signum` to the group, `grace` seconds for
    the leader to exit, then SIGKILL to what is left; reap the leader. Idempotent; never raises."""
    pgid = proc.pid
    with _signals_blocked():
        with _lock:
            if pgid not in _live:
                return  # taken down already
            sent = _live[pgid]
            _live[pgid] = sent or signum
        if not POSIX:
            with contextlib.suppress(Exception):
                proc.kill()
                proc.wait()
            with _lock:
                _live.pop(pgid, None)
            return
        try:
            if proc.returncode is None and not _exited(pgid):
                if not sent:  # a signal handler forwarded one already: do not send a second
                    _killpg(pgid, signum)
                deadline = time.monotonic() + grace
                while not _exited(pgid) and time.monotonic() < deadline:
                    time.sleep(0.02)
            elif _killpg(pgid, 0):  # the leader is done; its children are not
                _killpg(pgid, signum)
                deadline = time.monotonic() + min(grace, 1.0)
                while _killpg(pgid, 0) and time.monotonic() < deadline:
                    time.sleep(0.02)
            _killpg(pgid, signal.SIGKILL)
            try:
                proc.wait()
            except Exception:
                pass
        finally:
            with _lock:
                _live.pop(pgid, None)


def _signal_for(exc: BaseException | None) -> int:
    if isinstance(exc, KeyboardInterrupt):
        return signal.SIGINT
    if isinstance(exc, Terminated):
        return exc.signum
    return signal.SIGTERM


def start(argv: Sequence[str] | str, **kwargs: Any) -> subprocess.Popen:
    """Return a Popen of `argv` in a new session (a process group of its own), registered as live.

    The caller ends it with `take_down(proc)`; `started()` does that itself. Signals are not
    blocked around the fork (the child would inherit the blocked mask, and its children
    too); instead a signal that arrives in the main thread while Popen runs waits for the
    registration (then it is raised again), and one forwarded meanwhile from another
    thread's start is forwarded to this group too.
    """
    kwargs.pop("start_new_session", None)
    main = threading.current_thread() is threading.main_thread()
    proc: subprocess.Popen | None = None
    with _lock:
        forwards = _forwarded[0]
    if main:
        _deferring[0] = True
    try:
        proc = subprocess.Popen(argv, start_new_session=POSIX, **kwargs)
        with _lock:
            _live[proc.pid] = 0
            if _forwarded[0] != forwards:  # a signal went to the live groups while this one started
                _live[proc.pid] = _forwarded[1]
                _killpg(proc.pid, _forwarded[1])
    finally:
        if main:
            _deferring[0] = False
            pending, _deferred[:] = list(_deferred), []
            for signum in pending:
                try:
                    signal.raise_signal(signum)  # its handler forwards it (to this group too), and raises
                except BaseException as exc:
                    if proc is not None:
                        take_down(proc, _signal_for(exc))
                    raise
    return proc


@contextlib.contextmanager
def started(argv: Sequence[str] | str, **kwargs: Any) -> Iterator[subprocess.Popen]:
    """Yield a Popen of `argv` in a process group of its own; on leaving, by any way, the group is taken down."""
    with on_signals(redeliver=True):
        proc: subprocess.Popen | None = None
        try:
            proc = start(argv, **kwargs)
            yield proc
        except BaseException as exc:
            if proc is not None:
                take_down(proc, _signal_for(exc))
            raise
        finally:
            if proc is not None:
                take_down(proc)


def run(
    argv: Sequence[str] | str,
    *,
    input: Any = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess:
    """Return subprocess.run(argv, ...) done in a process group of its own that does not outlive the call.

    On a timeout the whole group is killed (so no grandchild holds the pipes open) and
    subprocess.TimeoutExpired is raised, as subprocess.run does.
    """
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with started(argv, **kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            take_down(proc, signal.SIGKILL, 0)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(proc.args, timeout or 0, output=out, stderr=err) from None
    if check and proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, proc.args, out, err)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
