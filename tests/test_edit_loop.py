"""The edit loop as a kernel author meets it, one kernel, real CPU compiles (issue 20's checks)."""

from __future__ import annotations

import re

from ._cli import cli_proc
from ._kernels import op_line, op_of, swap_op


def _run(run_cli, script, *args):
    return run_cli("run", "--quiet", "--mode", "both", script, *args)


def test_one_kernel_announced_patched_as_a_diff_conflict_on_a_new_block_markers_refused_errors_at_its_line(
    run_cli, examples_dir, tmp_path
):
    script = examples_dir / "elementwise_add.py"
    d = tmp_path / "tmp" / "lower_trace_dir" / "elementwise_add"
    w = d / "codegen_device.cpp"

    r = _run(run_cli, script, "--n", "512")  # the first --quiet run names the file it created
    assert r.exit_code == 0, r.stdout + r.stderr
    assert f"[add 512] NEW  working file {w}" in r.stdout  # the stream's size label
    listed = r.stdout.split("working files", 1)[1].splitlines()
    assert any("codegen_device.cpp" in x and "add 512 f32" in x for x in listed), r.stdout

    w.write_text(swap_op(w.read_text(), "-"))
    r = _run(run_cli, script, "--n", "512")  # PATCHED shows the edit as -/+ source lines
    assert "[add 512] PATCHED" in r.stdout and "WRONG RESULT" in r.stdout
    minus = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith("-  ")]
    plus = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith("+  ")]
    assert len(minus) == len(plus) == 1 and op_of(minus[0]) == "+" and op_of(plus[0]) == "-", r.stdout
    header = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith(("--- ", "+++ "))]
    assert header == ["--- codegen_device.cpp.original", "+++ codegen_device.cpp"], r.stdout

    r = _run(run_cli, script, "--n", "512", "--block", "64")  # the kernel changed under the edit
    assert "[add 512] CONFLICT" in r.stdout and "WRONG RESULT" not in r.stdout  # the new code ran
    assert "add changed (grid 4 thr 128 -> grid 8 thr 64)" in r.stdout
    assert op_of((d / "codegen_device.cpp.bak").read_text()) == "-" and op_of(w.read_text()) == "+"
    assert sorted(p.name for p in d.glob("codegen*.cpp")) == ["codegen_device.cpp"]

    r = run_cli("resolve-conflict", script)  # the edited line changed in the new codegen too
    assert r.exit_code == 4
    line = next(n for n, x in enumerate(w.read_text().splitlines(), 1) if x.startswith("<<<<<<<"))
    label = re.search(r"^<<<<<<< your edits \((.+)\)$", w.read_text(), re.M).group(1)
    assert (d / label).is_file()
    r = _run(run_cli, script, "--n", "512", "--block", "64")  # markers are never compiled
    assert f"codegen_device.cpp:{line} has conflict markers" in r.stdout
    assert r.exit_code == 0 and "WRONG RESULT" not in r.stdout and "<<<<<<<" in w.read_text()
    r = run_cli("resolve-conflict", script)  # and found again
    assert r.exit_code == 4 and f"codegen_device.cpp:{line} still has conflict markers" in r.stderr

    run_cli("resolve-conflict", script, "--theirs")
    lines = w.read_text().splitlines()
    n = op_line(w.read_text()) + 1
    lines[n - 1] += " this is not C"
    w.write_text("\n".join(lines) + "\n")
    # an error names the file's own line (g++ writes to the process's stderr: run it in a process)
    p = cli_proc(
        "run", "-q", "--mode", "both", script, "--n", "512", "--block", "64", cwd=tmp_path, timeout=300
    )
    assert p.returncode != 0
    assert re.search(rf"{re.escape(str(w))}:{n}:\d+: error", p.stdout + p.stderr), p.stdout + p.stderr


def test_lower_trace_edit_test_n128_gives_conflict(run_cli, examples_dir, tmp_path):
    """TileLang's own lower_trace edit test, re-expressed: an edit, then `--n 128`: CONFLICT."""
    script = examples_dir / "elementwise_add.py"
    w = tmp_path / "tmp" / "lower_trace_dir" / "elementwise_add" / "codegen_device.cpp"
    assert _run(run_cli, script, "--n", "256").exit_code == 0
    w.write_text(swap_op(w.read_text(), "-"))
    r = _run(run_cli, script, "--n", "128")
    assert "[add 128] CONFLICT" in r.stdout and "add changed (256 -> 128)" in r.stdout
    assert r.exit_code == 0 and op_of(w.with_name(w.name + ".bak").read_text()) == "-"
