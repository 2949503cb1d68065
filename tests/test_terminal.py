"""The terminal stream's rendering: colour only on a colour console, same text either way."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from tltrace.config import Settings
from tltrace.format.records import PassRecord, RunManifest
from tltrace.render.terminal import TerminalView
from tltrace.session.events import PassRecorded

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _events() -> list[PassRecorded]:
    m = RunManifest(run_id="run_x", script="s", kernel="k")
    before = "a = 1\nb = 2\nc = 3\n"
    after = "a = 1\nb = 20\nc = 3\n"
    return [
        PassRecorded(
            m,
            PassRecord(index=0, name="Simplify", phase="pipeline_c", status="changed", added=1, removed=1),
            before,
            after,
            Path("/r"),
        ),
        PassRecorded(
            m, PassRecord(index=1, name="Noop", phase="pipeline_c", status="noop"), after, after, Path("/r")
        ),
    ]


def _render(**console_kw) -> str:
    buf = io.StringIO()
    view = TerminalView(Settings(context=1, all_passes=True), console=Console(file=buf, **console_kw))
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


# -- invocation summary, pruning, other programs' progress bars -------------------------------
def _manifest(
    kernel: str, sig: str, status: str = "complete", error: str | None = None, records: tuple = ()
) -> RunManifest:
    return RunManifest(
        run_id=f"run_{sig}",
        script="s",
        kernel=kernel,
        signature=sig,
        invocation="inv_1",
        started=10.0,
        finished=10.5,
        status=status,
        error=error,
        records=records,
    )


def test_quiet_invocation_table_lists_failures_first():
    from tltrace.session.events import InvocationFinished, RunFinished

    ok = _manifest(
        "gemm",
        "gemm 64x64 f16 grid 2 thr 128 #aaaaaa",
        records=(PassRecord(index=0, name="Simplify", phase="p", status="changed"),),
    )
    bad = _manifest(
        "gemm",
        "gemm 128x128 f16 grid 4 thr 128 #bbbbbb",
        status="error",
        error="InternalError: layout",
        records=(
            PassRecord(index=0, name="Simplify", phase="p", status="noop"),
            PassRecord(index=1, name="LayoutInference", phase="p", status="failed"),
        ),
    )
    buf = io.StringIO()
    view = TerminalView(Settings(quiet=True), console=Console(file=buf, width=40, color_system=None))
    for m in (ok, bad):
        view(RunFinished(m, Path("/tr/s/.run_records") / m.run_id, Path("/tr/s")))
    assert buf.getvalue() == ""  # nothing per compile
    view(InvocationFinished("inv_1", (ok, bad)))
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("2 compiles, 1 failed  invocation inv_1")
    assert lines[1].split() == [
        "status",
        "compile",
        "passes",
        "changed",
        "failed",
        "time",
        "failed",
        "pass",
        "/",
        "error",
    ]
    # Never cut to the console's width; failures first, with the pass that failed.
    assert lines[3].startswith("FAILED  gemm 128x128 f16 grid 4 thr 128 #bbbbbb")
    assert lines[3].endswith("LayoutInference: InternalError: layout")
    assert lines[4].startswith("ok      gemm 64x64 f16 grid 2 thr 128 #aaaaaa")
    assert lines[4].split()[-4:] == ["1", "1", "0", "0.50s"]


def test_one_compile_quiet_is_one_line_with_its_signature():
    from tltrace.session.events import InvocationFinished, RunFinished

    m = _manifest("add", "add 256 f32 grid 2 thr 128 #cccccc")
    buf = io.StringIO()
    view = TerminalView(Settings(quiet=True), console=Console(file=buf, color_system=None))
    view(RunFinished(m, Path("/r/run_1"), Path("/r")))
    view(InvocationFinished("inv_1", (m,)))
    (line,) = buf.getvalue().splitlines()
    # Named by its label (the start of its signature), with its compile time and one path.
    assert line.startswith("[add 256] done: 0 passes, 0 changed, 0 failed, 0 codegen in 0.50s  records: ")
    assert len(line) < 120


def test_pruned_is_one_line():
    from tltrace.session.events import Pruned

    buf = io.StringIO()
    view = TerminalView(Settings(), console=Console(file=buf, color_system=None))
    view(
        Pruned(
            Path("/tr/gemm"),
            runs=24,
            invocations=1,
            bytes_freed=3 * 1024 * 1024,
            kept_invocations=20,
            keep=20,
        )
    )
    assert buf.getvalue() == (
        "tltrace: pruned 24 runs (1 older invocation) under /tr/gemm, freed 3.0 MB; "
        "--keep 20 keeps the newest 20 invocations\n"
    )


def test_progress_bar_line_is_never_split(tmp_path):
    """tqdm redraws its bar with '\\r' and no newline; tltrace's lines start on a line of their own."""
    import subprocess
    import sys

    script = tmp_path / "bar.py"
    script.write_text(
        "import sys, threading\n"
        f"sys.path.insert(0, {str(Path(__file__).parent.parent / 'examples')!r})\n"
        "import tilelang\nfrom tqdm import tqdm\nfrom elementwise_add import make_add\n"
        "bar = tqdm(total=2, desc='Compiling configurations')\n"
        "for n in (256, 512):\n"
        "    tilelang.compile(make_add(n, 128), target='c', execution_backend='cython')\n"
        "    bar.update(1)\n"
        "bar.close()\n"
    )
    env = {**__import__("os").environ, "TILELANG_DISABLE_CACHE": "1", "NO_COLOR": "1"}
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "--only", "LowerTileOp", "--trace-dir", "tr", str(script)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=180,
    )
    assert p.returncode == 0, p.stdout[-2000:]
    out = p.stdout.decode()
    ours = [seg for line in out.split("\n") for seg in line.split("\r") if "[add " in seg]
    assert len(ours) >= 4  # two pass lines and two summaries
    for line in out.split("\n"):
        if "[add " in line:
            assert line.startswith("[add "), repr(line)  # never after a bar on the same line
            assert "%|" not in line and "\r" not in line
    assert "Compiling configurations" in out


