"""The HTML report: one self-contained, append-only file per run.

Layout of `report.html`::

    <!DOCTYPE html> ... <style>palette.css report.css</style><script>diff.js report.js</script> ...
    <div id="tl-data" hidden>
    <script type="application/json" class="tl-d">{"t":"meta",...}</script>
    <script type="application/json" class="tl-d">{"t":"text","h":HASH,"s":TEXT}</script>
    <script type="application/json" class="tl-d">{"t":"rec",...PassRecord}</script>
    ...

The head (page skeleton, CSS, JS) is written through a temporary file and a
rename, so the file on disk always starts with a whole head; after that each
event appends one write of data chunks and flushes. Nothing is ever rewritten,
so the work per pass does not grow with the passes before it and a run writes
the bytes of its final file once. Each distinct IR text goes in once; the
browser computes diffs when a pass is opened. A kill -9 leaves at worst a
truncated last chunk, which the page skips (its JSON does not parse); the HTML
parser closes the open elements at end of file.

The script's `report.html` is the newest invocation's index: a table of every
compile of that invocation, each row linking to the compile's own report. It is
built the same way (a head written through a rename when the invocation starts,
then one appended chunk per compile event), under a file lock, so the threads of
one process and several processes of one invocation can append to it.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl  # tltrace is POSIX-only (_atomic.py locks the same way)
import hashlib
import json
import os
import re
import shlex
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import IO, Any

from .._atomic import atomic_write
from ..config import Settings
from ..errors import RecordsError
from ..session.events import Event, InvocationFinished, Notice, PassRecorded, RunFinished, RunStarted
from ..session.records import FAILED, PassRecord, RunManifest
from ..session.store import RUN_RECORDS, text_hash
from .safejson import script_json
from .sourcemap import ReportMaps, run_chunks

REPORT_NAME = "report.html"
_META_FIELDS = (
    "run_id",
    "script",
    "kernel",
    "target",
    "target_host",
    "backend",
    "tilelang_version",
    "tltrace_version",
    "command",
    "cwd",
    "started",
    "finished",
    "status",
    "error",
    "mode",
    "invocation",
    "signature",
    "launch",
    "params",
    "thread",
)
INDEX_LOCK = ".report.lock"
_CHUNK_OPEN = b'<script type="application/json" class="tl-d">'
_CHUNK_CLOSE = b"</script>\n"
_HEAD_CACHE: dict[str, bytes] = {}


# -- data encoding ---------------------------------------------------------------------------------
def chunk(value: dict[str, Any]) -> bytes:
    """Return one data chunk: a JSON script element holding `value`."""
    # A lone surrogate (bad bytes decoded with surrogateescape) becomes the JSON escape \\udcXX.
    body = script_json(value).encode("utf-8", "backslashreplace")
    return _CHUNK_OPEN + body + _CHUNK_CLOSE


def meta_of(manifest: RunManifest) -> dict[str, Any]:
    """Return the run header the report shows (no records); O(1) in the number of records."""
    out: dict[str, Any] = {"t": "meta"}
    for name in _META_FIELDS:
        value = getattr(manifest, name, None)
        if value is not None and value != []:
            out[name] = list(value) if name == "command" else value
    if manifest.command:
        out["command_line"] = shlex.join(str(c) for c in manifest.command)
    if manifest.repro and manifest.run_id:
        # `tltrace repro` for a pass of this compile: the report appends the pass's index.
        out["repro"] = shlex.join(["tltrace", "repro", manifest.script, manifest.run_id, "--pass"])
    if manifest.invocation:
        # The compile's way back: the script's index (two levels up) and, once known, its siblings.
        out["index"] = "../../" + REPORT_NAME
    return out


def record_chunk(record: PassRecord) -> bytes:
    data = record.to_json()
    # Paths on disk mean nothing inside the report; the hashes name the texts.
    data.pop("before_file", None)
    data.pop("after_file", None)
    data["t"] = "rec"
    return chunk(data)


def text_chunk(digest: str, text: str) -> bytes:
    return chunk({"t": "text", "h": digest, "s": text})


def _asset(name: str) -> str:
    return resources.files("tltrace.render").joinpath("assets", name).read_text(encoding="utf-8")


def _sha256_b64(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _page_head(template: str, css_names: tuple[str, ...], js_names: tuple[str, ...]) -> bytes:
    page = _asset(template)
    # The assets are ours; still, keep them from closing their own elements early.
    css, js = "\n".join(_asset(n) for n in css_names), "\n".join(_asset(n) for n in js_names)
    for text in (css, js):
        if re.search(r"</(script|style)|<!--", text, re.I):
            raise RuntimeError("report assets must not contain </script, </style or <!--")
    # The page runs only its own script: CSP names it by hash, so even markup smuggled into
    # the data (it cannot be: see safejson.script_json) could not run an inline handler.
    csp = f"'sha256-{_sha256_b64(js)}'"
    page = page.replace("script-src 'unsafe-inline'", f"script-src {csp}", 1)
    page = page.replace("style-src 'unsafe-inline'", f"style-src 'sha256-{_sha256_b64(css)}'", 1)
    page = page.replace("/*TLTRACE_CSS*/", css, 1).replace("/*TLTRACE_JS*/", js, 1)
    return page.encode("utf-8")


def report_head() -> bytes:
    """Return a compile report's fixed head: skeleton, CSS and JS, ending where the data chunks start."""
    if "report" not in _HEAD_CACHE:
        _HEAD_CACHE["report"] = _page_head(
            "report.html",
            ("palette.css", "report.css", "profile.css", "sourcemap.css"),
            ("diff.js", "profile.js", "sourcemap.js", "report.js"),
        )
    return _HEAD_CACHE["report"]


