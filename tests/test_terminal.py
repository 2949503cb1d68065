"""The terminal stream's rendering: colour only on a colour console, same text either way."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from tltrace.config import Settings
from tltrace.render.terminal import TerminalView
from tltrace.session.events import PassRecorded
from tltrace.session.records import PassRecord, RunManifest

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _events() -> list[PassRecorded]:
    m = RunManifest(run_id="run_x", script="s", kernel="k")
    before = "a = 1\nb = 2\nc = 3\n"
    after = "a = 1\nb = 20\nc = 3\n"
    return [
        PassRecorded(m, PassRecord(index=0, name="Simplify", phase="pipeline_c", status="changed",
                                   added=1, removed=1), before, after, Path("/r")),
        PassRecorded(m, PassRecord(index=1, name="Noop", phase="pipeline_c", status="noop"),
                     after, after, Path("/r")),
    ]


def _render(**console_kw) -> str:
    buf = io.StringIO()
    view = TerminalView(Settings(context=1), console=Console(file=buf, **console_kw))
    for e in _events():
        view(e)
    return buf.getvalue()


def test_plain_and_colour_render_the_same_text():
    plain = _render(color_system=None)
    colour = _render(force_terminal=True, color_system="truecolor")
    assert "\x1b[" not in plain and "\x1b[" in colour
    assert ANSI.sub("", colour) == plain
    assert plain.splitlines() == [
        "[k] pipeline_c/00 Simplify  CHANGED +1/-1",
        "    --- before",
        "    +++ after",
        "    @@ -1,3 +1,3 @@",
        "     a = 1",
        "    -b = 2",
        "    +b = 20",
        "     c = 3",
        "[k] pipeline_c/01 Noop  no-op",
    ]
    # Styles close before the newline, so no line starts with a stray reset.
    assert "\n\x1b[0m" not in colour


def test_no_color_console_writes_no_escapes():
    out = _render(force_terminal=True, color_system="truecolor", no_color=True)
    assert "\x1b[" not in out
    assert "CHANGED +1/-1" in out
