"""Commands tltrace suggests in its messages, every word shell-quoted so that pasting one is safe.

A trace dir named `my traces` must come out as `rm -r 'my traces/…'`, never `rm -r my traces/…`
(which removes `my`). Messages show the command bare (no quotes around it), since the
quoting inside it is what a shell needs.

A word holding a control character (a newline in a kernel's name, an ESC in a path), DEL,
a C1 control or U+2028/U+2029 is written in ANSI-C quoting, `$'a\\nb'` (bash, zsh, ksh and
POSIX.1-2024 sh read it back): the command stays on one line of the terminal, sends
nothing to it, and pastes as the same word.
"""

from __future__ import annotations

import os
import shlex


def _ansi_c(word: str) -> str:
    out = []
    for ch in word:
        c = ord(ch)
        if ch in "\\'":
            out.append("\\" + ch)
        elif c < 0x20 or c == 0x7F:
            out.append(f"\\x{c:02x}")
        elif 0x80 <= c < 0xA0 or ch in "\u2028\u2029":
            out.append(f"\\u{c:04x}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def _quoted(word: str) -> str:
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u2028\u2029" for c in word):
        return _ansi_c(word)
    return shlex.quote(word)


def command(*words: str | os.PathLike) -> str:
    """Return the command line `words` make, each word quoted for a POSIX shell where it needs it."""
    return " ".join(_quoted(os.fspath(w)) for w in words)
