"""Whether the user pressed Ctrl+C (or tltrace got SIGTERM or SIGHUP) during the current `tltrace run`.

SIGINT raises KeyboardInterrupt in whatever Python code runs next (SIGTERM and SIGHUP
raise `procgroup.Terminated` there, under `tltrace run`); during a compile that is
tltrace's pass callback, called from TVM's C++, which turns it into a RuntimeError. The
flag below remembers the signal, so that the run is recorded and reported as
interrupted (exit 130, 143 or 129), not as a failed pass.
"""

from __future__ import annotations

import signal
import threading

_interrupted = threading.Event()
_signum: list[int] = [signal.SIGINT]


def mark_interrupted(signum: int = signal.SIGINT) -> None:
    _signum[0] = int(signum)
    _interrupted.set()


def clear_interrupted() -> None:
    _interrupted.clear()
    _signum[0] = signal.SIGINT


def interrupted() -> bool:
    """Return True once Ctrl+C (or SIGTERM, SIGHUP) arrived during the current `tltrace run` invocation."""
    return _interrupted.is_set()


def interrupting_signal() -> int:
    """Return the signal that interrupted the run (SIGINT when none did)."""
    return _signum[0]
