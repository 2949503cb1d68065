"""One invocation's life, the same for every entry point: open, events to the listeners, finish, close.

`tltrace run` (runner.py), `enable()`/`disable()` (api/trace.py, and so `%%tltrace`), each test
under `pytest --tltrace` (pytest_plugin.py) and a traced job's child process (tracing/child.py)
all go through a `Lifecycle`, with the same two calls at their edges:

    life = Lifecycle(settings, [listener, ...]).open()    # registered: its compiles find it by id
    life.start(children=True)                              # the one set-up, lazy (tracing/setup.py):
                                                           # traced from TileLang's import (now, if it is
                                                           # imported), child processes too
    ...                                                    # events: life(event)
    life.end(report=True)                                  # the one end sequence (below)

`start()` imports nothing of TileLang: it checks the installed files and waits for the traced
code's own `import tilelang` (`tltrace run` paid nothing for a script that never imports it,
and now neither does `enable()` nor `pytest --tltrace`). `end()` is the same sequence for all:
the import hook and the child environment taken away, the tool taken down (`retire=True`: a
later compile is said, not traced, as at the end of `tltrace run`) with the records of every
compile so far flushed to disk, the last kernel-cache hits said, then with `report` the end
with the reports (`finish`: NOT-APPLIED, InvocationFinished, close, retention) or without them
(`close`: a pytest test, whose section and summary say it; a child, whose parent reports).

It owns what was written once per entry point before:

- the one set-up and the one end (above);
- the one fork check (`forked()`): an os.fork() child inherits the object, and then
  neither reports, nor prunes, nor closes the listeners (the process that opened it does);
- the one fan-out (`Fanout`): every event to each listener in order; a listener that
  raises is said once (a TltraceWarning: no listener can say it) and the others, and the
  compile, go on;
- the one "outlived the job" notice: a process that is not the job's root (a fork child,
  a child process) says once, at a compile's start, that the root has ended;
- the invocation's state (`Invocation`: runs, reconcile ledger, cache hits) and through it
  the NOT-APPLIED reports and retention at the end.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from ..config import Settings, retired_knob_notes
from ..errors import UsageError
from ..format.writer import process_start, writer_alive
from ..session import controller
from ..session.events import Event, Notice, RunStarted, fallback_warning
from .children import Propagation
from .hooks import CAPTURE_HOOKS
from .invocation import Invocation
from .recorders import register_defaults
from .setup import NotInstalled, Setup, check, untraced

Listener = Callable[[Event], Any]


class Fanout:
    """Calls each listener with every event, in order; a listener that raises is said once and the rest go on."""

    def __init__(self, listeners: Iterable[Listener]) -> None:
        self.listeners = list(listeners)
        self._failed: set[int] = set()  # indexes of listeners already said to have failed
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        for i, listener in enumerate(self.listeners):
            try:
                listener(event)
            except Exception as exc:  # a listener never breaks the others, nor the user's compile
                self._said(i, listener, "could not show an event", exc)

    def close(self) -> None:
        """Finish every listener that has a `close()` (the HTML reports); each failure is said once."""
        for i, listener in enumerate(self.listeners):
            close = getattr(listener, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except Exception as exc:
                self._said(i, listener, "could not finish", exc)

    def _said(self, i: int, listener: Listener, what: str, exc: Exception) -> None:
        with self._lock:
            if i in self._failed:
                return
            self._failed.add(i)
        name = getattr(listener, "__qualname__", None) or type(listener).__name__
        fallback_warning(
            f"tltrace: a listener ({name}) {what} ({type(exc).__name__}: {exc}); "
            "the other listeners go on and records are still written"
        )


class Lifecycle:
    """Owns one invocation's life in one process: see the module's docstring."""

    def __init__(
        self, settings: Settings, listeners: Iterable[Listener], *, root: dict[str, Any] | None = None
    ) -> None:
        """`root`: the job's root process ({pid, start}) when this process is a child of a traced job."""
        self.fanout = Fanout(listeners)
        self.invocation = Invocation(settings, self.fanout)
        self.pid = os.getpid()  # the process that opened it; an os.fork() child inherits this object
        self.root = root if root is not None else {"pid": self.pid, "start": process_start(self.pid)}
        self._propagation: Propagation | None = None
        self._setup: Setup | None = None
        self._outlived_said = False
        self._launches: Any = None  # run --launches: the LaunchRecorder, from install() to end()
        self._lock = threading.Lock()

    @property
    def settings(self) -> Settings:
        return self.invocation.settings

    @property
    def id(self) -> str:
        return self.invocation.id

    # -- the one fork check ------------------------------------------------------------------------
    def forked(self) -> bool:
        """Return True in an os.fork() child of the process that opened this invocation."""
        return os.getpid() != self.pid

    def _is_root(self) -> bool:
        return not self.forked() and self.root.get("pid") == self.pid

    # -- open, start (install, propagate) ------------------------------------------------------------
    def open(self) -> Lifecycle:
        """Register the invocation as open in this process (its compiles find it; retention keeps it)."""
        self.invocation.open()
        return self

    def start(self, *, children: bool = True, on_failure: Callable[[str], None] | None = None) -> None:
        """The one set-up, lazy: trace this process's compiles into this invocation from TileLang's import.

        Now when TileLang is imported already, else right after the traced code imports it
        (tracing/setup.py); `children`: the Python processes started from here trace into it too.
        Raises UsageError (one line) when the installed TileLang has no seam. TileLang not
        installed, or a set-up that fails after the import, is said through `on_failure(reason)`
        (default: a warning to the listeners, '...; running untraced') and the code runs on
        untraced. Called again (enable() again), it starts over with the current settings.
        """
        self._stop_setup()
        if self._is_root():  # said once, by the job's root (its children inherit the variable)
            for note in retired_knob_notes():
                self(Notice("info", note))
        say = on_failure if on_failure is not None else untraced(self)
        try:
            notes = check(use_cache=self.settings.use_cache)
        except NotInstalled as exc:
            say(str(exc))
        except UsageError:
            raise
        else:
            for note in notes:
                self(Notice("info", note))
            setup = Setup(self, say)
            with self._lock:
                self._setup = setup
            setup.start()
        self.propagate(children)

    @property
    def installed(self) -> bool:
        """True once TileLang is set up and this invocation's tool is in (`start()`)."""
        setup = self._setup
        return setup is not None and setup.installed

    @property
    def tracing(self) -> bool:
        """True while later compiles are traced into this invocation, or will be once TileLang is imported."""
        setup = self._setup
        return setup is not None and (setup.installed or setup.pending)

    def _stop_setup(self) -> Setup | None:
        with self._lock:
            setup, self._setup = self._setup, None
        if setup is not None:
            setup.stop()
        return setup

    def install(self) -> None:
        """Trace every later TileLang compile of this process into this invocation (TileLang is imported).

        The per-compile recorders (tracing/recorders.py) are registered first: capture imports none.
        """
        register_defaults()
        controller.install(self.settings, self, CAPTURE_HOOKS)
        self._stop_launches()
        if self.settings.launches or self.settings.save_inputs:
            from ..launches.recorder import LaunchRecorder

            rec = LaunchRecorder(self.settings, lambda message: self(Notice("warning", message)))
            if rec.start():
                self._launches = rec

    def _stop_launches(self) -> None:
        """run --launches: stop observing; the launches so far are written (launches/recorder.py)."""
        rec, self._launches = self._launches, None
        if rec is not None:
            rec.stop()

    def propagate(self, on: bool = True) -> None:
        """Have the Python processes started from here trace into this invocation (`on`), or stop that."""
        self.stop_propagation()
        if on:
            prop = Propagation(self.settings).start()
            with self._lock:
                self._propagation = prop

    def stop_propagation(self) -> None:
        """Give the environment back what it had before `propagate()`."""
        with self._lock:
            prop, self._propagation = self._propagation, None
        if prop is not None:
            prop.stop()

    def rebind(self, settings: Settings, listeners: Iterable[Listener]) -> None:
        """Go on under the same id with new settings and new listeners (enable() again); the old ones finish."""
        old = self.fanout
        self.fanout = Fanout(listeners)
        self.invocation.rebind(settings, self.fanout)
        old.close()

    # -- events -------------------------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted) and not self._is_root():
            self._say_if_outlived(event)
        self.invocation(event)

    def _say_if_outlived(self, event: RunStarted) -> None:
        """Outside the job's root process: say once when a compile begins after the root has ended."""
        if self._outlived_said:
            return
        pid = self.root.get("pid")
        if not isinstance(pid, int) or writer_alive({"pid": pid, "start": self.root.get("start")}):
            return
        self._outlived_said = True
        self.fanout(
            Notice(
                "warning",
                f"process {os.getpid()} outlived the traced job (pid {pid}); its compiles are recorded "
                f"under {event.script_dir} in invocation {self.id}, but the job's summary and pruning are over",
                kernel=event.manifest.kernel,
            )
        )

    # -- the end ------------------------------------------------------------------------------------
    def end(
        self,
        *,
        report: bool = True,
        retire: bool = False,
        said: Iterable[Event] = (),
        interrupted: bool = False,
        prune: bool | None = None,
        record_empty: bool = False,
    ) -> bool:
        """The one end sequence, every entry point's: see the module's docstring.

        The import hook and the child environment go; the tool this invocation installed is
        taken down (`retire`: later compiles are said, not traced) once every compile so far
        has its records on disk; the last cache hits are said, then the events `said` (the
        script's traceback); then `finish()` with `report` (`prune` None: when TileLang was
        set up for it), else `close()`. Returns False in an os.fork() child (its parent ends
        the invocation), True otherwise.
        """
        self.stop_propagation()
        self._stop_launches()
        setup = self._stop_setup()
        installed = setup is not None and setup.installed
        forked = self.forked()
        if installed:
            if retire and not forked:
                controller.retire(self)  # finish() drains next
            else:
                controller.uninstall()  # drains: the records of the compiles so far are on disk
        if not forked:
            self.invocation.check_cache()
        for event in said:
            self(event)
        if report:
            return self.finish(
                interrupted=interrupted,
                prune=installed if prune is None else prune,
                record_empty=record_empty,
                imported=installed or "tilelang" in sys.modules,
            )
        self.close()
        return not forked

    def finish(
        self,
        *,
        interrupted: bool = False,
        prune: bool = True,
        record_empty: bool = False,
        imported: bool = True,
    ) -> bool:
        """End the invocation with its reports: NOT-APPLIED, InvocationFinished, close, prune; the listeners finish.

        Returns False (and does nothing but give the environment back) in an os.fork() child:
        the process that opened the invocation summarises and prunes it.
        """
        self.stop_propagation()
        if self.forked():
            return False
        try:
            self.invocation.finish(
                interrupted=interrupted, prune=prune, record_empty=record_empty, imported=imported
            )
        finally:
            self.fanout.close()
        return True

    def close(self) -> None:
        """End the invocation without reports (a pytest test, a child process): closed, listeners finished."""
        self.stop_propagation()
        if self.forked():
            return
        self.invocation.close()
        self.fanout.close()
