"""Source maps on disk: the LineMap model and its codec (`sourcemap.jsonl`, `<working file>.map`).

A `LineMap` holds, per line of one recorded text, None (no statement starts there), 0 (a
statement with no Python line) or (file index, line). sourcemap/lines.py makes them
while a kernel compiles; sourcemap/store.py writes them with the encoders here;
history/sourcemaps.py reads them back with `apply_line`.

`<run_dir>/sourcemap.jsonl`, one JSON object a line:

    {"t":"map","h":H,"files":[...],"lines":[...]}   a distinct map, once
    {"t":"rec","index":I,"before":H|null,"after":H|null}   which maps a record's sides have
    {"t":"src","path":P,"h":H,"file":F}   a Python source a map names, once (copied at capture)

F, a run-relative `source_<H>.py`, is a hard link to `.objects/<H>`. Logs written before
that (and a log without a store) carry the text in the line: {"t":"src","path":P,"text":T}.
A kill leaves at worst a cut last line, which a reader skips.

A map may add "inferred" (line indices) and "via" ([line index, file index, line] triples:
the library line behind a line mapped to its call site).

`<working file>.map`: {"format": "tltrace-sourcemap/1", "file": NAME, "files": [...], "lines": [...]}.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fs import safe_read
from .layout import SOURCE_PREFIX, SOURCEMAP_LOG, WORKING_MAP_SUFFIX, source_file, text_hash

__all__ = [
    "MAX_SOURCE_BYTES",
    "SOURCEMAP_LOG",
    "SOURCE_PREFIX",
    "WORKING_MAP_FORMAT",
    "WORKING_MAP_SUFFIX",
    "LineMap",
    "Loc",
    "RunMaps",
    "apply_line",
    "calls_line",
    "is_working_map",
    "map_line",
    "map_line_text",
    "read_source",
    "rec_line",
    "rec_line_text",
    "src_line",
    "working_map",
    "working_map_path",
]

Loc = tuple[int, int] | int | None  # (file index, line), 0: a statement with no line, None: no statement

# A map's compact JSON (json.dumps with these separators, without its check for a list holding
# itself: a map's tuples never do, and the check costs a dict entry per line of the text).
_MAP_JSON = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
_STR_JSON = json.encoder.encode_basestring_ascii  # a str as json.dumps writes it (ensure_ascii)
MAX_SOURCE_BYTES = 1 << 20  # Python sources larger than this are not copied into the records
WORKING_MAP_FORMAT = "tltrace-sourcemap/1"


@dataclass(frozen=True)
class LineMap:
    """Per line of one text: None, 0 or (index into `files`, line).

    `inferred`: the (0-based) lines whose Python line is inferred, not TileLang's own span
    (a statement a pass rebuilt without one, given its enclosing statement's line).
    `via`: {line: (file index, line)} for the lines whose span points into TileLang's own
    code (a `T.gemm` expanded into `gemm_scalar.py:48`): their entry in `lines` is the
    user's line that called the tile operator, and `via` keeps the library line
    (callsites/library.py).
    """

    files: tuple[str, ...]
    lines: tuple[Loc, ...]
    inferred: frozenset[int] = frozenset()
    via: dict[int, tuple[int, int]] = field(default_factory=dict, hash=False, compare=True)

    def src(self, i: int) -> tuple[str, int] | None:
        """Return (file, line) behind line `i` (0-based) of the text, or None."""
        if i < 0 or i >= len(self.lines):
            return None
        v = self.lines[i]
        if isinstance(v, tuple):
            return self.files[v[0]], v[1]
        return None

    def via_src(self, i: int) -> tuple[str, int] | None:
        """Return the library (file, line) that line `i` went through to its call site, or None."""
        v = self.via.get(i)
        return (self.files[v[0]], v[1]) if v is not None else None

    def coverage(self) -> tuple[int, int]:
        """Return (statement lines, statement lines with a Python line)."""
        stmts = mapped = 0
        for v in self.lines:
            if v is not None:
                stmts += 1
                if isinstance(v, tuple):
                    mapped += 1
        return stmts, mapped

    def exact(self) -> int:
        """Return how many statement lines carry a Python line that is not inferred."""
        return sum(1 for i, v in enumerate(self.lines) if isinstance(v, tuple) and i not in self.inferred)

    def python_lines(self) -> set[tuple[str, int]]:
        """Return every (file, line) some line of the text comes from."""
        return {(self.files[v[0]], v[1]) for v in self.lines if isinstance(v, tuple)}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "files": list(self.files),
            "lines": [list(v) if isinstance(v, tuple) else v for v in self.lines],
        }
        if self.inferred:
            out["inferred"] = sorted(self.inferred)
        if self.via:
            out["via"] = [[i, f, n] for i, (f, n) in sorted(self.via.items())]
        return out

    @classmethod
    def from_json(cls, data: Any) -> LineMap:
        if not isinstance(data, dict):
            raise TypeError("a line map is an object")
        files = data.get("files")
        lines = data.get("lines")
        if not isinstance(files, list) or not isinstance(lines, list):
            raise TypeError("a line map has 'files' and 'lines' lists")
        out: list[Loc] = []
        for v in lines:
            if v is None or v == 0:
                out.append(None if v is None else 0)
            elif (
                isinstance(v, list)
                and len(v) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
                and 0 <= v[0] < len(files)
            ):
                out.append((v[0], v[1]))
            else:
                raise TypeError(f"bad line map entry {v!r}")
        inferred = data.get("inferred") or []
        if not isinstance(inferred, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(out) for i in inferred
        ):
            raise TypeError("a line map's 'inferred' is a list of line indices")
        via: dict[int, tuple[int, int]] = {}
        for v in data.get("via") or []:
            if not (
                isinstance(v, list)
                and len(v) == 3
                and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
                and 0 <= v[0] < len(out)
                and 0 <= v[1] < len(files)
            ):
                raise TypeError(f"bad line map 'via' entry {v!r}")
            via[v[0]] = (v[1], v[2])
        return cls(tuple(str(f) for f in files), tuple(out), frozenset(inferred), via)

    def json_value(self) -> dict[str, Any]:
        """`to_json()` with its tuples left as they are, for a JSON encoder (which writes a tuple as a
        list): the same JSON, without a list made per line first."""
        out: dict[str, Any] = {"files": self.files, "lines": self.lines}
        if self.inferred:
            out["inferred"] = sorted(self.inferred)
        if self.via:
            out["via"] = [(i, f, n) for i, (f, n) in sorted(self.via.items())]
        return out

    def json_text(self) -> str:
        """`to_json()` as compact JSON, made once per map."""
        t = self.__dict__.get("_json")
        if t is None:
            t = _MAP_JSON(self.json_value())
            object.__setattr__(self, "_json", t)
        return t

    def digest(self) -> str:
        """The hash of the map's JSON; worked out once per map (the run's log and the report both ask)."""
        h = self.__dict__.get("_digest")
        if h is None:
            h = text_hash(self.json_text())
            object.__setattr__(self, "_digest", h)
        return h


# -- sourcemap.jsonl -----------------------------------------------------------------------------
def map_line(digest: str, lmap: LineMap) -> dict[str, Any]:
    """Return the line that stores a distinct map once (`digest`: its `LineMap.digest`)."""
    return {"t": "map", "h": digest, **lmap.to_json()}


def map_line_text(digest: str, lmap: LineMap) -> str:
    """`map_line(digest, lmap)` as the compact JSON line (newline included) `sourcemap.jsonl` holds."""
    return '{"t":"map","h":' + _STR_JSON(digest) + "," + lmap.json_text()[1:] + "\n"


def rec_line(index: int, before: str | None, after: str | None) -> dict[str, Any]:
    """Return the line that says which maps (by digest) record `index`'s two sides have."""
    return {"t": "rec", "index": index, "before": before, "after": after}


