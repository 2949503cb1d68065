"""The run store, the writing side: one directory per compilation under `<script>/.run_records/`.

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

The names, ids and the manifest's codec are the format's (format/layout.py,
format/ids.py, format/records.py); this module only writes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
from pathlib import Path
from typing import IO

from ..format.ids import new_run_id
from ..format.layout import MANIFEST, OBJECTS, RECORDS_LOG, RUN_RECORDS, record_file, text_hash
from ..format.records import RUNNING, PassRecord, RunManifest
from ..fs.atomic import atomic_write, step


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
        self._run_dir = os.fspath(self.run_dir)
        self._objects = os.fspath(self.objects)
        self._made_dirs: set[str] = set()
        self._known: set[str] = set()  # hashes known to exist in .objects
        self._log: IO[str] | None = None
        self._plain = False  # True: no shared .objects, every text a plain file in the run dir
        self.bytes_written = 0

    # -- directories -------------------------------------------------------
    def open(self) -> None:
        """Create the run directory (and its parents); never through a symbolic link.

        A linked script directory or `.run_records` is refused (OSError): nothing is written outside the
        trace dir. A linked `.objects` is not used: texts are then stored as plain
        files in the run directory.
        """
        for d in (self.script_dir, self.records_root):
            if _is_link(d):
                raise OSError(f"{d} is a symbolic link; tltrace writes nothing through it")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._made_dirs.add(self._run_dir)
        if _is_link(self.objects):
            self._plain = True

    def _dir(self, path: str) -> None:
        if path not in self._made_dirs:
            os.makedirs(path, exist_ok=True)
            self._made_dirs.add(path)

    # -- texts -------------------------------------------------------------
    # The per-pass path: plain strings and bare os calls, since it runs on the compiling
    # thread twice a pass while holding the GIL that the other compiling threads wait for.
    def _object_path(self, digest: str) -> str:
        # Flat: a fan-out of subdirectories would cost a directory block per prefix.
        return os.path.join(self._objects, digest)

    def put_text(self, text: str, digest: str | None = None) -> str:
        """Store `text` once under .objects and return its hash."""
        digest = digest or text_hash(text)
        if digest in self._known:
            return digest
        obj = self._object_path(digest)
        if not os.path.exists(obj):
            self._dir(self._objects)
            data = text.encode("utf-8", "surrogatepass")
            _write_object(obj, data)
            self.bytes_written += len(data)
        self._known.add(digest)
        return digest

    def link_text(self, rel: str, text: str, digest: str | None = None) -> str:
        """Store `text` and make `rel` (inside the run dir) a hard link to it; return the hash."""
        dest = os.path.join(self._run_dir, rel)
        self._dir(os.path.dirname(dest))
        if self._plain:
            data = text.encode("utf-8", "surrogatepass")
            atomic_write(Path(dest), data)
            self.bytes_written += len(data)
            return digest or text_hash(text)
        digest = self.put_text(text, digest)
        obj = self._object_path(digest)
        try:
            os.link(obj, dest)
        except FileExistsError:
            os.unlink(dest)
            os.link(obj, dest)
        except FileNotFoundError:
            # Another process's `clean` removed the object between put and link: write a plain copy.
            self._known.discard(digest)
            Path(dest).write_text(text, encoding="utf-8")
        except OSError:
            shutil.copyfile(obj, dest)
            self.bytes_written += os.stat(obj).st_size
        return digest

    def write_plain(self, rel: str, text: str) -> None:
        """Write `rel` (inside the run dir) as a plain file, atomically, not stored in `.objects`.

        For a provisional text that a stored one replaces later (link_text): the first
        version then leaves no object behind.
        """
        dest = os.path.join(self._run_dir, rel)
        self._dir(os.path.dirname(dest))
        data = text.encode("utf-8", "surrogatepass")
        atomic_write(Path(dest), data)
        self.bytes_written += len(data)

    # -- records -----------------------------------------------------------
    @staticmethod
    def record_path(phase: str, index: int, name: str, side: str, ext: str = "tir") -> str:
        """Return the run-relative file name for one side of a record."""
        return record_file(phase, index, name, side, ext)

    def append_record(self, record: PassRecord) -> None:
        """Append one record to records.jsonl (kept for runs that never finish)."""
        if self._log is None:
            self._log = open(self.run_dir / RECORDS_LOG, "a", encoding="utf-8")
        line = json.dumps(record.to_stored(), separators=(",", ":")) + "\n"
        self._log.write(line)
        self._log.flush()
        self.bytes_written += len(line)

    def write_manifest(self, manifest: RunManifest) -> None:
        """Atomically (re)write manifest.json; once complete, records.jsonl is redundant and goes."""
        text = manifest.dumps()
        atomic_write_text(self.run_dir / MANIFEST, text)
        self.bytes_written += len(text)
        if manifest.status != RUNNING:
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


def _write_object(path: str, data: bytes) -> None:
    """Write a stored text whole under a temporary name, then rename it into place (read-only).

    A killed writer leaves at most a `.<hash>.<pid>-<thread>.tmp` that `clean` removes;
    never a partial object under a hash name.
    """
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o444)
    except PermissionError:
        os.unlink(tmp)  # a stale read-only temp of a killed writer with this pid and thread id
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o444)
    try:
        step("create", Path(tmp))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    step("rename", Path(path))


def _is_link(path: Path) -> bool:
    return os.path.islink(path)
