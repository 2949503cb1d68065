"""One invocation, and everything tltrace knows about it while it is open.

An invocation is one `tltrace run` (one watch rerun is one), one
`tltrace.enable()` .. `disable()` span, or one test under `pytest --tltrace`.
Its compiles share `settings.invocation` (the id). The `Invocation` object is the one
owner of the state that lives as long as that id:

- the manifests of its finished compiles (the terminal's summary table reads them);
- its reconcile `ledger`: which working files its compiles reconciled and which
  edits it has already reported (`reconcile.workflow.Ledger`);
- with --use-cache, the kernels that came from TileLang's kernel cache (`cached`);
- whether it is open: retention never removes an open invocation's runs (in another
  process it reads the lock the invocation's writers hold, `format/liveness.py`).

Its life (open, events, finish, close, the fork check) is `tracing.lifecycle.Lifecycle`'s,
which every entry point uses; this object is the state and the reports at the end: `finish()`
says every edit the invocation did not compile (NOT-APPLIED), tells the listeners
(`InvocationFinished`), closes, and applies retention (`keep` N keeps the newest N
invocations of the script, this one included; `Pruned` says what went). `close()` alone
ends it without the reports (pytest's per-test invocations, a child process).

Capture's hooks (tracing/hooks.py) find the open invocation of a compile by its id (`find`); nothing
is keyed by the identity of a Settings object.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from ..config import Settings
from ..format import liveness
from ..format.records import RunManifest
from ..reconcile.workflow import Ledger, report_unapplied
from ..session.events import Event, InvocationFinished, Notice, Pruned, RunFinished, RunStarted
from ..session.worker import drain
from .cachewatch import CacheWatch

_registry_lock = threading.Lock()
_open: dict[str, Invocation] = {}


def find(invocation_id: str) -> Invocation | None:
    """Return the open invocation with this id in this process, or None."""
    with _registry_lock:
        return _open.get(invocation_id)


def open_ids() -> frozenset[str]:
    """Return the ids of the invocations open in this process (an invocation's own pruning keeps them)."""
    with _registry_lock:
        return frozenset(_open)


def note_not_finalised(settings: Settings, run_id: str) -> None:
    """Tell the open invocation of `settings` that this compile ended but its run could not be finalised."""
    inv = find(settings.invocation)
    if inv is not None:
        with inv._lock:
            inv.not_finalised.add(run_id)


def ledger_of(settings: Settings) -> Ledger | None:
    """Return the reconcile ledger of the open invocation `settings` belongs to, or None."""
    inv = find(settings.invocation)
    return inv.ledger if inv is not None else None


class Invocation:
    """Listener wrapper for one invocation: forwards every event and owns the invocation's state."""

    def __init__(self, settings: Settings, emit: Callable[[Event], None]) -> None:
        self.settings = settings
        self._emit = emit
        self._lock = threading.Lock()
        self.runs: list[RunManifest] = []
        self.ledger = Ledger()
        self.cached: set[str] = set()
        self.not_finalised: set[str] = set()  # compiles that ended but whose final manifest was not written
        self._watch: CacheWatch | None = CacheWatch() if settings.use_cache else None
        self.finished = False
        self.pid = os.getpid()  # the process that opened it (its own compiles, `gathered_notices`)
        self.started = time.time()

    @property
    def id(self) -> str:
        return self.settings.invocation

    # -- lifecycle ---------------------------------------------------------------------------------
    def open(self) -> Invocation:
        """Register as open in this process (retention keeps it; its compiles find its ledger); return self."""
        with _registry_lock:
            _open[self.id] = self
        return self

    def rebind(self, settings: Settings, emit: Callable[[Event], None]) -> None:
        """Go on with new settings and new listeners under the same id: enable() called again."""
        if settings.invocation != self.id:
            raise ValueError("rebind keeps the invocation id")
        with self._lock:
            self.settings, self._emit = settings, emit
            if settings.use_cache and self._watch is None:
                self._watch = CacheWatch()

    def close(self) -> None:
        """Stop being open (idempotent); no report. Its runs no longer count as running."""
        with _registry_lock:
            if _open.get(self.id) is self:
                del _open[self.id]
        liveness.release(self.id)

    def finish(
        self,
        *,
        interrupted: bool = False,
        prune: bool = True,
        record_empty: bool = False,
        imported: bool = True,
    ) -> None:
        """Say the unapplied edits, tell the listeners the invocation is over, close, then prune (once).

        The compiles of the invocation's other processes (children, torchrun ranks) are
        read from disk and counted with this one's. Only the process that opened the
        invocation calls this (`Lifecycle.finish` checks).
        With `record_empty`, an invocation that traced no compile is recorded
        (format/empty.py) so that `-1` names it; `imported` says whether the script imported
        tilelang at all.
        """
        drain()  # every compile's records and events are in before the invocation ends
        with self._lock:
            if self.finished:
                return
            self.finished = True
        self.check_cache()
        with self._lock:
            runs = tuple(self.runs)
        own = {m.run_id for m in runs}
        runs = self._with_other_processes(runs)
        with self._lock:
            unfinalised = tuple(sorted(self.not_finalised))
        empty, empty_path = (
            self._record_empty(interrupted, imported) if record_empty and not runs else (None, None)
        )
        try:
            others = tuple(m for m in runs if m.run_id not in own)  # the job's other processes'
            report_unapplied(
                self.settings, self._emit, self.ledger, cached=frozenset(self.cached), others=others
            )
            self._emit(InvocationFinished(self.id, runs, interrupted, unfinalised, empty, empty_path))
        finally:
            self.close()
        if (prune or empty_path is not None) and self.settings.keep > 0:
            self._prune()

    def _record_empty(self, interrupted: bool, imported: bool):  # noqa: ANN202
        """Write the record of an invocation that traced no compile; return (record, path or None)."""
        import sys
        import time

        from ..format import empty
        from ..format.layout import RUN_RECORDS
        from ..session import kernelfilter

        s = self.settings
        record = empty.EmptyInvocation(
            invocation=self.id,
            script=s.script_name,
            started=self.started,
            finished=time.time(),
            command=list(s.command) or list(sys.argv),
            cwd=os.getcwd(),
            kernels=s.kernels.pattern if s.kernels is not None else None,
            skipped=kernelfilter.skipped(self.id),
            cached=tuple(sorted(self.cached)),
            imported=imported,
            interrupted=interrupted,
        )
        try:
            return record, empty.write(s.claim_script_dir() / RUN_RECORDS, record)
        except Exception as exc:
            self._emit(Notice("warning", f"cannot record the empty invocation ({type(exc).__name__}: {exc})"))
            return record, None

    # -- events --------------------------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.check_cache()  # hits before this compile, in order
        if isinstance(event, RunFinished) and event.manifest.invocation == self.id:
            with self._lock:
                self.runs.append(event.manifest)
        if self._watch is not None:
            self._watch.seen(event)
        self._emit(event)

    # -- the job's other processes ----------------------------------------------------------------------
    def _with_other_processes(self, runs: tuple[RunManifest, ...]) -> tuple[RunManifest, ...]:
        """Return `runs` and the invocation's compiles on disk that this process did not finish.

        The working files their compiles reconciled count as this invocation's (a child's
        edit applied or said there is not said again as NOT-APPLIED).
        """
        from .children import gather, gathered_notices, working_files

        try:
            g = gather(self.settings.script_dir, self.id, (m.run_id for m in runs))
        except Exception as exc:
            self._emit(
                Notice("warning", f"cannot read the job's other compiles ({type(exc).__name__}: {exc})")
            )
            return runs
        with self._lock:
            unfinalised = frozenset(self.not_finalised)
        for notice in gathered_notices(g, own_pid=self.pid, not_finalised=unfinalised):
            self._emit(notice)
        with self.ledger.lock:
            self.ledger.told.update(working_files(g.runs))
        return tuple(sorted((*runs, *g.runs), key=lambda m: (m.started, m.run_id)))

    def check_cache(self) -> int:
        """Emit one 'cached' notice per kernel that came from TileLang's kernel cache since the last check."""
        if self._watch is None:
            return 0
        hits = self._watch.check()
        with self._lock:
            self.cached.update(hits)
        for name in hits:
            self._emit(
                Notice("cached", f"kernel {name} came from TileLang's kernel cache; no pass ran", kernel=name)
            )
        return len(hits)

    def _prune(self) -> None:
        from ..history.retention import prune

        script_dir = self.settings.script_dir
        try:
            # Open invocations' compiles are kept whatever the count says: a shorter
            # invocation that started later and ended first must not make this one prune itself.
            result = prune(script_dir, self.settings.keep, live=open_ids() | {self.id})
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
