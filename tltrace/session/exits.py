"""Every way a traced process ends after a compile keeps the compile's records.

A compile that succeeds returns before its records are written (session/worker.py): its
worker writes them while the caller goes on. A normal exit drains the workers (their
atexit hook); the other ways out run no exit hook, and this module covers them:

- **`os._exit`** (a script's own, a signal handler's, and every `multiprocessing` child
  started with `fork`, whose `Popen` ends the child with `os._exit(code)` after its
  target returns): while tracing is installed, `os._exit` is wrapped (as coverage.py
  wraps it) so that it first waits for the workers, at most `Settings.exit_wait` seconds
  (`TLTRACE_EXIT_WAIT`, `enable(exit_wait=...)`; 30 by default), then exits as asked. `uninstall()` puts the original back; a
  wrapper someone put over ours later stays, and ours then only passes the call on.
- **A forked child** (`os.fork()`, the `fork` start method): its compiles wait for their
  records (`forked_settings`), as a spawned child's do, so a child that ends in any way
  after a compile returned (killed by `Pool.terminate()`'s SIGTERM too) has them on disk.
- **`sys.exit` in a thread** ends only that thread; the process ends later in one of the
  ways above.

The drain runs in a helper thread that the exiting thread waits for: whatever the helper
blocks on (a lock the interrupted thread holds, when a signal handler exits), the exit goes
on after the bound. When the bound is hit, the compiles whose records were not all written
still say, on disk, that the compile had ended (`fatal.Inflight.ended`): they read as
"exited" ("process N exited before its records were written"), never as "interrupted",
which means the compile itself was cut.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..config import EXIT_WAIT_DEFAULT, Settings
from . import worker

# The most an os._exit waits for the records of the compiles before it (Settings.exit_wait,
# TLTRACE_EXIT_WAIT, seconds): the installed invocation's, set by install().
_bound = EXIT_WAIT_DEFAULT

_lock = threading.Lock()
_AT_IMPORT = os._exit  # (only if install() never ran: the wrapper always has an exit to call)
_real_exit: Callable[[int], Any] | None = None  # os._exit as it was before install()
_active = False


def _drain_before_exit() -> bool:
    """Wait for the workers, at most `_bound` seconds; return True when every job handed in has run."""
    bound = _bound
    if worker.on_worker():  # a listener that exits: waiting for its own worker would wait out the bound
        return False
    done = threading.Event()

    def run() -> None:
        try:
            if worker.drain(bound):
                done.set()
        except BaseException:
            pass

    helper = threading.Thread(target=run, name="tltrace-exit-drain", daemon=True)
    try:
        helper.start()
    except RuntimeError:  # no new thread now (the interpreter is finalising): wait here, still bounded
        return worker.drain(bound)
    helper.join(bound)
    return done.is_set()


def _exit(status: int) -> Any:
    """os._exit while tracing: the records of the compiles so far first (bounded), then the exit."""
    real = _real_exit
    if _active:
        try:
            _drain_before_exit()
        except BaseException:
            pass
    return (real or _AT_IMPORT)(status)


def install(exit_wait: float = EXIT_WAIT_DEFAULT) -> None:
    """Wrap os._exit (once) while tracing is installed; it waits at most `exit_wait` seconds (Settings.exit_wait)."""
    global _real_exit, _active, _bound
    with _lock:
        _active = True
        _bound = exit_wait
        if getattr(os, "_exit", None) is _exit:
            return
        if _real_exit is None:
            _real_exit = os._exit
        os._exit = _exit  # type: ignore[assignment]


def uninstall() -> None:
    """Put os._exit back when ours is still the one there (another wrapper over it stays, and ours passes through)."""
    global _active
    with _lock:
        _active = False
        if os._exit is _exit and _real_exit is not None:  # type: ignore[comparison-overlap]
            os._exit = _real_exit  # type: ignore[assignment]


def installed() -> bool:
    return _active and os._exit is _exit  # type: ignore[comparison-overlap]


def forked_settings(settings: Settings, installed_pid: int) -> Settings:
    """Return `settings` for a compile in this process: in a forked child of the process that
    installed the tool, its compiles wait for their records (Settings.wait)."""
    if os.getpid() == installed_pid or settings.wait:
        return settings
    try:
        return replace(settings, wait=True)
    except Exception:
        return settings
