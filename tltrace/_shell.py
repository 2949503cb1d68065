"""Commands tltrace suggests in its messages, every word shell-quoted so that pasting one is safe.

A trace dir named `my traces` must come out as `rm -r 'my traces/…'`, never `rm -r my traces/…`
(which removes `my`). Messages show the command bare (no quotes around it), since the
quoting inside it is what a shell needs.
"""

from __future__ import annotations

import os
import shlex


def command(*words: str | os.PathLike) -> str:
    """Return the command line `words` make, each word quoted for a POSIX shell where it needs it."""
    return shlex.join(os.fspath(w) for w in words)
