"""Remarks (`tltrace run --remarks`): what native code writes to stderr during each top-level pass.

TileLang's C++ passes say why a fast path was not taken (`AutoWarpSpecialization skipped:
...`, `[WS] skipped: ...`) and, when a verbose planner is on by pass config, how they planned
(`tl.enable_vectorize_planner_verbose`: config.REMARK_PLANNERS). They write to file
descriptor 2, past Python. The recorder here points fd 2 at a temporary file from the
instrument's before-callback of a top-level pass to its after-callback (or the failure
callback), keeps what was written as that pass's remark, and writes it on to the real fd 2
at once, byte for byte: the terminal sees the same text in the same order, each pass's at
the end of that pass.

fd 2 is the process's, not the thread's: while one pass is captured, whatever any thread
writes to stderr lands in its file. So under --remarks every top-level pass of every traced
compile takes one process-wide lock from its before-callback to its after-callback: compiles
in several threads run their top-level passes one at a time (their other work, codegen and
the C compiler included, still runs at once). The manifest says so (`serialised`). A
temporary file never fills, so nothing native can block on it; a compile nested in a pass
on the same thread (a pass that compiles) is not captured apart: its text is the outer
pass's.

Off (the default) the recorder is not made: no lock, no file, no cost.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from typing import Any

from ..config import Settings
from ..format.names import pass_display_name
from ..session.recorder import PassEvent, Recorder
from ..session.snapshot import Side

VERSION = 1  # of the manifest's `remarks` object
WAIT_S = 120.0  # the longest a pass waits for another thread's captured pass before it runs uncaptured
MAX_TEXT = 64 * 1024  # bytes of one pass's remark kept in the manifest (all of it still reaches the terminal)

# Known remarks, by kind: the first pattern that matches a line names it (docs/facts.md).
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ws_skipped", re.compile(r"(?:\[WS\]|AutoWarpSpecialization) skipped: ?(.*)")),
    (
        "layout_fallback",
        re.compile(r"(?i)\blayout\b.*\bfall(?:s|ing)? ?back\b|\bfall(?:s|ing)? ?back\b.*\blayout\b"),
    ),
    ("vectorize_plan", re.compile(r"VectorizePlanner|Final vector_size")),
    ("reducer_plan", re.compile(r"(?i)\breducer\b.*\b(?:plan|epoch)\b")),
    ("fallback", re.compile(r"(?i)\bfall(?:s|ing)? ?back\b")),
    ("warning", re.compile(r"(?i)\bwarning\b")),
)


def kinds_of(text: str) -> dict[str, list[str]]:
    """Return kind -> the lines of `text` of that kind (each line counted once, under its first kind)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        for kind, pattern in KINDS:
            if pattern.search(line):
                out.setdefault(kind, []).append(line.strip())
                break
    return out


