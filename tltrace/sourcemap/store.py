"""Source maps written to disk: each run's `sourcemap.jsonl`, and `<working file>.map` beside a working file.

The format (the line codec, the working map's JSON) is format/sourcemap.py's; reading
it back is history/sourcemaps.py's. Only writing is here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..format.layout import SOURCEMAP_LOG, text_hash
from ..format.sourcemap import (
    LineMap,
    calls_line,
    is_working_map,
    map_line_text,
    read_source,
    rec_line_text,
    src_line,
    working_map,
    working_map_path,
)
from ..fs import safe_read
from ..fs.atomic import atomic_write


class MapLog:
    """Appends one run's maps to `<run_dir>/sourcemap.jsonl`, one JSON object a line (format/sourcemap.py).

    A Python source a map names is copied once: into the run's store (`store`:
    session/store.RunStore) as a run-relative `source_<H>.py` hard-linked to `.objects/<H>`,
    so the compiles of an invocation (an autotuner's hundreds) hold one copy of the sources
    their maps name; without a store, its text goes in the line.
    """

    def __init__(
        self, run_dir: Path, store: Any = None, library_roots: tuple[str, ...] | None = None
    ) -> None:
        self.path = Path(run_dir) / SOURCEMAP_LOG
        self._store = store
        # Maps stored without their call sites (the reader adds them): said first, with TileLang's roots.
        self._calls = library_roots
        self._fd: int | None = None
        self._lines: list[str] = []  # a record's lines, written together (`_flush`)
        self._maps: set[str] = set()
        self._files: set[str] = set()
        self._recent: list[tuple[LineMap, str]] = []  # the last maps digested (the same object: no digest)
        self._digests: dict[LineMap, str] = {}  # every map digested, by value (equal maps: equal JSON)
        self.bytes_written = 0

    def _write(self, obj: dict[str, Any]) -> None:
        self._write_line(json.dumps(obj, separators=(",", ":")) + "\n")

    def _write_line(self, line: str) -> None:
        if self._fd is None:
            # As open(path, "a") opens it; no text-file object: a record's lines are one write.
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
            if self._calls is not None:
                self._lines.append(json.dumps(calls_line(self._calls), separators=(",", ":")) + "\n")
        self._lines.append(line)

    def _flush(self) -> None:
        """Write the lines made so far with one `os.write` (a kill cuts at most the last line)."""
        if self._fd is None or not self._lines:
            return
        data = "".join(self._lines).encode("utf-8", "surrogateescape")
        self._lines.clear()
        self.bytes_written += len(data)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def _map(self, lmap: LineMap | None) -> str | None:
        if lmap is None:
            return None
        for held, digest in self._recent:  # a pass's output map is the next pass's input map
            if held is lmap:
                return digest
        try:
            # An equal map printed again (a text seen before): its digest, without its JSON again.
            known = self._digests.get(lmap)
        except TypeError:  # not hashable: digested as it is
            known = None
        h = known if known is not None else lmap.digest()
        self._recent = [(lmap, h), *self._recent[:1]]
        if known is None:
            try:
                self._digests[lmap] = h
            except TypeError:
                pass
        if h not in self._maps:
            self._maps.add(h)
            for f in lmap.files:
                if f not in self._files:
                    self._files.add(f)
                    text = read_source(f)
                    if text is not None:
                        self._write(self._source(f, text))
            self._write_line(map_line_text(h, lmap))
        return h

    def _source(self, path: str, text: str) -> dict[str, Any]:
        if self._store is None:
            return src_line(path, text)
        digest = text_hash(text)
        self._store.put_text(text, digest)
        return src_line(path, text, digest)

    def record(self, index: int, before: LineMap | None, after: LineMap | None) -> None:
        if before is None and after is None:
            return
        self._write_line(rec_line_text(index, self._map(before), self._map(after)))
        self._flush()

    def close(self) -> None:
        if self._fd is not None:
            try:
                self._flush()
            finally:
                fd, self._fd = self._fd, None
                os.close(fd)


def write_working_map(working_file: str | os.PathLike, lmap: LineMap, text: str) -> Path | None:
    """Write `<working file>.map`: the Python line of each line of the working file; return its path.

    Only when the working file holds `text` (the map's text); a `.map` there that tltrace
    did not write is left alone. The compiled file itself is never touched.
    """
    path = Path(working_file)
    dest = working_map_path(path)
    try:
        if safe_read.read_text(path, errors="surrogateescape") != text:  # a FIFO: refused, not waited on
            return None
        if os.path.lexists(dest):
            if os.path.islink(dest) or not dest.is_file():
                return None
            try:
                old = json.loads(safe_read.read_text(dest))
            except ValueError:
                return None
            if not is_working_map(old):
                return None
    except OSError:
        return None
    atomic_write(dest, working_map(path.name, lmap))
    return dest
