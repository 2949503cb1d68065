"""The only module that touches working files: paths, locks, ordered writes, backups, the kernel registry.

Each working file `W` (e.g. `codegen_device.cpp`) has companions beside it:

  W.original        baseline: the codegen the working copy was last synced from
  W.latest          the newest codegen output, rewritten every run
  W.bak             newest backup of the working copy (CONFLICT, INIT-BACKUP)
  W.original.bak    newest backup of the baseline (CONFLICT)
  W.bak.N, W.original.bak.N   older backups; N grows with age of creation (1 = oldest)
  .W.lock           lock file: one reconcile transaction at a time, across threads and processes;
                    it holds `0` once its last holder let go normally (fs.atomic.locked's tidy)
  .W.journal        present only while a transaction of several writes runs (see below)

Nothing here ever deletes or overwrites a user's text: a backup slot that is taken is
renamed to the next free number first, and every write is temp file + rename.

Crash safety. A transaction is ordered so that a kill after any single step leaves
files the decision table reads as SYNCED, REGENERATED, CONFLICT or the same state
again, never as PATCHED with stale text: backups come first, then the working file,
then the baseline (a baseline that advanced before its working file would make the
old text look like an edit). When the working file does not exist the baseline comes
first (a missing working file is re-created from it). The journal names the action
in progress, so the run after a crash reports what the killed run never got to say;
temp files a killed write left behind are removed under the lock, by the next holder
after a killed one (the lock file does not say `0`), not by every compile.

Working files are never symbolic links: a link (e.g. into a source tree) is reported
and left alone, and nothing is read or written through it. Every file name derived
from the registry is a sanitised single component inside the layout's directory.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import check_codegen_output as check_codegen_output  # re-exported; it lives with the settings
from ..format.layout import DEFAULT_STEM, EXT
from ..format.layout import KERNEL_REGISTRY as REGISTRY_NAME
from ..format.names import is_safe_component
from ..fs import safe_read
from ..fs.atomic import atomic_write, locked, remove_stale_temps, step
from .decide import Action, Decision, decide

ROLES = ("device", "host")

FSYNC = True  # tests over thousands of steps turn this off; durability is not what they check

__all__ = [
    "Action",
    "Applied",
    "Layout",
    "Unreadable",
    "WorkingFile",
    "archive",
    "check_codegen_output",
    "insert_before_ext",
    "locked",
    "push_backup",
    "read_text",
    "reconcile",
    "write_atomic",
]


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
    label: str | None = None  # the variant, as a person reads it (e.g. "512"), when the kernel has several

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

    @property
    def journal(self) -> Path:
        return self.path.with_name(f".{self.path.name}.journal")

    def companions(self) -> tuple[Path, ...]:
        """W and every file a transaction may write (not the numbered backups)."""
        return (self.path, self.original, self.latest, self.bak, self.original_bak)

    def backups(self) -> list[Path]:
        """Return every backup of the working copy on disk, newest (.bak) first, then N descending."""
        return _family(self.bak)

    def baseline_backups(self) -> list[Path]:
        return _family(self.original_bak)

    def edited(self) -> bool:
        """Return True when W holds text that differs from its baseline (an edit waiting to be compiled)."""
        if self.path.is_symlink() or self.original.is_symlink():
            return False
        try:
            w, b = read_text(self.path), read_text(self.original)
        except Unreadable:
            return False
        return w is not None and b is not None and w != b


def _numbered(slot: Path) -> list[tuple[int, Path]]:
    pat = re.compile(re.escape(slot.name) + r"\.(\d+)$")
    out = []
    try:
        names = os.listdir(slot.parent)
    except OSError:
        return []
    for name in names:
        m = pat.match(name)
        if m:
            out.append((int(m.group(1)), slot.with_name(name)))
    return sorted(out)


def _family(slot: Path) -> list[Path]:
    out = [slot] if slot.exists() else []
    return out + [p for _, p in reversed(_numbered(slot))]


def _next_number(*slots: Path) -> int:
    """Return one more than the highest N of any `slot.N`: backups made together share a number."""
    return 1 + max((n for slot in slots for n, _ in _numbered(slot)), default=0)


def free_slot(slot: Path, number: int) -> Path:
    """Return `slot.N` for the first N >= number that is not taken (the one home of slot numbering)."""
    target = slot.with_name(f"{slot.name}.{number}")
    while target.exists() or target.is_symlink():
        number += 1
        target = slot.with_name(f"{slot.name}.{number}")
    return target


def _inside(path: Path, directory: Path) -> bool:
    return path.parent == directory and path.name not in ("", ".", "..") and "/" not in path.name


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
        if stem_suffix and not (stem_suffix.startswith("_") and is_safe_component(stem_suffix[1:])):
            raise ValueError(f"unsafe working-file suffix {stem_suffix!r}")
        if self.custom:
            base = insert_before_ext(self.device_path, stem_suffix) if stem_suffix else self.device_path
            path = insert_before_ext(base, "_host") if role == "host" else base
        else:
            stem = DEFAULT_STEM + stem_suffix
            path = self.directory / (f"{stem}_{role}{EXT}" if role in ROLES else f"{stem}{EXT}")
        if not _inside(path, self.directory):
            raise ValueError(f"working file {path} would leave {self.directory}")
        return path

    def suffix_of(self, name: str) -> tuple[str, str | None] | None:
        """Return (registry suffix, role) of a working file's name in `directory`; None for other names."""
        if not self.is_working_name(name):
            return None
        if self.custom:
            base, dot, ext = self.device_path.name.rpartition(".")
            if not dot or not base:
                base, ext = self.device_path.name, ""
            middle = name[len(base) : len(name) - (len(ext) + 1 if ext else 0)]
            role: str | None = "device"
            if middle.endswith("_host"):
                middle, role = middle[: -len("_host")], "host"
        else:
            middle, role = name[len(DEFAULT_STEM) : -len(EXT)], None
            for r in ROLES:
                if middle.endswith("_" + r):
                    middle, role = middle[: -len(r) - 1], r
                    break
        if middle and not (middle.startswith("_") and is_safe_component(middle[1:])):
            return None
        if not self.custom:
            return middle, role  # the default names round-trip by construction
        try:
            if self.path_for(middle, role).name != name:
                return None
        except ValueError:
            return None
        return middle, role

    def is_working_name(self, name: str) -> bool:
        """Return True when a file name in `directory` looks like one of this layout's working files."""
        if name.startswith("."):
            return False
        base, dot, ext = self.device_path.name.rpartition(".")
        if not dot or not base:
            base, ext = self.device_path.name, ""
        if self.custom:
            return name.startswith(base) and (
                name.endswith("." + ext) if ext else "." not in name[len(base) :]
            )
        return name.startswith(DEFAULT_STEM) and name.endswith(EXT)


