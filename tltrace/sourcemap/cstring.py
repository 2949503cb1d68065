"""C string literals in generated code: the one escaper (and its reader) for what tltrace writes
into a C, C++ or CUDA source, the file names of `#line` directives (sourcemap/line_directives.py).

A script's path is the user's: any character but NUL can be in it. `c_string` writes a literal
that C, C++ and CUDA compilers (GCC, nvcc, ptxas after it) all take, whatever the name:

- printable ASCII as it is, but `\\` and `?` (a trigraph in older C) after a backslash;
- every other byte of its UTF-8 (the control characters 0x01-0x1f and 0x7f, all of
  non-ASCII, U+2028/U+2029 among it) as a three-digit octal escape, which no following
  digit can extend; the compiler reads back the same bytes;
- but three that a toolchain cannot carry, spelt otherwise: NUL and CR as `^@` and `^M`
  (as `cat -v` shows them; GCC, which builds the host side of a CUDA source too, re-quotes
  the name for `__FILE__`, an `assert` in the kernel, without escaping a CR and dies on
  the broken literal, and a NUL ends the name), and `"` as `'` (ptxas cannot read the `\"`
  nvcc writes for it in the PTX's `.file`).

So the build never breaks on a name; a debugger shows a path holding a CR or a `"` with
`^M` or `'` in their place. `c_unstring` reads a literal's body back (TileLang's too).
"""

from __future__ import annotations

import re

__all__ = ["c_string", "c_unstring"]


def _table() -> dict[int, str]:
    table = {b: f"\\{b:03o}" for b in range(256) if not 0x20 <= b < 0x7F}
    table.update({ord("\\"): "\\\\", ord("?"): "\\?"})
    table.update({0x00: "^@", 0x0D: "^M", ord('"'): "'"})  # what a toolchain cannot carry
    return table


_BYTES = _table()


def c_string(text: str) -> str:
    """Return `text` as a C string literal, quotes included (its UTF-8 bytes, escaped as above)."""
    data = str(text).encode("utf-8", "surrogateescape")
    return '"' + "".join(_BYTES.get(b) or chr(b) for b in data) + '"'


_SIMPLE = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]+)|(.))", re.S)


def c_unstring(body: str) -> str:
    """Return the text of a C string literal's body (between its quotes): escapes read back."""
    if "\\" not in body:
        return body
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(body):
        out += body[pos : m.start()].encode("utf-8", "surrogateescape")
        octal, hexa, char = m.groups()
        if octal is not None:
            out.append(int(octal, 8) & 0xFF)
        elif hexa is not None:
            out.append(int(hexa, 16) & 0xFF)
        elif char in _SIMPLE:
            out.append(_SIMPLE[char])
        else:
            out += char.encode("utf-8", "surrogateescape")
        pos = m.end()
    out += body[pos:].encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "surrogateescape")
