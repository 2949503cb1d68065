"""A run's texts pack, `<run_dir>/texts.pack`: every distinct text of the run once, indexed by hash.

Layout (bytes)::

    TLPACK1\\n                                 the magic, once
    Z <hash> <length>\\n<length bytes>\\n       one entry per distinct text: its UTF-8 (surrogatepass)
                                              deflated (zlib, RFC 1950: `python -c "import zlib"` reads it)
    T <hash> <length>\\n<length bytes>\\n       or the UTF-8 itself, where deflating saves nothing
                                              (and every entry of the packs written before texts were deflated)

The hash is that of the text, whatever the entry holds. Texts are deflated (level 1, about a
quarter of their size) because most of a small compile's blocks on disk were its texts
(docs/benchmarks.md, "Bytes on disk"); `tltrace export RUN --tir DIR` writes them out plain.

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
import zlib
from dataclasses import dataclass, field
from functools import lru_cache

from ..fs import safe_read
from .layout import PACK

__all__ = ["MAGIC", "PACK", "Pack", "entry", "packed_entry", "parse", "read"]
MAGIC = b"TLPACK1\n"
_HEADER = re.compile(rb"([TZ]) ([0-9a-f]{8,128}) ([0-9]{1,12})\Z")
LEVEL = 1  # zlib's fastest: most of what deflating saves here, at a third of level 6's CPU


def entry(digest: str, data: bytes, kind: bytes = b"T") -> bytes:
    """Return one entry's bytes: its header (`kind` T: the text itself, Z: deflated), `data`, a newline."""
    return b"%s %s %d\n%s\n" % (kind, digest.encode("ascii"), len(data), data)


def packed_entry(digest: str, data: bytes) -> bytes:
    """Return the entry that stores the UTF-8 text `data`: deflated (Z), or as it is (T) where that is no larger."""
    small = zlib.compress(data, LEVEL)
    return entry(digest, small, b"Z") if len(small) < len(data) else entry(digest, data)


@dataclass
class Pack:
    """A pack as read: the bytes, where each text lies in them, and the torn tail's length."""

    data: bytes = b""
    index: dict[str, tuple[int, int]] = field(default_factory=dict)  # hash -> (offset, length)
    torn: int = 0  # bytes after the last whole entry (a killed writer's tail, or damage)
    entries: list[str] = field(default_factory=list)  # hashes in file order
    deflated: set[str] = field(default_factory=set)  # the hashes whose entry is Z (its bytes deflated)

    def text(self, digest: str | None, errors: str = "strict") -> str | None:
        """Return the text stored under `digest`, or None when the pack does not hold it (or its
        deflated bytes do not inflate: damage inside a whole entry)."""
        where = self.index.get(digest) if digest else None
        if where is None:
            return None
        off, n = where
        data = self.data[off : off + n]
        if digest in self.deflated:
            try:
                data = zlib.decompress(data)
            except zlib.error:
                return None
        return data.decode("utf-8", errors if errors != "strict" else "surrogatepass")


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
        n = int(m.group(3))
        end = start + n
        if end >= size or data[end] != 0x0A:
            break
        digest = m.group(2).decode("ascii")
        if digest not in pack.index:
            pack.index[digest] = (start, n)
            pack.entries.append(digest)
            if m.group(1) == b"Z":
                pack.deflated.add(digest)
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
