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
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
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
from ..session.events import Event, Notice, PassRecorded, RunFinished, RunStarted
from ..session.records import FAILED, PassRecord, RunManifest
from ..session.store import MANIFEST, RECORDS_LOG, text_hash

REPORT_NAME = "report.html"
_META_FIELDS = (
    "run_id", "script", "kernel", "target", "target_host", "backend", "tilelang_version",
    "tltrace_version", "command", "cwd", "started", "finished", "status", "error", "mode",
)
_CHUNK_OPEN = b'<script type="application/json" class="tl-d">'
_CHUNK_CLOSE = b"</script>\n"
_HEAD_CACHE: bytes | None = None


# -- data encoding ---------------------------------------------------------------------------------
def _json_for_script(value: Any) -> str:
    """Return JSON that can sit inside <script>: `<`, `>`, `&` (and U+2028/9) escaped as \\uXXXX."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )


def chunk(value: dict[str, Any]) -> bytes:
    """Return one data chunk: a JSON script element holding `value`."""
    # A lone surrogate (bad bytes decoded with surrogateescape) becomes the JSON escape \\udcXX.
    body = _json_for_script(value).encode("utf-8", "backslashreplace")
    return _CHUNK_OPEN + body + _CHUNK_CLOSE


def meta_of(manifest: RunManifest) -> dict[str, Any]:
    """Return the run header the report shows (no records); O(1) in the number of records."""
    out: dict[str, Any] = {"t": "meta"}
    for name in _META_FIELDS:
        value = getattr(manifest, name, None)
        if value is not None and value != []:
            out[name] = list(value) if name == "command" else value
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


def report_head() -> bytes:
    """Return the report's fixed head: skeleton, CSS and JS, ending where the data chunks start."""
    global _HEAD_CACHE
    if _HEAD_CACHE is None:
        page = _asset("report.html")
        # The assets are ours; still, keep them from closing their own elements early.
        css = _asset("palette.css") + _asset("report.css")
        js = _asset("diff.js") + _asset("report.js")  # the diff engine, then the page that uses it
        for text in (css, js):
            if re.search(r"</(script|style)|<!--", text, re.I):
                raise RuntimeError("report assets must not contain </script, </style or <!--")
        # The page runs only its own script: CSP names it by hash, so even markup smuggled into
        # the data (it cannot be: see _json_for_script) could not run an inline handler.
        csp = f"'sha256-{_sha256_b64(js)}'"
        page = page.replace("script-src 'unsafe-inline'", f"script-src {csp}", 1)
        page = page.replace("style-src 'unsafe-inline'", f"style-src 'sha256-{_sha256_b64(css)}'", 1)
        page = page.replace("/*TLTRACE_CSS*/", css, 1).replace("/*TLTRACE_JS*/", js, 1)
        _HEAD_CACHE = page.encode("utf-8")
    return _HEAD_CACHE


# -- one open report -------------------------------------------------------------------------------
@dataclass
class _Report:
    path: Path
    fh: IO[bytes]
    seen: set[str] = field(default_factory=set)  # text hashes already in the file
    meta: dict[str, Any] = field(default_factory=dict)
    failed: dict[int, str | None] = field(default_factory=dict)  # failed records: index -> error written

    def texts_and_record(self, record: PassRecord, before: str, after: str) -> bytes:
        parts: list[bytes] = []
        for digest, text in ((record.before_hash, before), (record.after_hash, after)):
            if digest is None:
                continue
            if digest not in self.seen:
                self.seen.add(digest)
                parts.append(text_chunk(digest, text))
        parts.append(record_chunk(record))
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


def link_latest(script_dir: Path, report: Path) -> Path:
    """Point `<script_dir>/report.html` at `report` (relative link), replacing it atomically."""
    link = Path(script_dir) / REPORT_NAME
    target = os.path.relpath(report, link.parent)
    tmp = link.with_name(f".{REPORT_NAME}.{os.getpid()}.{uuid.uuid4().hex[:6]}.lnk")
    os.symlink(target, tmp)
    try:
        os.replace(tmp, link)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    return link


def _stderr(line: str) -> None:
    try:
        sys.stderr.write(line.splitlines()[0][:500] + "\n")
    except Exception:
        pass


