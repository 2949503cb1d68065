"""The only module that touches working files: paths, locks, atomic writes, backups, the kernel registry.

Each working file `W` (e.g. `codegen_device.cpp`) has companions beside it:

  W.original        baseline: the codegen the working copy was last synced from
  W.latest          the newest codegen output, rewritten every run
  W.bak             newest backup of the working copy (CONFLICT, INIT-BACKUP)
  W.original.bak    newest backup of the baseline (CONFLICT)
  W.bak.N, W.original.bak.N   older backups; N grows with age of creation (1 = oldest)
  .W.lock           lock file: one reconcile transaction at a time, across threads and processes

Nothing here ever deletes or overwrites a user's text: a backup slot that is taken
is renamed to the next free number first, and every write is temp-file + rename.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .._atomic import atomic_write
from .decide import Action, Decision, decide

DEFAULT_STEM = "codegen"
EXT = ".cpp"
REGISTRY_NAME = ".codegen_kernels.json"
ROLES = ("device", "host")

FSYNC = True  # tests over thousands of steps turn this off; durability is not what they check

_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


# -- paths -------------------------------------------------------------------------------------------
def insert_before_ext(path: Path, extra: str) -> Path:
    """Return `path` with `extra` before the last extension: foo.cpp -> foo_host.cpp, foo -> foo_host."""
    base, dot, ext = path.name.rpartition(".")
    if not dot or not base:
        return path.with_name(path.name + extra)
    return path.with_name(f"{base}{extra}.{ext}")


@dataclass(frozen=True)
class WorkingFile:
    """One working file and its companions (paths only)."""

    path: Path
    kernel: str | None = None
    role: str | None = None

    def sibling(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)

    @property
    def original(self) -> Path:
        return self.sibling(".original")

    @property
    def latest(self) -> Path:
        return self.sibling(".latest")

    @property
    def bak(self) -> Path:
        return self.sibling(".bak")

    @property
    def original_bak(self) -> Path:
        return self.sibling(".original.bak")

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.lock")

    def backups(self) -> list[Path]:
        """Return every backup of the working copy on disk, newest (.bak) first, then N descending."""
        return _family(self.bak)

    def baseline_backups(self) -> list[Path]:
        return _family(self.original_bak)


def _family(slot: Path) -> list[Path]:
    numbered = []
    pat = re.compile(re.escape(slot.name) + r"\.(\d+)$")
    if slot.parent.is_dir():
        for p in slot.parent.iterdir():
            m = pat.match(p.name)
            if m:
                numbered.append((int(m.group(1)), p))
    out = [slot] if slot.exists() else []
    return out + [p for _, p in sorted(numbered, reverse=True)]


@dataclass(frozen=True)
class Layout:
    """Where one script's working files live: the device file of the first kernel, and the registry."""

    device_path: Path  # working file of the first kernel's device role
    legacy_path: Path  # role None (a codegen call with no device/host label)
    custom: bool = False  # --codegen-output was given

    @classmethod
    def default(cls, script_dir: Path) -> Layout:
        d = Path(script_dir)
        return cls(d / f"{DEFAULT_STEM}_device{EXT}", d / f"{DEFAULT_STEM}{EXT}")

    @classmethod
    def custom_path(cls, path: Path) -> Layout:
        p = Path(path)
        return cls(p, p, custom=True)

    @property
    def directory(self) -> Path:
        return self.device_path.parent

    @property
    def registry_path(self) -> Path:
        if self.custom:
            return self.directory / f".{self.device_path.name}.kernels.json"
        return self.directory / REGISTRY_NAME

    def path_for(self, stem_suffix: str, role: str | None) -> Path:
        """Return the working file for a kernel's registry suffix ('' = the first kernel) and role."""
        if self.custom:
            base = insert_before_ext(self.device_path, stem_suffix) if stem_suffix else self.device_path
            return insert_before_ext(base, "_host") if role == "host" else base
        d = self.directory
        stem = DEFAULT_STEM + stem_suffix
        if role in ROLES:
            return d / f"{stem}_{role}{EXT}"
        return d / f"{stem}{EXT}"

    def is_working_name(self, name: str) -> bool:
        """Return True when a file name in `directory` looks like one of this layout's working files."""
        if name.startswith("."):
            return False
        base, dot, ext = self.device_path.name.rpartition(".")
        if not dot or not base:
            base, ext = self.device_path.name, ""
        if self.custom:
            return name.startswith(base) and (name.endswith("." + ext) if ext else "." not in name[len(base):])
        return name.startswith(DEFAULT_STEM) and name.endswith(EXT)


