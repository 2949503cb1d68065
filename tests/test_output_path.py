"""The one output-path rule (issue 18.1): no output option replaces a file tltrace did not write.

Every --chrome-trace / --html PATH: a new file is created, a file tltrace wrote is rewritten,
a character device or pipe is written through (never replaced), anything else is refused in
one line unless --force; '-' is stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from tltrace.fs import output_path

from ._cli import diff_last_two, one_line_error
from ._records import recorded_fixture

traced = recorded_fixture(
    "The recorded elementwise_add's first two compiles (block 128, then 64): one invocation each.",
    elementwise_add=slice(0, 2),
)


def _refused(res, *needles: str) -> None:
    one_line_error(res, 2, *needles)


def test_run_chrome_trace_onto_the_script_is_refused_before_it_runs(run_cli, tmp_path: Path) -> None:
    """`run --chrome-trace k.py k.py` used to turn the script into trace JSON and exit 0."""
    script = tmp_path / "k.py"
    script.write_text("raise SystemExit('must not run')\n")
    before = script.read_bytes()
    res = run_cli("run", "-q", "--trace-dir", str(tmp_path / "T"), "--chrome-trace", str(script), str(script))
    _refused(res, "did not write", "--force")
    assert script.read_bytes() == before
    assert not (tmp_path / "T").exists()  # refused before the script ran


def test_export_refuses_a_foreign_file_and_force_replaces_it(run_cli, traced: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    res = run_cli("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(notes))
    _refused(res, "notes.txt", "did not write")
    assert notes.read_text() == "mine\n"
    empty = tmp_path / "empty.json"
    empty.touch()
    _refused(run_cli("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(empty)))
    assert empty.read_bytes() == b""
    res = run_cli(
        "export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(notes), "--force"
    )
    assert res.exit_code == 0, res.output
    assert "traceEvents" in json.loads(notes.read_text())


def test_export_rewrites_its_own_file(run_cli, traced: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    for spec in ("-2", "-1"):
        res = run_cli(
            "export", "--trace-dir", str(traced), "elementwise_add", spec, "--chrome-trace", str(out)
        )
        assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["otherData"]["producer"].startswith("tltrace")


def test_links_are_neither_written_through_nor_replaced(run_cli, traced: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = tmp_path / "link.json"
    link.symlink_to(victim)
    res = run_cli("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(link))
    _refused(res, "symbolic link")
    assert link.is_symlink() and victim.read_text() == "keep\n"
    res = run_cli(
        "export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(link), "--force"
    )
    assert res.exit_code == 0, res.output
    assert not link.is_symlink() and victim.read_text() == "keep\n"  # the link replaced, not its target


def test_directory_socket_and_missing_parent_are_one_line(run_cli, traced: Path, tmp_path: Path) -> None:
    args = ("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace")
    _refused(run_cli(*args, str(tmp_path)), "directory")
    _refused(run_cli(*args, str(tmp_path / "nope" / "t.json"), "--force"), "does not exist")
    import socket

    sock_path = tmp_path / "s.sock"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock_path))
        _refused(run_cli(*args, str(sock_path), "--force"), "socket")
    finally:
        s.close()


def _fifo_reader(path: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=read, daemon=True)
    t.start()
    return t


def test_a_pipe_is_written_through_and_stays_a_pipe(run_cli, traced: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _fifo_reader(fifo, got)  # blocks in open() until the writer comes
    res = run_cli("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(fifo))
    reader.join(10)
    assert res.exit_code == 0, res.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert "traceEvents" in json.loads(got[0])


def test_a_pipe_nobody_reads_does_not_hang(tmp_path: Path, traced: Path) -> None:
    exe = shutil.which("tltrace")
    if exe is None:
        pytest.skip("no tltrace entry point")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cmd = [exe, "export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(fifo)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no process reads" in proc.stderr, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_character_device_is_written_through(run_cli, traced: Path) -> None:
    res = run_cli("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", "/dev/null")
    assert res.exit_code == 0, res.output
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    res = run_cli("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", "/dev/full")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "/dev/full" in res.stderr, res.output
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


def test_diff_runs_html_follows_the_rule(run_cli, traced: Path, tmp_path: Path) -> None:
    ab = diff_last_two(traced, "--html")
    notes = tmp_path / "notes.html"
    notes.write_text("<p>mine</p>\n")
    _refused(run_cli(*ab, str(notes)), "did not write")
    assert notes.read_text() == "<p>mine</p>\n"
    out = tmp_path / "d.html"
    assert run_cli(*ab, str(out)).exit_code == 1
    first = out.read_bytes()
    assert run_cli(*ab, str(out)).exit_code == 1  # its own file: rewritten
    assert out.read_bytes() == first
    res = run_cli(*ab, "-")
    assert res.exit_code == 1 and res.stdout.startswith("<!DOCTYPE html>") and "report:" not in res.stdout
    assert run_cli(*ab, str(notes), "--force").exit_code == 1
    assert "tltrace diff-runs" in notes.read_text()


def test_a_script_named_like_an_option_is_a_script(run_cli, traced: Path, tmp_path: Path) -> None:
    """`tltrace export -dash.py` printed export's help and exited 0 (click read -d -a -s -h)."""
    shutil.copytree(traced, tmp_path / "T")
    (tmp_path / "T" / "elementwise_add").rename(tmp_path / "T" / "-dash")
    (tmp_path / "-dash.py").write_text("")
    # The renamed dir is owned by -dash.py now (its owner record and the registry say whose a dir is).
    from tltrace.format import scripts

    for stale in (tmp_path / "T" / scripts.REGISTRY, tmp_path / "T" / "-dash" / scripts.OWNER):
        stale.unlink(missing_ok=True)
    scripts._write_owner(tmp_path / "T" / "-dash", scripts.identity_of(tmp_path / "-dash.py"))
    res = run_cli("export", "--trace-dir", str(tmp_path / "T"), "-dash.py", "--chrome-trace", "t.json")
    assert res.exit_code == 0, res.output
    assert "Usage" not in res.output and (tmp_path / "t.json").is_file()
    res = run_cli("show", "--trace-dir", str(tmp_path / "T"), "-dash.py")
    assert res.exit_code == 0 and "Usage" not in res.output, res.output
    res = run_cli("export", "-bogus", "--chrome-trace", "t.json")
    assert res.exit_code == 2 and "no such option" in res.stderr


