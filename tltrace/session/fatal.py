"""What a run leaves when its process dies of a fatal signal: where the compile was, and the stacks.

A compiler that segfaults inside a pass kills the process; the records written so far
stay (`--sync` writes each at once). Two small files in the run directory say the rest,
and both are removed when the compile ends in any ordinary way:

* `inflight`: one fixed-width JSON line, rewritten in place by the compiling thread
  before and after each top-level pass and codegen call:
  `{"at": "in", "index": 12, "name": "tl.LowerTileOp", "phase": "pipeline_c"}`. The
  first line is one `os.pwrite`; then the file is mapped (`mmap`, shared) and each line
  is a copy into the mapping, no system call: the mapping is the file's page in the
  kernel's cache, which keeps what was stored in it whatever kills the process (as it
  keeps what a returned `pwrite` wrote). Where the file cannot be mapped: `pwrite` each time.
* `fatal.txt`: where Python's `faulthandler` writes the stacks of every thread on
  SIGSEGV, SIGFPE, SIGABRT, SIGBUS or SIGILL. One file per process, hard-linked into
  each open run (faulthandler writes to one file); tltrace turns faulthandler on only
  when nobody has (`faulthandler.is_enabled()`), and never points it elsewhere after.
  faulthandler then hands the signal on to the handler that was there before (TVM's,
  which prints the native stack on stderr), so the process dies as it would have.

Nothing runs at the signal but faulthandler's own C handler: the rest is written before.
The names of both files, the inflight line's codec and the reading back are the
format's (format/notes.py): history/loading.py reads both files of a run whose process
is gone (`note_of`): "died inside pass 12 (tl.LowerTileOp): Segmentation fault".
"""

from __future__ import annotations

import atexit
import ctypes
import faulthandler
import mmap
import os
import sys
import threading
from pathlib import Path
from typing import Any

from ..format.notes import FATAL, FATAL_HEAD, INFLIGHT, WIDTH, inflight_line


class Inflight:
    """One compile's `inflight` line: set on the compiling thread, on disk once the run directory is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._path: Path | None = None
        self._line = b""
        self._map: mmap.mmap | None = None  # the file's line, mapped once written (module docstring)

    def mark(self, at: str, name: str, index: int | None = None, phase: str | None = None) -> None:
        """Say where the compile is ("in" or "after" a pass); never raises."""
        try:
            line = inflight_line(at, name, index, phase)
            with self._lock:
                self._line = line
                if self._map is not None:
                    self._map[:] = line  # WIDTH bytes onto the file's WIDTH bytes
                elif self._fd is not None:
                    os.pwrite(self._fd, line, 0)
                    self._map = _mapped(self._fd)
        except Exception:
            pass

    def attach(self, run_dir: Path) -> None:
        """Create `<run_dir>/inflight` with the line as it stands; never raises (no file then)."""
        path = Path(run_dir) / INFLIGHT
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError:
            return
        with self._lock:
            self._fd, self._path = fd, path
            try:
                if self._line:
                    os.pwrite(fd, self._line, 0)
                    self._map = _mapped(fd)
            except OSError:
                pass

    def close(self) -> None:
        """The compile ended: remove the file."""
        with self._lock:
            fd, path, self._fd, self._path = self._fd, self._path, None, None
            mapped, self._map = self._map, None
        if mapped is not None:
            try:
                mapped.close()
            except (OSError, ValueError):
                pass
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        if path is not None:
            try:
                os.unlink(path)
            except OSError:
                pass


def _mapped(fd: int) -> mmap.mmap | None:
    """The first WIDTH bytes of the `inflight` file `fd` (a line was written there) as a shared
    mapping, or None (the file is shorter, or cannot be mapped: `pwrite` goes on)."""
    try:
        if os.fstat(fd).st_size != WIDTH:
            return None
        return mmap.mmap(fd, WIDTH, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except (OSError, ValueError, AttributeError):
        return None


# -- the process's faulthandler file ------------------------------------------------------------
_lock = threading.Lock()
_state: dict[str, Any] = {
    "pid": None,
    "fd": None,
    "links": [],
    "parked": None,
    "owner": False,
    "asked": False,
}


def _reset_after_fork() -> None:
    """A forked child must not write into its parent's file: turn ours off there (a run re-arms it)."""
    fd, owner = _state["fd"], _state["owner"]
    _state.update(pid=None, fd=None, links=[], parked=None, owner=False, asked=False)
    if owner:
        try:
            faulthandler.disable()
        except Exception:
            pass
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


