"""One invocation: the events of its compiles pass through it, and it closes them.

An invocation is one `tltrace run` (one watch rerun is one), or one
`tltrace.enable()` .. `disable()` span. It keeps the manifests of its finished
compiles (the terminal's summary table reads them), and at its end it tells the
listeners (`InvocationFinished`), then applies retention: `keep` N keeps the newest
N invocations of the script, this one included, and says what went (`Pruned`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..config import Settings
from .events import Event, InvocationFinished, Notice, Pruned, RunFinished
from .records import RunManifest


class Invocation:
    """Listener wrapper for one invocation: forwards every event, remembers its finished compiles."""

    def __init__(self, settings: Settings, emit: Callable[[Event], None]) -> None:
        self.settings = settings
        self._emit = emit
        self._lock = threading.Lock()
        self.runs: list[RunManifest] = []
        self.finished = False

    def rebind(self, settings: Settings, emit: Callable[[Event], None]) -> None:
        """Go on with new settings (same invocation id) and new listeners: enable() called again."""
        with self._lock:
            self.settings, self._emit = settings, emit

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunFinished) and event.manifest.invocation == self.settings.invocation:
            with self._lock:
                self.runs.append(event.manifest)
        self._emit(event)

    def finish(self, *, interrupted: bool = False, prune: bool = True) -> None:
        """Tell the listeners the invocation is over, then prune older invocations (once)."""
        with self._lock:
            if self.finished:
                return
            self.finished = True
            runs = tuple(self.runs)
        self._report_unapplied()
        self._emit(InvocationFinished(self.settings.invocation, runs, interrupted))
        if prune and self.settings.keep > 0:
            self._prune()

    def _report_unapplied(self) -> None:
        """Say every edit this invocation did not compile (kernel not compiled, cache hit, tracing failed)."""
        from ..reconcile.workflow import report_unapplied
        from .cachewatch import cached_kernels

        report_unapplied(self.settings, self._emit, cached=cached_kernels())

    def _prune(self) -> None:
        from ..history.retention import prune

        script_dir = self.settings.script_dir
        try:
            # This invocation's own compiles are kept whatever the count says: a shorter
            # invocation that started later and ended first must not make this one prune itself.
            result = prune(script_dir, self.settings.keep, live={self.settings.invocation})
        except Exception as exc:  # retention must never turn a good run into a failed one
            self._emit(
                Notice("warning", f"pruning old runs under {script_dir} failed ({type(exc).__name__}: {exc})")
            )
            return
        if result is None or not (result.removed or result.failed):
            return
        self._emit(
            Pruned(
                script_dir,
                len(result.removed),
                result.invocations_removed,
                result.bytes_freed,
                result.invocations_kept,
                self.settings.keep,
                tuple(result.failed),
            )
        )
