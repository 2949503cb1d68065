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


def _stream(before: str, after: str, **settings) -> list[str]:
    buf = io.StringIO()
    view = TerminalView(Settings(context=0, **settings), console=Console(file=buf, color_system=None))
    m = RunManifest(run_id="run_x", script="s", kernel="k")
    from tltrace.diff import count_changes

    added, removed = count_changes(before, after)
    view(PassRecorded(m, PassRecord(index=0, name="Wrap", phase="p", status="changed", added=added,
                                    removed=removed), before, after, Path("/r")))
    return buf.getvalue().splitlines()


WRAP_BEFORE = "def f():\n    a = 1\n    b = g(a)\n"
WRAP_AFTER = "def f():\n    with T.block():\n        a = 1\n        b = g(a)\n"


def test_reindented_lines_get_a_tilde_gutter_and_a_dim_style():
    assert _stream(WRAP_BEFORE, WRAP_AFTER) == [
        "[k] p/00 Wrap  CHANGED +3/-2",
        "    --- before",
        "    +++ after",
        "    @@ -2,2 +2,3 @@",
        "    +    with T.block():",
        "    ~        a = 1",
        "    ~        b = g(a)",
    ]
    from tltrace.render.terminal import LINE_STYLE, diff_text

    text = diff_text(WRAP_BEFORE, WRAP_AFTER, 0)
    styles = {text.plain[s.start:s.end].strip()[:1]: str(s.style) for s in text.spans}
    assert styles["~"] == LINE_STYLE["reindent"] == "dim" and styles["+"] == "green"


def test_ignore_whitespace_hides_reindents_and_says_so_when_nothing_is_left():
    out = _stream(WRAP_BEFORE, WRAP_AFTER, ignore_whitespace=True)
    assert not any(line.startswith("    ~") for line in out) and "    +    with T.block():" in out
    out = _stream("def f():\n  a = 1\n", "def f():\n    a = 1\n", ignore_whitespace=True)
    assert out == ["[k] p/00 Wrap  CHANGED +1/-1 (whitespace only (re-indented))",
                   "    (whitespace only (re-indented); hidden by --ignore-whitespace)"]


def test_a_newline_only_change_is_explained_not_an_empty_changed():
    out = _stream("x = 1\n", "x = 1")
    assert out[0] == "[k] p/00 Wrap  CHANGED (no newline at end)"
    assert out[-3:] == ["    -x = 1", "    +x = 1", "    \\ No newline at end of file"]