ALTSTACK = 1 << 20  # bytes of the alternate signal stack of the thread that turned faulthandler on
_altstack: list[Any] = []  # the mapping behind it, kept for the life of the process


class _StackT(ctypes.Structure):
    _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)]


def _roomy_altstack() -> None:
    """Give this thread an alternate signal stack of ALTSTACK bytes; never raises.

    faulthandler.enable() gives the calling thread a small alternate stack (a few pages of
    Python's heap) and runs its handler there; after writing the stacks it raises the signal
    again, and the handler that was there before it (TVM's, which prints the native stack with
    libbacktrace) runs nested on that same small stack. Deep enough, that handler ran past it
    into the heap: a process that should have died of SIGSEGV died of SIGABRT ("double free or
    corruption", "corrupted size vs. prev_size") about once in 36 runs under load, and TVM's
    stack was lost. One anonymous mapping, untouched pages cost nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        cur = _StackT()
        if libc.sigaltstack(None, ctypes.byref(cur)) != 0 or cur.ss_size >= ALTSTACK or cur.ss_flags & 1:
            return  # unknown, already roomy, or this thread is on it now (SS_ONSTACK)
        buf = mmap.mmap(-1, ALTSTACK)
        new = _StackT(ctypes.addressof(ctypes.c_char.from_buffer(buf)), 0, ALTSTACK)
        if libc.sigaltstack(ctypes.byref(new), None) == 0:
            _altstack.append(buf)
    except Exception:
        return


def link(run_dir: Path) -> None:
    """Give `run_dir` its `fatal.txt`: the process's faulthandler file; never raises.

    The first run of a process creates the file and, when faulthandler is off, turns it on
    into that file. Later runs get a hard link to it. The file of a process whose
    faulthandler someone else turned on is never made (their handler writes elsewhere).
    """
    dest = Path(run_dir) / FATAL
    with _lock:
        try:
            if _state["pid"] != os.getpid():
                _state.update(pid=os.getpid(), fd=None, links=[], parked=None, owner=False, asked=False)
            if not _state["asked"]:
                _state["asked"] = True
                if faulthandler.is_enabled():
                    return  # the user's (or pytest's) faulthandler: left as it is
                fd = os.open(dest, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
                os.write(fd, FATAL_HEAD)
                faulthandler.enable(file=fd, all_threads=True)
                _roomy_altstack()
                _state.update(fd=fd, owner=True, links=[dest])
                return
            if not _state["owner"]:
                return
            for src in [*_state["links"], _state["parked"]]:
                if src is None:
                    continue
                try:
                    os.link(src, dest)
                except OSError:
                    continue
                _state["links"].append(dest)
                _unpark()
                return
        except Exception:
            return


def unlink(run_dir: Path) -> None:
    """The run ended: take its `fatal.txt` away (the last one is kept, hidden, until another run links it)."""
    dest = Path(run_dir) / FATAL
    with _lock:
        try:
            if dest not in _state["links"]:
                return
            _state["links"].remove(dest)
            if not _state["links"] and _state["parked"] is None:
                # The file must stay linked somewhere for the next run to link it, and
                # faulthandler is never pointed at another file: keep it under another name.
                parked = dest.with_name(".fatal.parked")
                os.replace(dest, parked)
                _state["parked"] = parked
            else:
                os.unlink(dest)
        except Exception:
            pass


def _unpark() -> None:
    parked, _state["parked"] = _state["parked"], None
    if parked is not None:
        try:
            os.unlink(parked)
        except OSError:
            pass


@atexit.register
def release() -> None:
    """The process is ending normally: remove the kept file (a crash from here on leaves no note)."""
    with _lock:
        if _state["pid"] == os.getpid():
            _unpark()