def index_head() -> bytes:
    """Return the invocation index's fixed head (it shares report.css's palette)."""
    if "index" not in _HEAD_CACHE:
        _HEAD_CACHE["index"] = _page_head(
            "index.html",
            ("palette.css", "report.css", "index.css", "profile.css"),
            ("profile.js", "index.js"),
        )
    return _HEAD_CACHE["index"]


# -- one open report -------------------------------------------------------------------------------
@dataclass
class _Report:
    path: Path
    fh: IO[bytes]
    seen: set[str] = field(default_factory=set)  # text hashes already in the file
    lock: threading.Lock = field(default_factory=threading.Lock)  # this file's appends, in order
    meta: dict[str, Any] = field(default_factory=dict)
    failed: dict[int, str | None] = field(default_factory=dict)  # failed records: index -> error written
    smaps: ReportMaps = field(default_factory=ReportMaps)  # source maps already in the file

    def texts_and_record(
        self, record: PassRecord, before: str, after: str, maps: tuple = (None, None)
    ) -> bytes:
        parts: list[bytes] = []
        for digest, text in ((record.before_hash, before), (record.after_hash, after)):
            if digest is None:
                continue
            if digest not in self.seen:
                self.seen.add(digest)
                parts.append(text_chunk(digest, text))
        parts.append(record_chunk(record))
        parts.extend(chunk(c) for c in self.smaps.chunks(record.index, *maps))
        if record.status == FAILED:
            self.failed[record.index] = record.error
        return b"".join(parts)

    def meta_if_changed(self, manifest: RunManifest) -> bytes:
        meta = meta_of(manifest)
        if meta == self.meta:
            return b""
        self.meta = meta
        return chunk(meta)

    def append(self, data: bytes) -> None:
        if data:
            self.fh.write(data)
            self.fh.flush()


