"""`repro -o` and `bundle -o` under the one output-path rule (tltrace/fs/output_path.py).

A bundle: a new file is created, a bundle tltrace wrote is rewritten, a character device
or pipe is written through, '-' is stdout; a file tltrace did not write, a link or a
directory is refused in one line (exit 2) unless --force. A repro directory: the same
rule for a directory; '-' or a pipe gets a tar of it.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from ._cli import one_line_error
from ._records import trace


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> Path:
    """One run of elementwise_add."""
    return trace(tmp_path_factory.mktemp("rerun_out") / "traces", ("elementwise_add.py",))


def _refused(res, *needles: str) -> None:
    one_line_error(res, 2, *needles)


def _bundle(run_cli, traced: Path, out, *more: str):
    return run_cli("bundle", "--trace-dir", str(traced), "elementwise_add", "-o", str(out), *more)


def test_bundle_refuses_a_foreign_file_rewrites_its_own_and_force_replaces(
    run_cli, traced: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.zip"
    notes.write_text("mine\n")
    _refused(_bundle(run_cli, traced, notes), "notes.zip", "did not write", "--force")
    assert notes.read_text() == "mine\n"
    out = tmp_path / "b.zip"
    for _ in range(2):  # the second rewrites the bundle the first wrote
        res = _bundle(run_cli, traced, out)
        assert res.exit_code == 0, res.output
    assert zipfile.ZipFile(out).comment.startswith(b"tltrace bundle")
    res = _bundle(run_cli, traced, notes, "--force")
    assert res.exit_code == 0, res.output
    assert "bundle.json" in zipfile.ZipFile(notes).namelist()


def test_bundle_links_directories_and_missing_parents_are_one_line(
    run_cli, traced: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = tmp_path / "link.zip"
    link.symlink_to(victim)
    _refused(_bundle(run_cli, traced, link), "symbolic link")
    assert link.is_symlink() and victim.read_text() == "keep\n"
    _refused(_bundle(run_cli, traced, tmp_path), "directory")
    _refused(_bundle(run_cli, traced, tmp_path / "nope" / "b.zip"), "does not exist")


def test_bundle_to_stdout_and_through_a_device_and_a_pipe(run_cli, traced: Path, tmp_path: Path) -> None:
    res = _bundle(run_cli, traced, "-")
    assert res.exit_code == 0, res.output
    assert "bundle.json" in zipfile.ZipFile(io.BytesIO(res.stdout_bytes)).namelist()
    assert "replay" in res.stderr  # the message is not mixed into the zip
    res = _bundle(run_cli, traced, "/dev/null")
    assert res.exit_code == 0 and stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    res = _bundle(run_cli, traced, fifo)
    reader.join(10)
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert "bundle.json" in zipfile.ZipFile(io.BytesIO(got[0])).namelist()


def _repro(run_cli, traced: Path, out, *more: str):
    return run_cli(
        "repro", "--trace-dir", str(traced), "elementwise_add", "--pass", "0", "-o", str(out), *more
    )


def test_repro_refuses_files_links_and_foreign_directories_unless_force(
    run_cli, traced: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    _refused(_repro(run_cli, traced, notes), "existing file", "--force")
    assert notes.read_text() == "mine\n"
    target = tmp_path / "real"
    target.mkdir()
    link = tmp_path / "link"
    link.symlink_to(target)
    _refused(_repro(run_cli, traced, link), "symbolic link")
    _refused(_repro(run_cli, traced, tmp_path / "nope" / "r"), "does not exist")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("keep me\n")
    _refused(_repro(run_cli, traced, mine), "did not write", "--force")
    assert sorted(p.name for p in mine.iterdir()) == ["keep.txt"]
    res = _repro(run_cli, traced, mine, "--force")  # beside the user's file, which stays
    assert res.exit_code == 0, res.output
    assert (mine / "keep.txt").read_text() == "keep me\n" and (mine / "repro.py").is_file()
    assert link.is_symlink() and not list(target.iterdir())


def test_repro_to_stdout_is_a_tar_of_the_directory(run_cli, traced: Path) -> None:
    res = _repro(run_cli, traced, "-")
    assert res.exit_code == 0, res.output
    assert "reproduced" in res.stderr and "tar" in res.stderr
    with tarfile.open(fileobj=io.BytesIO(res.stdout_bytes)) as tf:
        names = tf.getnames()
        assert tf.pax_headers.get("comment") == "tltrace repro"  # the archive says whose it is
    (top,) = {n.split("/", 1)[0] for n in names}
    assert top.startswith("repro-") and f"{top}/repro.py" in names and f"{top}/repro.json" in names