# -- atomic writes and reads ---------------------------------------------------------------------------
def write_atomic(path: Path, text: str, mode: int | None = None) -> None:
    """Write `text` (UTF-8, exact bytes) to `path` through a temp file and a rename (durable:
    flushed before and after the rename, so a power loss keeps the old file or the new one).
    A missing directory is made (on that first write only: not a mkdir before every write).
    `mode`: the new file's permissions, when the caller knows them (else read from `path`)."""
    data = text.encode("utf-8", "surrogatepass")
    try:
        atomic_write(path, data, fsync=FSYNC, mode=mode)
    except FileNotFoundError:
        if path.parent.is_dir():
            raise
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data, fsync=FSYNC, mode=mode)


class Unreadable(Exception):
    """A file exists but holds no usable text (a directory, a link, bad permissions, not UTF-8)."""


def read_text(path: Path) -> str | None:
    """Return the text of `path` (exact, no newline translation), None when it does not exist."""
    if path.is_symlink():
        raise Unreadable(f"{path} is a symbolic link")
    try:
        data = safe_read.read_bytes(path)  # a FIFO or device is refused, never waited on
    except FileNotFoundError:
        return None
    except safe_read.NotAFile as exc:
        raise Unreadable(f"{path} is {exc.strerror}") from None
    except OSError as exc:
        raise Unreadable(f"cannot read {path} ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path} is not UTF-8 text (byte {exc.start})") from None


def _move(src: Path, dest: Path) -> None:
    os.replace(src, dest)
    step("rename", dest)