def rec_line_text(index: int, before: str | None, after: str | None) -> str:
    """`rec_line(index, before, after)` as the compact JSON line (newline included) `sourcemap.jsonl` holds."""

    b = "null" if before is None else _STR_JSON(before)
    a = "null" if after is None else _STR_JSON(after)
    return f'{{"t":"rec","index":{int(index)},"before":{b},"after":{a}}}\n'


def calls_line(roots: tuple[str, ...]) -> dict[str, Any]:
    """Return the line that says the maps after it were stored without their call sites
    (callsites/library.py, left to the reader), and where TileLang's own code is (`roots`)."""
    return {"t": "calls", "roots": list(roots)}


def src_line(path: str, text: str, digest: str | None = None) -> dict[str, Any]:
    """Return the line for a Python source: by its stored copy (`digest`) or, without a store, inline."""
    if digest is None:
        return {"t": "src", "path": path, "text": text}
    return {"t": "src", "path": path, "h": digest, "file": source_file(digest)}


@dataclass
class RunMaps:
    """One run's source maps as read back: maps by hash, each record's two, the sources."""

    maps: dict[str, LineMap] = field(default_factory=dict)
    records: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    # A `calls` line: the maps were stored without their call sites, which the reader adds
    # (history/sourcemaps.py); these are the directories of TileLang's and TVM's own code then.
    library_roots: tuple[str, ...] | None = None

    def of(self, index: int, side: str) -> LineMap | None:
        """Return the map of one side ("before"/"after") of record `index`, or None."""
        pair = self.records.get(index)
        if pair is None:
            return None
        h = pair[0] if side == "before" else pair[1]
        return self.maps.get(h) if h else None

    def __bool__(self) -> bool:
        return bool(self.records)


