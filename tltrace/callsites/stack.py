"""The call site of a compile: the user's frames when it began, the manifest's `stack`.

TileLang makes the tracing tool on the compiling thread once per compile, so a walk of
`sys._getframe()` there sees the user's stack (tlparse groups compiles by theirs, as a
stack trie). The walk keeps the frames outside TileLang, TVM, tltrace and Python's own
library, outermost first, as `{file, line, func}`; each file is classified once per process,
so a walk costs tens of microseconds (docs/benchmarks.md).

A compile in a worker thread (a thread pool) has lost the call that submitted it: its own
stack starts in `threading`. Where the submitter can be known without patching anything,
it is put first: TileLang's autotuner compiles in its pool while the submitting thread
waits inside `tilelang/autotuner/`, so when exactly one other thread stands there, its
user frames outside the autotuner's outermost frame are the submitter's. Between the two halves stands the frame
`{"file": "(worker thread)", "line": 0, "func": <thread name>}`; with no submitter known
the stack starts with it.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
from types import CodeType, FrameType
from typing import Any

from ..session.recorder import Recorder

WORKER = "(worker thread)"  # the file of the frame that marks a thread hop
MAX_FRAMES = 40  # the innermost ones are kept


def _library_roots() -> tuple[str, ...]:
    roots = []
    for key in ("stdlib", "platstdlib"):
        try:
            roots.append(os.path.realpath(sysconfig.get_paths()[key]) + os.sep)
        except Exception:
            pass
    return tuple(dict.fromkeys(roots))


def _package_roots() -> tuple[str, ...]:
    """The directories of TileLang, TVM, tvm_ffi and tltrace as imported here (the ones loaded so far)."""
    roots = [os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep]
    for name in ("tilelang", "tvm", "tvm_ffi"):
        mod = sys.modules.get(name)
        where = getattr(mod, "__file__", None) if mod is not None else None
        if where:
            roots.append(os.path.dirname(os.path.realpath(where)) + os.sep)
    return tuple(dict.fromkeys(roots))


_ROOTS = _library_roots()
_TLTRACE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LAUNCHERS = tuple(f"{os.sep}{p}{os.sep}" for p in ("_pytest", "pluggy"))  # pytest --tltrace's frames
_SITE = ("site-packages", "dist-packages")
_packages: tuple[str, ...] = ()
_settled = False  # _packages holds TileLang's and TVM's directories
_AUTOTUNER = f"{os.sep}tilelang{os.sep}autotuner{os.sep}"
_user: dict[str, bool] = {}  # a code's file -> the user's (filled as met; races only repeat work)


def is_user(code: CodeType) -> bool:
    """Return True for code of the user's (not TileLang, TVM, tltrace, the standard library)."""
    name = code.co_filename
    got = _user.get(name)
    if got is None:
        got = _classify(name)
        if _settled or not got:  # a verdict made before TileLang was imported may change
            _user[name] = got
    return got


def _classify(filename: str) -> bool:
    if not filename or filename.startswith("<frozen"):
        return False
    if filename.startswith("<"):
        return True  # <stdin>, <string>, a notebook cell: the user's
    global _packages, _settled
    if not _settled:  # until TileLang (and so its TVM) is imported
        _packages = _package_roots()
        _settled = "tilelang" in sys.modules and "tvm" in sys.modules
    path = os.path.realpath(filename) if os.path.isabs(filename) else os.path.abspath(filename)
    if any(path.startswith(p) for p in _packages):
        return False
    if any(path.startswith(r) for r in _ROOTS) and not any(s in path for s in _SITE):
        return False
    if any(p in path for p in _LAUNCHERS):
        return False
    return True


def user_frames(frame: FrameType | None) -> tuple[list[dict[str, Any]], bool]:
    """Return the user's frames from `frame` outward, outermost first, and whether the walk began in `threading`."""
    out: list[dict[str, Any]] = []
    outermost: FrameType | None = None
    while frame is not None:
        code = frame.f_code
        if is_user(code):
            out.append({"file": _path(code.co_filename), "line": frame.f_lineno, "func": code.co_name})
        elif out and code.co_filename.startswith(_TLTRACE):
            break  # tltrace's runner (`tltrace run`, a child's start): what is further out launched the script
        outermost = frame
        frame = frame.f_back
    out.reverse()
    in_thread = outermost is not None and os.path.basename(outermost.f_code.co_filename) == "threading.py"
    return out[-MAX_FRAMES:], in_thread


def _path(filename: str) -> str:
    return filename if filename.startswith("<") or os.path.isabs(filename) else os.path.abspath(filename)


def call_site(frame: FrameType | None = None) -> list[dict[str, Any]]:
    """Return the stack of a compile starting here: the user's frames, a worker thread's submitter first where known."""
    frames, in_thread = user_frames(frame if frame is not None else sys._getframe(1))
    if not in_thread:
        return frames
    hop = {"file": WORKER, "line": 0, "func": threading.current_thread().name}
    return [*_submitter(), hop, *frames][-MAX_FRAMES:]


def _submitter() -> list[dict[str, Any]]:
    """The user's frames of the one other thread waiting in TileLang's autotuner, else [] (not known)."""
    me = threading.get_ident()
    found: list[FrameType] = []
    for ident, top in sys._current_frames().items():
        if ident == me:
            continue
        entry: FrameType | None = None  # the outermost autotuner frame: the user called it
        f: FrameType | None = top
        while f is not None:
            if _AUTOTUNER in f.f_code.co_filename:
                entry = f
            f = f.f_back
        if entry is not None:
            found.append(entry)
    if len(found) != 1 or found[0].f_back is None:
        return []
    frames, _ = user_frames(found[0].f_back)
    return frames


class CallSiteRecorder(Recorder):
    """Holds the compile's stack, taken when the compile's tool was made (the compiling thread)."""

    name = "call site"
    field = "stack"

    def __init__(self, stack: list[dict[str, Any]]) -> None:
        self.stack = stack

    def value(self) -> Any:
        return self.stack


def make(settings: Any) -> CallSiteRecorder:
    """The recorder of this compile's call site (made on the compiling thread: it walks this stack)."""
    return CallSiteRecorder(call_site(sys._getframe(1)))
