"""tltrace: see, and change, what the TileLang compiler did to your kernel.

`import tltrace` is cheap and hooks nothing; tracing starts with `tltrace.enable()`
or `tltrace run`. The API (`lower_trace`, `enable`, `disable`,
`create_pass_instrument`) is loaded on first attribute access.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__

_API = ("lower_trace", "enable", "disable", "enabled", "create_pass_instrument")
_RERUN = ("repro",)  # tltrace.repro(...): rerun/make.py

__all__ = ["__version__", *_API, *_RERUN]


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _RERUN:
        from .rerun import make

        return getattr(make, name)
    raise AttributeError(f"module 'tltrace' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API, *_RERUN})
