"""Hostile inputs from issue 18: quoted hints (8), escaped markdown (10), huge pids (11)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from tltrace.format.writer import pid_alive, writer_alive

from ._cli import cli_proc
from ._records import copy_tree, read_manifest, recorded_fixture, run_dirs

traced = recorded_fixture(
    "The first recorded compile of elementwise_add.",
    elementwise_add=slice(0, 1),
)


def _manifest(run: Path) -> tuple[Path, dict]:
    p = run / "manifest.json"
    return p, json.loads(p.read_text())


def _rewrite(p: Path, data: dict) -> None:
    os.chmod(p, 0o644)
    p.write_text(json.dumps(data))


def test_damaged_run_hint_is_a_quoted_command(run_cli, traced: Path, tmp_path: Path) -> None:
    """With a trace dir 'my traces', pasting the hint must remove the run, not 'my'."""
    td = copy_tree(traced, tmp_path / "my traces")
    bad = td / "elementwise_add" / ".run_records" / "run_20200101_000000_000000_1_ab"
    bad.mkdir()
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add", "run_20200101_000000_000000_1_ab")
    assert res.exit_code == 3, res.output
    line = res.stderr.strip()
    cmd = line.split("remove it with: ", 1)[1].split(" (or", 1)[0]
    assert shlex.split(cmd) == ["rm", "-r", str(bad)]


def test_markdown_escapes_every_cell(run_cli, traced: Path, tmp_path: Path) -> None:
    td = copy_tree(traced, tmp_path / "T")
    p, data = _manifest(run_dirs(td / "elementwise_add")[-1])
    data["run_id"] = "run_x`<img src=x onerror=alert(1)>`|<b>"
    data["kernel"] = "<script>alert(2)</script>"
    _rewrite(p, data)
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add", "--format", "markdown")
    assert res.exit_code == 0, res.output
    assert "<img" not in res.stdout and "<script" not in res.stdout and "<b>" not in res.stdout
    assert "&lt;img" in res.stdout


def test_huge_pids_are_dead_not_a_traceback(run_cli, traced: Path, tmp_path: Path) -> None:
    assert pid_alive(10**20) is False and pid_alive(2**63) is False
    assert writer_alive({"pid": 10**20, "start": "1", "host": ""}) is False
    assert writer_alive(None, "run_20260101_000000_000000_99999999999999999999_x") is False
    td = copy_tree(traced, tmp_path / "T")
    root = td / "elementwise_add" / ".run_records"
    (root / "run_20260101_000000_000000_99999999999999999999_x").mkdir()
    p, data = _manifest(run_dirs(td / "elementwise_add")[-1])
    data["status"] = "running"
    data["writer"] = {"pid": 10**20, "start": "1", "host": data.get("writer", {}).get("host", "")}
    _rewrite(p, data)
    res = run_cli("show", "--trace-dir", str(td))
    assert res.exit_code == 0 and "interrupted" in res.stdout, res.output
    res = run_cli("clean", "--trace-dir", str(td), "--keep", "1")
    assert res.exit_code == 0, res.output
    assert not (root / "run_20260101_000000_000000_99999999999999999999_x").exists()


def test_symlinked_run_dir_is_not_read_and_is_named(run_cli, traced: Path, tmp_path: Path) -> None:
    """A link named like the newest run is neither listed as a run nor followed; show says so."""
    td = copy_tree(traced, tmp_path / "T")
    real = run_dirs(td / "elementwise_add")[-1]
    outside = copy_tree(real, tmp_path / "outside_run")
    link = td / "elementwise_add" / ".run_records" / "run_20991231_000000_000000_5_ab"
    link.symlink_to(outside)
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add")
    assert res.exit_code == 0, res.output
    assert link.name not in res.stdout and f"skipped {link}: a symbolic link" in res.stderr
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add", "-1", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["run_id"] == real.name, res.output
    res = run_cli("show", "--trace-dir", str(td), str(link))
    assert res.exit_code == 3 and "symbolic link" in res.stderr, res.output


def test_symlinked_script_dir_is_not_written_through(tmp_path: Path) -> None:
    """Records and working files never land outside the trace dir; the run says why it recorded nothing."""
    import shutil

    from ._records import EXAMPLES

    for name in ("elementwise_add.py", "_common.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    td, outside = tmp_path / "T", tmp_path / "outside"
    td.mkdir()
    outside.mkdir()
    (td / "elementwise_add").symlink_to(outside)
    proc = cli_proc(
        "run", "-q", "--mode", "both", "--trace-dir", td, "elementwise_add.py", cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0 and "max error 0" in proc.stdout, proc.stderr
    assert list(outside.iterdir()) == []
    assert "is a symbolic link; tltrace writes nothing through it" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_that_could_not_be_written_is_not_named(tmp_path: Path) -> None:
    """Under `ulimit -f`, the done: line names no missing report.html and no stale index is left."""
    import resource
    import shutil
    import subprocess
    import sys

    from ._records import EXAMPLES

    for name in ("elementwise_add.py", "_common.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    td = tmp_path / "T"
    cmd = [
        sys.executable,
        "-m",
        "tltrace",
        "run",
        "--mode",
        "html",
        "--trace-dir",
        str(td),
        "elementwise_add.py",
    ]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    index = td / "elementwise_add" / "report.html"
    assert index.is_file()

    def limit() -> None:  # Python ignores SIGXFSZ: writes past the limit fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (40 * 1024, 40 * 1024))

    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, preexec_fn=limit)
    assert proc.returncode == 0 and "max error 0" in proc.stdout, proc.stderr
    assert "could not write the HTML report" in proc.stderr
    newest = run_dirs(td / "elementwise_add")[-1]
    assert not (newest / "report.html").exists()
    done = [line for line in proc.stdout.splitlines() if "done:" in line]
    assert done and "report:" not in done[-1], proc.stdout
    assert not index.exists()  # the first invocation's index would pass for this one's


def test_terminal_escapes_in_records_are_made_visible(run_cli, traced: Path, tmp_path: Path) -> None:
    """An ESC in IR text or a kernel name is shown as ^[ (cat -v), never sent to the terminal."""
    import io

    from rich.text import Text

    from tltrace.render.terminal import make_console, write_texts

    td = copy_tree(traced, tmp_path / "T")
    run = run_dirs(td / "elementwise_add")[-1]
    p, data = _manifest(run)
    data["kernel"] = data["signature"] = "add\x1b]0;pwned\x07"
    rec = next(r for r in read_manifest(run)["records"] if r["status"] == "changed" and r["after_file"])
    _rewrite(p, data)
    after = run / rec["after_file"]
    evil = after.read_text() + "\x1b[2J\x1b[31mcleared\x9b2J\n"
    after.unlink()  # a hard link into .objects: replace the per-pass file only
    after.write_text(evil)
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add", "-1", "--pass", str(rec["index"]))
    assert res.exit_code == 0, res.output
    assert "\x1b" not in res.stdout and "\x9b" not in res.stdout
    assert "^[[2J^[[31mcleared" in res.stdout
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add")
    assert res.exit_code == 0 and "\x1b" not in res.stdout and "add^[]0;pwned" in res.stdout, res.output
    con = make_console()
    con.file = io.StringIO()
    write_texts(con, [Text("int f() { return 0; } // \x1b[2J")])
    assert con.file.getvalue() == "int f() { return 0; } // ^[[2J\n"


def test_watch_unknown_option_is_named(run_cli) -> None:
    res = run_cli("watch", "--bogus")
    assert res.exit_code == 2 and "no such option: --bogus" in res.stderr, res.output


def test_show_pass_streams_a_large_ir_line_for_line(run_cli, traced: Path, tmp_path: Path) -> None:
    """A big IR with one real change: the streamed view is the diff's unified lines, each once."""
    from tltrace.diff import diff

    td = copy_tree(traced, tmp_path / "T")
    run = run_dirs(td / "elementwise_add")[-1]
    rec = next(r for r in read_manifest(run)["records"] if r["status"] == "changed" and r["after_file"])
    before, after = run / rec["before_file"], run / rec["after_file"]
    b, a = before.read_text(), after.read_text()
    big_b, big_a = b * 300, b * 150 + a + b * 149
    for p, text in ((before, big_b), (after, big_a)):
        p.unlink()
        p.write_text(text)
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add", "-1", "--pass", str(rec["index"]))
    assert res.exit_code == 0, res.output
    want = [line for _, line in diff(big_b, big_a).unified(context=3)]
    got = [line[4:] for line in res.stdout.splitlines()[1:]]
    assert got == want
