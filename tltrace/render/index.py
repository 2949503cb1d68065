"""The invocation index: `<script_dir>/report.html`, one row per compile of the newest invocation.

Built like a compile report (a head written through a rename when the invocation
starts, then one appended chunk per compile event), under a file lock, so the
threads of one process and several processes of one invocation can append to it.
A compile report's sibling switcher is read from it (this module's own file; the run
records are read by history/report_reads.py, into the model `write_index` takes).
"""

from __future__ import annotations

import contextlib
import fcntl  # tltrace is POSIX-only (fs/atomic.py locks the same way)
import json
import os
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..format.layout import RUN_RECORDS
from ..format.records import RunManifest
from ..fs import safe_read
from ..fs.atomic import atomic_write
from ..history.report_model import Earlier, IndexReport, Sibling
from .pages import _CHUNK_CLOSE, _CHUNK_OPEN, REPORT_NAME, chunk, index_head

_T = TypeVar("_T")
INDEX_LOCK = ".report.lock"
# The facts the index shows as a sortable column group (index.js FACT_COLS names the same, in order):
# an autotune's configs ranked by the path they took, shared memory, spills.
INDEX_FACTS = (
    "tma_load",
    "wgmma",
    "mma",
    "cp_async",
    "syncthreads",
    "threads",
    "smem_dynamic",
    "num_stages",
    "warp_specialized",
    "registers",
    "spill_bytes",
)
END_CHUNK = b'<script type="application/json" class="tl-d">{"t":"iend"}</script>\n'


def index_row(manifest: RunManifest | None, run_id: str | None = None) -> dict[str, Any]:
    """Return one compile's row of the index (a later row of the same run_id replaces an earlier one).

    The row is the compile summary's JSON (history/summary.py: every field, None ones
    included), which index.js shows in the same order as every other compile list, plus
    what the index adds: the process that made the compile and its time per pass name.
    A damaged run (no manifest) is its summary alone.
    """
    from ..history.profile import pass_times_us
    from ..history.summary import CompileSummary

    s = CompileSummary.of(manifest, run_id, status=manifest.status if manifest is not None else None)
    row: dict[str, Any] = {"t": "c", **s.to_json()}
    if manifest is None:
        return row
    writer = manifest.writer if isinstance(manifest.writer, dict) else {}
    for key in ("pid", "rank"):  # the process that made the compile: the index groups by it
        value = writer.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
            row[key] = value
    if manifest.records and manifest.finished is not None:  # time per pass name, for profile.js
        row["pu"] = pass_times_us(manifest)
    facts = manifest.facts.get("values") if isinstance(manifest.facts, dict) else None
    if isinstance(facts, dict):  # index.js's facts column group (docs/facts.md)
        row["facts"] = {k: v for k, v in facts.items() if k in INDEX_FACTS and v is not None}
    return row


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
        with safe_read.open_binary(path) as fh:  # a FIFO is refused, never waited on
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
        with safe_read.open_binary(path) as fh:
            fh.seek(len(index_head()))
            for line in fh:
                data = _chunk_json(line)
                if data is not None and data.get("t") == "c" and isinstance(data.get("run_id"), str):
                    rows[data["run_id"]] = data
    except OSError:
        return []
    return list(rows.values())


def _drop_stale_index(path: Path, invocation: str) -> bool:
    """Remove the index at `path` when it is tltrace's index of another invocation; return True if removed."""
    try:
        with _file_lock(path.parent):  # another process of this invocation may be (re)creating it
            stale = index_invocation(path)
            if stale is None or stale == invocation:
                return False
            os.unlink(path)
    except OSError:
        return False
    return True


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


def _window(rows: Sequence[_T], at: int, size: int) -> list[_T]:
    lo = max(0, min(at - size // 2, len(rows) - size))
    return list(rows[lo : lo + size])


def sibling_chunk(rows: list[dict[str, Any]]) -> bytes:
    """Return the chunk that gives a compile report its switcher, from index rows."""
    return siblings_chunk([s for s in map(Sibling.of_row, rows) if s is not None])


def siblings_chunk(siblings: Sequence[Sibling]) -> bytes:
    """Return the chunk that gives a compile report its switcher: [run_id, label, status] per sibling."""
    return chunk({"t": "sibs", "runs": [[s.run_id, s.label, s.status] for s in siblings]})


EARLIER_SIZE = 12  # compiles offered


def earlier_chunk(invocation: str | None, kernel: str | None, earlier: Sequence[Earlier]) -> bytes | None:
    """Return the chunk that offers a compile report the earlier invocations of its script
    (`{"t":"earlier","runs":[[run_id, "started signature (status)"], ...]}`, newest first), or None.

    "Compare with…" then reaches a compile of the same kernel before an edit (block-k 16
    against 8), not only this invocation's compiles: at most EARLIER_SIZE of `earlier`
    (history/report_reads.earlier_compiles), those of the report's kernel.
    """
    if not invocation:
        return None
    out = [[e.run_id, e.label] for e in earlier if not kernel or e.kernel == kernel]
    return chunk({"t": "earlier", "runs": out[:EARLIER_SIZE]}) if out else None


def write_index(index: IndexReport, out: Path | None = None) -> Path:
    """Write the index of one invocation (its model, history/report_reads.index_report); return its path.

    Default `out`: `<script_dir>/report.html` when the invocation is the script's
    newest, else `index.html` in the directory of its first compile (so the newest
    index is never replaced by an older one).
    """
    script_dir = index.script_dir
    if out is None:
        out = script_dir / REPORT_NAME if index.newest else index.first_run_dir / "index.html"
    out = Path(out)
    base = os.path.relpath(script_dir / RUN_RECORDS, out.parent).replace(os.sep, "/") + "/"
    first = next((r.manifest for r in index.runs if r.manifest is not None), None)
    meta = (
        index_meta(first, index.invocation, base)
        if first is not None
        else {"t": "imeta", "script": script_dir.name, "invocation": index.invocation, "base": base}
    )
    parts = [chunk(meta), *(chunk(index_row(r.manifest, r.run_id)) for r in index.runs), END_CHUNK]
    if out == script_dir / REPORT_NAME:
        with _file_lock(script_dir):
            atomic_write(out, [index_head(), *parts])
    else:
        atomic_write(out, [index_head(), *parts])
    return out
