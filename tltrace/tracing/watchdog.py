"""`tltrace run --timeout S`: a supervising parent that names a hang, stops it, and records it.

Why a parent: a kernel launch that never returns (the C path's cython call, a CUDA
synchronize) holds the GIL, so no Python thread of the traced process ever runs again: a
watchdog thread there would wait forever too. So the CLI process starts the same `tltrace
run` command again as a child, in a process group of its own (proc/group.py), with
`CHILD_ENV` naming a stacks file. The child registers Python's `faulthandler` on SIGUSR1
into that file (`arm`): its C handler dumps every thread's Python stack without the GIL.
After S seconds the parent sends SIGUSR1, waits for the dump to settle, then SIGKILLs the
whole group (nothing of it is left running; the child's own subprocesses included, unless
one left the group with setsid()). SIGKILL, not SIGTERM: a GIL-bound hang handles no
signal, and one rule for every hang keeps the records the same whichever hang it was.

What is recorded (`Hang`): the script's innermost frame in the dump (its file and line:
the call that hung) and where it was: inside a compile (a run directory of this
invocation whose `inflight` note says a pass or codegen call had not ended: the note
`timedout` is written next to it, and `show` then says "timed out after S s inside pass N
(NAME), called from script.py:LINE"), inside TileLang otherwise (a launch: the innermost
TileLang frame is named), or in the script's own Python. The dump is kept as
`timeout-stacks.txt` in the compile's run directory, else in the script's directory.
Exit status 124, as timeout(1) gives.
"""

from __future__ import annotations

import faulthandler
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import EXIT_TIMEOUT
from ..format.layout import INFLIGHT, RUN_RECORDS
from ..format.notes import TIMEDOUT, where_of
from ..proc import group as procgroup

CHILD_ENV = "TLTRACE_WATCHDOG_STACKS"  # set in the supervised child: the file faulthandler dumps into
STACKS = "timeout-stacks.txt"
MARK = (
    "tltrace: timed out after"  # the first words of the line said on stderr (bisect reads it in a step's log)
)
_SETTLE = 3.0  # seconds the dump gets to be written
_FRAME = re.compile(r'^\s+File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>.*)$')

_armed: list[IO[Any]] = []  # keeps the stacks file open for faulthandler


def arm() -> bool:
    """In the supervised child: dump every thread's stack into the parent's file on SIGUSR1; True when armed."""
    path = os.environ.pop(CHILD_ENV, None)  # not handed on to the script's own subprocesses
    if not path or not hasattr(signal, "SIGUSR1"):
        return False
    try:
        f = open(path, "w")  # noqa: SIM115  # kept open: faulthandler writes into it at the signal
        faulthandler.register(signal.SIGUSR1, file=f, all_threads=True, chain=False)
    except (OSError, RuntimeError, ValueError):
        return False
    _armed.append(f)
    return True


def is_supervised() -> bool:
    """True in the supervised child before `arm` (run --ncu: the inner run's child is already under ncu)."""
    return CHILD_ENV in os.environ


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    func: str


@dataclass(frozen=True)
class Hang:
    """What was in flight when the timeout struck."""

    seconds: float
    script_line: Frame | None  # the script's innermost frame: the call that hung
    inner: Frame | None  # the innermost frame below it (TileLang's, a library's), if any
    compile_dirs: tuple[Path, ...]  # run directories whose compile had not ended
    where: str  # "inside pass 12 (tl.LowerTileOp)", "inside TileLang (kernel.py:... in __call__)", ...
    stacks: Path | None

    def line(self) -> str:
        """The one line said on stderr."""
        called = ""
        if self.script_line is not None:
            called = f", called from {Path(self.script_line.file).name}:{self.script_line.line}"
        kept = f" (the stacks: {self.stacks})" if self.stacks else ""
        return f"{MARK} {_secs(self.seconds)} s {self.where}{called}; stopped its process group{kept}"


def _secs(seconds: float) -> str:
    return f"{seconds:g}"


def parse_stacks(text: str) -> list[list[Frame]]:
    """Return faulthandler's dump as threads, each a list of frames, most recent first."""
    threads: list[list[Frame]] = []
    for raw in text.splitlines():
        if raw.startswith(("Thread ", "Current thread ")):
            threads.append([])
            continue
        m = _FRAME.match(raw)
        if m and threads:
            threads[-1].append(Frame(m["file"], int(m["line"]), m["func"].strip()))
    return threads


def script_frames(threads: list[list[Frame]], script: str) -> tuple[Frame | None, Frame | None]:
    """Return the script's innermost frame and the frame just inside it (None, None when no thread ran it).

    The thread that runs the script's top level (`<module>`) is preferred; else the first with a frame of it.
    """
    target = os.path.realpath(script)

    def mine(f: Frame) -> bool:
        return os.path.realpath(f.file) == target

    ranked = sorted(threads, key=lambda t: not any(mine(f) and f.func == "<module>" for f in t))
    for frames in ranked:
        for i, f in enumerate(frames):
            if mine(f):
                return f, (frames[i - 1] if i > 0 else None)
    return None, None


