"""The HTML report: one self-contained, append-only file per run.

Layout of `report.html`::

    <!DOCTYPE html> ... <style>palette.css report.css</style><script>diff.js core.js ... report.js</script> ...
    <div id="tl-data" hidden>
    <script type="application/json" class="tl-d">{"t":"meta",...}</script>
    <script type="application/json" class="tl-d">{"t":"text","h":HASH,"s":TEXT}</script>
    <script type="application/json" class="tl-d">{"t":"text","h":HASH,"b":BASE,"d":OPS,"e":1}</script>
    <script type="application/json" class="tl-d">{"t":"rec",...PassRecord}</script>
    <script type="tl/zc" class="tl-d">BASE64</script>   one pass's chunks, [{"t":"text",...},{"t":"rec",...},...],
    ...                                                 packed (render/pages.py Packer)

The head (page skeleton, CSS, JS) is written through a temporary file and a
rename, so the file on disk always starts with a whole head; after that each
event appends one write of data chunks and flushes. Nothing is ever rewritten,
so the work per pass does not grow with the passes before it and a run writes
the bytes of its final file once. Each distinct IR text goes in once, and a
pass's output as its changes to the pass's input, already in the file
(render/delta.py: the whole texts are the run's `texts.pack`); the browser
rebuilds the texts as it loads and computes diffs when a pass is opened. A kill -9 leaves at worst a
truncated last chunk, which the page skips (its JSON does not parse); the HTML
parser closes the open elements at end of file.

The script's `report.html` is the newest invocation's index: a table of every
compile of that invocation, each row linking to the compile's own report
(render/index.py). The page heads and the chunk encoding are render/pages.py's;
this module is the listener that writes while the compile runs, and the report
written from its model (`write_report`: history/report_reads.py reads the run into
history/report_model.py's CompileReport; nothing here reads the records).
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from ..config import Settings
from ..diff import line_changes
from ..format.records import CHANGED, FAILED, STAGE_ROLES, PassRecord, RunManifest
from ..fs.atomic import atomic_write
from ..history.report_model import CompileReport, Earlier, Text
from ..session.events import Event, InvocationFinished, Notice, PassRecorded, RunFinished, RunStarted
from .index import (
    END_CHUNK,
    INDEX_LOCK,
    SWITCHER_SIZE,
    _drop_stale_index,
    _file_lock,
    _ident,
    _Index,
    _window,
    append_index,
    earlier_chunk,
    index_invocation,
    index_meta,
    index_row,
    index_rows,
    sibling_chunk,
    siblings_chunk,
    write_index,
)
from .pages import (
    LEVEL,
    REPORT_NAME,
    SMALLEST,
    Packer,
    _page_head,
    chunk,
    data_chunk,
    index_head,
    late_script,
    layouts_tag,
    meta_of,
    record_chunk,
    record_value,
    report_head,
    stage_chunk,
    text_value,
)
from .sourcemap import ReportMaps, launches_value, no_source, run_chunks, run_views

__all__ = [
    "END_CHUNK",
    "INDEX_LOCK",
    "REPORT_NAME",
    "SWITCHER_SIZE",
    "HtmlReportListener",
    "_page_head",
    "append_index",
    "chunk",
    "index_head",
    "index_invocation",
    "index_meta",
    "index_row",
    "index_rows",
    "layouts_tag",
    "meta_of",
    "record_chunk",
    "report_head",
    "sibling_chunk",
    "write_index",
    "write_report",
]


def no_site(run_dir: Path, manifest: RunManifest) -> dict[str, Any] | None:
    """A listener handed no reads knows no failed pass's site."""
    return None


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
    staged: bool = False  # the PTX/SASS views' script is in the file (pages.stage_chunk)
    meta_from: Any = None  # the manifest `meta` was made from: the capture's header, one object per change
    source: Callable[[str], str | None] = no_source  # a Python source a map names (Reads.source)
    site: Callable[[Path, RunManifest], dict[str, Any] | None] = (
        no_site  # a failed pass's site (Reads.fail_site)
    )
    packer: Packer = field(
        default_factory=Packer
    )  # chained packing: its chunks written in order, under `lock`

    def texts_and_record(
        self,
        record: PassRecord,
        before: str,
        after: str,
        maps: tuple = (None, None),
        same: list[tuple[int, int]] | None = None,
    ) -> bytes:
        parts: list[bytes] = []
        if record.role in STAGE_ROLES and not self.staged:
            self.staged = True
            parts.append(stage_chunk())
        values: list[dict[str, Any]] = []  # one batch per pass: its texts, record and maps (one write)
        for digest, text in ((record.before_hash, before), (record.after_hash, after)):
            if digest is None:
                continue
            if digest not in self.seen:
                self.seen.add(digest)
                base = record.before_hash if digest != record.before_hash else None
                values.append(text_value(digest, text, base, before, same))
        values.append(record_value(record))
        values.extend(self.smaps.chunks(record.index, maps[0], maps[1], self.source))
        parts.append(self.packer.chunk(values))
        if record.status == FAILED:
            self.failed[record.index] = record.error
        return b"".join(parts)

    def meta_if_changed(self, manifest: RunManifest) -> bytes:
        if manifest is self.meta_from:
            return b""  # the same header as last time (capture builds one per change, not per record)
        self.meta_from = manifest
        run_dir = self.path.parent  # the report lives in its run directory
        meta = meta_of(manifest, run_dir, self.site(run_dir, manifest))
        if meta == self.meta:
            return b""
        self.meta = meta
        return self.packer.chunk(meta)

    def append(self, data: bytes) -> None:
        if data:
            self.fh.write(data)
            self.fh.flush()


