"""Retention: the one pruner. Every removal of traces is a `Policy` applied here (`apply`):

- `tltrace run --keep N` and `enable(keep=N)`, at the invocation's end: `Policy.keep_newest`
  (`prune`, from the lifecycle's end sequence, tracing/invocation.py);
- `tltrace clean --keep/--older-than/--all`: `clean`, which checks the options and builds one;
- the pytest plugin's `--tltrace-only-failed`: `Policy.passing_test`, a passing test's
  invocation, and its script directory whole when the test made it and nothing else is left.

The unit is the invocation (one `tltrace run`, one watch rerun, one enable()..disable()
span, one test under `pytest --tltrace`): `keep` N keeps the newest N invocations of a script
with all their compiles. Runs written before invocations were recorded (schema 1) count as one
invocation each.

What is never removed:
- a compile of an invocation that is still running, in this process or another: a run
  still being written, a run whose writer process (pid, start time, host) still lives,
  or an invocation whose writers hold its lock (`format/liveness.py`), in any process
  on any host: its lock goes with the process, so a run killed anywhere can go;
- anything but `run_*` directories under `.run_records`, the records of invocations
  that traced no compile (`inv_*.json`, format/empty.py) and the unreferenced stored
  texts in `.run_records/.objects` (working files, baselines and backups stay), except
  with `Policy.whole_dir`: a script directory its named invocations made, once every
  invocation in it is gone and no writer holds a lock there, goes whole (its index,
  working files), as if it had never been made;
- anything reached through a symbolic link: a linked `.run_records` or `.objects` is
  not tltrace's own, so nothing is removed or garbage-collected through it.

What was removed is what is reported: a deletion that fails (read-only file system,
permissions) leaves the run listed under `failed`, not `removed`.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..format import empty, liveness
from ..format import launches as launch_log
from ..format.ids import is_run_name
from ..format.layout import OBJECTS, RUN_RECORDS, is_object_name, is_object_temp
from ..format.records import CUT_SHORT, RUNNING
from ..format.writer import writer_alive, writer_token
from .invocations import invocation_key
from .loading import Run, load_run, start_of, tree_bytes, writer_may_live

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_TMP_GRACE_S = 3600.0  # a temporary this young may be a write in progress


def parse_duration(text: str) -> float:
    """Return seconds for a duration such as '30s', '10m', '2h', '7d', '1w', '1d12h' (bare number: days)."""
    t = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", t):
        return float(t) * 86400
    pos, total = 0, 0.0
    for m in _PART.finditer(t):
        if t[pos : m.start()].strip():
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or t[pos:].strip():
        raise UsageError(f"--older-than {text!r} is not a duration; use e.g. 30m, 12h, 7d, 2w or 1d12h")
    return total


@dataclass
class CleanResult:
    """What the pruner removed (or would remove, in a dry run), and what it could not."""

    removed: list[Path] = field(default_factory=list)
    cut: dict[Path, str] = field(default_factory=dict)  # of `removed`, those a dead process cut short: status
    kept: int = 0  # runs left in place
    skipped_active: list[Path] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # one line each: what could not be removed, and why
    objects_removed: int = 0
    bytes_freed: int = 0
    dry_run: bool = False
    invocations_removed: int = 0
    invocations_kept: int = 0

    def to_json(self) -> dict:
        return {
            "removed": [str(p) for p in self.removed],
            "cut": {str(p): status for p, status in self.cut.items()},
            "kept": self.kept,
            "skipped_active": [str(p) for p in self.skipped_active],
            "failed": list(self.failed),
            "objects_removed": self.objects_removed,
            "bytes_freed": self.bytes_freed,
            "dry_run": self.dry_run,
            "invocations_removed": self.invocations_removed,
            "invocations_kept": self.invocations_kept,
        }


@dataclass(frozen=True)
class Policy:
    """Which invocations of a script go: the one vocabulary of every pruning (see the module's docstring).

    An invocation goes when any rule says so: beyond the newest `keep` (None: no count),
    started over `older_than` seconds ago, `remove_all`, or named in `invocations`. `live`
    names invocations kept whatever the rules say (the caller's own, still open). With
    `whole_dir`, the script directory was made by the `invocations` named: once nothing else
    is left in it, it goes whole.
    """

    keep: int | None = None
    older_than: float | None = None
    remove_all: bool = False
    invocations: frozenset[str] = frozenset()
    live: frozenset[str] = frozenset()
    whole_dir: bool = False

    @classmethod
    def keep_newest(cls, keep: int, live: set[str] | frozenset[str] = frozenset()) -> Policy:
        """`run --keep N`, `enable(keep=N)`: the newest N invocations stay (`live` too)."""
        return cls(keep=keep, live=frozenset(live))

    @classmethod
    def passing_test(cls, invocation: str, *, made_dir: bool) -> Policy:
        """`pytest --tltrace-only-failed`: a passing test's invocation goes (its script dir too, if it made it)."""
        return cls(invocations=frozenset({invocation}), whole_dir=made_dir)

    @property
    def removes(self) -> bool:
        """True when some rule may remove something."""
        return (
            self.keep is not None or self.older_than is not None or self.remove_all or bool(self.invocations)
        )


def apply(
    script_dirs: list[Path] | tuple[Path, ...],
    policy: Policy,
    *,
    dry_run: bool = False,
    now: float | None = None,
    force: bool = False,
) -> CleanResult:
    """Remove what `policy` says from each script dir; return what was removed (the one pruner).

    What may still run is never removed (the module's docstring); `force` also removes runs
    from before the liveness lock whose writer was on another host.
    """
    now = time.time() if now is None else now
    result = CleanResult(dry_run=dry_run)
    for sd in script_dirs:
        _clean_script(Path(sd), result, policy, dry_run=dry_run, now=now, force=force)
    return result


@dataclass
class _OnDisk:
    key: str
    started: float
    runs: list[Run] = field(default_factory=list)
    live: bool = False
    marker: Path | None = None  # the record of an invocation that traced no compile (format/empty.py)


def clean(
    script_dirs: list[Path] | tuple[Path, ...],
    *,
    keep: int | None = None,
    older_than: float | None = None,
    remove_all: bool = False,
    dry_run: bool = False,
    now: float | None = None,
    live: set[str] | frozenset[str] | None = None,
    force: bool = False,
    invocations: set[str] | frozenset[str] | None = None,
) -> CleanResult:
    """Remove invocations of each script dir: beyond the newest `keep`, started over `older_than` s ago, or all.

    `invocations` names invocations that go whatever their age (the pytest plugin's
    `--tltrace-only-failed`: a passing test's); the rules below keep what may still run.

    `keep` 0 means what it means on `tltrace run` and `enable()`: no limit (keep all).

    With both limits an invocation goes when either says so. `live` names invocations
    to keep whatever the limits say (the caller's own). An invocation whose writers still
    hold its lock is never removed; `force` also removes runs from before that lock whose
    writer was on another host (they cannot be asked). Returns what was removed.
    """
    if keep is not None and keep < 0:
        raise UsageError("--keep takes a count of 0 or more (0 keeps every invocation)")
    if keep == 0:
        keep = None  # one meaning everywhere (run, enable, clean): 0 sets no limit, it keeps all
        if older_than is None and not remove_all:
            raise UsageError(
                "--keep 0 keeps every invocation (as on 'tltrace run'), so nothing would go; "
                "say --all to remove every run, or --keep N to keep the newest N"
            )
    policy = Policy(
        keep=keep,
        older_than=older_than,
        remove_all=remove_all,
        invocations=frozenset(invocations or ()),
        live=frozenset(live or ()),
    )
    if not policy.removes:
        raise UsageError("say what to remove: --keep N, --older-than DURATION, or --all")
    return apply(script_dirs, policy, dry_run=dry_run, now=now, force=force)


def prune(
    script_dir: Path, keep: int, *, live: set[str] | frozenset[str] | None = None
) -> CleanResult | None:
    """Keep the newest `keep` invocations of one script (0 keeps all); return what went, or None."""
    if keep <= 0:
        return None
    return apply([script_dir], Policy.keep_newest(keep, live or frozenset()))


def _own_dir(path: Path) -> bool:
    """True when `path` is a real directory (not a symbolic link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _clean_script(
    sd: Path,
    result: CleanResult,
    policy: Policy,
    *,
    dry_run: bool,
    now: float,
    force: bool = False,
) -> None:
    keep, older_than, remove_all, named = (
        policy.keep,
        policy.older_than,
        policy.remove_all,
        policy.invocations,
    )
    root = sd / RUN_RECORDS
    if not os.path.lexists(root):
        return
    if not _own_dir(sd) or not _own_dir(root):
        link = sd if not _own_dir(sd) else root
        result.failed.append(
            f"{link}: not a directory of tltrace's own (a symbolic link?); nothing removed there"
        )
        return
    invocations = _invocations(root, set(policy.live), force)
    doomed: list[_OnDisk] = []
    for i, inv in enumerate(invocations):
        newer = len(invocations) - 1 - i  # how many invocations are newer than this one
        go = remove_all or (keep is not None and newer >= keep) or inv.key in named
        if older_than is not None and now - inv.started > older_than:
            go = True
        if go:
            doomed.append(inv)
    total_runs = sum(len(inv.runs) for inv in invocations)
    gone = inv_removed = 0
    emptied: set[str] = set()
    for inv in doomed:
        if inv.live:
            result.skipped_active.extend(r.path for r in inv.runs)
            continue
        inv_gone = 0
        if inv.marker is not None and not dry_run:
            try:
                os.unlink(inv.marker)
            except FileNotFoundError:
                pass
            except OSError as exc:
                result.failed.append(f"{inv.marker}: {exc.strerror or exc}")
                continue
        for run in inv.runs:
            if run.status in CUT_SHORT:  # a dead process cut it (a live one's invocation is kept)
                result.cut[run.path] = run.status
            if dry_run:
                result.removed.append(run.path)
                inv_gone += 1
                continue
            freed, error = _remove_run(run.path)
            if error is None:
                result.removed.append(run.path)
                result.bytes_freed += freed
                inv_gone += 1
            else:
                result.cut.pop(run.path, None)  # not removed: said in `failed`
                result.failed.append(f"{run.path}: {error}")
        gone += inv_gone
        if inv_gone == len(inv.runs):
            inv_removed += 1
            emptied.add(inv.key)
            if not dry_run:
                _remove_launch_log(root, inv.key, result)
                _remove_saved_inputs(root, inv.key, result)
    result.kept += total_runs - gone
    result.invocations_removed += inv_removed
    result.invocations_kept += len(invocations) - inv_removed
    if not dry_run:  # lock files of invocations with no run left (removed by hand, or above)
        liveness.forget_others(root, {inv.key for inv in invocations} - emptied)
    if gone and not dry_run:
        n, freed, errors = collect_garbage(root)
        result.objects_removed += n
        result.bytes_freed += freed
        result.failed.extend(errors)
    if policy.whole_dir and not dry_run and emptied == {inv.key for inv in invocations}:
        _remove_made_dir(sd, root, result)


def _remove_launch_log(root: Path, invocation: str, result: CleanResult) -> None:
    """Remove the launch log of a removed invocation (run --launches; format/launches.py), if any."""
    try:
        path = root / launch_log.file_name(invocation)
        freed = path.lstat().st_size
        os.unlink(path)
    except (ValueError, FileNotFoundError):
        return
    except OSError as exc:
        result.failed.append(f"{root / invocation}: {exc.strerror or exc}")
        return
    result.bytes_freed += freed


def _remove_saved_inputs(root: Path, invocation: str, result: CleanResult) -> None:
    """Remove the saved launch arguments of a removed invocation (run --save-inputs), if any."""
    try:
        path = root / launch_log.inputs_name(invocation)
        if not stat.S_ISDIR(path.lstat().st_mode):  # not a directory of ours (a link): left alone
            return
    except (ValueError, FileNotFoundError):
        return
    for entry in os.scandir(path):
        try:
            if entry.is_file(follow_symlinks=False):
                result.bytes_freed += entry.stat(follow_symlinks=False).st_size
            os.unlink(entry.path)
        except OSError as exc:
            result.failed.append(f"{entry.path}: {exc.strerror or exc}")
    try:
        os.rmdir(path)
    except OSError as exc:
        result.failed.append(f"{path}: {exc.strerror or exc}")


def _remove_made_dir(sd: Path, root: Path, result: CleanResult) -> None:
    """Remove a script dir its removed invocations made, when its records hold nothing else.

    Something left (a run, a held lock, a file tltrace does not name) keeps the directory:
    another writer may be starting there.
    """
    try:
        left = [n for n in os.listdir(root) if n != OBJECTS]
    except OSError:
        return
    if left:
        return
    freed = tree_bytes(sd, unique=True)
    errors: list[str] = []

    def onerror(func, p, exc_info) -> None:  # noqa: ANN001
        errors.append(f"{p}: {getattr(exc_info[1], 'strerror', None) or exc_info[1]}")

    shutil.rmtree(sd, onerror=onerror)  # never follows a link inside; sd itself is a real dir (checked)
    if os.path.lexists(sd):
        result.failed.append(errors[0] if errors else f"{sd}: could not be removed")
    else:
        result.bytes_freed += freed


def _invocations(root: Path, live: set[str], force: bool = False) -> list[_OnDisk]:
    """Return the script's invocations, oldest first, each with its runs and whether it may still run."""
    me = writer_token()
    by_key: dict[str, _OnDisk] = {}
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    for e in entries:
        if not is_run_name(e.name) or not e.is_dir(follow_symlinks=False):
            continue  # a link named run_* is not a run of ours: never followed, never removed
        run = load_run(Path(e.path))
        m = run.manifest
        key = (m.invocation if m is not None else None) or run.run_id
        started = start_of(run) or _mtime(e.path)  # absolute: time zones never reorder invocations
        inv = by_key.setdefault(key, _OnDisk(key, started))
        inv.started = min(inv.started, started)
        inv.runs.append(run)
        if key in live or _run_live(run, me, force):
            inv.live = True
    for path, rec in empty.read_all(root):  # invocations that traced no compile count as invocations
        if rec.invocation in by_key:
            by_key[rec.invocation].marker = path  # goes with its runs
        else:
            by_key[rec.invocation] = _OnDisk(
                rec.invocation, rec.started or _mtime(str(path)), live=rec.invocation in live, marker=path
            )
    return sorted(by_key.values(), key=lambda i: (i.started, i.key))


def _run_live(run: Run, me: dict, force: bool = False) -> bool:
    """True when the run may still be written, or its invocation may still be running elsewhere.

    The invocation's lock decides (`format/liveness.py`); for runs from before it, the
    writer's pid, start and host, where `force` drops a writer on another host.
    """
    held = liveness.state(run.path.parent, invocation_key(run))
    if held is not None:
        return held
    if run.manifest is None:  # no manifest yet: a run just being created counts while its pid lives
        return writer_alive(None, run.run_id)
    if run.status == RUNNING and writer_may_live(run.path, run.manifest, force=force):
        return True
    writer = run.manifest.writer
    if isinstance(writer, dict) and {k: writer.get(k) for k in me} != me:
        return writer_may_live(run.path, run.manifest, force=force)  # another process: it may go on
    return False


def _mtime(path: str) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return time.time()


def _remove_run(path: Path) -> tuple[int, str | None]:
    """Remove one run directory without following links; return (bytes freed, error or None)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return 0, None  # already gone (another clean)
    except OSError as exc:
        return 0, exc.strerror or str(exc)
    if not stat.S_ISDIR(st.st_mode):
        return 0, "not a directory; left alone"
    freed = tree_bytes(path, unique=True)
    errors: list[str] = []

    def onerror(func, p, exc_info) -> None:  # noqa: ANN001
        exc = exc_info[1]
        errors.append(f"{getattr(exc, 'strerror', None) or exc}")

    shutil.rmtree(path, onerror=onerror)  # rmtree never follows symbolic links inside the tree
    if os.path.lexists(path):
        return 0, errors[0] if errors else "could not be removed"
    return freed, None


def collect_garbage(records_root: Path) -> tuple[int, int, list[str]]:
    """Remove stored texts that no run links to any more; return (count, bytes, failures).

    Only files named as the store names them, in a real `.objects` directory, are
    candidates; a linked `.objects` is not tltrace's own and is left alone.
    """
    objects = Path(records_root) / OBJECTS
    if not os.path.lexists(objects):
        return 0, 0, []
    if not _own_dir(objects):
        return (
            0,
            0,
            [f"{objects}: not a directory of tltrace's own (a symbolic link?); not garbage-collected"],
        )
    removed = freed = 0
    errors: list[str] = []
    now = time.time()
    try:
        entries = list(os.scandir(objects))
    except OSError as exc:
        return 0, 0, [f"{objects}: {exc.strerror or exc}"]
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if is_object_name(e.name):
            if st.st_nlink > 1:
                continue
        elif not (is_object_temp(e.name) and now - st.st_mtime > _TMP_GRACE_S):
            continue
        try:
            os.unlink(e.path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            if not errors:
                errors.append(f"{objects}: cannot remove stored texts ({exc.strerror or exc})")
            continue
        removed += 1
        freed += st.st_size
    return removed, freed, errors
