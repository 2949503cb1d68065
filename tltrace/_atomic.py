"""Atomic file replacement: write a temporary sibling, then rename it over the target."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def _process_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _process_umask()


def atomic_write(path: Path, chunks: bytes | Iterable[bytes], *, fsync: bool = False, mode: int | None = None) -> None:
    """Replace `path` with `chunks` so that readers see the old file or the new one, never a part.

    With `fsync` the data reaches the disk before the rename (survives power loss, not
    only a killed process). `mode` sets the permissions of the new file; by default an
    existing file keeps its own, and a new one gets what `open()` would give it.
    """
    path = Path(path)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
                fh.write(chunk)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
