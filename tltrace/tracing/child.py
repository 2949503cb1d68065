"""A child process of a traced job starts tracing here, once it imports TileLang.

`_boot/sitecustomize.py` calls `activate()` right after the child's `import tilelang`
(children.py says how the child was reached). The child traces with the
settings in TLTRACE_CHILD, under the parent's invocation id and script directory,
into a lifecycle of its own (lifecycle.py), set up and ended as every entry point's is
(`Lifecycle.start`, `Lifecycle.end`), without the reports at its end: the parent summarises
and prunes. This module is an entry point: it sits above session/ and render/ (it wires them, as runner.py
does; tests/test_layers.py puts it with the entry points); nothing in tltrace imports it.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

from .children import ENV, settings_from_json

_active_lock = threading.Lock()
_active: list[Any] = []  # the child's invocation (Lifecycle), closed at exit


def activate() -> None:
    """Trace this child's compiles with the settings in TLTRACE_CHILD (called once tilelang is imported).

    Never raises: a problem is one line on stderr, and the child runs on untraced.
    """
    text = os.environ.get(ENV)
    if not text:
        return
    try:
        settings, root = settings_from_json(text)
    except Exception as exc:
        _stderr(f"cannot read {ENV} ({type(exc).__name__}: {exc}); this process is not traced")
        return
    try:
        from ..render.listeners import Listeners
        from ..session import controller

        if controller.installed() is not None:
            return  # this process traces on its own already
        from .lifecycle import Lifecycle

        # The child's share of the invocation: its compiles find its reconcile ledger by the id.
        # The one set-up (TileLang is imported: at once); no propagation, its environment
        # already reaches its own children. It ends without the reports (the parent
        # summarises); the lifecycle says an outlived parent.
        life = Lifecycle(settings, [Listeners(settings)], root=root).open()
        try:
            life.start(children=False, on_failure=_untraced)
        except Exception:  # no seam: said below, in one line
            life.end(report=False)
            raise
        if not life.installed:
            life.end(report=False)
            return
        with _active_lock:
            first = not _active
            _active.append(life)
        if first:
            atexit.register(_close)
    except Exception as exc:
        _stderr(f"cannot trace this process ({type(exc).__name__}: {exc}); it runs untraced")


def discovered() -> None:
    """The `tilelang.instrumentation_tools` entry point: a TileLang that discovers tools calls it.

    It does what `_boot/sitecustomize.py` does after `import tilelang`, for a child process
    that TileLang reaches first (a child whose PYTHONPATH lost tltrace's start-up hook): it
    traces only in a traced job's child (TLTRACE_CHILD set), never in the traced process
    itself (it sets up on its own), and never twice. Never raises.
    """
    text = os.environ.get(ENV)
    if not text:
        return
    try:
        _settings, root = settings_from_json(text)
    except Exception:
        return  # activate() says why, when the start-up hook calls it
    if root.get("pid") == os.getpid():
        return
    activate()


def _close() -> None:
    """At exit: the one end sequence, without the reports (the tool down, the records flushed, closed)."""
    with _active_lock:
        items, _active[:] = list(_active), []
    for life in items:
        try:
            life.end(report=False)
        except Exception:
            pass


def _untraced(reason: str) -> None:
    _stderr(f"{reason}; it runs untraced")


def _stderr(message: str) -> None:
    try:
        sys.stderr.write(f"tltrace: warning: pid {os.getpid()}: {message}\n")
    except Exception:
        pass