def test_check_says_what_a_path_is(tmp_path: Path) -> None:
    kind = output_path.CHROME_TRACE
    assert output_path.check("-", kind).path is None
    assert output_path.check(tmp_path / "new.json", kind) == output_path.Target(tmp_path / "new.json")
    assert output_path.check("/dev/null", kind).stream
    own = tmp_path / "own.json"
    output_path.write(own, kind, b'{"traceEvents":[],"otherData":{"producer":"tltrace 0"}}')
    assert output_path.check(own, kind) == output_path.Target(own)
    with pytest.raises(output_path.UsageError):
        output_path.check(own, output_path.DIFF_HTML)  # a trace is not a diff-runs page


# -- issue 27: ownership is a structural marker, never text that a user's file can hold ------------
NOTES = b"# notes: attach the file from tltrace bundle here\n"


@pytest.fixture(scope="module")
def bundled(tmp_path_factory) -> Path:
    """One live run of elementwise_add (a bundle needs the reproducer data recorded traces leave out)."""
    from ._records import trace

    return trace(tmp_path_factory.mktemp("owned") / "traces", ("elementwise_add.py",))


def _bundle(run_cli, traced: Path, out: Path, *more: str):
    return run_cli("bundle", "--trace-dir", str(traced), "elementwise_add", "-o", str(out), *more)


@pytest.mark.compile
def test_a_notes_file_that_names_a_bundle_is_not_one(run_cli, bundled: Path, tmp_path: Path) -> None:
    """`echo "# notes: ... tltrace bundle here" > notes.md; tltrace bundle ... -o notes.md` made it a zip."""
    notes = tmp_path / "notes.md"
    notes.write_bytes(NOTES)
    _refused(_bundle(run_cli, bundled, notes), "notes.md", "did not write")
    assert notes.read_bytes() == NOTES
    # The marker's text as the file's last bytes is not a zip comment either.
    tail = tmp_path / "tail.txt"
    tail.write_bytes(b"my words, then: tltrace bundle")
    _refused(_bundle(run_cli, bundled, tail))
    assert tail.read_bytes() == b"my words, then: tltrace bundle"
    # A zip of the user's with that comment, but no bundle in it, is not a bundle.
    import zipfile

    theirs = tmp_path / "theirs.zip"
    with zipfile.ZipFile(theirs, "w") as zf:
        zf.comment = output_path.BUNDLE_COMMENT
        zf.writestr("photo.txt", "mine")
    before = theirs.read_bytes()
    _refused(_bundle(run_cli, bundled, theirs))
    assert theirs.read_bytes() == before
    # A bundle tltrace wrote is rewritten by the next run, a new one each time.
    out = tmp_path / "b.zip"
    for _ in range(2):
        res = _bundle(run_cli, bundled, out)
        assert res.exit_code == 0, res.output
        assert zipfile.ZipFile(out).comment == output_path.BUNDLE_COMMENT
    assert output_path.check(out, output_path.BUNDLE) == output_path.Target(out)


