"""Report kernels that came from TileLang's kernel cache (with --use-cache): they ran no pass.

TileLang 0.1.15 offers no event for a cache hit, so this reads (never writes) the
kernel caches' in-memory tables: an entry that appeared without a traced
compilation of that kernel is a hit. Best effort: if TileLang's internals differ,
it reports nothing. The claim that tltrace hooks TileLang only through its public
instrumentation seam holds for tracing; this best-effort report, on only with
--use-cache, is the one place that reads a private TileLang table. The invocation
(`tracing.invocation.Invocation`) owns the watch and keeps the names of the hits, so
that its end can say that an edit of such a kernel's working file was not applied.
"""

from __future__ import annotations

import threading
from collections import Counter

from ..session.events import Event, RunFinished


def _tables() -> list[dict]:
    import sys

    if "tilelang" not in sys.modules:
        return []  # no kernel is cached before TileLang is imported; never import it for this
    try:
        import tilelang.cache as tc  # type: ignore[import-not-found]

        return [getattr(c, "_memory_cache", {}) for c in dict(tc._dispatch_map).values()]
    except Exception:
        return []


def _kernel_name(kernel: object) -> str:
    try:
        return str(kernel.prim_func.attrs["global_symbol"])  # type: ignore[attr-defined]
    except Exception:
        return "<unknown>"


class CacheWatch:
    """Counts traced kernels (`seen(event)`); `check()` returns the kernels that came from the cache since."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple[int, object]] = {(id(t), k) for t in _tables() for k in list(t)}
        self._traced: Counter[str] = Counter()

    def seen(self, event: Event) -> None:
        if isinstance(event, RunFinished) and event.manifest.kernel:
            with self._lock:
                self._traced[event.manifest.kernel] += 1

    def check(self) -> list[str]:
        """Return the names of the kernels that came from the cache since the last check, in order."""
        hits = []
        with self._lock:
            for table in _tables():
                for key, kernel in list(table.items()):
                    if (id(table), key) in self._seen:
                        continue
                    self._seen.add((id(table), key))
                    name = _kernel_name(kernel)
                    if self._traced[name] > 0:
                        self._traced[name] -= 1
                    else:
                        hits.append(name)
        return hits
