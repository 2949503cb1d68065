"""A run's texts pack, `<run_dir>/texts.pack`: every distinct text of the run once, indexed by hash.

Layout (bytes)::

    TLPACK1\\n                                 the magic, once
    Z <hash> <length>\\n<length bytes>\\n       one entry per distinct text: its UTF-8 (surrogatepass)
                                              deflated (zlib, RFC 1950: `python -c "import zlib"` reads it)
    T <hash> <length>\\n<length bytes>\\n       or the UTF-8 itself, where deflating saves nothing
                                              (and every entry of the packs written before texts were deflated)
    D <hash> <length> <base>\\n<length bytes>\\n  or deflated with the text of an earlier entry, <base>
                                              (DICT_MAX bytes at most), as zlib's preset dictionary (`zlib.decompressobj(zdict=
                                              <base's UTF-8>)` reads it); at most CHAIN - 1 such entries
                                              follow each other before one stands alone again

The hash is that of the text, whatever the entry holds. Texts are deflated (level 2, about a
quarter of their size) because most of a small compile's blocks on disk were its texts
(docs/benchmarks.md, "Bytes on disk"); `tltrace export RUN --tir DIR` writes them out plain.

A pass's output is mostly its input: deflated with the text stored before it as the dictionary,
an entry is about half the size of a plain `Z` one, in a fifth less CPU (docs/benchmarks.md,
"Issue 51, round 4: the store"). The chain is bounded: a damaged entry (its bytes changed
inside a whole entry) loses at most the CHAIN - 1 texts deflated after it, never the rest of
the run's; a base that is missing, later in the pack or damaged reads as a text not held.

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

__all__ = ["CHAIN", "DICT_MAX", "MAGIC", "PACK", "Pack", "entry", "packed_entry", "parse", "read"]
MAGIC = b"TLPACK1\n"
_HEADER = re.compile(rb"([TZD]) ([0-9a-f]{8,128}) ([0-9]{1,12})(?: ([0-9a-f]{8,128}))?\Z")
# zlib's level 2: the CPU of level 1 (its fastest) and 9% fewer bytes on a lowering's texts; level 6
# takes a further 15% off for 70% more CPU (docs/benchmarks.md, "Issue 51, round 5")
LEVEL = 2
CHAIN = 8  # at most this many entries in a row lean on the one before (D), the first standing alone
# The longest base worth a dictionary: deflate reaches back 32 KB less its lookahead (262 bytes), so
# the line of a longer base that matches a line of the new text is out of its reach.
DICT_MAX = (1 << 15) - 262
_MAX_DEPTH = 64  # a reader follows chains up to this long (a writer makes them CHAIN - 1 long at most)
_KEEP = 2 * CHAIN  # bases kept inflated per pack (reading the texts in order inflates each once)


def entry(digest: str, data: bytes, kind: bytes = b"T", base: str | None = None) -> bytes:
    """Return one entry's bytes: its header (`kind` T: the text itself, Z: deflated, D: deflated with
    the text `base` as the dictionary), `data`, a newline."""
    if base is not None:
        return b"%s %s %d %s\n%s\n" % (kind, digest.encode("ascii"), len(data), base.encode("ascii"), data)
    return b"%s %s %d\n%s\n" % (kind, digest.encode("ascii"), len(data), data)


def packed_entry(digest: str, data: bytes, base: tuple[str, bytes] | None = None) -> bytes:
    """Return the entry that stores the UTF-8 text `data`: deflated with `base` (its hash and UTF-8, a
    text stored earlier in the pack, DICT_MAX bytes at most) as the dictionary (D), else deflated (Z),
    or as it is (T), whichever is smallest of those tried."""
    if base is not None and len(base[1]) <= DICT_MAX:
        z = zlib.compressobj(LEVEL, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, base[1])
        small = z.compress(data) + z.flush()
        if len(small) < len(data):
            return entry(digest, small, b"D", base[0])
        return entry(digest, data)
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
    bases: dict[str, str] = field(default_factory=dict)  # D entries: hash -> the hash of their dictionary
    _bytes: dict[str, bytes] = field(default_factory=dict, repr=False)  # the bases inflated so far

    def text(self, digest: str | None, errors: str = "strict") -> str | None:
        """Return the text stored under `digest`, or None when the pack does not hold it (or its
        deflated bytes do not inflate: damage inside a whole entry, or in the base it leans on)."""
        data = self.utf8(digest) if digest else None
        if data is None:
            return None
        return data.decode("utf-8", errors if errors != "strict" else "surrogatepass")

    def utf8(self, digest: str) -> bytes | None:
        """Return the UTF-8 stored under `digest` (inflated), or None (not held, or damaged)."""
        where = self.index.get(digest)
        if where is None:
            return None
        off, n = where
        data = self.data[off : off + n]
        base = self.bases.get(digest)
        try:
            if base is not None:
                zdict = self._bytes.get(base)
                if zdict is None:
                    zdict = self.utf8(base)  # earlier in the pack (parse): the chain ends
                    if zdict is None:
                        return None
                    if len(self._bytes) >= _KEEP:
                        try:  # the oldest goes (another thread may be reading this pack too)
                            self._bytes.pop(next(iter(self._bytes)), None)
                        except (RuntimeError, StopIteration):
                            pass
                    self._bytes[base] = zdict
                z = zlib.decompressobj(zdict=zdict)
                data = z.decompress(data)
                if not z.eof or z.unused_data:
                    return None
            elif digest in self.deflated:
                data = zlib.decompress(data)
        except zlib.error:
            return None
        return data


def parse(data: bytes) -> Pack:
    """Read a pack's bytes; an entry that is not whole (and anything after it) is the torn tail."""
    pack = Pack(data=data)
    if not data.startswith(MAGIC):
        pack.torn = len(data)
        return pack
    pos, size = len(MAGIC), len(data)
    depths: dict[str, int] = {}  # D entries: how many bases their text leans on
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
        kind, base = m.group(1), m.group(4)
        if (kind == b"D") != (base is not None):
            break  # a D entry names its base; no other entry does
        if digest not in pack.index:
            if base is None:
                pack.index[digest] = (start, n)
                pack.entries.append(digest)
                if kind == b"Z":
                    pack.deflated.add(digest)
            else:
                # Its base before it (never after: no cycle), in a chain no longer than a reader follows.
                b = base.decode("ascii")
                depth = depths.get(b, 0) + 1
                if b in pack.index and depth < _MAX_DEPTH:
                    pack.index[digest] = (start, n)
                    pack.entries.append(digest)
                    pack.bases[digest] = b
                    depths[digest] = depth
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
