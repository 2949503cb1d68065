"""A compiler that crashes is still the compiler's crash: the records say where the process died.

A real `tltrace run` subprocess compiles a kernel; a helper tool in the script (TileLang's
public seam, nothing of tltrace's) kills the process with SIGSEGV inside a pass, or reads
address 0 from native code inside codegen. The process dies as it would untraced; the run
directory keeps the records written so far, `inflight` (where the compile was) and
`fatal.txt` (faulthandler's stacks), and every view says "died inside pass N (NAME)".
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tltrace.format import notes
from tltrace.format.names import pass_display_name
from tltrace.history import runs
from tltrace.session import fatal

from ._records import run_dirs
from .conftest import EXAMPLES

REPO = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading
    sys.path.insert(0, {examples!r})
    import tilelang
    from tilelang.instrumentation import (PassEventObserver, PassInstrumentationTool, StackedPassInstrument,
                                          register_pass_instrumentation_tool)
    from elementwise_add import make_add

    AT = sys.argv[1]
    armed = [False]
    seen = [0]

    class Obs(PassEventObserver):
        def pass_started(self, mod, event):
            if armed[0] and event.depth == 0:
                seen[0] += 1
                if AT != "codegen" and seen[0] == int(AT):
                    print("dying in", event.sequence, event.name, flush=True)
                    # To this thread, as a fault in the pass would be: a signal sent to the
                    # process may land on any thread, one inside malloc among them.
                    signal.pthread_kill(threading.get_ident(), signal.SIGSEGV)

    class Tool(PassInstrumentationTool):
        pass_instrument_priority = 2000  # after tltrace's callbacks: the pass has begun

        def create_pass_instrument(self):
            return StackedPassInstrument(Obs())

        def run_codegen(self, event, next_call):
            if armed[0] and AT == "codegen":
                print("dying in", event.name, flush=True)
                import ctypes
                ctypes.string_at(0)  # a real native crash
            return next_call()

    register_pass_instrumentation_tool("sigsegv-helper", Tool)
    tilelang.compile(make_add(128, 128), target="c", execution_backend="cython")  # finishes
    armed[0] = True
    tilelang.compile(make_add(256, 128), target="c", execution_backend="cython")
    print("not reached")
    """
)


