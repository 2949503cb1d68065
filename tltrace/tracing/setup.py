"""The one TileLang set-up, lazy: nothing of TileLang is imported until the traced code imports it.

Importing TileLang takes seconds, and a script (a test session, a notebook, a watch rerun of a
helper) may never import it: tracing then costs what it costs without tltrace. So every entry
point (`tltrace run`, `enable()`, each test under `pytest --tltrace`, a traced job's child) sets
TileLang up through `Lifecycle.start()`, which uses this module:

1. `check()`, before TileLang is imported, reading the installed files only: not installed is
   `NotInstalled`; a TileLang without the seam is a UsageError (one line, naming the release,
   before the traced code runs); then what must precede `import tilelang` (its own tracer off,
   its kernel cache off unless `use_cache`: it reads both variables at import). Imports nothing.
2. `Setup`: the rest of the set-up (`controller.set_up_tilelang`) and the lifecycle's install,
   now when TileLang is imported already, else right after the traced code's own
   `import tilelang` (`importhook.AfterImport`), in the importing thread. A failure there is
   said once through `on_failure`, and the code runs on untraced: tltrace never breaks the
   user's import.

A traced child reaches the same `Setup` from `_boot/sitecustomize.py`, which runs after the
child's `import tilelang` (it stays standard-library only and keeps its own import hook).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol

from ..config import Settings
from ..errors import TltraceError, UsageError
from ..session import controller
from .importhook import AfterImport, seam_on_disk

MODULE = "tilelang"


class _Life(Protocol):
    """What the set-up needs of a `lifecycle.Lifecycle` (named here: lifecycle imports this module)."""

    @property
    def settings(self) -> Settings: ...

    def __call__(self, event: Any) -> None: ...

    def install(self) -> None: ...


class NotInstalled(TltraceError):
    """TileLang is not installed: nothing can be traced."""


def imported() -> bool:
    """Return True when TileLang is imported in this process."""
    return MODULE in sys.modules


def check(*, use_cache: bool = False) -> list[str]:
    """Before TileLang is imported: check it from its files and prepare the environment; return info lines.

    Raises NotInstalled when TileLang is not installed, UsageError (one line) when it lacks the
    seam. Once TileLang is imported it only checks the seam (`Setup` sets it up at once).
    """
    if imported():
        controller.check_seam()
        return []
    seam = seam_on_disk(MODULE)
    if seam is None:
        raise NotInstalled("cannot import tilelang (it is not installed)")
    if not seam:
        controller.check_seam()  # UsageError, one line, naming the installed version
    controller.prepare_environment(use_cache=use_cache)
    return controller.environment_notes()


class Setup:
    """One lifecycle's set-up: its install now when TileLang is imported, else right after the import.

    `on_failure(reason)` says a set-up that failed after the import (the code runs on untraced).
    `installed` says whether the lifecycle's tool went in; `stop()` takes the import hook away.
    """

    def __init__(self, life: _Life, on_failure: Callable[[str], None]) -> None:
        self.life = life
        self.on_failure = on_failure
        self.installed = False
        self._hook: AfterImport | None = None

    @property
    def pending(self) -> bool:
        """True while the set-up waits for the traced code to import TileLang."""
        return self._hook is not None and not self._hook.fired

    def start(self) -> Setup:
        """Set up now when TileLang is imported (a UsageError raises), else when it is."""
        if imported():
            self._set_up(now=True)
        else:
            self._hook = AfterImport(MODULE, self._set_up).install()
        return self

    def _set_up(self, now: bool = False) -> None:
        from ..session.events import Notice

        try:
            notes = controller.set_up_tilelang(use_cache=self.life.settings.use_cache)
        except UsageError as exc:
            if now:
                raise  # said before the traced code goes on: exit 2 under `tltrace run`
            self.on_failure(str(exc))
            return
        except Exception as exc:
            self.on_failure(str(exc))
            return
        for note in notes:
            self.life(Notice("info", note))
        try:
            self.life.install()
            self.installed = True
        except Exception as exc:
            self.on_failure(f"cannot install the tracer ({type(exc).__name__}: {exc})")

    def stop(self) -> None:
        """Take the import hook away (TileLang was never imported, or the set-up is over)."""
        if self._hook is not None:
            self._hook.remove()


def untraced(life: Any) -> Callable[[str], None]:
    """The usual `on_failure`: a warning to the lifecycle's listeners, '...; running untraced'."""
    from ..session.events import Notice

    def say(reason: str) -> None:
        life(Notice("warning", f"{reason}; running untraced"))

    return say