def push_backup(slot: Path, text: str, number: int) -> None:
    """Make `text` the newest backup in `slot`, first moving a taken slot to `slot.N` (never overwritten)."""
    if slot.exists() or slot.is_symlink():
        _move(slot, free_slot(slot, number))
    write_atomic(slot, text)


def archive(slot: Path, number: int) -> Path | None:
    """Move `slot` to its next free numbered name; return where it went."""
    if not slot.exists():
        return None
    target = free_slot(slot, number)
    _move(slot, target)
    return target


def clean_temps(wf: WorkingFile) -> None:
    """Remove temp files that a killed write of `wf` or its companions left (call under wf's lock)."""
    remove_stale_temps(wf.path.parent, [wf.path.name, wf.journal.name])


def transaction(wf: WorkingFile, *, tidy: bool = True) -> Any:
    """Hold `wf`'s lock for writes of it or its companions: the temp files a killed holder left are
    removed first (`clean_temps`), and only then (see `fs.atomic.locked`): one directory scan per
    killed write, not one per compile. `tidy=False`: no writes (a dry run); nothing is removed."""
    return locked(wf.lock_path, tidy=(lambda: clean_temps(wf)) if tidy else None)


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    step("unlink", path)


# -- the reconcile transaction ----------------------------------------------------------------------------
_QUIET = (Action.UNCHANGED, Action.SYNCED, Action.INIT)  # actions a recovered one is reported over


@dataclass(frozen=True)
class Applied:
    """What one reconcile transaction did on disk."""

    file: WorkingFile
    decision: Decision | None  # None when the working file could not be used at all
    compile_text: str
    warnings: tuple[str, ...] = ()
    backup: Path | None = None  # where the working copy was saved (CONFLICT, INIT-BACKUP)
    baseline_backup: Path | None = None
    recovered: Action | None = None  # the action a killed run was in the middle of, finished now
    failed: bool = False  # the decision could not be carried out; `compile_text` is the generated source
    unsaid: bool = False  # a done-journal waits for `settle` (after the notice is given)

    @property
    def tag_action(self) -> Action | None:
        """The action to report: the interrupted one when this run only finished its writes."""
        d = self.decision
        if d is None:
            return None
        if self.recovered is not None and d.action in _QUIET:
            return self.recovered
        return d.action


# A transaction that moved the user's text to a backup (CONFLICT, INIT-BACKUP) leaves its journal
# in place, marked done, until the caller has said so (`settle`): a kill after the last write
# but before the notice then still has the next run report it.
ANNOUNCED = (Action.CONFLICT, Action.INIT_BACKUP)
PROCESS_TOKEN = ""


def _new_token() -> None:
    global PROCESS_TOKEN
    PROCESS_TOKEN = f"{os.getpid()}-{os.urandom(6).hex()}"


_new_token()
os.register_at_fork(after_in_child=_new_token)  # a forked child is another process: its own token


def _read_journal(wf: WorkingFile) -> Action | None:
    """Return the action a killed transaction (or an unsaid one of another process) left; None when none."""
    try:
        if wf.journal.is_symlink():
            return None
        data = json.loads(safe_read.read_text(wf.journal))
        if data.get("done") and data.get("token") == PROCESS_TOKEN:
            return None  # this process's own transaction, being reported right now
        return Action(data.get("action"))
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def settle(wf: WorkingFile) -> None:
    """Remove the done-journal of this process's last transaction on `wf`, once its notice was given."""
    with locked(wf.lock_path):
        try:
            if wf.journal.is_symlink():
                return
            data = json.loads(safe_read.read_text(wf.journal))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("done") and data.get("token") == PROCESS_TOKEN:
            _unlink(wf.journal)


def _lstats(wf: WorkingFile) -> dict[Path, os.stat_result | None]:
    """Return each companion's lstat (None: absent): one call answers both "a link?" and "there?"."""
    out: dict[Path, os.stat_result | None] = {}
    for p in wf.companions():
        try:
            out[p] = os.lstat(p)
        except OSError as exc:
            if exc.errno not in _ABSENT:
                raise  # as Path.is_symlink and Path.exists raise it
            out[p] = None
    return out


_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)  # what pathlib reads as "not there"