def apply_line(maps: RunMaps, d: Any) -> tuple[str, Any] | None:
    """Add one decoded sourcemap.jsonl line to `maps`.

    A source line that names its stored copy instead of carrying the text returns (path,
    its run-relative file) for the reader to fetch (history/sourcemaps.py); else None.
    Raises ValueError, TypeError or AttributeError on a damaged line (the reader skips it).
    """
    t = d.get("t")
    if t == "map" and isinstance(d.get("h"), str):
        maps.maps[d["h"]] = LineMap.from_json(d)
    elif t == "rec" and isinstance(d.get("index"), int):
        b, a = d.get("before"), d.get("after")
        maps.records[d["index"]] = (b if isinstance(b, str) else None, a if isinstance(a, str) else None)
    elif t == "calls" and isinstance(d.get("roots"), list):
        maps.library_roots = tuple(r for r in d["roots"] if isinstance(r, str))
    elif t == "src" and isinstance(d.get("path"), str):
        text = d.get("text")
        if isinstance(text, str):
            maps.sources[d["path"]] = text
        else:
            return d["path"], d.get("file")
    return None


def read_source(path: str) -> str | None:
    """Return the text of a Python source a span names (None: missing, not a file, too large).

    A name that is no file may be an IPython cell (`<ipython-input-3-...>`, which TileLang
    makes absolute, or ipykernel's `/tmp/ipykernel_N/H.py`): its text is then the one
    IPython put in this process's `linecache`.
    """
    try:
        with safe_read.open_binary(path) as fh:  # a FIFO is refused, never waited on
            if not os.path.isfile(path) or os.fstat(fh.fileno()).st_size > MAX_SOURCE_BYTES:
                return None
            return fh.read().decode("utf-8", "surrogateescape")
    except OSError:
        return _cell_source(path)


def _cell_source(path: str) -> str | None:
    """Return the text `linecache` holds for an interactive cell named `path`, or None.

    Only entries already in the cache are read (never a file, never a lazy loader): IPython
    stores each cell's text there under the name it compiles the cell with.
    """
    import linecache

    base = os.path.basename(path)
    for name in (path, base) if base.startswith("<") and base.endswith(">") else (path,):
        entry = linecache.cache.get(name)
        if isinstance(entry, tuple) and len(entry) == 4 and isinstance(entry[2], list):
            text = "".join(x for x in entry[2] if isinstance(x, str))
            if len(text.encode("utf-8", "surrogateescape")) <= MAX_SOURCE_BYTES:
                return text
    return None


# -- <working file>.map --------------------------------------------------------------------------
def working_map_path(working_file: str | os.PathLike) -> Path:
    """Return the map file beside a working file: `<working file>.map`."""
    path = Path(working_file)
    return path.with_name(path.name + WORKING_MAP_SUFFIX)


def working_map(file_name: str, lmap: LineMap) -> bytes:
    """Return the text of a working file's `.map` (the map of `file_name`, the working file's name)."""
    data = {"format": WORKING_MAP_FORMAT, "file": file_name, **lmap.to_json()}
    return json.dumps(data, separators=(",", ":")).encode("utf-8", "surrogateescape")


def is_working_map(data: Any) -> bool:
    """Return True when decoded JSON is a working-file map tltrace wrote (another `.map` is left alone)."""
    return isinstance(data, dict) and data.get("format") == WORKING_MAP_FORMAT
