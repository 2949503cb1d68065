"""Control characters made visible, as `cat -v` shows them: data never drives the terminal.

IR text, codegen output, kernel and file names come from the user's program (an ESC in a
`T.call_extern` name, a crafted manifest). Printed raw, an escape sequence would move the
cursor, retitle the window or hide lines. Every console tltrace prints data with is a
`VisibleConsole`: the text of each segment goes through `visible`, while the styles Rich
adds (its own escape sequences) are rendered after that, untouched.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment


def _table() -> dict[int, str]:
    table = {c: "^" + chr(c + 64) for c in range(0x20) if chr(c) not in "\t\n"}
    table[0x7F] = "^?"
    table.update({c: "M-^" + chr(c - 0x80 + 64) for c in range(0x80, 0xA0)})  # C1 controls (CSI is 0x9b)
    return table


_TABLE = _table()


def visible(text: str) -> str:
    """Return `text` with each control character but tab and newline spelled as `cat -v` does (ESC: ^[)."""
    return text.translate(_TABLE)


class VisibleConsole(Console):
    """A Rich console whose printed text shows control characters instead of sending them."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(s if s.control else Segment(visible(s.text), s.style) for s in buffer)


__all__ = ["VisibleConsole", "visible"]