def _new_runs(script_dir: Path, before: set[Path]) -> list[Path]:
    from ..history.loading import is_run_dir

    try:
        return sorted(p for p in (script_dir / RUN_RECORDS).iterdir() if is_run_dir(p) and p not in before)
    except OSError:
        return []


def _runs(script_dir: Path) -> set[Path]:
    return set(_new_runs(script_dir, set()))


def _in_compile(run_dir: Path) -> dict[str, Any] | None:
    if not (run_dir / INFLIGHT).exists():
        return None
    where = where_of(run_dir)
    return where if where is not None and where["at"] != "ended" else None


def _describe(where: dict[str, Any]) -> str:
    from ..format.names import pass_display_name

    name = pass_display_name(where["name"])
    what = f"pass {where['index']} ({name})" if "index" in where else name
    return f"inside {what}" if where["at"] == "in" else f"after {what} (between passes)"


def supervise(
    argv: list[str], seconds: float, script: str | None, script_dir: Path
) -> tuple[int, Hang | None]:
    """Run `argv` (a `tltrace run` without --timeout) as a supervised child; return its exit status and the hang.

    The status is the child's, or EXIT_TIMEOUT (124) after `seconds`.
    """
    try:
        script_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    stacks = script_dir / f".{STACKS}.{os.getpid()}"
    before = _runs(script_dir)
    env = dict(os.environ, **{CHILD_ENV: str(stacks)})
    with procgroup.started(argv, env=env) as proc:
        try:
            return proc.wait(timeout=seconds), None
        except subprocess.TimeoutExpired:
            pass
        _dump(proc, stacks)
        procgroup.take_down(proc, signal.SIGKILL, 0)
    hang = _record(seconds, script, script_dir, before, stacks)
    return EXIT_TIMEOUT, hang


def _dump(proc: subprocess.Popen, stacks: Path) -> None:
    """Ask the child for its stacks (SIGUSR1) and wait until the file stops growing."""
    try:
        os.kill(proc.pid, signal.SIGUSR1)
    except OSError:
        return
    deadline = time.monotonic() + _SETTLE
    size, still = -1, 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
        try:
            now = stacks.stat().st_size
        except OSError:
            now = 0
        still = still + 1 if now == size and now > 0 else 0
        size = now
        if still >= 4:
            return


def _record(seconds: float, script: str | None, script_dir: Path, before: set[Path], stacks: Path) -> Hang:
    try:
        text = stacks.read_text(errors="replace")
    except OSError:
        text = ""
    threads = parse_stacks(text)
    at, inner = script_frames(threads, script) if script else (None, None)
    compiles = [(d, w) for d in _new_runs(script_dir, before) if (w := _in_compile(d)) is not None]
    launch = _launch_frame(threads, at)
    if compiles:
        where = _describe(compiles[-1][1])
    elif launch is not None:
        where = f"inside a launch{_kernel_of(_new_runs(script_dir, before))} ({_short(launch)})"
    elif inner is not None and "tilelang" in inner.file.replace("\\", "/").split("/"):
        where = f"inside TileLang ({Path(inner.file).name}:{inner.line} in {inner.func}: a kernel launch or compile)"
    elif inner is not None:
        where = f"inside {inner.func} ({Path(inner.file).name}:{inner.line})"
    else:
        where = "in the script"
    home = compiles[-1][0] if compiles else script_dir
    kept: Path | None = home / STACKS
    try:
        if text:
            os.replace(stacks, kept)  # type: ignore[arg-type]
        else:
            stacks.unlink(missing_ok=True)
            kept = None
    except OSError:
        kept = None
    note: dict[str, Any] = {"seconds": seconds}
    if at is not None:
        note["file"], note["line"] = at.file, at.line
    if kept is not None:
        note["stacks"] = kept.name
    for d, _ in compiles:
        try:
            (d / TIMEDOUT).write_text(json.dumps(note) + "\n")
        except OSError:
            pass
    return Hang(seconds, at, inner, tuple(d for d, _ in compiles), where, kept)


def _short(f: Frame) -> str:
    parts = f.file.replace("\\", "/").split("/")
    tail = "/".join(parts[parts.index("tilelang") :]) if "tilelang" in parts else Path(f.file).name
    return f"{tail}:{f.line} in {f.func}"


def _launch_frame(threads: list[list[Frame]], at: Frame | None) -> Frame | None:
    """Return the innermost frame of TileLang's launch path (tilelang/jit/adapter/) in the thread that ran `at`."""
    for frames in threads:
        if at is not None and at not in frames:
            continue
        for f in frames:
            if "tilelang/jit/adapter/" in f.file.replace("\\", "/"):
                return f
    return None


def _kernel_of(runs: list[Path]) -> str:
    """Return " of KERNEL" when every compile of this invocation is of one kernel (the one launched), else ""."""
    from ..history.loading import load_run

    names = set()
    for d in runs:
        m = load_run(d).manifest
        names.add(m.kernel_name if m is not None else None)
    return f" of {names.pop()}" if len(names) == 1 and None not in names else ""


def child_argv() -> list[str]:
    """The command line that runs this `tltrace` again (the same arguments: the child sees CHILD_ENV)."""
    return [sys.executable, "-m", "tltrace", *sys.argv[1:]]
