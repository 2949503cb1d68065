"""Every table fits 80-150 columns keeping handles and statuses; the stream labels, folds and counts."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from tltrace.config import Settings
from tltrace.format.records import PassRecord, RunManifest
from tltrace.render.table import Column, distinct_cut, fit
from tltrace.render.terminal import TerminalView, summary_table
from tltrace.session.events import InvocationFinished, PassRecorded, RunFinished

from ._kernels import op_line, swap_op

SIGS = [
    "gemm 1024x1024,1024x1024,1024x1024 f16 grid 8x8 thr 128 smem 24K #a1b2c3",
    "gemm 1024x1024,1024x1024,1024x1024 f16 grid 8x8 thr 128 smem 16K #d4e5f6",
    "gemm 1024x1024,1024x1024,1024x1024 f16 grid 8x8 thr 128 smem 8K #0a0b0c",
]


def test_distinct_cut_keeps_what_tells_siblings_apart():
    cut = distinct_cut(SIGS)
    short = [cut(s, 24) for s in SIGS]
    assert len(set(short)) == 3 and all(len(s) <= 24 for s in short)
    assert all(s.startswith("gemm") for s in short)
    assert "24K" in short[0] and "16K" in short[1] and "8K" in short[2]  # the cut fell on shared words
    assert cut(SIGS[0], 200) == SIGS[0]


@pytest.mark.parametrize("width", [80, 120, 150])
def test_fit_drops_and_cuts_but_never_the_handle_or_status(width):
    cols = [
        Column("#", "right"),
        Column("run", drop=4, cut=lambda t, w: t[:w]),
        Column("signature", cut=distinct_cut(SIGS), min_width=16),
        Column("status"),
        Column("size", "right", drop=5),
    ]
    rows = [
        [("-1", ""), ("run_20261204_0519_" + "x" * 30, ""), (s, ""), ("complete", ""), ("4.0 KB", "")]
        for s in SIGS
    ]
    lines = [t.plain for t in fit(cols, rows, width)]
    assert all(len(line) <= width for line in lines), lines
    assert all(line.lstrip().startswith("-1") and "complete" in line for line in lines[2:])
    assert len(set(lines[2:])) == 3  # the rows still differ


def _m(sig: str, i: int, status: str = "complete") -> RunManifest:
    return RunManifest(
        run_id=f"run_{i}",
        script="s",
        kernel=sig.split()[0],
        signature=sig,
        input_hash=sig.split("#")[-1] * 2,
        invocation="inv",
        started=10.0 + i,
        finished=11.0 + i,
        status=status,
        error=None if status == "complete" else "InternalError: " + "x" * 200,
        records=(
            PassRecord(0, "LayoutInference", "tl", status="failed" if status != "complete" else "noop"),
        ),
    )


@pytest.mark.parametrize("width", [80, 120, 150])
def test_summary_table_fits_the_terminal(width):
    runs = [_m(s, i, "error" if i == 1 else "complete") for i, s in enumerate(SIGS)]
    lines = [t.plain for t in summary_table(runs, width)]
    assert all(len(line) <= width for line in lines)
    assert lines[2].startswith("FAILED") and "16K" in lines[2]  # failures first, kept apart
    assert {line.split()[0] for line in lines[3:]} == {"ok"}


def test_variants_stream_under_distinct_labels_and_no_ops_fold():
    buf = io.StringIO()
    view = TerminalView(Settings(context=0), console=Console(file=buf, color_system=None, width=100))
    sigs = [f"add {n} f32 grid {n // 64} thr 64 #{n:06d}" for n in (128, 256, 512, 1024)]
    dirs = [Path(f"/t/s/.run_records/run_{i}") for i in range(4)]
    for k in range(8):  # interleaved, as a thread pool does it
        for m_sig, d in zip(sigs, dirs):
            m = RunManifest(run_id=d.name, script="s", kernel="add", signature=m_sig)
            status = "changed" if k == 5 else "noop"
            rec = PassRecord(k, f"Pass{k}", "tl", status=status, added=1 if status == "changed" else 0)
            view(PassRecorded(m, rec, "a\n", "b\n" if status == "changed" else "a\n", d))
    for m_sig, d in zip(sigs, dirs):
        m = RunManifest(
            run_id=d.name,
            script="s",
            kernel="add",
            signature=m_sig,
            started=1.0,
            finished=1.25,
            status="complete",
        )
        view(RunFinished(m, d, d.parent.parent))
    lines = buf.getvalue().splitlines()
    labels = {line.split("]")[0] + "]" for line in lines if line.startswith("[")}
    assert labels == {"[add 128]", "[add 256]", "[add 512]", "[add 1024]"}
    assert sum("\u2026 5 no-op passes" in line for line in lines) == 4  # passes 0-4 of each compile
    assert sum("\u2026 2 no-op passes" in line for line in lines) == 4  # 6-7, before each done line
    done = [line for line in lines if " done: " in line]
    assert len(done) == 4 and all("in 0.25s" in line and len(line) < 110 for line in done)


def test_same_shape_variants_get_their_hash():
    buf = io.StringIO()
    view = TerminalView(Settings(all_passes=True), console=Console(file=buf, color_system=None))
    for i, h in enumerate(("aaaaaa", "bbbbbb")):
        m = RunManifest(
            run_id=f"r{i}",
            script="s",
            kernel="add",
            signature=f"add 512 f32 thr {64 * (i + 1)} #{h}",
            input_hash=h * 2,
        )
        view(PassRecorded(m, PassRecord(0, "P", "tl"), "a", "a", Path(f"/r{i}")))
    first, second = buf.getvalue().splitlines()
    assert first.startswith("[add 512] ") and second.startswith("[add 512 #bbbbbb] ")


def test_only_that_matches_nothing_says_so(capsys):
    err = io.StringIO()
    view = TerminalView(
        Settings(only=__import__("re").compile("nosuchpass", 2)),
        console=Console(file=io.StringIO(), color_system=None),
        err_console=Console(file=err, color_system=None),
    )
    m = RunManifest(
        run_id="r", script="s", kernel="add", status="complete", records=(PassRecord(0, "LowerTileOp", "tl"),)
    )
    view(PassRecorded(m, m.records[0], "a", "a", Path("/r")))
    view(RunFinished(m, Path("/r"), Path("/")))
    view(InvocationFinished("inv", (m,)))
    assert "--only 'nosuchpass' matched none of the 1 pass names" in err.getvalue()


ANSI_ANY = __import__("re").compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _pty(command: str, cols: int, cwd: Path) -> list[str]:
    """Run `command` under a real pty (util-linux `script`) `cols` wide; return its lines, escapes removed."""
    import os
    import shlex
    import shutil
    import subprocess
    import sys

    if shutil.which("script") is None:
        pytest.skip("no `script` (util-linux) for a real pty")
    env = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "PYTHONPATH": str(Path(__file__).parent.parent)}
    env.pop("COLUMNS", None)
    inner = f"stty cols {cols} rows 50; {shlex.quote(sys.executable)} -m tltrace {command}"
    p = subprocess.run(
        ["script", "-qec", inner, "/dev/null"], cwd=cwd, env=env, capture_output=True, timeout=600
    )
    text = ANSI_ANY.sub("", p.stdout.decode("utf-8", "replace")).replace("\r\n", "\n")
    assert p.returncode == 0, text[-3000:]
    return text.split("\n")


@pytest.fixture(scope="module")
def pool_trace(tmp_path_factory) -> tuple[Path, list[str]]:
    """Four sizes of one kernel compiled in a pool of four threads, under a 120-column pty."""
    from ._kernels import KERNELS

    work = tmp_path_factory.mktemp("pty")
    (work / "pool.py").write_text(
        KERNELS + "\n\nif __name__ == '__main__':\n    build_in_threads([128, 256, 512, 1024], threads=4)\n"
    )
    return work, _pty("run --trace-dir tr pool.py", 120, work)


def test_four_thread_pool_sizes_stream_under_four_labels(pool_trace) -> None:
    _, lines = pool_trace
    labels = {line.split("]")[0] + "]" for line in lines if line.startswith("[")}
    assert labels == {"[add 128]", "[add 256]", "[add 512]", "[add 1024]"}
    done = [line for line in lines if "] done: " in line]
    assert len(done) == 4 and all(" in " in line and line.count("s  records: ") == 1 for line in done)


@pytest.mark.parametrize("cols", [80, 120, 150])
def test_show_fits_a_real_terminal_keeping_handles_and_statuses(pool_trace, cols: int) -> None:
    work, _ = pool_trace
    listing = _pty("show --trace-dir tr", cols, work)
    assert all(len(line) <= cols for line in listing), [line for line in listing if len(line) > cols]
    head = listing[0].split()
    assert head[0] == "#" and "status" in head and "signature" in head
    assert "time" in head  # when a compile ran outlives the run id (#32)
    assert any(line.startswith("-1  ") for line in listing)  # the handle to type next
    compiles = [line for line in listing if "add " in line and "complete" in line]
    assert len(compiles) == 4 and len(set(compiles)) == 4  # the four still read differently
    inv = _pty("show --trace-dir tr pool -1", cols, work)
    assert all(len(line) <= cols for line in inv)
    assert sum("complete" in line for line in inv) >= 4
    one = _pty("show --trace-dir tr pool -1 'add 512'", cols, work)
    assert all(len(line) <= cols for line in one)
    rows = [line for line in one if line[:3].strip().isdigit() and " passes, " not in line]
    assert len(rows) >= 60 and all(("no-op" in r or "CHANGED" in r or "CODEGEN" in r) for r in rows)


def test_only_and_skip_ignore_case() -> None:
    from tltrace.config import build_settings

    s = build_settings(mode="terminal", trace_dir="t", script_name="x", only="lowertileop", skip="SIMPLIFY")
    assert s.only is not None and s.only.search("LowerTileOp")
    assert s.skip is not None and s.skip.search("tl.transform.Simplify")


# -- the stream's lines fit the terminal too -----------------------------------------------------
def _unfold(rows: list[str]) -> list[str]:
    """Return the logical lines of folded rows: each `↪` row's text appended to the line above."""
    from tltrace.render.fold import MARK

    lines: list[str] = []
    for row in rows:
        at = row.find(MARK)
        if at >= 0 and lines and not row[:at].strip(" -+~"):
            lines[-1] += row[at + len(MARK) :]
        else:
            lines.append(row)
    return lines


