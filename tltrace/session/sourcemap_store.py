"""Source maps on disk: each run's `sourcemap.jsonl`, and `<working file>.map` beside a working file."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .. import safe_read
from .sourcemap import LineMap

SOURCEMAP_LOG = "sourcemap.jsonl"
SOURCE_PREFIX = "source_"  # run-relative name of a copied Python source: source_<hash>.py
_SOURCE_FILE = re.compile(r"^source_([0-9a-f]{8,128})\.py$")
MAX_SOURCE_BYTES = 1 << 20  # Python sources larger than this are not copied into the records


# -- on disk -------------------------------------------------------------------------------------
class MapLog:
    """Appends one run's maps to `<run_dir>/sourcemap.jsonl`, one JSON object a line.

    {"t":"map","h":H,"files":[...],"lines":[...]}   a distinct map, once
    {"t":"rec","index":I,"before":H|null,"after":H|null}   which maps a record's sides have
    {"t":"src","path":P,"h":H,"file":F}   a Python source a map names, once (copied at capture)
    The source's text is in the run's store (`store`: session/store.RunStore): F, a run-relative
    `source_<H>.py`, is a hard link to `.objects/<H>`, so the compiles of an invocation (an
    autotuner's hundreds) hold one copy of the sources their maps name. Logs written before that
    (and a log without a store) carry the text in the line: {"t":"src","path":P,"text":T}.
    A kill leaves at worst a cut last line, which `load` skips.
    """

    def __init__(self, run_dir: Path, store: Any = None) -> None:
        self.path = Path(run_dir) / SOURCEMAP_LOG
        self._store = store
        self._fh: IO[str] | None = None
        self._maps: set[str] = set()
        self._files: set[str] = set()
        self.bytes_written = 0

    def _write(self, obj: dict[str, Any]) -> None:
        if self._fh is None:
            self._fh = open(self.path, "a", encoding="utf-8", errors="surrogateescape")
        line = json.dumps(obj, separators=(",", ":")) + "\n"
        self._fh.write(line)
        self.bytes_written += len(line.encode("utf-8", "surrogateescape"))

    def _map(self, lmap: LineMap | None) -> str | None:
        if lmap is None:
            return None
        h = lmap.digest()
        if h not in self._maps:
            self._maps.add(h)
            for f in lmap.files:
                if f not in self._files:
                    self._files.add(f)
                    text = _read_source(f)
                    if text is not None:
                        self._write(self._source(f, text))
            self._write({"t": "map", "h": h, **lmap.to_json()})
        return h

    def _source(self, path: str, text: str) -> dict[str, Any]:
        if self._store is None:
            return {"t": "src", "path": path, "text": text}
        from .store import text_hash

        digest = text_hash(text)
        rel = f"{SOURCE_PREFIX}{digest}.py"
        self._store.link_text(rel, text, digest)
        return {"t": "src", "path": path, "h": digest, "file": rel}

    def record(self, index: int, before: LineMap | None, after: LineMap | None) -> None:
        if before is None and after is None:
            return
        self._write({"t": "rec", "index": index, "before": self._map(before), "after": self._map(after)})
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            finally:
                self._fh = None


def _read_source(path: str) -> str | None:
    """Return the text of a Python source a span names (None: missing, not a file, too large)."""
    try:
        with safe_read.open_binary(path) as fh:  # a FIFO is refused, never waited on
            if not os.path.isfile(path) or os.fstat(fh.fileno()).st_size > MAX_SOURCE_BYTES:
                return None
            return fh.read().decode("utf-8", "surrogateescape")
    except OSError:
        return None


@dataclass
class RunMaps:
    """One run's source maps as read back: maps by hash, each record's two, the sources."""

    maps: dict[str, LineMap] = field(default_factory=dict)
    records: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def of(self, index: int, side: str) -> LineMap | None:
        """Return the map of one side ("before"/"after") of record `index`, or None."""
        pair = self.records.get(index)
        if pair is None:
            return None
        h = pair[0] if side == "before" else pair[1]
        return self.maps.get(h) if h else None

    def __bool__(self) -> bool:
        return bool(self.records)


def load(run_dir: Path) -> RunMaps:
    """Return the maps of a run directory (empty when it has none); damaged lines are skipped."""
    out = RunMaps()
    path = Path(run_dir) / SOURCEMAP_LOG
    if os.path.islink(path) or not path.is_file():
        return out
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                try:
                    d = json.loads(line)
                    t = d.get("t")
                    if t == "map" and isinstance(d.get("h"), str):
                        out.maps[d["h"]] = LineMap.from_json(d)
                    elif t == "rec" and isinstance(d.get("index"), int):
                        b, a = d.get("before"), d.get("after")
                        out.records[d["index"]] = (
                            b if isinstance(b, str) else None,
                            a if isinstance(a, str) else None,
                        )
                    elif t == "src" and isinstance(d.get("path"), str):
                        text = d.get("text")
                        if not isinstance(text, str):
                            text = _stored_source(Path(run_dir), d.get("file"))
                        if text is not None:
                            out.sources[d["path"]] = text
                except (ValueError, TypeError, AttributeError):
                    continue
    except OSError:
        pass
    return out


def _stored_source(run_dir: Path, rel: Any) -> str | None:
    """Return a source copied into the run's store (`source_<hash>.py`, else `.objects/<hash>`), or None.

    Only a name of that form is read, inside the run directory or its script's store, never
    through a symbolic link.
    """
    m = _SOURCE_FILE.match(rel) if isinstance(rel, str) else None
    if m is None:
        return None
    for p in (run_dir / rel, run_dir.parent / ".objects" / m.group(1)):
        if os.path.islink(p) or os.path.islink(p.parent):
            continue
        try:
            return safe_read.read_text(p, errors="surrogateescape")
        except (OSError, UnicodeDecodeError):
            continue
    return None


WORKING_MAP_SUFFIX = ".map"
_WORKING_MAP_FORMAT = "tltrace-sourcemap/1"


def write_working_map(working_file: str | os.PathLike, lmap: LineMap, text: str) -> Path | None:
    """Write `<working file>.map`: the Python line of each line of the working file; return its path.

    Only when the working file holds `text` (the map's text); a `.map` there that tltrace
    did not write is left alone. The compiled file itself is never touched.
    """
    from .._atomic import atomic_write

    path = Path(working_file)
    dest = path.with_name(path.name + WORKING_MAP_SUFFIX)
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
            if not isinstance(old, dict) or old.get("format") != _WORKING_MAP_FORMAT:
                return None
    except OSError:
        return None
    data = {"format": _WORKING_MAP_FORMAT, "file": path.name, **lmap.to_json()}
    atomic_write(dest, json.dumps(data, separators=(",", ":")).encode("utf-8", "surrogateescape"))
    return dest
