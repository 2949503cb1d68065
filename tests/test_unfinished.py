"""A compile not finished as its invocation ends: the warning and the summary say the same true thing.

Issue 27: a compile that ended but whose run could not be finalised was warned as "counted here
as running" and then printed as "compile failed". Now a compile still compiling is `still running`
in both, one that ended without its final manifest is `finished, not finalised` in both, and one
whose process is gone is `interrupted` (as `tltrace show` lists it), never "compile failed".
"""

from __future__ import annotations

import errno
import io
from pathlib import Path

from rich.console import Console

from tltrace.config import Settings
from tltrace.format.records import INTERRUPTED, RUNNING, PassRecord, RunManifest
from tltrace.render.terminal import TerminalView, summary_line, summary_table
from tltrace.session.events import NOT_FINALISED, STILL_RUNNING, InvocationFinished, Notice, PassRecorded
from tltrace.tracing.children import Gathered, gathered_notices

from ._cli import cli_proc
from ._kernels import KERNELS
from ._kernels import compile_add as _compile_add
from ._records import read_manifest

REPO = Path(__file__).resolve().parent.parent


def _manifest(run_id: str, status: str = RUNNING, error: str | None = None, pid: int = 1) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        script="s",
        kernel="add",
        signature="add 256 f32 grid 2 thr 128 #cccccc",
        status=status,
        error=error,
        started=100.0,
        thread="late",
        writer={"pid": pid},
        records=(PassRecord(index=0, name="Simplify", phase="p", status="changed"),),
    )


def test_each_unfinished_state_has_one_name_in_the_notice_line_and_table() -> None:
    running, ended = _manifest("run_a"), _manifest("run_b")
    gone = _manifest("run_c", INTERRUPTED, "process 7 ended before this compile finished", pid=7)
    assert STILL_RUNNING in summary_line(running, Path("/r/run_a")).plain
    line = summary_line(ended, Path("/r/run_b"), not_finalised=("run_b",)).plain
    assert line.startswith(f"[add 256] {NOT_FINALISED}: 1 passes"), line
    assert "interrupted: " in summary_line(gone, Path("/r/run_c")).plain
    table = "\n".join(t.plain for t in summary_table([running, ended, gone], not_finalised=("run_b",)))
    for word in (STILL_RUNNING, NOT_FINALISED, "interrupted"):
        assert word in table, table
    assert "FAILED" not in table and "compile failed" not in table
    notices = gathered_notices(
        Gathered(runs=[running, ended], running=[running, ended]), 1, frozenset({"run_b"})
    )
    said = [n.message for n in notices]
    assert len(said) == 2
    assert said[0].startswith(f"1 compile(s) (add) {NOT_FINALISED}:"), said
    assert said[1].startswith(f"1 compile(s) (add) {STILL_RUNNING} in thread(s) late"), said
    assert all("counted here as running" not in s for s in said)


def test_a_compile_whose_run_cannot_be_finalised_is_finished_not_finalised(
    tmp_path: Path, monkeypatch
) -> None:
    """A real compile whose final manifest write fails (a full disk, from the codegen record on)."""
    from tltrace.fs import atomic as _atomic
    from tltrace.session import controller
    from tltrace.tracing.lifecycle import Lifecycle

    settings = Settings(mode="terminal", trace_dir=tmp_path, script_name="k", quiet=True)
    out, err = io.StringIO(), io.StringIO()
    view = TerminalView(
        settings,
        console=Console(file=out, color_system=None),
        err_console=Console(file=err, color_system=None),
    )
    full = {"disk": False}
    notices: list[Notice] = []

    def hook(what: str, path: Path) -> None:
        if full["disk"] and what == "create" and path.name.startswith(".manifest.json."):
            raise OSError(errno.ENOSPC, "No space left on device")

    def listener(event) -> None:
        if isinstance(event, PassRecorded) and event.record.status == "codegen":
            full["disk"] = True  # the compile's last record: from here the manifest cannot be written
        if isinstance(event, Notice):
            notices.append(event)
        if isinstance(event, InvocationFinished):
            finished.append(event)
        view(event)

    finished: list[InvocationFinished] = []
    life = Lifecycle(settings, [listener]).open()
    life.install()  # with the hooks: the invocation hears of a run that could not be finalised
    monkeypatch.setattr(_atomic, "STEP_HOOK", hook)
    try:
        kernel = _compile_add()
    finally:
        controller.uninstall()
    assert kernel is not None  # the compile itself finished
    life.finish(prune=False)
    monkeypatch.setattr(_atomic, "STEP_HOOK", None)
    (run_dir,) = (tmp_path / "k" / ".run_records").glob("run_*")
    assert read_manifest(run_dir)["status"] == RUNNING  # on disk it was never finalised
    (event,) = finished
    assert event.not_finalised == (run_dir.name,)
    said = [n.message for n in notices if n.kind == "warning"]
    assert any(
        s.startswith("tracing stopped for this kernel: finishing the run failed: OSError") for s in said
    )
    assert any(s.startswith(f"1 compile(s) (add) {NOT_FINALISED}:") for s in said), said
    assert not any("running" in s for s in said), said
    (line,) = out.getvalue().splitlines()
    assert f"] {NOT_FINALISED}: " in line, line
    assert "compile failed" not in line and "running" not in line


THREAD_SCRIPT = (
    KERNELS
    + """
import glob, threading, time
f = make_add(256)
threading.Thread(target=compile_, args=(f,), name="late").start()
deadline = time.time() + 120
while not glob.glob("T/late/.run_records/run_*") and time.time() < deadline:
    time.sleep(0.01)  # the compile has begun: the script ends while it runs
"""
)


def test_a_compile_still_running_as_the_script_ends_is_still_running(tmp_path: Path) -> None:
    script = tmp_path / "late.py"
    script.write_text(THREAD_SCRIPT)
    p = cli_proc("run", "-q", "--trace-dir", "T", script, cwd=tmp_path, rc=0, timeout=300)
    warned = [x for x in p.stderr.splitlines() if x.startswith("tltrace: warning:")]
    assert warned == [
        f"tltrace: warning: 1 compile(s) (add) {STILL_RUNNING} in thread(s) late as the script ended: "
        f"recorded as far as they get, listed here as {STILL_RUNNING}"
    ], p.stderr[-2000:]
    (line,) = [x for x in p.stdout.splitlines() if x.startswith("[add")]
    assert f"] {STILL_RUNNING}: " in line, line
    assert "compile failed" not in p.stdout + p.stderr
    (run_dir,) = (tmp_path / "T" / "late" / ".run_records").glob("run_*")
    assert read_manifest(run_dir)["status"] == "complete"  # it did finish, after the summary
