"""A run's texts pack, `<run_dir>/texts.pack`: every distinct text of the run once, indexed by hash.

Layout (bytes)::

    TLPACK1\\n                                 the magic, once
    T <hash> <length>\\n<length bytes>\\n       one entry per distinct text (UTF-8, surrogatepass)

Entries are only ever appended, by one writer (session/store.py), in large writes. The
records name a text by its hash (`before_hash`, `after_hash`, an edit's `generated_hash`,
a source map's `source_<hash>.py`); the run-relative file names the records also keep
(`<phase>/<NN>_<Pass>_<side>.tir`) are the names `tltrace export --tir` gives the texts.

A killed writer leaves a torn tail: a header without its newline, fewer bytes than the
header says, or no closing newline. `parse` stops at the first entry that is not whole
and says how many bytes it left unread (`torn`); every entry before it reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ..fs import safe_read
from .layout import PACK

__all__ = ["MAGIC", "PACK", "Pack", "entry", "parse", "read"]
MAGIC = b"TLPACK1\n"
_HEADER = re.compile(rb"T ([0-9a-f]{8,128}) ([0-9]{1,12})\Z")


def entry(digest: str, data: bytes) -> bytes:
    """Return one entry's bytes: its header, the text, a closing newline."""
    return b"T %s %d\n%s\n" % (digest.encode("ascii"), len(data), data)


@dataclass
class Pack:
    """A pack as read: the bytes, where each text lies in them, and the torn tail's length."""

    data: bytes = b""
    index: dict[str, tuple[int, int]] = field(default_factory=dict)  # hash -> (offset, length)
    torn: int = 0  # bytes after the last whole entry (a killed writer's tail, or damage)
    entries: list[str] = field(default_factory=list)  # hashes in file order

    def text(self, digest: str | None, errors: str = "strict") -> str | None:
        """Return the text stored under `digest`, or None when the pack does not hold it."""
        where = self.index.get(digest) if digest else None
        if where is None:
            return None
        off, n = where
        return self.data[off : off + n].decode("utf-8", errors if errors != "strict" else "surrogatepass")


def parse(data: bytes) -> Pack:
    """Read a pack's bytes; an entry that is not whole (and anything after it) is the torn tail."""
    pack = Pack(data=data)
    if not data.startswith(MAGIC):
        pack.torn = len(data)
        return pack
    pos, size = len(MAGIC), len(data)
    while pos < size:
        nl = data.find(b"\n", pos, pos + 160)
        m = _HEADER.match(data, pos, nl) if nl >= 0 else None
        if m is None:
            break
        start = nl + 1
        n = int(m.group(2))
        end = start + n
        if end >= size or data[end] != 0x0A:
            break
        digest = m.group(1).decode("ascii")
        if digest not in pack.index:
            pack.index[digest] = (start, n)
            pack.entries.append(digest)
        pos = end + 1
    pack.torn = size - pos
    return pack


def read(path: str | os.PathLike) -> Pack | None:
    """Return the pack at `path` (a regular file, not a link), or None when there is none to read."""
    p = os.fspath(path)
    try:
        st = os.lstat(p)
    except OSError:
        return None
    if not safe_read.is_regular(p) or os.path.islink(p):
        return None
    return _read(p, st.st_size, st.st_mtime_ns, st.st_ino)


@lru_cache(maxsize=8)
def _read(path: str, size: int, mtime_ns: int, ino: int) -> Pack | None:
    # Keyed by size and mtime: a pack still growing (a run in flight) is read again.
    try:
        return parse(safe_read.read_bytes(path))
    except OSError:
        return None