class _Tap:
    """fd 2 pointed at one temporary file, by one thread at a time (the process-wide lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: int | None = None
        self.saved: int | None = None  # a duplicate of fd 2 as it was when this capture began
        self.fd: int | None = None  # the temporary file

    def start(self) -> bool:
        """Point fd 2 at the file (waiting for another thread's pass to end); False when not captured."""
        if self.owner == threading.get_ident():
            return False  # a pass inside this thread's captured pass: the outer capture has its text
        if not self.lock.acquire(timeout=WAIT_S):
            raise TimeoutError  # never hang a compile on another thread's pass: run this one uncaptured
        try:
            _flush()
            self.saved = os.dup(2)  # each time: whoever owns fd 2 may have pointed it elsewhere since
            if self.fd is None:
                fd, path = tempfile.mkstemp(prefix="remarks-", suffix=".txt")
                os.unlink(path)
                self.fd = fd
            os.ftruncate(self.fd, 0)
            os.lseek(self.fd, 0, os.SEEK_SET)
            os.dup2(self.fd, 2)
        except BaseException:
            self._close_saved()
            self.lock.release()
            return False
        self.owner = threading.get_ident()
        return True

    def stop(self) -> bytes:
        """Give fd 2 back, write what was captured on to it, and return that."""
        data = b""
        try:
            _flush()
            if self.saved is not None:
                os.dup2(self.saved, 2)
            if self.fd is not None:
                data = _read_all(self.fd)
            _write_all(2, data)  # under the lock: the next pass's capture cannot take it first
        finally:
            self._close_saved()
            self.owner = None
            self.lock.release()
        return data

    def _close_saved(self) -> None:
        if self.saved is not None:
            try:
                os.close(self.saved)
            except OSError:
                pass
            self.saved = None


def _flush() -> None:
    """Python's own buffered stderr goes out before fd 2 changes hands."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    pos = 0
    while True:
        chunk = os.pread(fd, 1 << 16, pos)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        pos += len(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except InterruptedError:
            continue
        except OSError:
            return  # stderr closed or gone: the text is still in the record
        view = view[n:]


_tap = _Tap()


class RemarksRecorder(Recorder):
    """One compile's remarks: each top-level pass's stderr, in the manifest's `remarks`."""

    name = "remarks"
    field = "remarks"

    def __init__(self, planners: tuple[str, ...]) -> None:
        self.planners = planners
        self._lock = threading.Lock()
        self._passes: list[dict[str, Any]] = []
        self._open: PassEvent | None = None
        self._uncaptured: list[int | None] = []  # passes that waited WAIT_S for the lock, then ran uncaptured

    def pass_configs(self, where: str) -> dict[str, bool]:
        """--remarks=vectorize,...: the verbose planners, on around each pipeline and codegen call."""
        return configs_of(self.planners)

    def pass_started(self, event: PassEvent, before: Side) -> None:
        if event.depth != 0 or event.codegen:
            return None
        self._close(None)  # a pass whose after-callback never came (an unmatched callback)
        try:
            if _tap.start():
                self._open = event
        except TimeoutError:
            with self._lock:
                self._uncaptured.append(event.index)
        return None

    def pass_finished(self, event: PassEvent) -> None:
        if event.depth == 0:
            self._close(event)
        return None

    def pass_failed(self, event: PassEvent, before: Side) -> None:
        if event.depth == 0 and not event.codegen:
            self._close(event)  # the remark stays with the FAILED record, beside its error
        return None

    def _close(self, event: PassEvent | None) -> None:
        opened = self._open
        if opened is None:
            return
        self._open = None
        data = _tap.stop()
        if data:
            self._keep(opened, data)

    def _keep(self, event: PassEvent, data: bytes) -> None:
        text = data[:MAX_TEXT].decode("utf-8", errors="replace")
        kinds = kinds_of(text)
        entry: dict[str, Any] = {
            "index": event.index,
            "name": pass_display_name(event.name),
            "phase": event.phase or "unscoped",
            "lines": data.count(b"\n") + (0 if data.endswith(b"\n") else 1),
            "bytes": len(data),
            "kinds": sorted(kinds),
            "text": text,
        }
        if len(data) > MAX_TEXT:
            entry["truncated"] = True
        with self._lock:
            self._passes.append(entry)

    def value(self) -> Any:
        with self._lock:
            passes = [dict(p) for p in self._passes]
            uncaptured = list(self._uncaptured)
        out = {"version": VERSION, "serialised": True, "planners": list(self.planners), "passes": passes}
        if uncaptured:
            out["uncaptured"] = uncaptured
        return out

    def finish(self) -> None:
        self._close(None)  # the compile ended inside a pass: fd 2 goes back, the lock too


def make(settings: Settings) -> RemarksRecorder | None:
    """The recorder for one compile under --remarks, else None (nothing made, nothing paid)."""
    if settings.remarks is None:
        return None
    return RemarksRecorder(settings.remarks)


def configs_of(names: tuple[str, ...]) -> dict[str, bool]:
    """Return the pass configs that turn on the planners `names` ({} for none).

    A config this TileLang does not register is left out (a PassContext would refuse it).
    """
    from ..config import REMARK_PLANNERS

    if not names:
        return {}
    known = _registered_configs()
    keys = (REMARK_PLANNERS[n] for n in names if n in REMARK_PLANNERS)
    return {k: True for k in keys if known is None or k in known}


_configs: frozenset[str] | None = None


def _registered_configs() -> frozenset[str] | None:
    """The pass configs TVM registers (read once per process); None when they cannot be listed."""
    global _configs
    if _configs is None:
        try:
            from tvm.ir.transform import PassContext  # type: ignore[import-not-found]

            _configs = frozenset(str(k) for k in PassContext.list_configs())
        except Exception:
            return None
    return _configs