def test_stream_lines_fold_to_the_terminal_and_say_what_they_cut():
    from tltrace.render.fold import CHANGED_ROWS

    buf = io.StringIO()
    console = Console(file=buf, width=60, force_terminal=True, color_system=None)
    view = TerminalView(Settings(context=1), console=console)
    attrs = ", ".join(f'"tl.attr_{i}": T.bool(False)' for i in range(4))
    before = f"x = 1\n        T.func_attr({{{attrs}}})\ny = 2\n"
    after = before.replace('"tl.attr_3": T.bool(False)', '"tl.has_tma": T.bool(True)')
    huge = "    C[i] = " + " + ".join(f"A[{k}]" for k in range(400))  # ~3 KB: more than 12 rows
    after += huge + "\n"
    m = RunManifest(run_id="r", script="s", kernel="add", signature="add 512 f32 " + "x" * 80 + " #abcdef")
    rec = PassRecord(3, "LowerTileOp", "tl", status="changed", added=2, removed=1)
    view(PassRecorded(m, rec, before, after, Path("/t/s/.run_records/r")))
    rows = buf.getvalue().splitlines()
    assert rows and all(len(r) <= 60 for r in rows), [r for r in rows if len(r) > 60]
    lines = _unfold(rows)
    # Folded, nothing lost: the changed attribute line reads whole again from its rows.
    changed = next(line for line in lines if line.startswith("    +") and "tl.has_tma" in line)
    assert changed.replace(" ", "") == ("+" + after.splitlines()[1]).replace(" ", "")
    # Cut, and said so: the rest of the 3 KB line is counted, not dropped in silence.
    cut = next(line for line in lines if line.startswith("    +") and "C[i] = " in line)
    shown, _, marker = cut.rpartition(" \u2026 +")
    left = int(marker.split()[0])
    assert len([r for r in rows if "A[" in r]) == CHANGED_ROWS
    assert huge.replace(" ", "").startswith(shown[5:].replace(" ", ""))
    assert left > 0 and len(huge.replace(" ", "")) - len(shown[5:].replace(" ", "")) <= left


