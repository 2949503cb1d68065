"""tltrace: see, and change, what the TileLang compiler did to your kernel.

`import tltrace` is cheap and hooks nothing; tracing starts with `tltrace.enable()`
or `tltrace run`. The API (`lower_trace`, `enable`, `disable`, `flush`,
`create_pass_instrument`, and `load` to read traces) is loaded on first attribute
access. In IPython, `%load_ext tltrace` adds the `%%tltrace` cell magic.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__

_API = ("lower_trace", "enable", "disable", "flush", "enabled", "create_pass_instrument")
_RERUN = ("repro",)  # tltrace.repro(...): rerun/make.py
_BEST = ("note_best",)  # tltrace.note_best(result): rerun/best.py
_READING = ("load",)

__all__ = ["__version__", *_API, *_RERUN, *_BEST, *_READING, "load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext tltrace`: add the `%%tltrace` cell magic (tltrace/ipython.py)."""
    from .ipython import load_ipython_extension as load_ext

    load_ext(ipython)


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _RERUN:
        from .rerun import make

        return getattr(make, name)
    if name in _BEST:
        from .rerun import best

        return getattr(best, name)
    if name in _READING:
        from . import reading

        return getattr(reading, name)
    raise AttributeError(f"module 'tltrace' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API, *_RERUN, *_BEST, *_READING})