def _create_report(path: Path, first: bytes) -> IO[bytes]:
    """Write head + `first` through a temporary file and a rename; return the file opened to append."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (report_head(), first))
    return open(path, "ab")


def _stderr(line: str) -> None:
    try:
        sys.stderr.write(line.splitlines()[0][:500] + "\n")
    except Exception:
        pass


class Reads(Protocol):
    """What the report written while a compile runs asks of the records (history/report_reads.LiveReads)."""

    def generated(self, run_dir: Path, manifest: RunManifest) -> list[Text]: ...

    def earlier(self, script_dir: Path, invocation: str, before: str) -> list[Earlier]: ...

    def source(self, path: str) -> str | None: ...

    def fail_site(self, run_dir: Path, manifest: RunManifest) -> dict[str, Any] | None: ...

    def launches(
        self, script_dir: Path, invocation: str
    ) -> dict[str, tuple[tuple[dict[str, Any], ...], int]]: ...


class HtmlReportListener:
    """Listener that appends every run's events to `<run_dir>/report.html` as they happen.

    One instance serves every run of a process (several kernels, several threads):
    open reports are keyed by run directory and guarded by one lock. With `link`
    (the default) it also keeps `<script_dir>/report.html`, the invocation's index,
    one row per compile as it starts and as it ends. I/O problems become one warning
    line on stderr per run, never an exception.

    It reads nothing itself: what the report needs beyond the events (the sources generated
    where an edit was compiled, the earlier invocations' compiles, the Python sources the
    maps name) it asks of `reads`, which the entry points' listeners hand it
    (render/listeners.py: history/report_reads.LiveReads); without it those are left out.
    """

    def __init__(
        self, settings: Settings | None = None, *, link: bool = True, reads: Reads | None = None
    ) -> None:
        self.settings = settings
        self.link = link
        self.reads = reads
        self._lock = threading.Lock()
        self._open: dict[Path, _Report] = {}
        self._broken: set[Path] = set()
        self._link_warned = False
        self._fallback_invocation = f"proc-{os.getpid()}-{uuid.uuid4().hex[:12]}"  # manifests without one
        self._indexes: dict[Path, _Index] = {}  # script dir -> the index this listener appends to
        self._written: dict[Path, list[Path]] = {}  # script dir -> compile reports written, in start order
        self._heads: dict[Path, tuple[str | None, str | None]] = {}  # run dir -> (invocation, kernel), latest
        self.bytes_written = 0
        self._count_lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        if isinstance(event, InvocationFinished):
            self._flush_siblings()  # takes the lock itself
            self._end_indexes(event.invocation)
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
            if isinstance(event, RunStarted) and self.link and event.script_dir is not None:
                # No report for this compile: an index left from an earlier invocation would pass for this one's.
                invocation = event.manifest.invocation or self._fallback_invocation
                if _drop_stale_index(Path(event.script_dir) / REPORT_NAME, invocation):
                    _stderr(
                        f"tltrace: removed {Path(event.script_dir) / REPORT_NAME}: it indexed an earlier invocation"
                    )

    # -- events ---------------------------------------------------------------------------------
    def _start(self, manifest: RunManifest, run_dir: Path, script_dir: Path | None) -> _Report | None:
        run_dir = Path(run_dir)
        if run_dir in self._broken:
            return None
        self._head(run_dir, manifest)
        rep = self._open.get(run_dir)
        if rep is not None:
            with rep.lock:  # its chained chunk goes in the order it was packed (`packer`)
                if not rep.fh.closed:
                    rep.append(rep.meta_if_changed(manifest))
            return rep
        path = run_dir / REPORT_NAME
        site = self.reads.fail_site if self.reads is not None else no_site
        meta = meta_of(manifest, run_dir, site(run_dir, manifest))
        # A compile that records its PTX and SASS packs its report at zlib's smallest (pages.SMALLEST).
        stages = self.settings is not None and (self.settings.ptx or self.settings.sass)
        packer = Packer(SMALLEST if stages else LEVEL)
        first = packer.chunk(meta)
        fh = _create_report(path, first)
        self.bytes_written += len(report_head()) + len(first)
        rep = _Report(
            path,
            fh,
            meta=meta,
            source=self.reads.source if self.reads is not None else no_source,
            site=site,
            packer=packer,
        )
        self._open[run_dir] = rep
        if self.link and script_dir is not None:
            self._written.setdefault(Path(script_dir), []).append(run_dir)
            self._heads[run_dir] = (manifest.invocation, manifest.kernel)
            self._index(Path(script_dir), manifest, run_dir)
        return rep

    def _head(self, run_dir: Path, manifest: RunManifest) -> None:
        """Keep the invocation and kernel of a compile whose report gets the earlier compiles (`_siblings`)."""
        if run_dir in self._heads:  # a compile report not yet given them
            self._heads[run_dir] = (manifest.invocation, manifest.kernel)

    def _index(self, script_dir: Path, manifest: RunManifest, run_dir: Path) -> None:
        invocation = manifest.invocation or self._fallback_invocation
        state = self._indexes.get(script_dir)
        if state is None or state.invocation != invocation:
            state = self._indexes[script_dir] = _Index(invocation)
        try:
            self.bytes_written += append_index(state, script_dir, manifest, run_dir.name)
        except OSError as exc:  # the compile reports are still fine
            # An index of an earlier invocation would pass for this one's: remove it (ours, by its head).
            path = script_dir / REPORT_NAME
            removed = (
                "; the index of an earlier invocation was removed"
                if _drop_stale_index(path, invocation)
                else ""
            )
            if not self._link_warned:
                self._link_warned = True
                _stderr(f"tltrace: could not write the index {path}: {exc}{removed}")

    def _pass(self, event: PassRecorded) -> None:
        # Every pass of every compiling thread comes here: the listener's lock is held only to
        # find the report, never across a write, so one thread's write (which gives the GIL
        # away) does not hold up the others' passes.
        run_dir = event.run_dir if isinstance(event.run_dir, Path) else Path(event.run_dir)
        # (the store's own Path object, the same for every record: its hash is cached on it)
        rep = self._open.get(run_dir)  # one dict read (atomic): no lock shared across compiles here
        if rep is None:
            with self._lock:
                rep = self._open.get(run_dir)
                if rep is None:  # RunStarted was missed (listener added late): open now
                    rep = self._start(event.manifest, run_dir, run_dir.parent.parent)
                    if rep is None:
                        return
        with rep.lock:
            if rep.fh.closed:
                return  # finished or given up meanwhile
            if event.manifest is not rep.meta_from:  # a new header: the kernel may be named now
                self._head(run_dir, event.manifest)
            same = event.same_lines
            if same is None and event.record.status == CHANGED and event.record.after_hash not in rep.seen:
                same = line_changes(event.before, event.after)[2]  # a producer that did not count
            data = rep.meta_if_changed(event.manifest) + rep.texts_and_record(
                event.record,
                event.before,
                event.after,
                (event.before_map, event.after_map),
                same,
            )
            rep.append(data)
        with self._count_lock:
            self.bytes_written += len(data)

    def _finish(self, event: RunFinished) -> None:
        run_dir = Path(event.run_dir)
        rep = self._open.pop(run_dir, None)
        if rep is None:
            return
        self._head(run_dir, event.manifest)
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
                        parts.append(rep.packer.chunk(record_value(rec)))
            if self.reads is not None:
                generated = self.reads.generated(Path(event.run_dir), event.manifest)
                parts.extend(rep.packer.chunk(v) for v in edit_values(generated, rep.seen))
            # The late scripts go before the final meta chunk, which stays the page's last word:
            # a copy cut short anywhere before it still reads "incomplete".
            if event.manifest.layouts:
                parts.append(layouts_tag())  # the Layouts view's script: only reports with layouts
            parts.append(late_script("profile.js"))  # the compile has ended: its profile (pages.LATE_SCRIPTS)
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

    def _end_indexes(self, invocation: str) -> None:
        """Mark the indexes of a finished invocation as complete (the page of one compile then opens it)."""
        with self._lock:
            states = [
                (d, st) for d, st in self._indexes.items() if st.invocation == invocation and not st.lost
            ]
        for script_dir, state in states:
            try:
                with _file_lock(script_dir):
                    path = script_dir / REPORT_NAME
                    if index_invocation(path) == state.invocation and _ident(path) == state.ino:
                        with open(path, "ab") as fh:
                            fh.write(END_CHUNK)
                        self.bytes_written += len(END_CHUNK)
            except OSError:
                pass  # the index still lists every compile; it just does not know it is final

    def _flush_siblings(self) -> None:
        """Append the switcher's list to every compile report written since the last flush."""
        with self._lock:
            written, self._written = self._written, {}
            indexes = dict(self._indexes)
            heads = dict(self._heads)
            for run_dirs in written.values():
                for d in run_dirs:
                    self._heads.pop(d, None)
        for script_dir, run_dirs in written.items():
            try:
                self._siblings(script_dir, run_dirs, indexes.get(script_dir), heads)
            except Exception as exc:
                _stderr(
                    f"tltrace: could not list the sibling compiles in {script_dir}: {type(exc).__name__}: {exc}"
                )

    def _siblings(
        self,
        script_dir: Path,
        run_dirs: list[Path],
        state: _Index | None,
        heads: dict[Path, tuple[str | None, str | None]],
    ) -> None:
        path = script_dir / REPORT_NAME
        with _file_lock(script_dir):
            rows = (
                index_rows(path) if state is not None and index_invocation(path) == state.invocation else []
            )
        # Every compile report: the earlier invocations of its script ("Compare with…"), read once.
        earlier: list[Earlier] | None = None
        launches: dict[str, tuple[tuple[dict[str, Any], ...], int]] | None = None
        for d in run_dirs:
            invocation, kernel = heads.get(d, (None, None))
            if earlier is None and invocation and self.reads is not None:
                try:
                    earlier = self.reads.earlier(script_dir, invocation, min(x.name for x in run_dirs))
                except OSError:
                    earlier = []
                # run --launches: every compile's launches, recorded by now (the lifecycle's end), read once
                launches = self.reads.launches(script_dir, invocation)
            more = earlier_chunk(invocation, kernel, earlier or [])
            launched, past = (launches or {}).get(d.name, ((), 0))
            if launched:
                more = (more or b"") + data_chunk(launches_value(launched, past))
            if more is not None and (d / REPORT_NAME).is_file():
                with open(d / REPORT_NAME, "ab") as fh:
                    fh.write(more)
                self.bytes_written += len(more)
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


