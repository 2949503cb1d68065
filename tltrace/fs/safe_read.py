"""Reading files that may not be what their names say: never block on a FIFO, never follow a link.

Every file tltrace reads from a trace dir or a working-file directory (manifests, records,
`.tir` texts, `.objects` blobs, registries, working files) comes through here. The path is
checked with `lstat` first and opened with `O_NONBLOCK | O_NOFOLLOW`; the open file is
checked again with `fstat` (it may have been swapped in between). Anything but a regular
file raises `NotAFile`, an OSError, so callers that already turn OSError into a one-line
"cannot read" keep doing so; a missing file still raises FileNotFoundError.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)


class NotAFile(OSError):
    """The path exists but is not a regular file (a FIFO, a device, a socket, a link, a directory)."""


def kind_of(mode: int) -> str:
    """Return what a file of this st_mode is, in words ('a FIFO', 'a symbolic link', ...)."""
    for test, what in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def _refuse(path: Path, mode: int) -> NotAFile:
    what = kind_of(mode)
    return NotAFile(errno.EINVAL, f"{what}, not a regular file; not read", os.fspath(path))


def _open_fd(p: Path) -> int:
    """Return a descriptor of the regular file `p` (lstat, then O_NONBLOCK|O_NOFOLLOW, then fstat)."""
    st = os.lstat(p)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(p, st.st_mode)
    try:
        fd = os.open(p, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # became a link since the lstat
            raise _refuse(p, stat.S_IFLNK) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(p, st.st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """Return the regular file at `path` opened for reading in binary mode (the checks of `read_bytes`)."""
    return os.fdopen(_open_fd(Path(path)), "rb")


def read_bytes(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """Return the bytes of the regular file at `path` (the first `limit` bytes when given).

    Raises FileNotFoundError when it is missing, NotAFile when it is anything but a
    regular file (never waits on a FIFO, never follows a link), OSError otherwise.
    """
    fd = _open_fd(Path(path))
    try:
        chunks = []
        left = limit
        while left is None or left > 0:
            chunk = os.read(fd, 1 << 20 if left is None else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            if left is not None:
                left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike, encoding: str = "utf-8", errors: str = "strict") -> str:
    """Return the text of the regular file at `path` (as `read_bytes`, then decoded; newlines kept)."""
    return read_bytes(path).decode(encoding, errors)


def is_regular(path: str | os.PathLike) -> bool:
    """True when `path` itself (not a link's target) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def why_unreadable(path: str | os.PathLike, encoding: str = "utf-8") -> str | None:
    """Return why `path` cannot be read as text ('is missing', 'is a FIFO, ...', 'is not UTF-8 ...'), None if it can."""
    try:
        read_bytes(path).decode(encoding)
    except FileNotFoundError:
        return "is missing"
    except NotAFile as exc:
        return f"is {exc.strerror}"
    except UnicodeDecodeError as exc:
        return f"is not {encoding.upper()} text (byte {exc.start})"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None


__all__ = ["NotAFile", "is_regular", "kind_of", "open_binary", "read_bytes", "read_text", "why_unreadable"]