def _stream(before: str, after: str, **settings) -> list[str]:
    buf = io.StringIO()
    view = TerminalView(Settings(**{"context": 0, **settings}), console=Console(file=buf, color_system=None))
    m = RunManifest(run_id="run_x", script="s", kernel="k")
    from tltrace.diff import count_changes

    added, removed = count_changes(before, after)
    view(
        PassRecorded(
            m,
            PassRecord(index=0, name="Wrap", phase="p", status="changed", added=added, removed=removed),
            before,
            after,
            Path("/tr/s/.run_records/run_x"),
        )
    )
    return buf.getvalue().splitlines()


WRAP_BEFORE = "def f():\n    a = 1\n    b = g(a)\n"
WRAP_AFTER = "def f():\n    with T.block():\n        a = 1\n        b = g(a)\n"


def test_reindented_lines_get_a_tilde_gutter_and_a_dim_style():
    assert _stream(WRAP_BEFORE, WRAP_AFTER) == [
        "[k] p/00 Wrap  CHANGED +3/-2",
        "    @@ -2,2 +2,3 @@",
        "    +    with T.block():",
        "    ~        a = 1",
        "    ~        b = g(a)",
    ]
    from tltrace.render.terminal import LINE_STYLE, diff_text

    text = diff_text(WRAP_BEFORE, WRAP_AFTER, 0)
    styles = {text.plain[s.start : s.end].strip()[:1]: str(s.style) for s in text.spans}
    assert styles["~"] == LINE_STYLE["reindent"] == "dim" and styles["+"] == "green"


def test_ignore_whitespace_hides_reindents_and_says_so_when_nothing_is_left():
    out = _stream(WRAP_BEFORE, WRAP_AFTER, ignore_whitespace=True)
    assert not any(line.startswith("    ~") for line in out) and "    +    with T.block():" in out
    assert out[0] == "[k] p/00 Wrap  CHANGED +1/-0"  # the header counts what the diff shows (was +3/-2)
    out = _stream("def f():\n  a = 1\n", "def f():\n    a = 1\n", ignore_whitespace=True)
    assert out == [
        "[k] p/00 Wrap  CHANGED (whitespace only (re-indented))",  # -w: no line is counted as changed
        "    (whitespace only (re-indented); hidden by --ignore-whitespace)",
    ]


def test_a_newline_only_change_is_explained_not_an_empty_changed():
    out = _stream("x = 1\n", "x = 1")
    assert out[0] == "[k] p/00 Wrap  CHANGED (no newline at end)"
    assert out[-3:] == ["    -x = 1", "    +x = 1", "    \\ No newline at end of file"]


def test_a_prune_that_removed_nothing_prints_only_its_failures():
    from tltrace.session.events import Pruned

    buf = io.StringIO()
    con = Console(file=buf, color_system=None)
    view = TerminalView(Settings(), console=con, err_console=con)
    view(
        Pruned(
            Path("/tr/gemm"),
            runs=0,
            invocations=0,
            bytes_freed=0,
            kept_invocations=1,
            keep=1,
            failed=(".run_records/.objects: a symbolic link, not followed",),
        )
    )
    out = buf.getvalue()
    assert "pruned 0" not in out and "could not prune .run_records/.objects" in out