def test_a_file_or_pipe_gets_every_line_whole():
    buf = io.StringIO()
    view = TerminalView(Settings(context=0), console=Console(file=buf, width=60, color_system=None))
    long = "    T.func_attr({" + ", ".join(f'"k{i}": {i}' for i in range(40)) + "})"
    m = RunManifest(run_id="r", script="s", kernel="add", signature="add 512")
    view(PassRecorded(m, PassRecord(0, "P", "tl", status="changed"), "a\n", long + "\n", Path("/r")))
    assert ("    +" + long) in buf.getvalue().splitlines() and "\u21aa" not in buf.getvalue()


def test_the_stream_fits_a_60_column_pty(tmp_path: Path) -> None:
    """A real compile under a real 60-column terminal: no line of tltrace's is wider; long IR lines fold."""
    from ._kernels import KERNELS

    (tmp_path / "add.py").write_text(KERNELS + "\n\nif __name__ == '__main__':\n    build(256)\n")
    rows = _pty("run --trace-dir tr add.py", 60, tmp_path)
    ours = [r for r in rows if "[TileLang:" not in r]  # TileLang's own log lines are not tltrace's
    assert all(len(r) <= 60 for r in ours), [r for r in ours if len(r) > 60]
    assert any("\u21aa " in r for r in ours)  # something was folded (this kernel has long IR lines)
    lines = _unfold(ours)
    done = [line for line in lines if line.startswith("[add 256] done: ")]
    assert len(done) == 1 and "records: tr/add/.run_records/run_" in done[0]
    run = done[0].split("records: ", 1)[1].strip()
    assert (tmp_path / run / "manifest.json").is_file()  # the path reads whole again from its rows