def _create_report(path: Path, first: bytes) -> IO[bytes]:
    """Write head + `first` through a temporary file and a rename; return the file opened to append."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (report_head(), first))
    return open(path, "ab")


# -- the invocation index ---------------------------------------------------------------------------
def index_row(manifest: RunManifest, run_id: str | None = None) -> dict[str, Any]:
    """Return one compile's row of the index (a later row of the same run_id replaces an earlier one)."""
    m = manifest
    counts = m.counts
    first_failed = next((r for r in m.records if r.status == FAILED), None)
    row: dict[str, Any] = {
        "t": "c",
        "run_id": run_id or m.run_id,
        "signature": m.signature,
        "kernel": m.kernel,
        "status": m.status,
        "passes": len(m.records),
        "changed": counts.get("changed", 0),
        "failed": counts.get(FAILED, 0),
        "failed_at": first_failed.name if first_failed else None,
        "started": m.started if _finite(m.started) else None,
    }
    writer = m.writer if isinstance(m.writer, dict) else {}
    for key in ("pid", "rank"):  # the process that made the compile: the index groups by it
        value = writer.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
            row[key] = value
    if m.finished is not None and _finite(m.finished) and _finite(m.started) and m.finished >= m.started:
        row["seconds"] = round(m.finished - m.started, 4)
    if m.error:
        row["error"] = m.error.strip().splitlines()[0][:300] if m.error.strip() else m.error
    if m.records and m.finished is not None:  # time per pass name, for the profile view (profile.js)
        from ..history.profile import pass_times_us

        row["pu"] = pass_times_us(m)
    return {k: v for k, v in row.items() if v is not None}


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x and abs(x) < 1e11


def index_meta(manifest: RunManifest, invocation: str, base: str = RUN_RECORDS + "/") -> dict[str, Any]:
    out: dict[str, Any] = {"t": "imeta", "script": manifest.script, "invocation": invocation, "base": base}
    if _finite(manifest.started):
        out["started"] = manifest.started
    if manifest.command:
        out["command_line"] = shlex.join(str(c) for c in manifest.command)
    return out


def _chunk_json(line: bytes) -> dict[str, Any] | None:
    line = line.rstrip(b"\n")
    if not (line.startswith(_CHUNK_OPEN) and line.endswith(_CHUNK_CLOSE.rstrip(b"\n"))):
        return None
    try:
        data = json.loads(
            line[len(_CHUNK_OPEN) : -len(_CHUNK_CLOSE.rstrip(b"\n"))].decode("utf-8", "replace")
        )
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def index_invocation(path: Path) -> str | None:
    """Return the invocation an index file lists (None: not an index of this tltrace, or unreadable)."""
    head = index_head()
    if os.path.islink(path):
        return None  # never read, let alone append, through a link
    try:
        with open(path, "rb") as fh:
            if fh.read(len(head)) != head:
                return None
            data = _chunk_json(fh.readline(1 << 20))
    except OSError:
        return None
    if data is None or data.get("t") != "imeta" or not isinstance(data.get("invocation"), str):
        return None
    return data["invocation"]


def index_rows(path: Path) -> list[dict[str, Any]]:
    """Return an index file's compile rows, the last chunk of each run_id winning, in first-seen order."""
    rows: dict[str, dict[str, Any]] = {}
    try:
        with open(path, "rb") as fh:
            fh.seek(len(index_head()))
            for line in fh:
                data = _chunk_json(line)
                if data is not None and data.get("t") == "c" and isinstance(data.get("run_id"), str):
                    rows[data["run_id"]] = data
    except OSError:
        return []
    return list(rows.values())


