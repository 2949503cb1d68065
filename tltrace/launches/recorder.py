"""`run --launches`: each call of a compiled TileLang kernel kept as a launch line (format/launches.py).

The launching thread does the least it can (bench/launch_cost.py measures it): one counter
step, the frame's locals, a dict lookup for the kernel object, a walk up to the first frame
outside TileLang and tltrace (a dict lookup per frame), each argument's shape, dtype, strides
and device as the tensor's own objects (no string is formatted), one tuple appended to a
buffer. Every `BATCH` launches the buffer goes to the process's late worker
(session/worker.py), which turns it into JSON lines and appends them to the invocation's log
in one write; `stop()` writes the rest and the end line, and waits for the worker (bounded).

What a launch belongs to is found once per kernel object: the hash of its generated source
(the compile's codegen record has the same hash; history/launches.py joins them), its name
and the outputs its adapter allocates, kept by the object's id until the object is freed.
The first `Settings.launch_limit` launches of a process are recorded; the rest are counted.
Nothing here raises into the user's script: a failure is said once and recording stops.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from ..config import Settings
from ..format import launches as log_format
from ..format.layout import RUN_RECORDS, text_hash
from ..session import worker
from .observer import Observer

BATCH = 1024  # launches buffered before the worker writes them
STOP_WAIT_S = 30.0  # the most `stop()` waits for the writes
STR_CUT = 80  # characters of a string argument kept
CACHE_MAX = 4096  # JSON pieces of call sites and argument tuples kept by the writer
_PLAIN = (int, float, bool, str, type(None))
_TLTRACE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

_now, _thread = time.monotonic_ns, threading.get_ident
_live: weakref.WeakSet[LaunchRecorder] = weakref.WeakSet()


def kernel_call_code() -> CodeType | None:
    """Return the code object every launch of TileLang goes through (`JITKernel.__call__`), or None."""
    try:
        from tilelang.jit.kernel import JITKernel
    except Exception:
        return None
    code = getattr(JITKernel.__dict__.get("__call__"), "__code__", None)
    return code if isinstance(code, CodeType) else None


class LaunchRecorder:
    """One invocation's launches in this process, from `start()` to `stop()`."""

    def __init__(self, settings: Settings, say: Callable[[str], None]) -> None:
        self.settings = settings
        self.say = say
        self.limit = settings.launch_limit
        self.active = False
        self.observer: Observer | None = None
        self._leave: Callable[[], None] = _nothing  # the observer's: take this thread off the profile
        self._reset()

    def _reset(self) -> None:
        self.pid = os.getpid()
        self._counter = itertools.count()
        self._buf: list[tuple] = []
        self._keys: dict[int, int] = {}  # id(kernel object) -> its number in the log
        self._kernels = itertools.count()
        self._lib: dict[int, tuple[CodeType, bool]] = {}  # id(code) -> (code, inside TileLang or tltrace)
        self._failed = False
        self._path: Path | None = None
        self._json: dict[Any, Any] = {}  # the writer's: call site or arguments -> their JSON
        saver = getattr(self, "_saver", None)
        if saver is not None:  # a forked child saves its own launches, under its own pid
            saver.pid = self.pid
            saver._open.clear()

    # -- start and stop ---------------------------------------------------------------------------
    def start(self) -> bool:
        """Observe TileLang's launches (TileLang is imported); False, said once, when they cannot be."""
        code = kernel_call_code()
        if code is None:
            self.say(
                "--launches: TileLang's JITKernel.__call__ is not a Python function here; no launches recorded"
            )
            return False
        try:
            import tilelang

            self._libs: tuple[str, ...] = (
                _TLTRACE_DIR,
                os.path.dirname(os.path.abspath(tilelang.__file__)) + os.sep,
            )
        except Exception:
            self._libs = (_TLTRACE_DIR,)
        try:
            import torch

            self._tensor: Any = torch.Tensor
        except Exception:
            self._tensor = None
        self._saver: Any = None
        if self.settings.save_inputs and self._tensor is not None:
            from .inputs import InputSaver

            self._saver = InputSaver(self.settings, self._tensor, self._submit)
        self.observer = Observer(code, self._on_call, self._on_return if self._saver is not None else None)
        why = self.observer.start()
        if why is not None:
            self.observer = None
            self.say(f"--launches: {why}; no launches recorded")
            return False
        self._leave = self.observer.leave_this_thread
        self.active = True
        _live.add(self)
        return True

    def stop(self) -> None:
        """Stop observing; the launches so far and the end line written, the writes waited for (bounded)."""
        if self.observer is None:
            return
        self.active = False
        self.observer.stop()
        self.observer = None
        _live.discard(self)
        if self.pid != os.getpid():
            return
        total = next(self._counter)
        end = (None, None, total)
        self._buf.append(end)
        self._flush()
        worker.late_worker().drain(STOP_WAIT_S)

    # -- the launch path --------------------------------------------------------------------------
    def _on_call(self, frame: FrameType) -> None:
        n = next(self._counter)
        if not self.active or n >= self.limit:
            return
        try:
            loc = frame.f_locals
            kernel = loc.get("self")
            k = self._keys.get(id(kernel))
            if k is None:
                k = self._new_kernel(kernel)
            f = frame.f_back
            lib = self._lib
            while f is not None:
                code = f.f_code
                known = lib.get(id(code))  # by id: a code object's hash walks its constants
                if known is None or known[0] is not code:
                    known = lib[id(code)] = (code, code.co_filename.startswith(self._libs))
                if not known[1]:
                    break
                f = f.f_back
            site = (
                (f.f_code, f.f_lasti) if f is not None else None
            )  # f_lineno scans the line table: the writer's job
            arg = self._arg
            args = tuple([arg(a) for a in loc.get("args") or ()])
            kwds = loc.get("kwds")
            if kwds:
                args += tuple([(name, arg(a)) for name, a in kwds.items()])
            buf, t = self._buf, _now()
            buf.append((t, k, site, args, _thread()))
            if self._saver is not None and n < self.settings.save_inputs:
                self._saver.before(frame, n, k, t, tuple(loc.get("args") or ()))
            if len(buf) >= BATCH:
                self._flush()
        except Exception as exc:  # the user's launch goes on; recording stops
            self._fail(exc)

    def _on_return(self, frame: FrameType, value: Any) -> None:
        """run --save-inputs: a launch returns (launches/inputs.py)."""
        try:
            if self._saver is not None:
                self._saver.after(frame, value)
        except Exception as exc:
            self._fail(exc)

    def _submit(self, job: Callable[[], None]) -> None:
        """Hand a job to the late worker; its failure stops recording (said once)."""

        def run() -> None:
            self._leave()
            try:
                job()
            except Exception as exc:
                self._fail(exc)

        worker.late_worker().submit(run)

    def _arg(self, a: Any) -> tuple:
        if self._tensor is not None and isinstance(a, self._tensor):  # torch.Tensor
            return (a.shape, a.dtype, a.stride(), a.device)
        t = type(a)
        if t in _PLAIN:
            return (t, a[:STR_CUT] if t is str else a)
        return (t,)

    def _new_kernel(self, kernel: Any) -> int:
        """Number a kernel object the first time it launches; its line goes in the buffer before its launch."""
        k = next(self._kernels)
        self._keys[id(kernel)] = k
        try:
            weakref.finalize(kernel, self._keys.pop, id(kernel), None)
        except TypeError:  # no weak references: its number stays (the object may live as long)
            pass
        name = source = None
        out_idx: list[int] = []
        try:
            source = text_hash(kernel.get_kernel_source())
        except Exception:
            pass
        try:
            name = str(kernel.prim_func.attrs["global_symbol"])
        except Exception:
            name = type(kernel).__name__
        try:
            out_idx = [int(i) for i in kernel.out_idx or ()]
        except Exception:
            pass
        self._buf.append((None, k, (name, source, out_idx)))
        return k

    def _fail(self, exc: BaseException) -> None:
        if self._failed:
            return
        self._failed = True
        self.active = False
        self.say(f"--launches: recording stopped ({type(exc).__name__}: {exc}); the script goes on")

    # -- the writing, on the late worker ----------------------------------------------------------
    def _flush(self) -> None:
        buf, self._buf = self._buf, []
        if buf:
            worker.late_worker().submit(lambda: self._write(buf))

    def _write(self, buf: list[tuple]) -> None:
        self._leave()  # the worker thread started after the profile was set: its own calls are not watched
        try:
            data = "".join([self._line(raw) for raw in buf]).encode("utf-8", "surrogatepass")
            path = self._path
            if path is None:
                root = self.settings.claim_script_dir() / RUN_RECORDS
                root.mkdir(parents=True, exist_ok=True)
                path = self._path = root / log_format.file_name(self.settings.invocation)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except Exception as exc:
            self._fail(exc)

    def _line(self, raw: tuple) -> str:
        """One line of the log (format/launches.py) for a buffered tuple.

        A launch loop repeats its call site and its arguments' shapes: their JSON is made once
        (cached by the site's code and line, and by the arguments' tuple) and the line is joined
        from the pieces, which is most of the writer's time saved.
        """
        pid = self.pid
        if raw[0] is None:
            if raw[1] is None:  # the end
                total = raw[2]
                end = {"end": pid, "recorded": min(total, self.limit), "dropped": max(0, total - self.limit)}
                return log_format.encode([end]).decode()
            name, source, out_idx = raw[2]
            line = {"kernel": raw[1], "pid": pid, "name": name, "source": source, "out_idx": out_idx}
            return log_format.encode([line]).decode()
        t, k, site, args, thread = raw
        cache = self._json
        if len(cache) > CACHE_MAX:
            cache.clear()
        key = (id(site[0]), site[1]) if site is not None else None  # by id: see _on_call
        known = cache.get(key)
        if known is None or (site is not None and known[0] is not site[0]):
            known = cache[key] = (site[0] if site is not None else None, _compact(_site(site)))
        where = known[1]
        try:
            described = cache.get(args)
        except TypeError:  # an unhashable value (a float NaN hashes; a tuple of lists would not)
            described = None
        if described is None:
            described = _compact([_arg_json(a) for a in args])
            try:
                cache[args] = described
            except TypeError:
                pass
        return f'{{"launch":{k},"pid":{pid},"t":{t},"thread":{thread},"site":{where},"args":{described}}}\n'


def _site(site: tuple[CodeType, int] | None) -> list[Any] | None:
    """[file, line, function] of a call site kept as (code, instruction offset)."""
    if site is None:
        return None
    code, offset = site
    line = None
    for start, end, number in code.co_lines():
        if start <= offset < end:
            line = number
            break
    return [code.co_filename, line, code.co_name]


def _nothing() -> None:
    pass


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _arg_json(a: tuple) -> dict[str, Any]:
    if len(a) == 2 and isinstance(a[0], str):  # a keyword argument
        return {"name": a[0], **_arg_json(a[1])}
    if len(a) == 4:
        shape, dtype, strides, device = a
        return {
            "shape": [int(d) for d in shape],
            "dtype": str(dtype).removeprefix("torch."),
            "strides": [int(s) for s in strides],
            "device": str(device),
        }
    out: dict[str, Any] = {"type": a[0].__name__}
    if len(a) == 2:
        out["value"] = a[1]
    return out


def _after_fork_in_child() -> None:
    """A forked child's recorders start over: the parent's buffer and kernel numbers are the parent's."""
    for rec in list(_live):
        rec._reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