class HtmlReportListener:
    """Listener that appends every run's events to `<run_dir>/report.html` as they happen.

    One instance serves every run of a process (several kernels, several threads):
    open reports are keyed by run directory and guarded by one lock. I/O problems
    become one warning line on stderr per run, never an exception.
    """

    def __init__(self, settings: Settings | None = None, *, link: bool = True) -> None:
        self.settings = settings
        self.link = link
        self._lock = threading.Lock()
        self._open: dict[Path, _Report] = {}
        self._broken: set[Path] = set()
        self._link_warned = False
        self.bytes_written = 0

    def __call__(self, event: Event) -> None:
        try:
            with self._lock:
                if isinstance(event, PassRecorded):
                    self._pass(event)
                elif isinstance(event, RunStarted):
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
            try:
                link_latest(Path(script_dir), path)
            except OSError as exc:  # no symlinks here: the report itself is still fine
                if not self._link_warned:
                    self._link_warned = True
                    _stderr(f"tltrace: could not link {Path(script_dir) / REPORT_NAME} to the newest report: {exc}")
        return rep

    def _pass(self, event: PassRecorded) -> None:
        run_dir = Path(event.run_dir)
        rep = self._open.get(run_dir)
        if rep is None:  # RunStarted was missed (listener added late): open now
            rep = self._start(event.manifest, run_dir, run_dir.parent.parent)
            if rep is None:
                return
        data = rep.meta_if_changed(event.manifest) + rep.texts_and_record(event.record, event.before, event.after)
        rep.append(data)
        self.bytes_written += len(data)

    def _finish(self, event: RunFinished) -> None:
        run_dir = Path(event.run_dir)
        rep = self._open.pop(run_dir, None)
        if rep is None:
            return
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
            try:
                rep.fh.close()
            except Exception:
                pass
        where = f" in {key}" if run_dir is not None else ""
        _stderr(f"tltrace: could not write the HTML report{where}: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Close every report still open (runs that never finished keep what they have)."""
        with self._lock:
            reports, self._open = list(self._open.values()), {}
        for rep in reports:
            try:
                rep.fh.close()
            except Exception:
                pass


# -- rebuilding a report from a run directory ------------------------------------------------------
def _read_records_log(path: Path) -> list[PassRecord]:
    out: list[PassRecord] = []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            out.append(PassRecord.from_json(json.loads(line)))
        except (ValueError, TypeError):
            continue  # a line cut short by a kill
    return out


def load_run(run_dir: Path) -> RunManifest:
    """Return the run's manifest with its records (from records.jsonl while the run is unfinished)."""
    run_dir = Path(run_dir)
    try:
        manifest = RunManifest.from_json(json.loads((run_dir / MANIFEST).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise RecordsError(f"no {MANIFEST} in {run_dir}; is it a run directory under .run_records?") from None
    except (OSError, ValueError, TypeError) as exc:
        raise RecordsError(f"damaged {run_dir / MANIFEST}: {exc}") from None
    if not manifest.records and (run_dir / RECORDS_LOG).exists():
        records = _read_records_log(run_dir / RECORDS_LOG)
        manifest = manifest.with_records(sorted(records, key=lambda r: r.index))
    return manifest


def _read_text(run_dir: Path, rel: str | None) -> str | None:
    if not rel:
        return None
    try:
        return (run_dir / rel).read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None


def write_report(run_dir: Path, out: Path | None = None) -> Path:
    """Return the path of a report rebuilt from a run directory (default `<run_dir>/report.html`).

    The file is written through a temporary file and a rename. Texts that are no
    longer on disk show in the report as missing.
    """
    run_dir = Path(run_dir)
    manifest = load_run(run_dir)
    out = Path(out) if out is not None else run_dir / REPORT_NAME
    parts = [chunk(meta_of(manifest))]
    seen: set[str] = set()
    for rec in manifest.records:
        updates: dict[str, Any] = {}
        for side, rel in (("before_hash", rec.before_file), ("after_hash", rec.after_file)):
            text = _read_text(run_dir, rel)
            if text is None:
                continue
            digest = getattr(rec, side) or text_hash(text)
            updates[side] = digest
            if digest not in seen:
                seen.add(digest)
                parts.append(text_chunk(digest, text))
        parts.append(record_chunk(replace(rec, **updates) if updates else rec))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, [report_head(), *parts])
    return out


# -- synthetic traces (tests, benchmarks) ----------------------------------------------------------
_IR_TEMPLATE = """# from tvm.script import tir as T

@T.prim_func
def {kernel}(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"), C: T.Buffer((1024, 1024), "float32")):
    T.func_attr({{"global_symbol": "{kernel}", "target": T.target("c")}})
    with T.block("root"):
        T.reads()
        T.writes()
"""


def synthetic_events(
    n: int,
    script_dir: Path,
    *,
    kernel: str = "synthetic_kernel",
    lines: int = 120,
    failed_at: int | None = None,
    hostile: bool = False,
    codegen: bool = True,
    seed: int = 0,
) -> Iterator[Event]:
    """Yield the events of an n-pass run (RunStarted, PassRecorded..., RunFinished) without TileLang.

    Passes come in three phases, every fifth nests two children under it, about
    a third change a line or two, `failed_at` makes that pass fail (and ends the
    run with an error), and the last two records are device and host codegen.
    `hostile` puts `</script>`, `<img onerror=...>`, quotes and odd Unicode in
    names and texts. Nothing is written to disk.
    """
    import random
    import time

    rng = random.Random(seed)
    script_dir = Path(script_dir)
    run_id = f"run_synthetic_{seed}_{uuid.uuid4().hex[:8]}"
    run_dir = script_dir / ".run_records" / run_id
    evil = "</script><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">'\"&amp;\u202e\u2028\U0001f600"
    if hostile:
        kernel = f"k{evil}"
    body = [f"        buf_{i} = T.alloc_buffer((128,), \"float32\")  # line {i}" for i in range(lines)]
    if hostile:
        body[3] = f"        T.evaluate(T.call_extern(\"{evil}\"))"
    head = _IR_TEMPLATE.format(kernel=kernel)
    manifest = RunManifest(run_id=run_id, script="synthetic", kernel=kernel, target="c", backend="cython",
                           tilelang_version="0.1.15", command=["tltrace", "run", "synthetic.py"],
                           started=time.time(), mode="html")
    yield RunStarted(manifest, run_dir, script_dir)
    text = head + "\n".join(body) + "\n"
    phases = ["phase1", "phase2", "pipeline_c"]
    n_passes = max(0, n - 2) if codegen else n
    index = 0
    records: list[PassRecord] = []
    error = None
    parent: int | None = None
    children_left = 0
    for i in range(n_passes):
        phase = phases[min(2, i * 3 // max(1, n_passes))]
        name = f"Pass{i % 97}{'Lower' if i % 3 else 'Simplify'}"
        if hostile and i % 7 == 1:
            name = f"P{i}{evil}"
        depth = 1 if children_left else 0
        this_parent = parent if children_left else None
        if children_left:
            children_left -= 1
        elif i % 5 == 0:
            parent, children_left = index, 2
        before = text
        status = "noop"
        if i == failed_at:
            rec = PassRecord(index=index, name=name, phase=phase, depth=depth, parent=this_parent,
                             status=FAILED, duration_s=rng.random() / 100,
                             error=f"TVMError: {evil if hostile else 'Check failed: (x) is false'} in {name}",
                             before_hash=text_hash(before))
            records.append(rec)
            yield PassRecorded(manifest, rec, before, before, run_dir)
            error = rec.error
            break
        if rng.random() < 0.35:
            lst = text.split("\n")
            k = rng.randrange(len(head.split("\n")), len(lst) - 1)
            choice = rng.random()
            if choice < 0.5:
                lst[k] = lst[k].replace("alloc_buffer", f"alloc_buffer_v{i}", 1) + f" /* {name} */"
            elif choice < 0.8:
                lst.insert(k, f"        T.evaluate({i})  # inserted by pass {i}")
            else:
                del lst[k]
            text = "\n".join(lst)
            status = "changed"
        bh = text_hash(before)
        ah = bh if text == before else text_hash(text)
        added = 0 if status == "noop" else 1
        rec = PassRecord(index=index, name=name, phase=phase, depth=depth, parent=this_parent, status=status,
                         added=added, removed=added, duration_s=round(rng.random() / 100, 6),
                         before_hash=bh, after_hash=ah)
        records.append(rec)
        yield PassRecorded(manifest, rec, before, text, run_dir)
        index += 1
    if codegen and error is None:
        for role in ("device", "host"):
            src = f"// {role} source for {kernel}\n#include <math.h>\nvoid {role}_main(float* A) {{\n" + "".join(
                f"  A[{j}] = A[{j}] + 1.0f;\n" for j in range(lines // 2)) + "}\n"
            rec = PassRecord(index=index, name=f"Codegen[{role}]", phase="codegen", status="codegen",
                             added=lines // 2 + 4, removed=len(text.splitlines()), role=role,
                             ffi=f"target.build.tilelang_c{'_host' if role == 'host' else ''}",
                             before_hash=text_hash(text), after_hash=text_hash(src),
                             duration_s=round(rng.random() / 50, 6))
            records.append(rec)
            yield PassRecorded(manifest, rec, text, src, run_dir)
            index += 1
    final = replace(manifest.with_records(records), finished=time.time(),
                    status="error" if error else "complete", error=error)
    yield RunFinished(final, run_dir, script_dir)


def write_synthetic_report(n: int, script_dir: Path, **kwargs: Any) -> Path:
    """Feed a synthetic n-pass run to a fresh listener; return the report's path."""
    listener = HtmlReportListener()
    run_dir = None
    for event in synthetic_events(n, script_dir, **kwargs):
        run_dir = getattr(event, "run_dir", run_dir)
        listener(event)
    listener.close()
    assert run_dir is not None
    return Path(run_dir) / REPORT_NAME