def _crash(
    tmp_path: Path, at: str, *flags: str, env: dict | None = None, source: str = SCRIPT
) -> tuple[subprocess.CompletedProcess, Path]:
    script = tmp_path / "crash.py"
    script.write_text(source.format(examples=str(EXAMPLES)))
    full = {**os.environ, "TILELANG_DISABLE_CACHE": "1", "NO_COLOR": "1", **(env or {})}
    full["PYTHONPATH"] = str(REPO) + os.pathsep + full.get("PYTHONPATH", "")
    if not (env or {}).get("PYTHONFAULTHANDLER"):
        full.pop("PYTHONFAULTHANDLER", None)
    p = subprocess.run(
        [sys.executable, "-m", "tltrace", "run", "-q", *flags, "--trace-dir", "tr", str(script), at],
        cwd=tmp_path,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == -signal.SIGSEGV, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert "not reached" not in p.stdout
    return p, tmp_path / "tr" / "crash"


@pytest.fixture(scope="module")
def died_in_pass(tmp_path_factory):
    """--sync, SIGSEGV at the 10th top-level pass of the second compile."""
    tmp = tmp_path_factory.mktemp("fatal")
    p, script_dir = _crash(tmp, "10", "--sync")
    m = re.search(r"^dying in (\d+) (\S+)$", p.stdout, re.M)
    assert m, p.stdout
    return script_dir, int(m.group(1)), m.group(2), p


def test_the_run_says_which_pass_the_process_died_in(died_in_pass):
    script_dir, index, name, _ = died_in_pass
    first, second = run_dirs(script_dir)
    # The compile that finished left no note; the one that died kept its records and both files.
    assert not [p.name for p in first.iterdir() if p.name in (fatal.INFLIGHT, fatal.FATAL, ".fatal.parked")]
    manifest = runs.load_manifest(second)
    assert manifest.status == "interrupted"
    assert manifest.records and max(r.index for r in manifest.records) < index  # --sync: what finished
    expected = f"the process died inside pass {index} ({pass_display_name(name)}): Segmentation fault"
    assert manifest.error is not None and manifest.error.startswith(expected), manifest.error
    assert notes.where_of(second) == {"at": "in", "name": name, "index": index, "phase": "pipeline_c"}
    stacks = (second / fatal.FATAL).read_text()
    assert "Fatal Python error: Segmentation fault" in stacks
    assert re.search(r'File ".*crash\.py", line \d+ in pass_started', stacks), stacks[:2000]
    # The first run's manifest is as it was written: complete, no note.
    assert runs.load_manifest(first).status == "complete" and runs.load_manifest(first).error is None


def test_show_says_it(died_in_pass, run_cli):
    script_dir, index, name, _ = died_in_pass
    r = run_cli("show", script_dir, "-1", "add 256")  # the compile that died
    assert r.exit_code == 0, r.stderr
    assert (
        f"error: the process died inside pass {index} ({pass_display_name(name)}): Segmentation fault"
        in r.stdout
    )
    r = run_cli("show", script_dir)
    assert r.exit_code == 0 and "interrupted" in r.stdout


@pytest.mark.browser
def test_the_rebuilt_report_says_it(died_in_pass, run_cli, open_page):
    script_dir, index, name, _ = died_in_pass
    r = run_cli("show", script_dir, "-1", "add 256", "--html")
    assert r.exit_code == 0, r.stderr
    page = open_page(Path(r.stdout.strip()))
    text = page.inner_text("#tl-runstatus")
    assert (
        text.startswith("interrupted (") and f"died inside pass {index} ({pass_display_name(name)})" in text
    )


def test_a_native_crash_in_codegen_without_sync(tmp_path):
    """Background recording: the records may lag, the note does not (it is written by the compiling thread)."""
    _, script_dir = _crash(tmp_path, "codegen")
    run = run_dirs(script_dir)[-1]
    manifest = runs.load_manifest(run)
    assert manifest.status == "interrupted"
    assert manifest.error is not None and manifest.error.startswith(
        "the process died inside codegen_device (target.build.tilelang_c): Segmentation fault"
    ), manifest.error


DEEP_HANDLER_C = r"""
#include <signal.h>
#include <string.h>
#include <unistd.h>
#define NEED (256 * 1024)
static __attribute__((noinline)) void use_stack(void) {
    volatile char buf[NEED];  /* its own frame: the caller asks the kernel first, on a small frame */
    memset((char *)buf, 1, sizeof buf);
    write(2, "room ok\n", 8);
}
static void deep(int s) {
    stack_t cur;
    if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_ONSTACK) && cur.ss_size < NEED) {
        write(2, "room short\n", 11);
    } else {
        use_stack();
    }
    signal(s, SIG_DFL);
    raise(s);
}
void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = deep;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, 0);
}
"""

# SCRIPT with a C handler put in after TVM's: the handler faulthandler will hand the signal on to.
DEEP_SCRIPT = SCRIPT.replace(
    "from elementwise_add import make_add\n",
    "from elementwise_add import make_add\nimport ctypes\nctypes.CDLL(os.environ['DEEP_LIB']).install()\n",
)


def test_the_handler_after_faulthandler_has_the_stack_it_would_have_untraced(tmp_path):
    """faulthandler runs on a small alternate stack and hands the signal on from there, so the
    handler before it (TVM's, printing its native stack) ran nested on those few pages, past them
    into the heap: the process sometimes died of SIGABRT ("double free or corruption") instead of
    SIGSEGV. A C handler that needs 256 KB asks the kernel which stack it is on (`sigaltstack`)."""
    lib = tmp_path / "deep.so"
    (tmp_path / "deep.c").write_text(DEEP_HANDLER_C)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-o", str(lib), str(tmp_path / "deep.c")], check=True)
    p, script_dir = _crash(tmp_path, "10", "--sync", env={"DEEP_LIB": str(lib)}, source=DEEP_SCRIPT)
    assert "room ok" in p.stderr and "room short" not in p.stderr, p.stderr[-2000:]
    stacks = (run_dirs(script_dir)[-1] / fatal.FATAL).read_text()
    assert "Fatal Python error: Segmentation fault" in stacks  # faulthandler ran, and handed the signal on


def test_a_faulthandler_the_user_enabled_is_left_alone(tmp_path):
    """PYTHONFAULTHANDLER: faulthandler is the user's; tltrace makes no fatal.txt, and still says where.

    (TVM, loaded after Python turned the user's faulthandler on, puts its own SIGSEGV handler
    in front of it: TileLang's business, not tltrace's.)
    """
    _, script_dir = _crash(tmp_path, "3", "--sync", env={"PYTHONFAULTHANDLER": "1"})
    run = run_dirs(script_dir)[-1]
    assert not (run / fatal.FATAL).exists()
    error = runs.load_manifest(run).error or ""
    assert error.startswith("the process ended inside pass ") and "before the compile finished" in error


def test_notes_read_back(tmp_path):
    """The readers: a torn or foreign inflight line is no note; faulthandler's line gives the signal."""
    fd = os.open(tmp_path / fatal.INFLIGHT, os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    assert notes.note_of(tmp_path) is None
    (tmp_path / fatal.INFLIGHT).write_text('{"at": "in", "name": 5}')
    assert notes.note_of(tmp_path) is None
    note = fatal.Inflight()
    note.mark("in", "tl.Simplify", 3, "pipeline_c")  # before the run directory exists: kept in memory
    (tmp_path / fatal.INFLIGHT).unlink()
    note.attach(tmp_path)
    assert notes.where_of(tmp_path) == {"at": "in", "name": "tl.Simplify", "index": 3, "phase": "pipeline_c"}
    note.mark("after", "tl.Simplify", 3, "pipeline_c")
    assert os.path.getsize(tmp_path / fatal.INFLIGHT) == 512
    assert notes.note_of(tmp_path).startswith("the process ended after pass 3 (Simplify) before")
    (tmp_path / fatal.FATAL).write_text("x\n\nFatal Python error: Aborted\n\nCurrent thread 0x1:\n")
    assert notes.note_of(tmp_path).startswith("the process died after pass 3 (Simplify): Aborted")
    note.close()
    assert not (tmp_path / fatal.INFLIGHT).exists()
    assert notes.note_of(tmp_path) == f"the process died: Aborted (the stacks: {fatal.FATAL})"


def test_the_inflight_line_a_sigkill_leaves_is_the_last_one_marked(tmp_path):
    """After its first write the line is stored into a shared mapping of the file (no system
    call): a process killed right after a mark leaves that line in the file, as a returned
    pwrite did; each mark reads back at once through the file, and none made it longer."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: marks, says how far it got, and is killed
        try:
            os.close(r)
            note = fatal.Inflight()
            note.attach(tmp_path)  # no line yet: an empty file
            ok = os.path.getsize(tmp_path / fatal.INFLIGHT) == 0
            for i in range(1, 40):
                note.mark("in" if i % 2 else "after", f"tl.Pass{i}", i, "pipeline_cuda")
                ok = ok and notes.where_of(tmp_path) == {
                    "at": "in" if i % 2 else "after",
                    "name": f"tl.Pass{i}",
                    "index": i,
                    "phase": "pipeline_cuda",
                }
            ok = ok and note._map is not None  # the mapping, not pwrite, wrote the later lines
            os.write(w, b"1" if ok else b"0")
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.close(w)
    said = os.read(r, 1)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    assert said == b"1"
    data = (tmp_path / fatal.INFLIGHT).read_bytes()
    assert data == notes.inflight_line("in", "tl.Pass39", 39, "pipeline_cuda") and len(data) == notes.WIDTH
    assert notes.note_of(tmp_path).startswith("the process ended inside pass 39 (")


def test_a_run_directory_holds_its_manifest_before_the_notes(tmp_path, monkeypatch):
    """The first manifest is written before `inflight` and `fatal.txt` go into the run directory: a
    kill in between leaves an empty directory (read as killed as it began), never the notes
    without a manifest (read as damaged: tests/test_kill_autotune.py saw it when the worker lagged)."""
    import tltrace
    from tltrace.session.store import RunStore

    from ._kernels import compile_add

    seen: list[list[str]] = []
    real = RunStore.write_manifest

    def first(self, manifest):
        if not seen:
            seen.append(sorted(os.listdir(self.run_dir)))
        return real(self, manifest)

    monkeypatch.setattr(RunStore, "write_manifest", first)
    tltrace.enable(mode="terminal", trace_dir=tmp_path / "trace", quiet=True)
    try:
        compile_add()
    finally:
        tltrace.disable()
    (run,) = sorted((tmp_path / "trace").glob("*/.run_records/run_*"))
    print(f"the run directory before its first manifest: {seen[0]}")
    assert seen and not {fatal.INFLIGHT, fatal.FATAL} & set(seen[0])
    assert runs.load_manifest(run).status == "complete"