@contextlib.contextmanager
def _file_lock(script_dir: Path) -> Iterator[None]:
    """Hold an exclusive lock on `<script_dir>/.report.lock` (several processes of one invocation)."""
    fd = os.open(Path(script_dir) / INDEX_LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@dataclass
class _Index:
    invocation: str
    ino: tuple[int, int] | None = None  # (st_dev, st_ino) of the file this invocation writes
    lost: bool = False  # a newer invocation replaced the file: stop writing


def _ident(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def append_index(state: _Index, script_dir: Path, manifest: RunManifest, run_id: str) -> int:
    """Append one compile row to the script's index, creating the index when the invocation is new.

    Under the file lock: when the file on disk is not this invocation's index, the
    first call (re)creates it through a rename; a later call finds it taken by a newer
    invocation and writes nothing. Returns the bytes written.
    """
    script_dir = Path(script_dir)
    path = script_dir / REPORT_NAME
    row = chunk(index_row(manifest, run_id))
    with _file_lock(script_dir):
        if state.lost:
            return 0
        ident = _ident(path)
        if state.ino is None or ident != state.ino:
            if index_invocation(path) == state.invocation:  # another process of this invocation made it
                state.ino = _ident(path)
            elif state.ino is None:
                first = chunk(index_meta(manifest, state.invocation))
                atomic_write(path, (index_head(), first))
                state.ino = _ident(path)
                written = len(index_head()) + len(first)
                with open(path, "ab") as fh:
                    fh.write(row)
                return written + len(row)
            else:
                state.lost = True
                return 0
        with open(path, "ab") as fh:
            fh.write(row)
        return len(row)


SWITCHER_SIZE = 41  # compiles a report's switcher lists: all of a small invocation, else the nearest


def _window(rows: list[dict[str, Any]], at: int, size: int) -> list[dict[str, Any]]:
    lo = max(0, min(at - size // 2, len(rows) - size))
    return rows[lo : lo + size]


def sibling_chunk(rows: list[dict[str, Any]]) -> bytes:
    """Return the chunk that gives a compile report its switcher: [run_id, label, status] per sibling."""
    sibs = [
        [r["run_id"], r.get("signature") or r.get("kernel") or r["run_id"], r.get("status") or "?"]
        for r in rows
        if isinstance(r.get("run_id"), str)
    ]
    return chunk({"t": "sibs", "runs": sibs})


def _stderr(line: str) -> None:
    try:
        sys.stderr.write(line.splitlines()[0][:500] + "\n")
    except Exception:
        pass


class HtmlReportListener:
    """Listener that appends every run's events to `<run_dir>/report.html` as they happen.

    One instance serves every run of a process (several kernels, several threads):
    open reports are keyed by run directory and guarded by one lock. With `link`
    (the default) it also keeps `<script_dir>/report.html`, the invocation's index,
    one row per compile as it starts and as it ends. I/O problems become one warning
    line on stderr per run, never an exception.
    """

    def __init__(self, settings: Settings | None = None, *, link: bool = True) -> None:
        self.settings = settings
        self.link = link
        self._lock = threading.Lock()
        self._open: dict[Path, _Report] = {}
        self._broken: set[Path] = set()
        self._link_warned = False
        self._fallback_invocation = f"proc-{os.getpid()}-{uuid.uuid4().hex[:12]}"  # manifests without one
        self._indexes: dict[Path, _Index] = {}  # script dir -> the index this listener appends to
        self._written: dict[Path, list[Path]] = {}  # script dir -> compile reports written, in start order
        self.bytes_written = 0
        self._count_lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        if isinstance(event, InvocationFinished):
            self._flush_siblings()  # takes the lock itself
            return
        try:
            if isinstance(event, PassRecorded):
                self._pass(event)  # the listener's lock only to find the report; the write under its own
                return
            with self._lock:
                if isinstance(event, RunStarted):
                    self._start(event.manifest, event.run_dir, event.script_dir)
                elif isinstance(event, RunFinished):
                    self._finish(event)
                elif isinstance(event, Notice):
                    pass  # notices go to the terminal; the report shows records
        except Exception as exc:
            run_dir = getattr(event, "run_dir", None)
            self._warn(run_dir, exc)

    # -- events ---------------------------------------------------------------------------------
    def _start(self, manifest: RunManifest, run_dir: Path, script_dir: Path | None) -> _Report | None:
        run_dir = Path(run_dir)
        if run_dir in self._broken:
            return None
        rep = self._open.get(run_dir)
        if rep is not None:
            rep.append(rep.meta_if_changed(manifest))
            return rep
        path = run_dir / REPORT_NAME
        meta = meta_of(manifest)
        first = chunk(meta)
        fh = _create_report(path, first)
        self.bytes_written += len(report_head()) + len(first)
        rep = _Report(path, fh, meta=meta)
        self._open[run_dir] = rep
        if self.link and script_dir is not None:
            self._written.setdefault(Path(script_dir), []).append(run_dir)
            self._index(Path(script_dir), manifest, run_dir)
        return rep

    def _index(self, script_dir: Path, manifest: RunManifest, run_dir: Path) -> None:
        invocation = manifest.invocation or self._fallback_invocation
        state = self._indexes.get(script_dir)
        if state is None or state.invocation != invocation:
            state = self._indexes[script_dir] = _Index(invocation)
        try:
            self.bytes_written += append_index(state, script_dir, manifest, run_dir.name)
        except OSError as exc:  # the compile reports are still fine
            if not self._link_warned:
                self._link_warned = True
                _stderr(f"tltrace: could not write the index {script_dir / REPORT_NAME}: {exc}")

    def _pass(self, event: PassRecorded) -> None:
        # Every pass of every compiling thread comes here: the listener's lock is held only to
        # find the report, never across a write, so one thread's write (which gives the GIL
        # away) does not hold up the others' passes.
        run_dir = Path(event.run_dir)
        with self._lock:
            rep = self._open.get(run_dir)
            if rep is None:  # RunStarted was missed (listener added late): open now
                rep = self._start(event.manifest, run_dir, run_dir.parent.parent)
                if rep is None:
                    return
        with rep.lock:
            if rep.fh.closed:
                return  # finished or given up meanwhile
            data = rep.meta_if_changed(event.manifest) + rep.texts_and_record(
                event.record, event.before, event.after, (event.before_map, event.after_map)
            )
            rep.append(data)
        with self._count_lock:
            self.bytes_written += len(data)

    def _finish(self, event: RunFinished) -> None:
        run_dir = Path(event.run_dir)
        rep = self._open.pop(run_dir, None)
        if rep is None:
            return
        with rep.lock:
            self._finish_report(rep, event)
        if self.link and event.script_dir is not None:
            self._index(Path(event.script_dir), event.manifest, run_dir)

    def _finish_report(self, rep: _Report, event: RunFinished) -> None:
        try:
            parts = []
            if rep.failed:
                # Errors that arrive only when the compile ends (a pass that never returned).
                for rec in event.manifest.records:
                    if rec.index in rep.failed and rec.error != rep.failed[rec.index]:
                        parts.append(record_chunk(rec))
            parts.append(rep.meta_if_changed(event.manifest))
            data = b"".join(parts)
            rep.append(data)
            with self._count_lock:
                self.bytes_written += len(data)
        finally:
            rep.fh.close()

    def _warn(self, run_dir: Path | None, exc: BaseException) -> None:
        key = Path(run_dir) if run_dir is not None else Path("?")
        with self._lock:
            if key in self._broken:
                return
            self._broken.add(key)
            rep = self._open.pop(key, None)
        if rep is not None:
            with rep.lock:
                try:
                    rep.fh.close()
                except Exception:
                    pass
        where = f" in {key}" if run_dir is not None else ""
        _stderr(f"tltrace: could not write the HTML report{where}: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Close every report still open (runs that never finished keep what they have).

        Then give each compile report of an invocation with several compiles its
        sibling list (the switcher), read from the index so that compiles of other
        processes of the invocation are in it too.
        """
        with self._lock:
            reports, self._open = list(self._open.values()), {}
        for rep in reports:
            with rep.lock:
                try:
                    rep.fh.close()
                except Exception:
                    pass
        self._flush_siblings()

    def _flush_siblings(self) -> None:
        """Append the switcher's list to every compile report written since the last flush."""
        with self._lock:
            written, self._written = self._written, {}
            indexes = dict(self._indexes)
        for script_dir, run_dirs in written.items():
            try:
                self._siblings(script_dir, run_dirs, indexes.get(script_dir))
            except Exception as exc:
                _stderr(
                    f"tltrace: could not list the sibling compiles in {script_dir}: {type(exc).__name__}: {exc}"
                )

    def _siblings(self, script_dir: Path, run_dirs: list[Path], state: _Index | None) -> None:
        path = script_dir / REPORT_NAME
        with _file_lock(script_dir):
            rows = (
                index_rows(path) if state is not None and index_invocation(path) == state.invocation else []
            )
        position = {r["run_id"]: i for i, r in enumerate(rows)}
        mine = [d for d in run_dirs if d.name in position]
        if len(rows) < 2 or not mine:
            return
        whole = sibling_chunk(rows) if len(rows) <= SWITCHER_SIZE else None
        for d in mine:
            # A large invocation: the switcher lists the compiles around this one; the index lists all.
            data = whole or sibling_chunk(_window(rows, position[d.name], SWITCHER_SIZE))
            with open(d / REPORT_NAME, "ab") as fh:
                fh.write(data)
            self.bytes_written += len(data)


# -- rebuilding reports from the run records ----------------------------------------------------------
def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Return the path of a report rebuilt from a run directory (default `<run_dir>/report.html`).

    Reads through history/runs.py (the one reader: paths stay inside the run directory, a
    deleted per-pass file falls back to the stored object by hash). The file is
    written through a temporary file and a rename. Texts no longer on disk show in
    the report as missing. Sibling compiles of its invocation get the switcher.
    """
    from ..history import runs as R

    run_dir = Path(run_dir)
    manifest = R.load_manifest(run_dir)
    out = Path(out) if out is not None else run_dir / REPORT_NAME
    parts = [chunk(meta_of(manifest))]
    seen: set[str] = set()
    for rec in manifest.records:
        updates: dict[str, Any] = {}
        for side in ("before", "after"):
            if side == "after" and rec.after_file is None and rec.after_hash is None:
                continue
            text = R.text_of(run_dir, rec, side, errors="surrogateescape")
            if text is None:
                continue
            key = f"{side}_hash"
            digest = getattr(rec, key) or text_hash(text)
            updates[key] = digest
            if digest not in seen:
                seen.add(digest)
                parts.append(text_chunk(digest, text))
        parts.append(record_chunk(replace(rec, **updates) if updates else rec))
    parts.extend(chunk(c) for c in run_chunks(run_dir, manifest))
    if manifest.invocation:
        sibs = [r for r in R.invocations(run_dir.parent.parent) if r.id == manifest.invocation]
        if sibs and len(sibs[0].runs) > 1:
            rows = [_row_of_run(r) for r in sibs[0].runs]
            at = next((i for i, r in enumerate(rows) if r["run_id"] == run_dir.name), 0)
            parts.append(sibling_chunk(_window(rows, at, SWITCHER_SIZE)))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, [report_head(), *parts])
    return out


def _row_of_run(run: Any) -> dict[str, Any]:
    if run.manifest is None:
        return {"t": "c", "run_id": run.run_id, "status": "damaged"}
    return index_row(run.manifest, run.run_id)


def write_index(script_dir: Path, run_dirs: list[Path], out: Path | None = None) -> Path:
    """Rebuild the index of one invocation (its compiles' run dirs) from the run records; return its path.

    Default `out`: `<script_dir>/report.html` when the invocation is the script's
    newest, else `index.html` in the directory of its first compile (so the newest
    index is never replaced by an older one).
    """
    from ..history import runs as R

    script_dir = Path(script_dir)
    runs = [R.load_run(Path(d)) for d in run_dirs]
    if not runs:
        raise RecordsError(f"no compiles to index under {script_dir}")
    invs = R.invocations(script_dir)
    newest = bool(invs) and {r.run_id for r in invs[-1].runs} == {r.run_id for r in runs}
    if out is None:
        out = script_dir / REPORT_NAME if newest else runs[0].path / "index.html"
    out = Path(out)
    base = os.path.relpath(script_dir / RUN_RECORDS, out.parent).replace(os.sep, "/") + "/"
    first = next((r.manifest for r in runs if r.manifest is not None), None)
    invocation = R.invocation_key(runs[0])
    meta = (
        index_meta(first, invocation, base)
        if first is not None
        else {"t": "imeta", "script": script_dir.name, "invocation": invocation, "base": base}
    )
    parts = [chunk(meta), *(chunk(_row_of_run(r)) for r in runs)]
    if out == script_dir / REPORT_NAME:
        with _file_lock(script_dir):
            atomic_write(out, [index_head(), *parts])
    else:
        atomic_write(out, [index_head(), *parts])
    return out
