"""Control characters made visible, as `cat -v` shows them: data never drives the terminal.

IR text, codegen output, kernel and file names come from the user's program (an ESC in a
`T.call_extern` name, a crafted manifest, a bundle from someone else). Printed raw, an escape
sequence would move the cursor, retitle the window or hide lines, and a newline in a name
would start a line of its own that looks like tltrace's (`visible(name, one_line=True)`). Every console tltrace prints data with is a
`VisibleConsole`: the text of each segment goes through `visible`, while the styles Rich
adds (its own escape sequences) are rendered after that, untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text


def _table(one_line: bool) -> dict[int, str]:
    keep = "" if one_line else "\t\n"
    table = {c: "^" + chr(c + 64) for c in range(0x20) if chr(c) not in keep}
    table[0x7F] = "^?"
    table.update({c: "M-^" + chr(c - 0x80 + 64) for c in range(0x80, 0xA0)})  # C1 controls (CSI is 0x9b)
    table.update({0x2028: "<U+2028>", 0x2029: "<U+2029>"})  # line and paragraph separators
    return table


_TABLE = _table(False)
_ONE_LINE = _table(True)


def visible(text: str, one_line: bool = False) -> str:
    """Return `text` with each control character spelt as `cat -v` does (ESC: ^[), U+2028 and
    U+2029 as `<U+2028>`, `<U+2029>`: the one escaper of what tltrace prints to a terminal.

    Tab and newline stay in a text (IR, source, a message); with `one_line` (a name: a
    kernel, a label, a pass, a path) they are spelt too (^I, ^J), so a name never spans
    lines and cannot start one that looks like tltrace's own.
    """
    return text.translate(_ONE_LINE if one_line else _TABLE)


class VisibleConsole(Console):
    """A Rich console whose printed text shows control characters instead of sending them."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(s if s.control else Segment(visible(s.text), s.style) for s in buffer)


def segments(console: Console, text: Text) -> list[Segment]:
    """Return a text's segments as the terminal gets them: visible text, the text's own style under its spans'."""
    base = console.get_style(text.style) if text.style else None
    out: list[Segment] = []
    for seg in text.render(console):
        style = base + seg.style if base is not None and seg.style is not None else base or seg.style
        out.append(Segment(visible(seg.text), style))  # data never drives the terminal
    return out


def render_segments(segs: Iterable[Segment], color_system: object) -> str:
    """Return segments as a string: styles as escape sequences, none when color_system is None."""
    if color_system is None:
        return "".join(seg.text for seg in segs)
    return "".join(
        seg.style.render(seg.text, color_system=color_system)  # type: ignore[arg-type]
        if seg.style is not None
        else seg.text
        for seg in segs
    )


def write_lines(
    console: Console, lines: Iterable[tuple[str, str]], styles: Mapping[str, str], indent: str = "    "
) -> None:
    """Write (kind, line) pairs to the console's file as they come, each styled by its kind.

    For texts of any size (`show --pass` on a 65 MB IR): no Rich layout and no one Text
    holding every line; the output goes out in chunks of about a megabyte. On a terminal
    a line wider than it is folded as the stream folds it (render/fold.py).
    """
    from .fold import fold

    color_system = None if console.no_color else getattr(console, "_color_system", None)
    parsed = {k: Style.parse(v) for k, v in styles.items() if v}
    width = console.width if console.is_terminal else None
    out = console.file
    buf: list[str] = []
    size = 0
    for kind, line in lines:
        text = visible(indent + line)
        style = parsed.get(kind)
        if width is not None and len(text) > width // 2 and cell_len(text) > width:
            rows = fold([Segment(text, style)], width)
            text = "\n".join(render_segments(row, color_system) for row in rows)
        elif color_system is not None and style is not None:
            text = style.render(text, color_system=color_system)
        buf.append(text + "\n")
        size += len(text) + 1
        if size >= 1 << 20:
            out.write("".join(buf))
            buf, size = [], 0
    if buf:
        out.write("".join(buf))
    out.flush()


__all__ = ["VisibleConsole", "render_segments", "segments", "visible", "write_lines"]