def test_a_long_diff_shows_its_first_changed_lines_and_the_command_that_shows_it_whole():
    from tltrace.render.terminal import DIFF_LINES, EXCERPT

    before = "".join(f"x{i} = {i}\n" for i in range(40))
    after = "".join(f"x{i} = {i + (1 if i % 3 == 0 else 0)}\n" for i in range(40))
    out = _stream(before, after, context=3)
    changed = [ln for ln in out[1:-1]]
    assert len(changed) == EXCERPT and all(ln.startswith(("    -", "    +")) for ln in changed)
    assert changed[:2] == ["    -x0 = 0", "    +x0 = 1"]  # the first changes, no context or hunk line
    from tltrace.diff import diff

    whole = [k for k, _ in diff(before, after).unified(context=3) if k != "file"]
    assert out[-1] == (
        f"    \u2026 {len(whole) - EXCERPT} more lines: tltrace show --trace-dir /tr s k --pass Wrap  (run -v to stream every diff whole)"
    )
    # -v: whole, and a short diff is whole anyway
    full = _stream(before, after, context=3, verbose=True)
    assert len(full) == 1 + len(whole) and not any("\u2026" in ln for ln in full)
    short = _stream(before[: len("x0 = 0\n")], after[: len("x0 = 1\n")])
    assert len(short) - 1 <= DIFF_LINES and not any("\u2026" in ln for ln in short)


# -- names are one line: render/visible.py `visible(..., one_line=True)` ---------------------------
HARD = [chr(c) for c in range(0x20)] + ["\x7f", "\u2028", "\u2029", "\x85", "\x9b"]


def test_visible_spells_every_control_character_as_cat_v_does():
    """The terminal's one escaper against `cat -vT` (the oracle): every C0 control but newline, and
    DEL; a newline too in a name (^J); U+2028/U+2029 spelt out (no terminal line breaks on them)."""
    import shutil
    import subprocess

    import pytest

    from tltrace.render.visible import visible

    if shutil.which("cat") is None:
        pytest.skip("no cat")
    for ch in HARD[:0x20] + ["\x7f"]:
        if ch == "\n":
            continue
        want = subprocess.run(
            ["cat", "-vT"], input=ch.encode(), capture_output=True, check=True
        ).stdout.decode()
        assert visible(ch, one_line=True) == want, repr(ch)
        assert visible(ch) == (ch if ch == "\t" else want), repr(ch)
    assert visible("\n", one_line=True) == "^J" and visible("a\nb") == "a\nb"
    assert visible("\u2028\u2029", one_line=True) == visible("\u2028\u2029") == "<U+2028><U+2029>"


def test_a_name_holding_any_control_character_prints_on_one_line():
    """A kernel name (a crafted manifest, a bundle) holding a newline cannot start a line that looks
    like tltrace's: the pass line, the no-op fold, a notice and the summary stay one line each."""
    from tltrace.render.table import Column, fit
    from tltrace.render.terminal import make_console, pass_line, summary_line, write_texts
    from tltrace.session.events import Notice

    for ch in HARD:
        name = f"add{ch}[add] done: forged"
        m = _manifest(name, f"{name} 256")
        rec = PassRecord(
            index=0, name=f"Sim{ch}plify", phase="pipeline_c", status="changed", added=1, removed=1
        )
        con = make_console()
        con.file = io.StringIO()
        write_texts(con, [pass_line(name, rec), summary_line(m, Path("/r"))])
        out = con.file.getvalue()
        assert out.count("\n") == 2 and ch not in out.replace("\n", ""), (repr(ch), out)
        assert out.startswith("[add") and "\n[add] done: forged" not in out
        buf = io.StringIO()
        view = TerminalView(Settings(all_passes=True), console=Console(file=buf, color_system=None))
        view(Notice("NEW", "a message", kernel=name, path=Path(f"/w{ch}/codegen_device.cpp")))
        assert buf.getvalue().count("\n") == 1 and ch not in buf.getvalue()[:-1], repr(ch)
        buf.seek(0), buf.truncate()
        view(Notice("NOTE", f"compiled {name}", kernel="k"))  # a name inside a message
        assert all(ln.startswith(("[k] NOTE", "    ")) for ln in buf.getvalue().splitlines()), buf.getvalue()
        (head, row) = fit([Column("kernel"), Column("n")], [[(name, ""), ("1", "")]], None, rule=False)
        assert "\n" not in row.plain and ch not in row.plain, repr(ch)