# -- locks and atomic writes ---------------------------------------------------------------------------
@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path`: a threading lock in-process, fcntl.flock across processes."""
    key = str(lock_path.absolute())
    with _thread_locks_guard:
        tlock = _thread_locks.setdefault(key, threading.Lock())
    with tlock:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8, exact bytes) to `path` through a temp file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"), fsync=FSYNC)


class Unreadable(Exception):
    """A file exists but holds no usable text (a directory, bad permissions, not UTF-8)."""


def read_text(path: Path) -> str | None:
    """Return the text of `path` (exact, no newline translation), None when it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise Unreadable(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise Unreadable(f"cannot read {path} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path} is not UTF-8 text (byte {exc.start})") from None


def _next_number(*slots: Path) -> int:
    n = 0
    for slot in slots:
        for p in _family(slot):
            if p != slot:
                n = max(n, int(p.name.rsplit(".", 1)[1]))
    return n + 1


def push_backup(slot: Path, text: str, number: int) -> None:
    """Make `text` the newest backup in `slot`, first moving a taken slot to `slot.N` (never overwritten)."""
    if slot.exists() or slot.is_symlink():
        target = slot.with_name(f"{slot.name}.{number}")
        while target.exists():
            number += 1
            target = slot.with_name(f"{slot.name}.{number}")
        os.replace(slot, target)
    write_atomic(slot, text)


def archive(slot: Path, number: int) -> Path | None:
    """Move `slot` to its next free numbered name; return where it went."""
    if not slot.exists():
        return None
    target = slot.with_name(f"{slot.name}.{number}")
    while target.exists():
        number += 1
        target = slot.with_name(f"{slot.name}.{number}")
    os.replace(slot, target)
    return target


# -- the reconcile transaction ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Applied:
    """What one reconcile transaction did on disk."""

    file: WorkingFile
    decision: Decision | None  # None when the working file could not be used at all
    compile_text: str
    warnings: tuple[str, ...] = ()
    backup: Path | None = None  # where the working copy was saved (CONFLICT, INIT-BACKUP)
    baseline_backup: Path | None = None


def reconcile(wf: WorkingFile, generated: str) -> Applied:
    """Run the three-way decision for `wf` against `generated` as one locked transaction.

    Never raises for a bad working file: it warns, compiles `generated`, and leaves the bytes alone.
    """
    warnings: list[str] = []
    with locked(wf.lock_path):
        managed_before = wf.latest.exists()
        try:
            write_atomic(wf.latest, generated)
        except OSError as exc:
            warnings.append(f"could not write {wf.latest} ({exc.strerror or exc})")
        try:
            working = read_text(wf.path)
        except Unreadable as exc:
            warnings.append(f"{exc}; compiling the generated source and leaving that file as it is")
            return Applied(wf, None, generated, tuple(warnings))
        try:
            baseline = read_text(wf.original)
        except Unreadable as exc:
            moved = archive(wf.original, _next_number(wf.original)) if wf.original.is_file() else None
            if moved is None:
                warnings.append(f"{exc}; compiling the generated source")
                return Applied(wf, None, generated, tuple(warnings))
            warnings.append(f"{exc}; moved it to {moved.name} and starting a new baseline")
            baseline = None
        if baseline is None and working is not None and managed_before:
            warnings.append(f"{wf.original.name} is missing; {wf.path.name} is backed up before it is replaced")
        d = decide(baseline, working, generated)
        backup = baseline_backup = None
        try:
            number = _next_number(wf.bak, wf.original_bak)
            if d.backup_working and working is not None:
                push_backup(wf.bak, working, number)
                backup = wf.bak
            if d.backup_baseline and baseline is not None:
                push_backup(wf.original_bak, baseline, number)
                baseline_backup = wf.original_bak
            if d.baseline != baseline:
                write_atomic(wf.original, d.baseline)
            if d.working != working:
                write_atomic(wf.path, d.working)
        except OSError as exc:
            warnings.append(f"could not update {wf.path} ({exc.strerror or exc}); compiling the generated source")
            return Applied(wf, d, generated, tuple(warnings), backup, baseline_backup)
        return Applied(wf, d, d.compile_text, tuple(warnings), backup, baseline_backup)


# -- which file belongs to which kernel ---------------------------------------------------------------
def _load_registry(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text("utf-8"))
        kernels = data.get("kernels", {})
        return {str(k): str(v) for k, v in kernels.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _safe(name: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_+-]+", "_", name).strip("_")
    return text[:60] or "kernel"


def kernel_suffix(layout: Layout, kernel: str) -> str:
    """Return the stable file-name suffix of `kernel` ('' for the first kernel ever seen), recording it."""
    reg = layout.registry_path
    with locked(reg.with_name(reg.name + ".lock")):
        kernels = _load_registry(reg)
        if kernel in kernels:
            return kernels[kernel]
        taken = set(kernels.values())
        if not kernels:
            suffix = ""
        else:
            base = "_" + _safe(kernel)
            suffix, n = base, 2
            while suffix in taken:
                suffix, n = f"{base}_{n}", n + 1
        kernels[kernel] = suffix
        write_atomic(reg, json.dumps({"version": 1, "kernels": kernels}, indent=2) + "\n")
        return suffix


def working_file(layout: Layout, kernel: str, role: str | None) -> WorkingFile:
    """Return the working file of `kernel`'s `role`, registering the kernel on first sight."""
    suffix = kernel_suffix(layout, kernel)
    return WorkingFile(layout.path_for(suffix, role), kernel, role)


def known_working_files(layout: Layout) -> list[WorkingFile]:
    """Return every working file the registry knows of (existing on disk or as a baseline)."""
    kernels = _load_registry(layout.registry_path)
    if not kernels:
        kernels = {"": ""}
    out = []
    for kernel, suffix in kernels.items():
        for role in (*ROLES, None):
            wf = WorkingFile(layout.path_for(suffix, role), kernel or None, role)
            if wf.path.exists() or wf.original.exists() or wf.bak.exists():
                out.append(wf)
    return out


__all__ = [
    "Action", "Applied", "Layout", "Unreadable", "WorkingFile", "archive", "insert_before_ext",
    "known_working_files", "locked", "push_backup", "read_text", "reconcile", "working_file",
    "write_atomic",
]
