"""The on-disk run store: one directory per compilation under `<script>/.run_records/`.

Layout of a run directory::

    run_<YYYYMMDD_HHMMSS_ffffff>_<pid>_<uid>/
        manifest.json              schema-versioned RunManifest (atomic rewrite)
        records.jsonl              one PassRecord per line, appended as passes finish
        <phase>/<NN>_<Pass>_before.tir, _after.tir (codegen after: .cpp)

Every distinct text is stored once, as a read-only file under
`.run_records/.objects/`, and the per-pass files are hard links to it: the tree
stays plain text to grep while identical texts (a no-op pass's after, the next
pass's before, an unchanged rerun) cost no bytes. Where hard links are not
possible the text is copied.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import IO

from .._atomic import atomic_write
from .names import safe_component
from .records import PassRecord, RunManifest

RUN_RECORDS = ".run_records"
OBJECTS = ".objects"
MANIFEST = "manifest.json"
RECORDS_LOG = "records.jsonl"


def text_hash(text: str) -> str:
    """Return the content hash used to name stored texts."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def new_run_id(now: _dt.datetime | None = None) -> str:
    """Return a fresh run directory name: run_<YYYYMMDD_HHMMSS_ffffff>_<pid>_<uid>."""
    now = now or _dt.datetime.now()
    return f"run_{now:%Y%m%d_%H%M%S_%f}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename."""
    atomic_write(path, text.encode("utf-8", "surrogatepass"))


class RunStore:
    """Writes one run's records and texts; created lazily on the first write."""

    def __init__(self, script_dir: Path, run_id: str | None = None) -> None:
        self.script_dir = Path(script_dir)
        self.records_root = self.script_dir / RUN_RECORDS
        self.objects = self.records_root / OBJECTS
        self.run_id = run_id or new_run_id()
        self.run_dir = self.records_root / self.run_id
        self._made_dirs: set[Path] = set()
        self._known: set[str] = set()  # hashes known to exist in .objects
        self._log: IO[str] | None = None
        self.bytes_written = 0

    # -- directories -------------------------------------------------------
    def open(self) -> None:
        """Create the run directory (and its parents)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._made_dirs.add(self.run_dir)

    def _dir(self, path: Path) -> Path:
        if path not in self._made_dirs:
            path.mkdir(parents=True, exist_ok=True)
            self._made_dirs.add(path)
        return path

    # -- texts -------------------------------------------------------------
    def _object_path(self, digest: str) -> Path:
        # Flat: a fan-out of subdirectories would cost a directory block per prefix.
        return self.objects / digest

    def put_text(self, text: str, digest: str | None = None) -> str:
        """Store `text` once under .objects and return its hash."""
        digest = digest or text_hash(text)
        if digest in self._known:
            return digest
        obj = self._object_path(digest)
        if not obj.exists():
            self._dir(obj.parent)
            data = text.encode("utf-8", "surrogatepass")
            atomic_write(obj, data, mode=0o444)
            self.bytes_written += len(data)
        self._known.add(digest)
        return digest

    def link_text(self, rel: str, text: str, digest: str | None = None) -> str:
        """Store `text` and make `rel` (inside the run dir) a hard link to it; return the hash."""
        digest = self.put_text(text, digest)
        dest = self.run_dir / rel
        self._dir(dest.parent)
        obj = self._object_path(digest)
        try:
            os.link(obj, dest)
        except FileExistsError:
            dest.unlink()
            os.link(obj, dest)
        except FileNotFoundError:
            # Another process's `clean` removed the object between put and link: write a plain copy.
            self._known.discard(digest)
            dest.write_text(text, encoding="utf-8")
        except OSError:
            shutil.copyfile(obj, dest)
            self.bytes_written += obj.stat().st_size
        return digest

    # -- records -----------------------------------------------------------
    @staticmethod
    def record_path(phase: str, index: int, name: str, side: str, ext: str = "tir") -> str:
        """Return the run-relative file name for one side of a record."""
        return f"{safe_component(phase)}/{index:02d}_{safe_component(name)}_{side}.{ext}"

    def append_record(self, record: PassRecord) -> None:
        """Append one record to records.jsonl (kept for runs that never finish)."""
        if self._log is None:
            self._log = open(self.run_dir / RECORDS_LOG, "a", encoding="utf-8")
        line = json.dumps(record.to_json(), separators=(",", ":")) + "\n"
        self._log.write(line)
        self._log.flush()
        self.bytes_written += len(line)

    def write_manifest(self, manifest: RunManifest) -> None:
        """Atomically (re)write manifest.json; once complete, records.jsonl is redundant and goes."""
        text = manifest.dumps()
        atomic_write_text(self.run_dir / MANIFEST, text)
        self.bytes_written += len(text)
        if manifest.status != "running":
            self.close()
            try:
                (self.run_dir / RECORDS_LOG).unlink()
            except OSError:
                pass

    def close(self) -> None:
        if self._log is not None:
            try:
                self._log.close()
            finally:
                self._log = None


def prune_runs(script_dir: Path, keep: int, *, protect: str | None = None) -> list[Path]:
    """Delete all but the newest `keep` runs under script_dir; return what was removed.

    Stored texts no longer linked from any run are removed too. `keep` 0 keeps all.
    """
    if keep <= 0:
        return []
    root = Path(script_dir) / RUN_RECORDS
    try:
        runs = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("run_"))
    except OSError:
        return []
    doomed = [p for p in runs[: max(0, len(runs) - keep)] if p.name != protect]
    for run in doomed:
        shutil.rmtree(run, ignore_errors=True)
    if doomed:
        collect_garbage(root)
    return doomed


def collect_garbage(records_root: Path) -> int:
    """Remove stored texts that no run links to any more; return how many."""
    removed = 0
    objects = Path(records_root) / OBJECTS
    if not objects.is_dir():
        return 0
    for obj in objects.iterdir():
        try:
            if obj.is_file() and (obj.name.endswith(".tmp") or obj.stat().st_nlink <= 1):
                obj.unlink()
                removed += 1
        except OSError:
            pass
    return removed
