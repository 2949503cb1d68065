"""Run a callback right after a module's own import, without importing it first.

A traced script (under `tltrace run`, `enable()`, `pytest --tltrace`) may never import
TileLang, and importing TileLang costs seconds. So the one set-up (tracing/setup.py) does not
import it: it checks, from the files alone, that the installed TileLang has the seam
(`seam_on_disk`), and sets tracing up when the script itself imports `tilelang`
(`AfterImport`), as a traced child process does (`_boot/sitecustomize.py`, which must stay
standard-library only and keeps its own copy).
"""

from __future__ import annotations

import _thread
import importlib.util
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


class AfterImport:
    """A meta-path finder that answers only for `name`: the real loader runs, then `callback()`.

    `install()` puts it first on `sys.meta_path`; it removes itself once it has fired, and
    `remove()` takes it away when the module was never imported. The callback runs once,
    in the importing thread, with the module fully executed and in `sys.modules`.
    """

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self._callback = callback
        self._fired = threading.Event()
        self._asking: set[int] = set()  # threads inside find_spec, asking the other finders

    def install(self) -> AfterImport:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        return self

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    @property
    def fired(self) -> bool:
        return self._fired.is_set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.name or self._fired.is_set():
            return None
        me = _thread.get_ident()
        if me in self._asking:
            return None  # another finder that asks the rest (a traced parent's child hook) asked us
        self._asking.add(me)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._asking.discard(me)
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        inner = loader.exec_module

        def exec_module(module: Any) -> None:
            inner(module)
            self._fire()

        try:
            loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's loader object
        except Exception:
            pass
        return spec

    def _fire(self) -> None:
        if self._fired.is_set():
            return
        self._fired.set()
        self.remove()
        self._callback()


def seam_on_disk(package: str = "tilelang") -> bool | None:
    """Whether the installed `package` has `instrumentation` (the seam), read from its files.

    None when the package is not installed (or cannot be looked up); imports nothing.
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for loc in spec.submodule_search_locations or ():
        base = Path(loc) / "instrumentation"
        if base.is_dir() or base.with_suffix(".py").is_file():
            return True
    return False
