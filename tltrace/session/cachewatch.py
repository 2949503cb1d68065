"""Report kernels that came from TileLang's kernel cache (with --use-cache): they ran no pass.

TileLang 0.1.15 offers no event for a cache hit, so this reads (never writes) the
kernel caches' in-memory tables: an entry that appeared without a traced
compilation of that kernel is a hit. Best effort: if TileLang's internals differ,
it reports nothing. The names of the hits are kept (`cached_kernels`), so that the end
of the run can say that an edit of such a kernel's working file was not applied.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

from .events import Event, Notice, RunFinished

_hits_lock = threading.Lock()
_hits: set[str] = set()


def cached_kernels() -> frozenset[str]:
    """Return the names of the kernels this process got from TileLang's kernel cache (they ran no codegen)."""
    with _hits_lock:
        return frozenset(_hits)


def _tables() -> list[dict]:
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
    """Listener wrapper: counts traced kernels; `check()` reports cache hits as notices."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self.emit = emit
        self._lock = threading.Lock()
        self._seen: set[tuple[int, object]] = {(id(t), k) for t in _tables() for k in list(t)}
        self._traced: Counter[str] = Counter()

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunFinished) and event.manifest.kernel:
            with self._lock:
                self._traced[event.manifest.kernel] += 1

    def check(self) -> int:
        """Emit one 'cached' notice per kernel that came from the cache since the last check."""
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
        with _hits_lock:
            _hits.update(hits)
        for name in hits:
            self.emit(Notice("cached", f"kernel {name} came from TileLang's kernel cache; no pass ran",
                             kernel=name))
        return len(hits)
