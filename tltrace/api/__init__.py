"""The public Python API, in one place: every name `import tltrace` offers is listed here.

| name | what | module |
|---|---|---|
| `enable`, `disable`, `flush`, `enabled` | trace every TileLang compile of this process | `api/trace.py` |
| `lower_trace`, `create_pass_instrument` | trace a TVM pass list, or one PassContext, by hand | `api/trace.py` |
| `load` | read traces back: invocations, compiles, passes, facts, checks | `api/reading.py` |
| `repro` | a self-contained reproducer of a recorded compile | `rerun/make.py` |
| `note_best` | record an autotuner's best config on the compile it chose | `rerun/best.py` |
| `load_ipython_extension` | `%load_ext tltrace`: the `%%tltrace` cell magic | `api/ipython.py` |

`tltrace/__init__.py` hands every attribute in `__all__` to this module on first use.
Importing it stays cheap: `api/trace.py` imports TVM and TileLang on first use; the other
names are imported when they are first asked for.
"""

from __future__ import annotations

from typing import Any

from .trace import create_pass_instrument, disable, enable, enabled, flush, lower_trace

__all__ = [
    "create_pass_instrument",
    "disable",
    "enable",
    "enabled",
    "flush",
    "load",
    "load_ipython_extension",
    "lower_trace",
    "note_best",
    "repro",
]

# The names imported on first use: name -> (module, attribute).
_LATER = {
    "load": ("tltrace.api.reading", "load"),
    "repro": ("tltrace.rerun.make", "repro"),
    "note_best": ("tltrace.rerun.best", "note_best"),
    "load_ipython_extension": ("tltrace.api.ipython", "load_ipython_extension"),
}


def __getattr__(name: str) -> Any:
    if name in _LATER:
        import importlib

        module, attr = _LATER[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'tltrace.api' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
