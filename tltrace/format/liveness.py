"""Whether an invocation may still be writing runs: a lock its writers hold, not a host name.

Each process that writes runs of an invocation holds a shared `flock` on
`<script_dir>/.run_records/.live.<invocation id>` from its first run until the
invocation ends (`Invocation.close`) or the process dies: the kernel drops the lock of
a killed process, whatever its pid, its host name or its container. Anyone else asks
by trying an exclusive lock without waiting (`state`), so a run killed in a
container that had another host name reads as stopped, and `clean` can remove it.

The lock file sits beside the runs, not in a `.live/` directory of its own (a directory
costs a block on disk for one empty file); the lock files older writers hold there,
`.live/<invocation id>`, are still asked and removed.

Runs written before this lock (no lock file) fall back to `format/writer.writer_alive`
(pid, process start, host); `tltrace clean --force` removes those of another host too.
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import threading
import time
from pathlib import Path

from .layout import LIVE

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")

_lock = threading.Lock()
_held: dict[tuple[str, str], int] = {}  # (records root, invocation id) -> the fd holding the lock
_held_pid = os.getpid()


def lock_path(records_root: Path, invocation: str) -> Path | None:
    """Return the lock file of `invocation` under a `.run_records`, or None for a name that is no file name."""
    if not _NAME.match(invocation) or invocation in (".", ".."):
        return None
    return Path(records_root) / f"{LIVE}.{invocation}"


def _old_lock_path(records_root: Path, invocation: str) -> Path:
    """The lock file older writers hold: `.live/<invocation id>` (name already checked)."""
    return Path(records_root) / LIVE / invocation


def _forked() -> None:
    """After a fork the child holds copies of the parent's fds: forget them (the parent's locks stay)."""
    global _held_pid
    if _held_pid != os.getpid():
        _held.clear()
        _held_pid = os.getpid()


def hold(records_root: Path, invocation: str) -> bool:
    """Take this process's shared lock on `invocation` (once per records root); return True when held.

    Never writes through a symbolic link; any failure returns False (liveness then falls
    back to the pid and host recorded in the manifest).
    """
    path = lock_path(records_root, invocation)
    if path is None:
        return False
    key = (os.fspath(records_root), invocation)
    with _lock:
        _forked()
        if key in _held:
            return True
        try:
            if os.path.islink(records_root) or os.path.islink(path.parent):
                return False
            os.makedirs(path.parent, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError("not a regular file")
            for _ in range(100):  # a probe holds the lock exclusively for an instant
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(0.002)
            else:
                raise OSError("lock busy")
        except OSError:
            os.close(fd)
            return False
        _held[key] = fd
        return True


def release(invocation: str) -> None:
    """Drop this process's locks on `invocation` (the invocation ended); the lock files stay for others."""
    with _lock:
        _forked()
        for key in [k for k in _held if k[1] == invocation]:
            try:
                os.close(_held.pop(key))
            except OSError:
                pass


def state(records_root: Path, invocation: str) -> bool | None:
    """Return True while some process holds `invocation`'s lock, False when its lock file is free,
    None when there is no lock file (a run from before the lock, or one being created)."""
    path = lock_path(records_root, invocation)
    if path is None:
        return None
    held = _state(path)
    return held if held is not None else _state(_old_lock_path(records_root, invocation))


def _state(path: Path) -> bool | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # a link, a special file, no permission: not ours to judge by
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        return False
    finally:
        os.close(fd)  # closing drops the probe's own lock


def forget(records_root: Path, invocation: str) -> None:
    """Remove a free lock file (retention, after removing the invocation's last run); a held one stays."""
    path = lock_path(records_root, invocation)
    if path is None:
        return
    _forget(path)
    _forget(_old_lock_path(records_root, invocation))


def _forget(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while a writer holds it
            os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def forget_others(records_root: Path, keep: set[str]) -> None:
    """Remove the free lock files of invocations not in `keep` (no run of theirs is left)."""
    prefix = f"{LIVE}."
    try:
        names = [n[len(prefix) :] for n in os.listdir(records_root) if n.startswith(prefix)]
    except OSError:
        return
    try:
        names += os.listdir(Path(records_root) / LIVE)  # older writers' lock files
    except OSError:
        pass
    for name in dict.fromkeys(names):
        if name not in keep:
            forget(records_root, name)
