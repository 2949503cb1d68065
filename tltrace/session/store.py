"""The run store, the writing side: one directory per compilation under `<script>/.run_records/`.

Layout of a run directory::

    run_<YYYYMMDD_HHMMSS_ffffff>_<pid>_<uid>/
        manifest.json              schema-versioned RunManifest (atomic rewrite)
        records.jsonl              one PassRecord per line, appended as passes finish
        texts.pack                 every distinct text of the run once, by hash (format/pack.py)

Every distinct text (a pass's before and after, a generated source, a Python source a
source map names) is appended once to the run's pack, in large sequential writes: no
file, hard link or `exists` per text. The records name each text by its hash and keep
the per-pass names (`<phase>/<NN>_<Pass>_before.tir`, ...) that `tltrace export --tir`
gives the files it writes. Texts are not shared across runs (a pack per run: one file,
deleted with its run).

The names, ids and the manifest's codec are the format's (format/layout.py,
format/ids.py, format/records.py, format/pack.py); this module only writes them.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from ..format import pack
from ..format.ids import new_run_id
from ..format.layout import MANIFEST, RECORDS_LOG, RUN_RECORDS, record_file, text_hash
from ..format.pack import CHAIN, MAGIC, PACK, packed_entry
from ..format.records import RUNNING, PassRecord, RunManifest
from ..fs.atomic import atomic_write, step

_FLUSH_AT = 1 << 20  # buffered text bytes that make a write before the next record
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename."""
    atomic_write(path, text.encode("utf-8", "surrogatepass"))


class RunStore:
    """Writes one run's records and texts; created lazily on the first write."""

    def __init__(self, script_dir: Path, run_id: str | None = None) -> None:
        self.script_dir = Path(script_dir)
        self.records_root = self.script_dir / RUN_RECORDS
        self.run_id = run_id or new_run_id()
        self.run_dir = self.records_root / self.run_id
        self._run_dir = os.fspath(self.run_dir)
        self._pack_path = self.run_dir / PACK
        self._made_dirs: set[str] = set()
        self._known: dict[str, int] = {}  # hash -> length of the texts in the pack (or its buffer)
        self._buf: list[bytes] = []  # entries not yet written
        self._buffered = 0
        self._base: tuple[str, bytes] | None = (
            None  # the last text put in the pack: the next one's dictionary
        )
        self._chain = 0  # how many entries in a row, up to the last, lean on the one before
        self._pack_fd: int | None = None
        self._lock = threading.Lock()  # the compiling thread and the worker both store texts
        self._log_fd: int | None = None  # records.jsonl, appended to
        # id(record) -> (the record, its line): the final manifest holds the same JSON (RunManifest.dumps)
        self._logged: dict[int, tuple[PassRecord, str]] = {}
        self.bytes_written = 0

    # -- directories -------------------------------------------------------
    def open(self) -> None:
        """Create the run directory (and its parents); never through a symbolic link.

        A linked script directory or `.run_records` is refused (OSError): nothing is written outside the
        trace dir.
        """
        for d in (self.script_dir, self.records_root):
            if _is_link(d):
                raise OSError(f"{d} is a symbolic link; tltrace writes nothing through it")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._made_dirs.add(self._run_dir)

    def _dir(self, path: str) -> None:
        if path not in self._made_dirs:
            os.makedirs(path, exist_ok=True)
            self._made_dirs.add(path)

    # -- texts -------------------------------------------------------------
    # The per-pass path: it runs twice a pass while holding the GIL that the compiling threads
    # wait for, so a new text is only encoded into a buffer; the buffer goes to the pack in one
    # write before the record naming it is logged (append_record), or when it grows large.
    def put_text(self, text: str, digest: str | None = None, utf8: bytes | None = None) -> str:
        """Store `text` once in the run's pack and return its hash (`utf8`: its UTF-8, surrogatepass,
        where the caller has it already)."""
        digest = digest or text_hash(text)
        if digest in self._known:
            return digest
        with self._lock:
            if digest in self._known:
                return digest
            data = utf8 if utf8 is not None else text.encode("utf-8", "surrogatepass")
            # Deflated with the text stored before it as the dictionary (format/pack.py: a pass's output
            # is mostly its input), in chains of pack.CHAIN at most: an eighth of the blocks.
            base = self._base if self._chain < CHAIN - 1 else None
            packed = packed_entry(digest, data, base)
            self._chain = self._chain + 1 if packed[:1] == b"D" else 0
            self._base = (digest, data)
            self._buf.append(packed)
            self._buffered += len(data)
            self._known[digest] = len(data)
            if self._buffered >= _FLUSH_AT:
                self._flush()
        return digest

    def text(self, digest: str | None) -> str | None:
        """Return a text this run stored (read back from its pack), or None."""
        if not digest or digest not in self._known:
            return None
        with self._lock:
            self._flush()
        found = pack.read(self.run_dir / PACK)
        return found.text(digest, errors="replace") if found is not None else None

    def flush(self) -> None:
        """Write the buffered texts to the pack (one write)."""
        if self._buf:
            with self._lock:
                self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        chunk = b"".join(self._buf)
        self._buf.clear()
        self._buffered = 0
        if self._pack_fd is None:
            self._pack_fd = _open_append(self._pack_path)
            if os.fstat(self._pack_fd).st_size == 0:
                chunk = MAGIC + chunk
        _write_all(self._pack_fd, chunk)
        self.bytes_written += len(chunk)
        step("append", self._pack_path)

    def write_plain(self, rel: str, text: str) -> None:
        """Write `rel` (inside the run dir) as a plain file, atomically, not in the pack.

        For the files read as files (the reproducer's JSON, rerun/capture.py) and a provisional
        text rewritten later.
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
        if self._buf:
            with self._lock:
                self._flush()  # the texts a record names are on disk before the record
        if self._log_fd is None:
            self._log_fd = _open_append(self.run_dir / RECORDS_LOG)
        text = record.full_json()
        self._logged[id(record)] = (record, text)
        line = (text + "\n").encode("ascii")  # ensure_ascii: JSON's escapes
        _write_all(self._log_fd, line)  # one write a record, as a flushed line was
        self.bytes_written += len(line)

    def write_manifest(self, manifest: RunManifest) -> None:
        """Atomically (re)write manifest.json; once complete, records.jsonl is redundant and goes."""
        text = manifest.dumps(self._records_json(manifest.records) if manifest.records else None)
        atomic_write_text(self.run_dir / MANIFEST, text)
        self.bytes_written += len(text)
        if manifest.status != RUNNING:
            self._logged.clear()  # the log's lines served the final manifest; a later rewrite encodes
            self.close()
            try:
                (self.run_dir / RECORDS_LOG).unlink()
            except OSError:
                pass

    def _records_json(self, records: tuple[PassRecord, ...]) -> list[str]:
        """Each record's JSON: the line logged for it, where it is that very record, else made now."""
        logged = self._logged
        out = []
        for r in records:
            hit = logged.get(id(r))
            out.append(hit[1] if hit is not None and hit[0] is r else r.full_json())
        return out

    def close(self) -> None:
        with self._lock:
            try:
                self._flush()
            finally:
                if self._pack_fd is not None:
                    os.close(self._pack_fd)
                    self._pack_fd = None
        if self._log_fd is not None:
            fd, self._log_fd = self._log_fd, None
            os.close(fd)


def _open_append(path: Path) -> int:
    """Open a run file to append to (never through a link: a link planted there is an OSError)."""
    return os.open(path, _APPEND, 0o644)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _is_link(path: Path) -> bool:
    return os.path.islink(path)