def test_show_pass_lines_fold_on_a_terminal_as_the_stream_does():
    """`show --pass` writes texts of any size line by line (write_lines); on a terminal they fold too."""
    from tltrace.render.terminal import LINE_STYLE
    from tltrace.render.visible import write_lines

    long = "T.func_attr({" + ", ".join(f'"k{i}": {i}' for i in range(30)) + "})"
    out = {}
    for terminal in (True, False):
        buf = io.StringIO()
        console = Console(file=buf, width=50, force_terminal=terminal, color_system="standard")
        write_lines(console, [("same", " short"), ("add", "+" + long)], LINE_STYLE)
        out[terminal] = ANSI_ANY.sub("", buf.getvalue()).splitlines()
    assert all(len(r) <= 50 for r in out[True]) and len(out[True]) > 2
    assert _unfold(out[True]) == out[False] == ["     short", "    +" + long]


def test_a_plain_indented_line_folds(tmp_path: Path) -> None:
    """`watch` echoes its run's output as plain text: a folded line whose indentation has no style
    (Style.combine of no styles raised StopIteration)."""
    from rich.segment import Segment

    from tltrace.render.fold import MARK, fold

    line = "    +      x = a + b;  // " + "long words " * 12
    rows = fold([Segment(line)], 40)
    assert len(rows) > 1 and all(sum(len(s.text) for s in r) <= 40 for r in rows)
    assert _unfold(["".join(s.text for s in r) for r in rows]) == [line]
    assert all(MARK in "".join(s.text for s in r) for r in rows[1:])


def test_watch_prints_a_patched_diff_with_long_lines_at_80_columns(examples_dir, tmp_path: Path) -> None:
    """A real `tltrace watch` in an 80-column pty, whose run prints a PATCHED diff whose lines fold."""
    _pty("run -q --mode both examples/elementwise_add.py --n 512", 80, tmp_path)
    w = tmp_path / "tmp" / "lower_trace_dir" / "elementwise_add" / "codegen_device.cpp"
    lines = swap_op(w.read_text(), "-").split("\n")
    comment = "  // " + " ".join(["a long comment that wraps at eighty columns"] * 3)
    lines[op_line(w.read_text())] += comment
    w.write_text("\n".join(lines))
    rows = _pty("watch --max-runs 1 examples/elementwise_add.py --n 512", 80, tmp_path)
    text = "\n".join(rows)
    assert "Traceback" not in text and "StopIteration" not in text, text[-3000:]
    ours = [r for r in rows if "[TileLang:" not in r]
    assert all(len(r) <= 80 for r in ours), [r for r in ours if len(r) > 80]
    plus = [x for x in _unfold(ours) if x.lstrip().startswith("+ ") or x.startswith("    +  ")]
    assert any(x.replace(" ", "").endswith(comment.replace(" ", "")) for x in plus), text[-3000:]
    assert any("run 1: exit" in r and "PATCHED" in r for r in rows), text[-3000:]
