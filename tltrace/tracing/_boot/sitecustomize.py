"""tltrace's child hook: traces the TileLang compiles of a child Python process, lazily.

`tltrace run`, `tltrace.enable()` and `pytest --tltrace` put this file's directory
first on PYTHONPATH (in the environment only: nothing is written anywhere) and the
trace settings in TLTRACE_CHILD. Every Python child started from there imports this
module at start-up, as `site` imports any sitecustomize. It then costs one dict lookup
and one entry on `sys.meta_path`: it imports nothing. Only when the child itself
imports `tilelang` does it import tltrace, right after TileLang's own `__init__`, and
start tracing (tltrace.tracing.child.activate).

The sitecustomize this one shadows (the interpreter's or a virtualenv's) is then
imported as if this one were not there. Standard library only; never raises.
"""

import _thread
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


class _TileLangImportHook:
    """A meta-path finder that only ever answers for `tilelang`: it wraps the real loader's exec_module.

    It asks the other finders for the real spec; one that asks the rest in turn (`tltrace run`'s
    own hook, in a traced job's child that runs `tltrace run`) gets None from it meanwhile.
    """

    def __init__(self):
        self._asking = set()  # threads inside find_spec

    def find_spec(self, name, path=None, target=None):
        if name != "tilelang":
            return None
        me = _thread.get_ident()
        if me in self._asking:
            return None
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

        def exec_module(module):
            inner(module)
            _activate()

        try:
            loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's own loader
        except Exception:
            pass
        return spec


def _activate():
    try:
        sys.meta_path.remove(_HOOK)
    except ValueError:
        pass
    if not os.environ.get("TLTRACE_CHILD"):
        return  # turned off since start-up (tracing ended, or this process traces on its own)
    try:
        from tltrace.tracing.child import activate
    except Exception as exc:
        sys.stderr.write(
            f"tltrace: warning: this process (pid {os.getpid()}) imports tilelang but cannot import "
            f"tltrace ({type(exc).__name__}: {exc}); its compiles are not traced\n"
        )
        return
    activate()


def _chain():
    """Import the sitecustomize this one shadows, if there is one."""
    saved = sys.path[:]
    mine = sys.modules.pop("sitecustomize", None)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    try:
        import sitecustomize  # noqa: F401  # the next one on the path
    except ImportError as exc:
        if getattr(exc, "name", None) != "sitecustomize":
            raise  # that sitecustomize's own error: `site` says it as it always does
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


_HOOK = _TileLangImportHook()
if os.environ.get("TLTRACE_CHILD") and "tilelang" not in sys.modules:
    sys.meta_path.insert(0, _HOOK)
_chain()
