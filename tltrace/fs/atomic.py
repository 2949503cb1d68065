"""Atomic file replacement and file locks: the two primitives every tltrace write goes through.

`atomic_write` writes a temporary sibling (`.NAME.<random>.tmp`), then renames it over
the target, so a reader sees the old file or the new one, never a part. With
`fsync=True` the data and then the directory entry reach the disk, so the new file
also survives a power loss, not only a killed process.

`STEP_HOOK`, when set, is called after each file-system step that changes a
directory entry (a temp file created, a rename, an unlink); crash tests set it to
kill the process after step k, for every k.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

STEP_HOOK: Callable[[str, Path], None] | None = None


def step(what: str, path: Path) -> None:
    """Tell the crash-test hook that one file-system step is done (no-op in normal use)."""
    hook = STEP_HOOK
    if hook is not None:
        hook(what, Path(path))


def _process_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _process_umask()
NEW_FILE_MODE = 0o666 & ~_UMASK  # what `open()` gives a new file (`atomic_write`'s mode when none is there)


def fsync_dir(directory: Path) -> None:
    """Flush a directory's entries (a rename in it) to disk; best effort where a dir cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(
    path: Path, chunks: bytes | Iterable[bytes], *, fsync: bool = False, mode: int | None = None
) -> None:
    """Replace `path` with `chunks` so that readers see the old file or the new one, never a part.

    With `fsync` the data reaches the disk before the rename and the directory entry
    after it (survives power loss, not only a killed process). `mode` sets the
    permissions of the new file; by default an existing file keeps its own, and a new
    one gets what `open()` would give it.
    """
    path = Path(path)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except OSError:
            mode = NEW_FILE_MODE
    fd, tmp = _create_temp(path, mode)
    try:
        try:
            step("create", Path(tmp))
            if os.fstat(fd).st_mode & 0o7777 != mode:  # the umask took bits `mode` has
                os.fchmod(fd, mode)
            for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
                _write_all(fd, chunk)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        fsync_dir(path.parent)
    step("rename", path)


_TEMP_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


# tltrace's own generator, never the `random` module's shared one: a user's script that seeds
# `random` must draw the same numbers traced as untraced (an autotuner sampling its configs).
_names = random.Random()
os.register_at_fork(after_in_child=_names.seed)  # a forked child draws names of its own


def _create_temp(path: Path, mode: int) -> tuple[int, str]:
    """Create `path`'s temporary sibling, `.NAME.<8 random characters>.tmp` (as `tempfile.mkstemp` names
    it, without its per-call set-up: a third of an atomic write's CPU); never more open than `mode`."""
    for _ in range(100):
        # A generator in the process (`_names`), not os.urandom: a system call that lets the GIL
        # go, once per write; O_EXCL makes the name unique, not its randomness.
        tmp = os.path.join(path.parent, f".{path.name}.{_names.getrandbits(32):08x}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, mode & 0o777), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name for {path}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _tmp_pattern(name: str) -> re.Pattern[str]:
    # mkstemp's names: "." + NAME + "." + 8 random characters + ".tmp"
    return re.compile(re.escape(f".{name}.") + r"(?:[^/]*\.)?[A-Za-z0-9_]{8}\.tmp$")


def remove_stale_temps(directory: Path, names: Iterable[str]) -> list[Path]:
    """Remove the temp files a killed `atomic_write` of one of `names` left in `directory`; return them.

    Call only while holding the lock that guards writes of those names: a temp file
    of a write in progress is then impossible. Symlinks and directories are left alone.
    """
    pats = [_tmp_pattern(n) for n in names]
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for e in entries:
        if not e.name.endswith(".tmp") or not any(p.match(e.name) for p in pats):
            continue
        try:
            if not e.is_file(follow_symlinks=False):
                continue
            os.unlink(e.path)
        except OSError:
            continue
        step("unlink", Path(e.path))
        removed.append(Path(e.path))
    return removed


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


# The state a tidy lock's file holds (`locked(..., tidy=...)`): CLEAN once its holder let it go
# normally; anything else (BUSY, or an empty file of an older tltrace) may hide a killed write.
BUSY, CLEAN = b"1", b"0"


def _open_lock(lock_path: Path) -> tuple[int, bool]:
    """Open (or create) a lock file; return it and whether this call created it (no holder before)."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(lock_path, os.O_RDWR | nofollow), False
    except FileNotFoundError:
        pass
    for _ in range(2):
        try:
            return os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL | nofollow, 0o644), True
        except FileExistsError:  # another thread or process made it just now
            return os.open(lock_path, os.O_RDWR | nofollow), False
        except FileNotFoundError:  # its directory is new: made on this first use only
            Path(lock_path).parent.mkdir(parents=True, exist_ok=True)
    return os.open(lock_path, os.O_RDWR | os.O_CREAT | nofollow, 0o644), False


@contextlib.contextmanager
def locked(lock_path: Path, *, tidy: Callable[[], object] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path`: a threading lock in-process, fcntl.flock across processes.

    `tidy` (e.g. removing the temp files of killed writes) runs once the lock is held, only
    when its last holder may have been killed holding it: the lock file then does not say
    CLEAN, which every holder given `tidy` writes as it lets go without an exception (one
    byte at offset 0; BUSY while held). A lock without `tidy` leaves that state as it is, so
    it must guard no temp-file writes of the names `tidy` removes. A lock file this call
    creates had no holder: nothing to tidy (a lock file removed by hand is taken as new).
    """
    key = str(Path(lock_path).absolute())
    with _thread_locks_guard:
        tlock = _thread_locks.setdefault(key, threading.Lock())
    with tlock:
        fd, created = _open_lock(lock_path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if tidy is not None:
                state = os.pread(fd, 1, 0)
                if state != CLEAN and not (created and state == b""):
                    tidy()
                os.pwrite(fd, BUSY, 0)
            yield
            if tidy is not None:  # not after an exception: the next holder then tidies
                os.pwrite(fd, CLEAN, 0)
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
