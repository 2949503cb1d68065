"""Which working file belongs to which kernel variant: the registry, owner records, and the lineage rule.

A working file belongs to one kernel *variant* (the kernel's name plus its launch shape,
`variant.py`). Two records say who owns a file, so that no single damaged file can hand
one variant's edit to another:

  .codegen_kernels.json    the index: variant key -> file suffix ('' = the spec's names),
                           plus each variant's launch parts (for messages)
  .W.owner                 beside each working file set (one per suffix, e.g.
                           `.codegen_device.cpp.owner`): the variant key that owns it

The owner record is the authority; the index is rebuilt from owner records when it is
missing or damaged (and the run says so), and completed from them when it is stale. Owner
records are written durably (fsync'd), the index only atomically: a power loss that takes
the index's last writes costs nothing the owner records do not hold. A working file that
neither record claims (a damaged index and no owner record: a file from before owner
records) is never handed to anyone: its edit is said to be not applied, and the variant
gets a new file. Owner records are written before the index, so a kill between the two
leaves the owner record right and the index corrected on the next load.

Which file a variant compiles into:
1. a variant the registry knows keeps its file, in any order and in any thread;
2. a new variant of a kernel with exactly one known variant, whose file is not
   claimed by another variant in this invocation, continues that file (the kernel
   changed: a new block size, a new `--n`): the file is re-owned and the decision
   table (REGENERATED, SYNCED, CONFLICT) runs on it, as the spec says for one kernel;
3. any other new variant gets its own file: the first ever `codegen_device.cpp`, a
   further kernel `codegen_<kernel>_device.cpp`, a further variant of a kernel
   `codegen_<kernel>_<what differs>_device.cpp` (e.g. `_2048`, `_t64`, `_f16`).
Once a kernel has two variants (a thread pool, an autotuner), rule 2 no longer
applies to it: each launch shape keeps its own file for good.

Cost: every claim runs under one lock for the directory, so an autotuner's compiling
threads queue on it. A claim reads the index once (this process's copy while the file is
unchanged, `_View`), lists the directory only when the index changed under another writer
or a claim was killed, and removes killed writes' temp files only then (`_tidy`).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..format.names import is_safe_component, safe_component
from ..fs import safe_read
from ..fs.atomic import NEW_FILE_MODE, atomic_write, locked, remove_stale_temps
from . import files
from .variant import Variant, describe, file_label

SEP = "|"  # kernel name | variant hash, in registry keys
VERSION = 3

__all__ = ["Claim", "Entry", "Registry", "claim", "entries_of", "known_working_files", "load", "owner_path"]


@dataclass(frozen=True)
class Entry:
    """One variant and the suffix of its working files."""

    key: str
    suffix: str
    parts: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def kernel(self) -> str:
        return kernel_of_key(self.key)

    def describe(self, other: Entry | None = None) -> str:
        return describe(self.parts, other.parts if other is not None else None)


@dataclass
class Registry:
    """The registry as read: entries (corrected by owner records), problems to say, unowned files."""

    entries: dict[str, Entry]
    problems: list[str] = field(default_factory=list)
    unowned: set[str] = field(default_factory=set)  # suffixes on disk that no record claims
    damaged: bool = False
    dirty: bool = False  # the index on disk differs from `entries` (rebuilt or corrected)
    complete: bool = False  # no owner record names a file outside the index (as read or listed now)

    def taken(self) -> set[str]:
        return {e.suffix for e in self.entries.values()} | self.unowned


@dataclass(frozen=True)
class Claim:
    """The file a compile uses, and how it came to it."""

    suffix: str
    entry: Entry
    continued_from: Entry | None = None  # rule 2: the kernel's previous variant, whose file this continues
    created: bool = False  # first time this variant was registered
    warnings: tuple[str, ...] = ()


def kernel_of_key(key: str) -> str:
    return key.split(SEP, 1)[0].split("#", 1)[0]


def identity(kernel: str, variant: str | None) -> str:
    """Return the registry key of one kernel variant."""
    return f"{kernel}{SEP}{variant}" if variant else kernel


def owner_path(layout: files.Layout, suffix: str) -> Path:
    """The owner record of the working files with `suffix` (one for all roles)."""
    if not layout.custom and (suffix == "" or (suffix.startswith("_") and is_safe_component(suffix[1:]))):
        return layout.directory / f".{files.DEFAULT_STEM}{suffix}{files.EXT}.owner"
    return layout.directory / f".{layout.path_for(suffix, None).name}.owner"


def _read_json(path: Path) -> Any:
    """Return the JSON in `path`; None when absent; raise ValueError when damaged or not a file."""
    return _parse(path, _lstat(path))


def _lstat(path: Path) -> os.stat_result | None:
    """One lstat for "a link?", "there?" and "a file?"; None when absent (other errors raise, as
    `Path.is_symlink` does)."""
    try:
        return os.lstat(path)
    except OSError as exc:
        if exc.errno in files._ABSENT:
            return None
        raise


def _parse(path: Path, st: os.stat_result | None) -> Any:
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise ValueError("it is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("it is not a regular file")
    try:
        text = safe_read.read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(str(getattr(exc, "strerror", None) or exc)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None


def _suffix(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return "" if value == "" else "_" + safe_component(value.lstrip("_"), fallback="kernel")


def _parts(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, (str, int))}


def _owners(
    layout: files.Layout, skip: set[str] | frozenset[str] = frozenset()
) -> tuple[dict[str, tuple[str, dict[str, str]]], set[str], list[str]]:
    """Return suffix -> (key, parts) from owner records, the suffixes of working files on disk, problems.

    The owner records of the suffixes in `skip` are not read (the index's, when it is trusted).
    """
    owners: dict[str, tuple[str, dict[str, str]]] = {}
    on_disk: set[str] = set()
    problems: list[str] = []
    d = layout.directory
    try:
        names = sorted(p.name for p in d.iterdir()) if d.is_dir() else []
    except OSError:
        names = []
    present = set(names)
    for name in names:
        hit = layout.suffix_of(name)
        if hit is not None and name + ".original" in present:
            on_disk.add(hit[0])
    for suffix in sorted((on_disk | set(_owner_suffixes(layout, names))) - set(skip)):
        path = owner_path(layout, suffix)
        try:
            data = _read_json(path)
        except ValueError as exc:
            problems.append(f"{path.name} is damaged ({exc}); who owns {layout.path_for(suffix, None).name}")
            continue
        if data is None:
            continue
        key = data.get("key") if isinstance(data, dict) else None
        if not isinstance(key, str) or not key:
            problems.append(f"{path.name} names no variant")
            continue
        owners[suffix] = (key, _parts(data.get("parts")))
    return owners, on_disk, problems


def _owner_suffixes(layout: files.Layout, names: list[str]) -> list[str]:
    out = []
    for name in names:
        if name.startswith(".") and name.endswith(".owner"):
            inner = name[1 : -len(".owner")]
            hit = layout.suffix_of(inner)
            if hit is not None and (
                hit[1] is None if not layout.custom else layout.path_for(hit[0], None).name == inner
            ):
                out.append(hit[0])
    return out


def load(
    layout: files.Layout, *, verify: bool = True, cached: bool = False, index: tuple[Any, Any] | None = None
) -> Registry:
    """Read the index and the owner records (no writes); the owner records win where they disagree.

    `verify=False` trusts a healthy index for the files it lists and reads only the owner
    records of files it does not list (a new variant's claim; `claim` checks the one
    entry it acts on). `cached` (only under the registry lock, from `claim`): an index
    this process last saw, with no owner record outside it then, is not read nor is its
    directory listed again (see `_View`); `index`: what `_index` just returned, under the lock.
    """
    path = layout.registry_path
    problems: list[str] = []
    damaged = False
    entries: dict[str, Entry] = {}
    view = None
    try:
        data, view = index if index is not None else _index(layout) if cached else (_read_json(path), None)
    except ValueError as exc:
        data, damaged = None, True
        problems.append(f"{path} is damaged ({exc})")
    if data is not None:
        kernels = data.get("kernels") if isinstance(data, dict) else None
        if not isinstance(kernels, dict):
            damaged = True
            problems.append(f"{path} is damaged (no 'kernels' table)")
        else:
            variants = data.get("variants") if isinstance(data.get("variants"), dict) else {}
            used: set[str] = set()
            for key, value in kernels.items():
                suffix = _suffix(value)
                if suffix is None or suffix in used:
                    continue  # two keys on one file would fight over it: the first keeps it
                used.add(suffix)
                entries[str(key)] = Entry(str(key), suffix, _parts(variants.get(key)))
    trusted = (
        {e.suffix for e in entries.values()} if (not verify and data is not None and not damaged) else set()
    )
    if view is not None and view.complete and not verify and data is not None and not damaged:
        owners: dict[str, tuple[str, dict[str, str]]] = {}  # nothing outside the index, as last listed
        on_disk: set[str] = set()
        owner_problems: list[str] = []
    else:
        owners, on_disk, owner_problems = _owners(layout, trusted)
    problems += owner_problems
    reg = Registry(entries, problems, damaged=damaged)
    by_suffix = {e.suffix: e for e in entries.values()}
    for suffix, (key, parts) in owners.items():
        have = by_suffix.get(suffix)
        if have is not None and have.key == key:
            if parts and not have.parts:
                entries[key] = Entry(key, suffix, parts)
            continue
        if have is not None:
            del entries[have.key]
        old = entries.pop(key, None)
        if old is not None:
            by_suffix.pop(old.suffix, None)
        entries[key] = by_suffix[suffix] = Entry(key, suffix, parts or (have.parts if have else {}))
        reg.dirty = True
    missing = data is None and not damaged and bool(on_disk)
    if (damaged or missing) and entries:
        reg.dirty = True
    if damaged or missing:
        known = {e.suffix for e in entries.values()}
        reg.unowned = {s for s in on_disk if s not in known}
        if missing:
            problems.append(f"{path} is missing")
        if entries:
            problems.append("rebuilt from the working files' owner records")
    reg.complete = not problems  # every owner record found is in `entries` (the index once written)
    return reg


def _write(layout: files.Layout, reg: Registry) -> dict[str, Any] | None:
    """Write the index of `reg`; return what was written (None: nothing was)."""
    path = layout.registry_path
    st = _lstat(path)
    if (st is not None and stat.S_ISLNK(st.st_mode)) or (reg.damaged and not reg.entries):
        return None  # a damaged index with nothing to put in its place is left as evidence
    if reg.damaged and st is not None and stat.S_ISREG(st.st_mode):
        files.archive(path, 1)  # the damaged index is kept (as .N) for a look, never overwritten
        st = None
    data = {
        "version": VERSION,
        "kernels": {k: e.suffix for k, e in reg.entries.items()},
        "variants": {k: e.parts for k, e in reg.entries.items() if e.parts},
    }
    # Replaced atomically (a killed process leaves the old index or the new one) but not
    # fsync'd: the owner records, written durably and first, are the authority. An index a
    # power loss empties is said and rebuilt from them (`load`); one it leaves stale is
    # completed from them. Every compile of a new variant writes the index under the lock
    # that all compiles take, so an autotuner's compiles would queue for this disk flush.
    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8", "surrogatepass"), mode=_mode(st))
    return data


def _mode(st: os.stat_result | None) -> int | None:
    """The mode a rewrite of a file keeps (a new file's when there is none; None: let atomic_write stat it)."""
    if st is None:
        return NEW_FILE_MODE
    return st.st_mode & 0o7777 if stat.S_ISREG(st.st_mode) else None


def _write_owner(layout: files.Layout, entry: Entry, invocation: str | None = None) -> None:
    path = owner_path(layout, entry.suffix)
    st = _lstat(path)
    if st is not None and stat.S_ISLNK(st.st_mode):
        return
    data: dict[str, Any] = {"key": entry.key, "parts": entry.parts}
    if invocation:
        data["invocation"] = invocation  # the last invocation that compiled this variant (any process)
    files.write_atomic(path, json.dumps(data, indent=1) + "\n", mode=_mode(st))
    after = _lstat(path)
    if after is not None and stat.S_ISREG(after.st_mode):
        _owner_views[path] = (_sig(after), data)  # the next claim of this variant stats it only


def _owner_invocation(layout: files.Layout, suffix: str) -> str | None:
    """The invocation the owner record of `suffix` last names (None: none, or unreadable)."""
    try:
        data = _owner_record(owner_path(layout, suffix))
    except ValueError:
        return None
    value = data.get("invocation") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def claim(
    layout: files.Layout,
    kernel: str,
    variant: Variant | None,
    claimed: set[str] | None = None,
    invocation: str | None = None,
) -> Claim:
    """Return the working-file suffix of a kernel variant, registering it (rules 1-3 of the module doc).

    `claimed`: suffixes other compiles of this invocation hold (updated here, under the lock).
    `invocation`: its id, written in the owner record, so that the compiles of the
    invocation's other processes (children, ranks), which have claimed sets of their own,
    also see a file as taken in this invocation (rule 2 never moves it to another variant).
    """
    claimed = claimed if claimed is not None else set()
    key = identity(kernel, variant.key if variant else None)
    parts = dict(variant.parts) if variant else {}
    reg_path = layout.registry_path
    # The temp files a killed write of the index or an owner record left are removed as the
    # lock is taken, when its last holder was killed holding it (fs.atomic.locked).
    with locked(reg_path.with_name(reg_path.name + ".lock"), tidy=lambda: _tidy(layout)):
        try:
            pre: tuple[Any, _View | None] | None = _index(layout)
        except ValueError:
            pre = None  # damaged: `load` reads it again and says so
        fast = _known(layout, key, parts, pre)
        if fast is not None:  # the common case: one index stat and one owner record per compile
            hit, last = fast
            if invocation and last != invocation:
                try:  # best effort: a full disk must not cost the compile its working file
                    _write_owner(layout, hit, invocation)  # once per variant and invocation
                except OSError:
                    pass
            claimed.add(hit.suffix)
            return Claim(hit.suffix, hit)
        for verify in (False, True):
            reg = load(layout, verify=verify, cached=True, index=None if verify else pre)
            entry = reg.entries.get(key)
            continued = None
            created = False
            if entry is None and variant is not None and kernel in reg.entries:  # from before variants: adopt
                old = reg.entries.pop(kernel)
                entry = Entry(key, old.suffix, parts)
            elif entry is None:
                same = [e for e in reg.entries.values() if e.kernel == kernel]
                if (
                    variant is not None
                    and len(same) == 1
                    and same[0].suffix not in claimed
                    and (invocation is None or _owner_invocation(layout, same[0].suffix) != invocation)
                ):
                    continued = same[0]
                    del reg.entries[continued.key]
                    entry = Entry(key, continued.suffix, parts)
                else:
                    entry = Entry(key, _new_suffix(reg, kernel, parts, same), parts)
                    created = True
            elif parts and entry.parts != parts:
                entry = Entry(key, entry.suffix, parts)
                reg.dirty = True
            # The one file acted on must be owned as the index says (or by no record yet).
            acted = continued or (None if created else reg.entries.get(key))
            if verify or acted is None or _owner_key(layout, acted.suffix) in (None, acted.key):
                break
        assert entry is not None
        warnings = [_problem_line(layout, reg)] if reg.problems else []
        changed = reg.entries.get(key) != entry or reg.entries[key].parts != entry.parts
        reg.entries[key] = entry
        owner = _lstat(owner_path(layout, entry.suffix))
        if (
            changed
            or owner is None
            or not stat.S_ISREG(owner.st_mode)
            or (invocation and _owner_invocation(layout, entry.suffix) != invocation)
        ):
            _write_owner(layout, entry, invocation)  # the owner record first: it is the authority
        if changed or reg.dirty:
            _remember(layout, _write(layout, reg), reg.complete)
        elif reg.complete:
            _remember(layout, None, True)
        claimed.add(entry.suffix)
        return Claim(entry.suffix, entry, continued, created, tuple(warnings))


@dataclass
class _View:
    """This process's copy of an index as it last read or wrote it (under the registry lock).

    `sig` tells the file apart from any later one: (device, inode, size, mtime, ctime); every
    write of the index is a new file (temp file + rename). `complete`: when it was read or
    written, no owner record named a file outside it (a listing of the directory said so, or
    the view before did and only this process wrote since). Such a view spares a new
    variant's claim the directory listing (one system call per entry, each letting the GIL
    go) while the index is unchanged and the lock's last holder was not killed holding it
    (a claim killed between an owner record and the index: `_tidy` drops the view). Only
    this version's claims write owner records, each under the lock, and only for files the
    index they write names.
    """

    sig: tuple[int, ...]
    data: Any
    complete: bool = False


_views: dict[Path, _View] = {}  # by index path; each entry read and written under that index's lock


def _sig(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _index(layout: files.Layout) -> tuple[Any, _View | None]:
    """The index's JSON (as `_read_json`), and its view: re-read only when the file is another."""
    path = layout.registry_path
    st = _lstat(path)
    view = _views.get(path)
    if st is not None and view is not None and view.sig == _sig(st):
        return view.data, view
    _views.pop(path, None)
    data = _parse(path, st)
    if st is None:
        return None, None
    view = _views[path] = _View(_sig(st), data)
    return data, view


_owner_views: dict[Path, tuple[tuple[int, ...], Any]] = {}  # owner record -> (sig, JSON), as `_views`


def _owner_record(path: Path) -> Any:
    """An owner record's JSON (as `_read_json`; only under the registry lock): re-read only when
    the file is another than this process last read or wrote (any rewrite is a new file)."""
    st = _lstat(path)
    hit = _owner_views.get(path)
    if st is not None and hit is not None and hit[0] == _sig(st):
        return hit[1]
    _owner_views.pop(path, None)
    data = _parse(path, st)
    if st is not None:
        _owner_views[path] = (_sig(st), data)
    return data


def _remember(layout: files.Layout, written: dict[str, Any] | None, complete: bool) -> None:
    """Keep the view of the index just written (or, `written` None, of the one read) as complete or not."""
    path = layout.registry_path
    if written is None:
        view = _views.get(path)
        if view is not None:
            view.complete = complete
        return
    st = _lstat(path)
    if st is None or not stat.S_ISREG(st.st_mode):
        _views.pop(path, None)
        return
    _views[path] = _View(_sig(st), written, complete)


def _tidy(layout: files.Layout) -> None:
    """Run as the registry lock is taken after a holder was killed holding it: forget this process's
    view of the index, and remove the temp files a killed write of the index or an owner record left."""
    _views.pop(layout.registry_path, None)
    for path in [p for p in _owner_views if p.parent == layout.directory]:
        del _owner_views[path]
    try:
        names = os.listdir(layout.directory)
    except OSError:
        return
    targets = {layout.registry_path.name}
    for name in names:
        if name.startswith("..") and name.endswith(".tmp"):
            inner = name[1:].rsplit(".", 2)[0]  # `.<target>.<8 random>.tmp` -> <target>
            if inner.endswith(".owner") and _owner_suffixes(layout, [inner]):
                targets.add(inner)
    remove_stale_temps(layout.directory, sorted(targets))


def _owner_key(layout: files.Layout, suffix: str) -> str | None:
    """The key the owner record of `suffix` names; None when there is none; '?' when it is damaged."""
    try:
        data = _owner_record(owner_path(layout, suffix))
    except ValueError:
        return "?"
    if data is None:
        return None
    key = data.get("key") if isinstance(data, dict) else None
    return key if isinstance(key, str) else "?"


def _known(
    layout: files.Layout, key: str, parts: dict[str, str], index: tuple[Any, Any] | None
) -> tuple[Entry, str | None] | None:
    """Return the entry of a variant the index knows and its owner record confirms, and the
    invocation that record names; None: take the full path.

    `index`: the index as `_index` read it (None: damaged). Only a healthy index is trusted this way, and only for a key whose file's owner record
    names that very key (a record missing is written now: a file from before owner records).
    """
    if index is None:
        return None
    try:
        data = index[0]
        suffix = _suffix(data["kernels"][key]) if isinstance(data, dict) else None
        stored = _parts((data.get("variants") or {}).get(key))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if suffix is None or (parts and stored != parts):
        return None
    try:
        owner = _owner_record(owner_path(layout, suffix))
    except ValueError:
        return None
    entry = Entry(key, suffix, stored)
    if owner is None:
        _write_owner(layout, entry)
        return entry, None
    if not isinstance(owner, dict) or owner.get("key") != key:
        return None
    last = owner.get("invocation")
    return entry, last if isinstance(last, str) else None


def _new_suffix(reg: Registry, kernel: str, parts: dict[str, str], same: list[Entry]) -> str:
    taken = reg.taken()
    if not taken:
        return ""
    base = "_" + safe_component(kernel, fallback="kernel")
    if same:
        base += "_" + safe_component(file_label(parts, same[0].parts), fallback="variant")
    suffix, n = base, 2
    while suffix in taken:
        suffix, n = f"{base}_{n}", n + 1
    return suffix


def _problem_line(layout: files.Layout, reg: Registry) -> str:
    text = "; ".join(reg.problems)
    if reg.unowned:
        paths = [layout.path_for(x, r) for x in sorted(reg.unowned) for r in (*files.ROLES, None)]
        names = ", ".join(dict.fromkeys(p.name for p in paths if p.exists()))
        text += (
            f"; no record says which kernel owns {names}: tltrace leaves them alone and gives the "
            "kernels new files (an edit there is not applied; move it into the right file by hand)"
        )
    return text


def entries_of(layout: files.Layout) -> Registry:
    """Read-only view for reports (no writes, never raises for a bad directory)."""
    try:
        return load(layout)
    except (OSError, ValueError):
        return Registry({})


def known_working_files(layout: files.Layout) -> list[files.WorkingFile]:
    """Return every working file the records know of (existing on disk or as a baseline), and unowned ones."""
    reg = entries_of(layout)
    pairs: list[tuple[str | None, str, dict[str, str]]] = [
        (e.kernel or None, e.suffix, e.parts) for e in reg.entries.values()
    ]
    pairs += [(None, s, {}) for s in sorted(reg.unowned)]
    if not pairs:
        pairs = [(None, "", {})]
    out = []
    for kernel, suffix, parts in pairs:
        for role in (*files.ROLES, None):
            wf = files.WorkingFile(layout.path_for(suffix, role), kernel, role, describe(parts) or None)
            if any(p.exists() or p.is_symlink() for p in (wf.path, wf.original, wf.bak)):
                out.append(wf)
    return out
