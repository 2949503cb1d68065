"""Whether the user pressed Ctrl+C during the current `tltrace run`.

SIGINT raises KeyboardInterrupt in whatever Python code runs next; during a compile
that is tltrace's pass callback, called from TVM's C++, which turns it into a
RuntimeError. The flag below remembers that the user pressed Ctrl+C, so that the
run is recorded and reported as interrupted (exit 130), not as a failed pass.
"""

from __future__ import annotations

import threading

_interrupted = threading.Event()


def mark_interrupted() -> None:
    _interrupted.set()


def clear_interrupted() -> None:
    _interrupted.clear()


def interrupted() -> bool:
    """Return True once Ctrl+C was pressed during the current `tltrace run` invocation."""
    return _interrupted.is_set()
