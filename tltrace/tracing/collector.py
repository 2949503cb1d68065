"""A listener that keeps the final manifest of every compile it sees (run --chrome-trace, the pytest plugin)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..errors import TltraceError


class RunCollector:
    """Listener for `tltrace run --chrome-trace`: keeps the final manifest of every compile of this run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started: dict[Path, Any] = {}
        self.finished: dict[Path, Any] = {}
        self.others: dict[str, Any] = {}  # run id -> manifest: the invocation's compiles in other processes

    def __call__(self, event: Any) -> None:
        from ..session.events import InvocationFinished, RunFinished, RunStarted

        if isinstance(event, RunStarted):
            with self._lock:
                self.started.setdefault(Path(event.run_dir), event.manifest)
        elif isinstance(event, RunFinished):
            with self._lock:
                self.finished[Path(event.run_dir)] = event.manifest
        elif isinstance(event, InvocationFinished):
            with self._lock:
                seen = {Path(d).name for d in self.started}
                for m in event.runs:
                    if m.run_id and m.run_id not in seen:
                        self.others[m.run_id] = m

    def manifests(self, *, counts: bool = False) -> list:
        """Return every compile's manifest: the final one, else (a compile cut short) what is on disk.

        `counts`: with the +/- counts a quiet capture left to the reader (history/derived.py)."""
        from ..history import runs
        from ..history.derived import with_counts

        out = []
        with self._lock:
            started = dict(self.started)
            finished = dict(self.finished)
            others = list(self.others.values())
        for run_dir, first in started.items():
            m = finished.get(run_dir)
            if m is None:
                try:
                    m = runs.load_manifest(run_dir)
                except TltraceError:
                    m = first
            out.append(with_counts(Path(run_dir), m) if counts else m)
        return out + others
