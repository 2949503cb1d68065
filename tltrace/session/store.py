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
import re
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


def time_of_id(identifier: str) -> float | None:
    """Return the local time encoded in a run or invocation id (`<prefix>_YYYYMMDD_HHMMSS_ffffff_...`)."""
    m = re.match(r"^[a-z]+_(\d{8})_(\d{6})(?:_(\d{6}))?", identifier)
    if not m:
        return None
    try:
        t = _dt.datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S")
    except ValueError:
        return None
    return t.timestamp() + (int(m.group(3)) / 1e6 if m.group(3) else 0.0)


def new_invocation_id(now: _dt.datetime | None = None) -> str:
    """Return a fresh invocation id: inv_<YYYYMMDD_HHMMSS_ffffff>_<pid>_<uid> (sorts by time)."""
    now = now or _dt.datetime.now()
    return f"inv_{now:%Y%m%d_%H%M%S_%f}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


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


def tree_bytes(path: Path, *, unique: bool = False) -> int:
    """Return the bytes of the regular files under `path`, never following a symbolic link.

    unique=True counts only files with no other hard link: what removing `path`
    frees at once (a stored text linked from another run stays).
    """
    total = 0
    stack = [os.fspath(path)]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            if not unique or st.st_nlink <= 1:
                                total += st.st_size
                    except OSError:
                        pass
        except OSError:
            pass
    return total