def test_a_script_mentioning_the_producer_is_not_a_trace(run_cli, traced: Path, tmp_path: Path) -> None:
    """A script with a comment holding `"producer":"tltrace` was overwritten by `export --chrome-trace`."""
    script = tmp_path / "script.py"
    body = b'# the trace says {"otherData":{"producer":"tltrace 0.4"}} and "producer": "tltrace\nprint(1)\n'
    script.write_bytes(body)
    args = ("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace")
    _refused(run_cli(*args, str(script)), "script.py", "did not write")
    assert script.read_bytes() == body
    # JSON of the user's: the producer under another first key, or at the end of a big file, is not ours.
    for name, data in (
        ("first.json", {"note": 1, "otherData": {"producer": "tltrace 0"}}),
        ("big.json", {"traceEvents": [{"x": "y" * 100}] * 100, "producer": "tltrace"}),
        ("wrong.json", {"otherData": {"producer": "not tltrace"}, "traceEvents": []}),
    ):
        f = tmp_path / name
        f.write_text(json.dumps(data))
        before = f.read_bytes()
        _refused(run_cli(*args, str(f)))
        assert f.read_bytes() == before


def test_every_kind_rewrites_what_it_wrote(run_cli, traced: Path, tmp_path: Path) -> None:
    """The second run replaces the first run's file, for each output kind; the marker is where the format keeps it."""
    out = tmp_path / "t.json"
    args = ("export", "--trace-dir", str(traced), "elementwise_add", "--chrome-trace", str(out))
    for _ in range(2):
        assert run_cli(*args).exit_code == 0
    assert next(iter(json.loads(out.read_text()))) == "otherData"  # the first key: no text match needed
    # Pretty-printed by the user, it is still the trace tltrace wrote.
    out.write_text(json.dumps(json.loads(out.read_text()), indent=2))
    assert run_cli(*args).exit_code == 0
    # `run --chrome-trace` (a script that compiles nothing): the same rule, twice.
    script = tmp_path / "nothing.py"
    script.write_text("pass\n")
    ran = tmp_path / "run.json"
    for _ in range(2):
        res = run_cli(
            "run", "-q", "--trace-dir", str(tmp_path / "T"), "--chrome-trace", str(ran), str(script)
        )
        assert res.exit_code == 0, res.output
        assert "warning" not in res.stderr, res.stderr
    assert json.loads(ran.read_text())["otherData"]["compiles"] == 0
    # diff-runs --html: a page tltrace wrote starts with its fixed first line.
    page = tmp_path / "d.html"
    ab = diff_last_two(traced, "--html", page)
    assert run_cli(*ab).exit_code == 1
    assert page.read_bytes().split(b"\n", 1)[0] == output_path.DIFF_HTML_FIRST_LINE
    assert run_cli(*ab).exit_code == 1
    # A repro is a directory or a stream: a file found where the stream was is never written over.
    tar = tmp_path / "r.tar"
    tar.write_bytes(b"x")
    with pytest.raises(output_path.UsageError):
        output_path.check(tar, output_path.REPRO)
    for kind in (output_path.CHROME_TRACE, output_path.DIFF_HTML, output_path.BUNDLE):
        with pytest.raises(output_path.UsageError):
            output_path.check(page if kind is output_path.CHROME_TRACE else out, kind)


def test_a_page_that_names_diff_runs_is_not_one(run_cli, traced: Path, tmp_path: Path) -> None:
    """The old test found diff-runs' <title> anywhere in the first 4 KB: a saved note with it was replaced."""
    notes = tmp_path / "notes.html"
    body = b"<!DOCTYPE html>\n<title>tltrace diff-runs</title>\n<p>why A and B differ</p>\n"
    notes.write_bytes(body)
    ab = diff_last_two(traced, "--html")
    _refused(run_cli(*ab, str(notes)), "did not write")
    assert notes.read_bytes() == body


def test_the_diff_runs_template_starts_with_the_marker() -> None:
    from tltrace.render import diffruns

    assert diffruns.page().encode("utf-8").split(b"\n", 1)[0] == output_path.DIFF_HTML_FIRST_LINE