def edit_values(generated: Iterable[Text], seen: set[str]) -> list[dict[str, Any]]:
    """The text chunks of the sources TileLang generated where an edit was compiled (the report's
    "edit vs generated" view; format/build.py), each once (`seen`: the hashes already in the report)."""
    out = []
    for t in generated:
        if t.digest in seen:
            continue
        seen.add(t.digest)
        out.append(text_value(t.digest, t.text))
    return out


# -- writing a report from its model ------------------------------------------------------------------
def write_report(report: CompileReport, out: Path | None = None) -> Path:
    """Write a compile's report from its model (history/report_reads.compile_report); return its path.

    Default `out`: `<run_dir>/report.html`. Nothing is read: the model holds every text. The
    file is written through a temporary file and a rename. Texts no longer on disk when the
    model was read show in the report as missing. A report in its run directory gets its
    index link, the switcher of its invocation's compiles and the earlier invocations'.
    """
    manifest = report.manifest
    run_dir = report.run_dir
    in_place = out is None or Path(out).absolute() == (run_dir / REPORT_NAME).absolute()
    out = Path(out) if out is not None else run_dir / REPORT_NAME
    site = dict(report.fail_site) if report.fail_site is not None else None
    meta = meta_of(manifest, run_dir, site, report.layout_why)
    if not in_place:
        meta.pop("index", None)  # written elsewhere (lower_trace's report): no index two levels up
    packer = Packer(SMALLEST)  # rebuilt from the records, off any compile's path: zlib's smallest
    parts = [packer.chunk(meta)]
    seen: set[str] = set()
    if any(r.record.role in STAGE_ROLES for r in report.records):
        parts.append(stage_chunk())
    values: list[dict[str, Any]] = []  # the chunks, packed in batches (pages.batches)
    for r in report.records:
        rec = r.record
        before: tuple[str, str] | None = None  # (hash, text) of this record's input, once in the report
        for side, digest, text in (("before", rec.before_hash, r.before), ("after", rec.after_hash, r.after)):
            if text is None or digest is None:
                continue
            if digest not in seen:
                seen.add(digest)
                if before is not None and before[0] != digest:
                    same = line_changes(before[1], text)[2]
                    values.append(text_value(digest, text, before[0], before[1], same))
                else:
                    values.append(text_value(digest, text))
            if side == "before":
                before = (digest, text)
        values.append(record_value(rec))
    values.extend(edit_values(report.generated, seen))
    values.extend(run_chunks(report))
    values.extend(run_views(report))  # launches (run --launches), hot lines (run --ncu)
    parts.extend(packer.batches(values))
    if manifest.invocation and in_place and len(report.siblings) > 1:
        at = next((i for i, s in enumerate(report.siblings) if s.run_id == run_dir.name), 0)
        parts.append(siblings_chunk(_window(report.siblings, at, SWITCHER_SIZE)))
    if in_place:
        more = earlier_chunk(manifest.invocation, manifest.kernel, report.earlier)
        if more is not None:
            parts.append(more)
    if manifest.layouts:
        parts.append(layouts_tag())  # the Layouts view's script: only reports with layouts carry it
    parts.append(late_script("profile.js"))  # the records are all there is: the profile (pages.LATE_SCRIPTS)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, [report_head(), *parts])
    return out