def reconcile(wf: WorkingFile, generated: str) -> Applied:
    """Run the three-way decision for `wf` against `generated` as one locked, ordered transaction.

    Never raises for a bad working file: it warns, compiles `generated`, and leaves the bytes alone.
    """
    warnings: list[str] = []
    with transaction(wf):  # removes the temp files a killed transaction left
        st = _lstats(wf)
        links = [p for p, x in st.items() if x is not None and stat.S_ISLNK(x.st_mode)]
        if links:
            edit = " (an edit there is not applied)" if wf.path in links else ""
            warnings.append(
                f"{links[0]} is a symbolic link; tltrace neither reads nor writes through links, so "
                f"it compiled the generated source and left the link as it is{edit}. Use "
                "--codegen-output PATH to keep working files elsewhere"
            )
            return Applied(wf, None, generated, tuple(warnings), failed=True)
        interrupted = _read_journal(wf) if wf.journal.exists() else None
        managed_before = st[wf.latest] is not None
        try:
            write_atomic(wf.latest, generated)  # durable: resolve-conflict merges against it
        except OSError as exc:
            warnings.append(f"could not write {wf.latest} ({exc.strerror or exc})")
        try:
            working = read_text(wf.path)
        except Unreadable as exc:
            warnings.append(f"{exc}; compiling the generated source and leaving that file as it is")
            return Applied(wf, None, generated, tuple(warnings), failed=True)
        try:
            baseline = read_text(wf.original)
        except Unreadable as exc:
            moved = archive(wf.original, _next_number(wf.original)) if wf.original.is_file() else None
            if moved is None:
                warnings.append(f"{exc}; compiling the generated source")
                return Applied(wf, None, generated, tuple(warnings), failed=True)
            warnings.append(f"{exc}; moved it to {moved.name} and starting a new baseline")
            baseline = None
        if baseline is None and interrupted in (Action.INIT, Action.INIT_BACKUP) and working == generated:
            working = None  # our own half-finished initialisation, not a file of unknown origin
        elif baseline is None and working is not None and managed_before:
            warnings.append(
                f"{wf.original.name} is missing; {wf.path.name} is backed up before it is replaced"
            )
        d = decide(baseline, working, generated)
        backup = baseline_backup = None
        unsaid = False
        try:
            writes = (
                (d.backup_working and working is not None)
                + (d.backup_baseline and baseline is not None)
                + (d.baseline != baseline)
                + (d.working != working)
            )
            if writes > 1:
                write_atomic(wf.journal, json.dumps({"action": d.action.value}) + "\n")
            # Backups made together share one number; the directory is listed only when one is made.
            backs = (d.backup_working and working is not None) or (d.backup_baseline and baseline is not None)
            number = _next_number(wf.bak, wf.original_bak) if backs else 0
            if d.backup_working and working is not None:
                push_backup(wf.bak, working, number)
                backup = wf.bak
            if d.backup_baseline and baseline is not None:
                push_backup(wf.original_bak, baseline, number)
                baseline_backup = wf.original_bak
            # An existing working file is written before its baseline; see the module docstring.
            if working is not None:
                if d.working != working:
                    write_atomic(wf.path, d.working)
                if d.baseline != baseline:
                    write_atomic(wf.original, d.baseline)
            else:
                if d.baseline != baseline:
                    write_atomic(wf.original, d.baseline)
                write_atomic(wf.path, d.working)
            said = interrupted if interrupted is not None and d.action in _QUIET else d.action
            if said in ANNOUNCED:
                done = {"action": said.value, "done": True, "token": PROCESS_TOKEN}
                write_atomic(wf.journal, json.dumps(done) + "\n")
                unsaid = True
            elif interrupted is not None or writes > 1:
                _unlink(wf.journal)
        except OSError as exc:
            edit = (
                f"; the edit in {wf.path} is not applied"
                if working is not None and working != baseline and baseline is not None
                else ""
            )
            warnings.append(
                f"could not update {wf.path} ({exc.strerror or exc}); compiling the generated source{edit}"
            )
            return Applied(wf, d, generated, tuple(warnings), backup, baseline_backup, failed=True)
        return Applied(
            wf,
            d,
            d.compile_text,
            tuple(warnings),
            backup,
            baseline_backup,
            recovered=interrupted,
            unsaid=unsaid,
        )
