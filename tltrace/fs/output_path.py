"""The one rule for every output PATH a command writes (`--chrome-trace`, `diff-runs --html`, ...).

- `-` is stdout.
- `check_dir` is the same rule for an output directory (`repro -o DIR`): reused when it
  holds only the files that output writes; a stream target gets an archive instead.
- A path that does not exist is created, through a temporary file and a rename.
- A regular file is rewritten only when it is provably tltrace's output of that kind, read
  from the place the format keeps for it, never from text anywhere in the file: a Chrome
  trace's first key is `otherData` whose `producer` is `tltrace ...` (parsed as JSON); a
  diff-runs page's first line is exactly the one tltrace writes; a bundle is a zip (opened
  with zipfile) whose own comment is `tltrace bundle` and which holds bundle.json. A repro is a
  directory or a stream, never a file. The script being traced, a notes file that mentions
  tltrace, an empty file: refused.
- A character device or a FIFO (`/dev/null`, a terminal, `>(gzip > t.gz)`) is written
  through, never replaced; a FIFO nobody reads is refused instead of waited on.
- Anything else is refused in one line: a directory, a symbolic link to anything but a
  device or pipe, a socket, a block device, a missing parent. `force` lifts the refusal
  for files and links: the path itself is then replaced (a link is replaced, never
  written through); a directory or a block device is never replaced.

Core code: raises UsageError/TltraceError, prints nothing. `check` says up front whether a
write would be allowed (so `run` fails before the script starts); `write` checks again at
the moment of writing, since the file may have appeared in between.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import TltraceError, UsageError
from .atomic import atomic_write

STDOUT = "-"
_PEEK = 4096  # bytes read from the start of an existing file to find its marker
_LEGACY_TRACE_MAX = 16 << 20  # a trace from before the marker came first: parsed whole up to this size
_READER_WAIT_S = 2.0  # how long a FIFO may take to get its reader (a `>(...)` starting up)


@dataclass(frozen=True)
class Kind:
    """One kind of output: the option that names it and the test that a file is tltrace's output of it.

    `owned(fd, size)` reads the open regular file (never a link) and says whether its
    structural marker is there; it may raise OSError (the file then is not owned).
    """

    option: str  # e.g. "--chrome-trace", for messages
    owned: Callable[[int, int], bool]


# The diff-runs page's exact first line (render/assets/diffruns.html starts with it).
DIFF_HTML_FIRST_LINE = b"<!DOCTYPE html><!-- tltrace diff-runs page -->"
# A bundle is a zip whose own comment field (the end of central directory record) says so.
BUNDLE_COMMENT = b"tltrace bundle"
TRACE_PRODUCER = "tltrace "  # otherData.producer of a Chrome trace starts with it


def _head(fd: int, n: int = _PEEK) -> bytes:
    return os.pread(fd, n, 0)


def _trace_owned(fd: int, size: int) -> bool:
    """A Chrome trace tltrace wrote: a JSON object whose first key is otherData, producer "tltrace ..."
    (traces written before that order: the whole file parsed as JSON, up to _LEGACY_TRACE_MAX)."""
    text = _head(fd).decode("utf-8", "replace")
    dec = json.JSONDecoder()
    try:
        i = _skip_ws(text, 0)
        if text[i : i + 1] != "{":
            return False
        key, i = dec.raw_decode(text, _skip_ws(text, i + 1))
        i = _skip_ws(text, i)
        if text[i : i + 1] != ":":
            return False
        if key == "otherData":
            value, _ = dec.raw_decode(text, _skip_ws(text, i + 1))
            return _producer_ok(value)
        if key != "traceEvents" or size > _LEGACY_TRACE_MAX:
            return False
        data = json.loads(_read_all(fd, size))
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and _producer_ok(data.get("otherData"))


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _producer_ok(other: object) -> bool:
    producer = other.get("producer") if isinstance(other, dict) else None
    return isinstance(producer, str) and producer.startswith(TRACE_PRODUCER)


def _read_all(fd: int, size: int) -> bytes:
    parts, off = [], 0
    while off < size:
        chunk = os.pread(fd, min(1 << 20, size - off), off)
        if not chunk:
            break
        parts.append(chunk)
        off += len(chunk)
    return b"".join(parts)


def _html_owned(fd: int, size: int) -> bool:
    """A diff-runs page tltrace wrote: its first line is exactly DIFF_HTML_FIRST_LINE."""
    first = _head(fd, len(DIFF_HTML_FIRST_LINE) + 2).split(b"\n", 1)[0].rstrip(b"\r")
    return first == DIFF_HTML_FIRST_LINE


def _bundle_owned(fd: int, size: int) -> bool:
    """A bundle tltrace wrote: a zip (read by zipfile) whose comment is BUNDLE_COMMENT, holding bundle.json."""
    import zipfile

    if (
        size < len(BUNDLE_COMMENT)
        or os.pread(fd, len(BUNDLE_COMMENT), size - len(BUNDLE_COMMENT)) != BUNDLE_COMMENT
    ):
        return False  # the comment ends the file: nothing else need be read
    try:
        with os.fdopen(os.dup(fd), "rb") as fh, zipfile.ZipFile(fh) as zf:
            if zf.comment != BUNDLE_COMMENT:
                return False
            zf.getinfo("bundle.json")
    except (zipfile.BadZipFile, KeyError, ValueError, EOFError, NotImplementedError):
        return False
    return True


def _never(fd: int, size: int) -> bool:
    """A repro goes to a directory (check_dir) or through a stream: a regular file found where the
    stream was is never replaced (the archive could only be written over someone's file)."""
    return False


CHROME_TRACE = Kind("--chrome-trace", _trace_owned)
DIFF_HTML = Kind("--html", _html_owned)
BUNDLE = Kind("bundle -o", _bundle_owned)
REPRO = Kind("repro -o", _never)


@dataclass(frozen=True)
class Target:
    """Where an output goes: stdout, a stream to write through (device, pipe), or a file to (re)place."""

    path: Path | None  # None: stdout
    stream: bool = False  # write through an existing character device or FIFO

    @property
    def shown(self) -> str:
        return "stdout" if self.path is None else os.fspath(self.path)


def _wrote_it(path: Path, kind: Kind) -> bool:
    """True when the regular file at `path` carries `kind`'s marker (read without following links)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | os.O_NOCTTY)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return False
        return kind.owned(fd, st.st_size)
    except OSError:
        return False
    finally:
        os.close(fd)


def check(path: str | os.PathLike | None, kind: Kind, *, force: bool = False) -> Target:
    """Return where `path` writes to, or raise UsageError (one line) when the rule refuses it."""
    if path is None or os.fspath(path) == STDOUT:
        return Target(None)
    raw = os.fspath(path)
    p = Path(raw)
    opt = f"{kind.option} {raw}"
    if raw.endswith(os.sep):
        raise UsageError(f"{opt} names a directory; give a file name, e.g. {p / 'out'}")
    mode, target_mode = _modes(p, opt)
    if mode is None:
        return Target(p)
    if stat.S_ISLNK(mode):
        if stat.S_ISCHR(target_mode) or stat.S_ISFIFO(target_mode):
            return Target(p, stream=True)  # /dev/stdout, /dev/fd/63 from >(...): a stream, not a file
        if force and not stat.S_ISDIR(target_mode):
            return Target(p)  # the link itself is replaced; its target is not touched
        raise UsageError(
            f"{opt} is a symbolic link; tltrace does not write through links "
            "(name the file itself, or add --force to replace the link)"
        )
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return Target(p, stream=True)
    if stat.S_ISDIR(mode):
        raise UsageError(f"{opt} is a directory; give a file name, e.g. {p / 'out'}")
    if not stat.S_ISREG(mode):
        what = "a socket" if stat.S_ISSOCK(mode) else "a block device" if stat.S_ISBLK(mode) else "not a file"
        raise UsageError(f"{opt} is {what}; tltrace writes only files, pipes and character devices")
    if force or _wrote_it(p, kind):
        return Target(p)
    raise UsageError(
        f"{opt} is an existing file that tltrace did not write; "
        "choose a new path, or add --force to replace it"
    )


def check_dir(
    path: str | os.PathLike | None, kind: Kind, ours: frozenset[str], *, force: bool = False
) -> Target:
    """Return where an output DIRECTORY goes, or raise UsageError (one line): the same rule for
    a directory of files named `ours`.

    `-`, a character device or a FIFO: the Target of a stream (the caller writes an archive
    there). A missing directory is created by the caller. An existing directory is reused
    when it holds only regular files named in `ours` (the caller rewrites them); with
    `force`, one holding other entries too (only `ours` are then replaced, the rest kept).
    A regular file or a link is replaced only with `force`; a socket, a block device or a
    missing parent is always refused.
    """
    if path is None or os.fspath(path) == STDOUT:
        return Target(None)
    raw = os.fspath(path)
    p = Path(raw.rstrip(os.sep) or raw)
    opt = f"{kind.option} {raw}"
    mode, target_mode = _modes(p, opt)
    if mode is None:
        return Target(p)
    if stat.S_ISLNK(mode):
        if stat.S_ISCHR(target_mode) or stat.S_ISFIFO(target_mode):
            return Target(p, stream=True)
        if force:
            return Target(p)  # the link itself is replaced by the directory
        raise UsageError(
            f"{opt} is a symbolic link; tltrace does not write through links "
            "(name a directory, or add --force to replace the link)"
        )
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return Target(p, stream=True)
    if stat.S_ISREG(mode):
        if force:
            return Target(p)
        raise UsageError(
            f"{opt} is an existing file; it names a directory: choose a new path, or add --force to replace it"
        )
    if not stat.S_ISDIR(mode):
        what = "a socket" if stat.S_ISSOCK(mode) else "a block device" if stat.S_ISBLK(mode) else "not a file"
        raise UsageError(f"{opt} is {what}; tltrace writes only directories, pipes and character devices")
    try:
        entries = list(os.scandir(p))
    except OSError as exc:
        raise UsageError(f"{opt}: cannot read it ({exc.strerror or exc})") from None
    other = sorted(e.name for e in entries if e.name not in ours or not e.is_file(follow_symlinks=False))
    if other and not force:
        raise UsageError(
            f"{opt} holds files tltrace did not write there ({', '.join(other[:3])}); "
            "choose a new directory, or add --force to write beside them"
        )
    blocking = [e.name for e in entries if e.name in ours and not e.is_file(follow_symlinks=False)]
    if blocking and not all(os.path.islink(p / n) for n in blocking):
        raise UsageError(f"{opt} holds a directory named {blocking[0]}; choose a new directory")
    return Target(p)


def write(
    path: str | os.PathLike | None, kind: Kind, chunks: bytes | Iterable[bytes], *, force: bool = False
) -> Target:
    """Write `chunks` where `path` says under the rule (checked again now); return the Target.

    Raises UsageError when the rule refuses the path, TltraceError when the write fails
    (a full disk, a closed pipe); a file is then left as it was.
    """
    target = check(path, kind, force=force)
    data = [chunks] if isinstance(chunks, bytes) else chunks
    try:
        if target.path is None:
            out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
            for chunk in data:
                if out is not None:
                    out.write(chunk)
                else:
                    sys.stdout.write(chunk.decode("utf-8", "surrogateescape"))
            sys.stdout.flush()
        elif target.stream:
            _write_stream(target.path, data, kind)
        else:
            atomic_write(target.path, data)
    except OSError as exc:
        raise TltraceError(f"cannot write {target.shown} ({exc.strerror or exc})") from None
    return target


def _write_stream(path: Path, data: Iterable[bytes], kind: Kind) -> None:
    """Write through a character device or FIFO that exists already; never create or truncate a file."""
    deadline = time.monotonic() + _READER_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:  # a FIFO with no reader: say so instead of waiting forever
                raise TltraceError(
                    f"{kind.option} {path}: no process reads that pipe; start the reader first"
                ) from None
            time.sleep(0.05)
    try:
        st = os.fstat(fd)
        if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise TltraceError(f"{kind.option} {path} changed while tltrace wrote it; nothing written")
        # The reader is there: from now on a pipe may block like any pipe.
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        for chunk in data:
            view = memoryview(chunk)
            while view:
                n = os.write(fd, view)
                view = view[n:]
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


__all__ = [
    "BUNDLE",
    "BUNDLE_COMMENT",
    "CHROME_TRACE",
    "DIFF_HTML",
    "DIFF_HTML_FIRST_LINE",
    "REPRO",
    "STDOUT",
    "Kind",
    "Target",
    "check",
    "check_dir",
    "write",
]


def _modes(p: Path, opt: str) -> tuple[int | None, int]:
    """Return (the path's own mode, or None when nothing is there yet; its target's mode when it
    is a link, else 0), or raise UsageError when it cannot be checked or its directory is missing."""
    try:
        mode = os.lstat(p).st_mode
    except FileNotFoundError:
        if not p.parent.is_dir():
            raise UsageError(f"{opt}: directory {p.parent} does not exist") from None
        return None, 0
    except OSError as exc:
        raise UsageError(f"{opt}: cannot check it ({exc.strerror or exc})") from None
    if not stat.S_ISLNK(mode):
        return mode, 0
    try:
        return mode, os.stat(p).st_mode
    except OSError:
        return mode, 0
