"""Special files where tltrace expects its own (issue 18.6, 18.14): nothing hangs, the user is told.

A FIFO named manifest.json, a FIFO .tir or .objects blob, a FIFO working file: every command
returns under a timeout, with one line naming the file. A .tir that is not UTF-8 is said
to be that, not "missing". The commands run as subprocesses, so a regression fails by
timing out instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tltrace.fs import safe_read

from ._cli import cli_proc
from ._records import EXAMPLES, copy_tree, read_manifest, recorded_fixture, run_dirs

TIMEOUT = 120  # a hang is a failure, not a slow test


traced = recorded_fixture(
    "The first recorded compile of elementwise_add.",
    elementwise_add=slice(0, 1),
)


def tltrace(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return cli_proc(*args, cwd=cwd, timeout=TIMEOUT)  # type: ignore[arg-type]  # None: this process's cwd


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


def test_safe_read_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(safe_read.NotAFile, match="FIFO"):
        safe_read.read_bytes(fifo)
    link = tmp_path / "l"
    (tmp_path / "t").write_text("x")
    link.symlink_to(tmp_path / "t")
    with pytest.raises(safe_read.NotAFile, match="symbolic link"):
        safe_read.read_text(link)
    with pytest.raises(FileNotFoundError):
        safe_read.read_bytes(tmp_path / "missing")
    assert safe_read.why_unreadable(fifo) == "is a FIFO, not a regular file; not read"


def test_fifo_manifest_does_not_hang_show_or_clean(traced: Path, tmp_path: Path) -> None:
    td = copy_tree(traced, tmp_path / "T")
    bad = td / "elementwise_add" / ".run_records" / "run_20200101_000000_000000_424242_ab"
    bad.mkdir()
    os.mkfifo(bad / "manifest.json")
    proc = tltrace("show", "--trace-dir", str(td), "elementwise_add")
    _no_traceback(proc)
    assert proc.returncode == 0 and "damaged" in proc.stdout, proc.stderr
    assert "FIFO" in proc.stderr
    proc = tltrace("show", "--trace-dir", str(td), "elementwise_add", "-1")
    assert proc.returncode == 0, proc.stderr
    proc = tltrace("clean", "--trace-dir", str(td), "--keep", "1")
    _no_traceback(proc)
    assert proc.returncode in (0, 3), proc.stderr


def _swap(path: Path, make) -> None:
    path.unlink()
    make(path)


def test_fifo_and_non_utf8_texts_are_reported_truly(traced: Path, tmp_path: Path) -> None:
    td = copy_tree(traced, tmp_path / "T")
    run = run_dirs(td / "elementwise_add")[-1]
    m = read_manifest(run)
    rec = next(r for r in m["records"] if r["status"] == "changed" and r["after_file"])
    after, blob = (
        run / rec["after_file"],
        td / "elementwise_add" / ".run_records" / ".objects" / rec["after_hash"],
    )
    _swap(after, os.mkfifo)
    _swap(blob, os.mkfifo)  # the stored object, the per-pass file's fallback
    proc = tltrace("show", "--trace-dir", str(td), "elementwise_add", "-1", "--pass", str(rec["index"]))
    _no_traceback(proc)
    assert proc.returncode == 3 and "FIFO" in proc.stderr and "missing" not in proc.stderr, proc.stderr
    after.unlink()
    blob.unlink()
    after.write_bytes(b"\xff\xfe not utf-8\n")
    blob.write_bytes(b"\xff\xfe not utf-8\n")
    proc = tltrace("show", "--trace-dir", str(td), "elementwise_add", "-1", "--pass", str(rec["index"]))
    assert proc.returncode == 3 and "not UTF-8" in proc.stderr and "missing" not in proc.stderr, proc.stderr


def test_fifo_working_file_and_manifest_do_not_hang_the_compile(tmp_path: Path) -> None:
    """The compile goes on with the generated source; the FIFO stays as it was; one warning names it."""
    work = tmp_path / "w"
    work.mkdir()
    for name in ("elementwise_add.py", "_common.py"):
        shutil.copy(EXAMPLES / name, work / name)
    td = work / "T"
    proc = tltrace("run", "-q", "--mode", "both", "--trace-dir", str(td), "elementwise_add.py", cwd=work)
    assert proc.returncode == 0, proc.stderr
    wf = td / "elementwise_add" / "codegen_device.cpp"
    assert wf.is_file()
    _swap(wf, os.mkfifo)
    old = run_dirs(td / "elementwise_add")[0] / "manifest.json"
    json.loads(old.read_text())
    _swap(old, os.mkfifo)  # the previous run's manifest: read again when this run ends
    proc = tltrace("run", "-q", "--mode", "both", "--trace-dir", str(td), "elementwise_add.py", cwd=work)
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "max error 0" in proc.stdout
    assert f"{wf} is a FIFO" in proc.stderr
    assert wf.is_fifo() and old.is_fifo()
