"""#32 item 10: the small things (did-you-mean, usage lines, one-line errors, the lists' columns)."""

from __future__ import annotations

import pytest

from tltrace.api.ipython import tltrace_cell


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--mode", "argument --mode: expected one argument"),
        ("--mode x", "invalid choice: 'x'"),
        ("--trace-dir 'a", "No closing quotation"),
    ],
)
def test_a_bad_tltrace_magic_line_is_one_real_line(line, says, capsys):
    assert tltrace_cell(line, "raise AssertionError('the cell must not run')", None) is None
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith("tltrace: error: %%tltrace: "), out
    assert says in out[0] and "usage: %%tltrace" in out[0]


@pytest.mark.parametrize("width", [80, 150])
def test_the_show_list_keeps_its_time_and_says_the_edit(width):
    import io

    from rich.console import Console

    from tltrace.cli.listing import CompileTable as _CompileTable

    table = _CompileTable(False)
    base = {
        "status": "complete",
        "failed": 0,
        "failed_at": None,
        "target": "cuda -arch=sm_90a",
        "backend": "tvm_ffi",
        "passes": 62,
        "changed": 21,
        "size": 180_000,
        "started": 1796406851.0,
    }
    for i, (sig, edit) in enumerate(
        [
            ("gemm 1024x1024,1024x1024,1024x1024 f16 grid 8x8 thr 128 smem 24K #a1b2c3", "PATCHED"),
            ("gemm 1024x1024,1024x1024,1024x1024 f16 grid 8x8 thr 128 smem 24K #d4e5f6", "CONFLICT"),
            ("gemm 1024x1024,1024x1024,1024x1024 f16 grid 8x8 thr 128 smem 24K #0a0b0c", None),
        ]
    ):
        row = {**base, "run_id": f"run_20261204_17541{i}_169484Z_5385_6262c2b{i}", "label": sig, "edit": edit}
        table.add(row, f"-{3 - i}")
    buf = io.StringIO()
    table.print(Console(file=buf, width=width, force_terminal=True, color_system=None))
    lines = buf.getvalue().splitlines()
    assert all(len(line) <= width for line in lines), lines
    head = lines[0].split()
    assert "time" in head and "edit" in head, lines[0]
    assert "PATCHED" in lines[1] and "CONFLICT" in lines[2] and "#a1b2c3" in lines[1]  # cut where they agree


def test_did_you_mean_for_commands_options_and_pass_names(run_cli, recorded):
    from tltrace.format.passref import suggest

    r = run_cli("rn")
    assert r.exit_code == 2
    assert (
        r.stderr.strip() == "tltrace: error: no such command 'rn' (did you mean 'run'?); try 'tltrace --help'"
    )
    r = run_cli("run", "--skp", "x", "a.py")
    assert "no such option: --skp (did you mean --skip" in r.stderr and "try 'tltrace run --help'" in r.stderr
    r = run_cli("show", "--jsn")
    assert "no such option: --jsn (did you mean --json?); try 'tltrace show --help'" in r.stderr
    r = run_cli("clean", "--kep", "1")
    assert "(did you mean --keep?)" in r.stderr
    # A pass name: the closest names, and the command that does list the compile's passes.
    r = run_cli("show", "--trace-dir", recorded, "elementwise_add", "-1", "--pass", "LowerTileOpp")
    assert r.exit_code == 2
    assert "(did you mean 'LowerTileOp'?)" in r.stderr
    lister = r.stderr.split("; ")[-1].split(" lists its ")[0]
    listed = run_cli(*lister.split()[1:])
    assert listed.exit_code == 0 and "LowerTileOp" in listed.stdout  # it does list the passes
    names = ["tirx.BindTarget", "LowerTileOp", "LayoutInference", "Simplify"]
    assert suggest(names, "lowertileopp") == ["LowerTileOp"]
    assert suggest(names, "bindtarget") == ["tirx.BindTarget"]
    assert suggest(names, "zzz") == []


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        ("run", "tltrace run [OPTIONS] [SCRIPT] [ARGS]..."),
        ("show", "tltrace show [OPTIONS] [SCRIPT_OR_DIR] [RUN] [SIGNATURE]"),
        ("clean", "tltrace clean [OPTIONS] [SCRIPT_OR_DIR]"),
        ("repro", "tltrace repro [OPTIONS] [SCRIPT_OR_DIR] [RUN] [SIGNATURE]"),
        ("watch", "tltrace watch [OPTIONS] [SCRIPT] [ARGS]..."),
    ],
)
def test_usage_lines_read_as_written(run_cli, command, usage):
    r = run_cli(command, "--help")
    assert r.stdout.splitlines()[0] == f"Usage: {usage}"


def test_repro_without_pass_takes_the_pass_a_compile_failed_at(run_cli, recorded):
    r = run_cli("repro", "--trace-dir", recorded, "fails")
    # It got past choosing the pass: the recorded run has no reproducer data (exit 3, one line).
    assert r.exit_code == 3 and "--pass" not in r.stderr, r.stderr
    r = run_cli("repro", "--trace-dir", recorded, "elementwise_add", "-1")
    assert r.exit_code == 2 and "failed at no pass; name one with --pass" in r.stderr


def test_watch_folds_long_lines_on_a_terminal(tmp_path):
    from .test_terminal_fit import _pty

    (tmp_path / "long.py").write_text("print('word ' * 80)\n")
    lines = _pty("watch --max-runs 1 long.py", 60, tmp_path)
    assert all(len(line) <= 60 for line in lines), lines
    rows = [line for line in lines if "word" in line]
    assert len(rows) == 4 and rows[1].startswith("\u21aa ") and rows[-1].endswith("chars")
