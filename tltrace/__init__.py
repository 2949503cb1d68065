"""tltrace: see, and change, what the TileLang compiler did to your kernel.

`import tltrace` is cheap and hooks nothing; tracing starts with `tltrace.enable()`
or `tltrace run`. The public API is `__all__` below, every name of it kept in one place,
`tltrace/api/__init__.py` (which says where each lives), and loaded on first attribute
access. In IPython, `%load_ext tltrace` adds the `%%tltrace` cell magic.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__

__all__ = [
    "__version__",
    "create_pass_instrument",  # a PassInstrument that traces one PassContext
    "disable",  # stop tracing
    "enable",  # trace every TileLang compile of this process
    "enabled",  # the settings tracing runs with, or None
    "flush",  # wait for the records to be written
    "load",  # read traces back
    "load_ipython_extension",  # %load_ext tltrace
    "lower_trace",  # trace a TVM pass list by hand
    "note_best",  # record an autotuner's chosen config
    "repro",  # a reproducer of a recorded compile
]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext tltrace`: add the `%%tltrace` cell magic (tltrace/api/ipython.py)."""
    from .api.ipython import load_ipython_extension as load_ext

    load_ext(ipython)


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'tltrace' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
