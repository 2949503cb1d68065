"""tltrace: see, and change, what the TileLang compiler did to your kernel.

`import tltrace` is cheap and hooks nothing; tracing starts with `tltrace.enable()`
or `tltrace run`.
"""

from __future__ import annotations

__version__ = "0.1.0"
