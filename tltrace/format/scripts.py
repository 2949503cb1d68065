"""Which directory under the trace dir belongs to which script.

A script's traces go to `<trace_dir>/<name>/`, `<name>` being the script's stem made
safe (`format/names.py`). Two scripts with one stem (`x/kernel.py`, `y/kernel.py`)
must not share it, so `<trace_dir>/.tltrace-scripts.json` maps each script's identity
(its real path, or `-m` module name) to its directory: the first script keeps the plain
name, a later one with the same name gets `<name>_2`, `<name>_3`, ... A program with no
path (`python -c`, an interactive session) has no identity to tell it apart and uses the
plain name. Every name read
from the registry is checked as a name from IR is (no separator, no leading dot), so a
doctored registry cannot point outside the trace dir; a bad entry is ignored.

A script claims its directory when tltrace first writes there (a run record, a working
file); looking one up (`tltrace show x/kernel.py`) never writes.

Ownership is also recorded in each script dir (`.tltrace-script.json`, the identity),
written before the registry, and it overrules the registry: a lost or damaged registry
is said and rebuilt from these records, and never hands one script's directory (and the
edits in its working files) to another. A used directory that no record claims is not
guessed at: a script then takes the next free name.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ..fs import safe_read
from ..fs.atomic import atomic_write, locked, remove_stale_temps
from .layout import KERNEL_REGISTRY, RUN_RECORDS, SCRIPTS_REGISTRY
from .names import is_safe_component, safe_component, script_name_from_argv

REGISTRY = SCRIPTS_REGISTRY

_claimed: dict[tuple[str, str], str] = {}  # (trace_dir, identity) -> dir name, claimed by this process
_claimed_lock = threading.Lock()


def identity_of(script: str | os.PathLike | None, *, module: bool = False, name: str | None = None) -> str:
    """Return the identity of a script: `path:<real path>`, `module:<name>`, or `name:<trace name>`."""
    if module and script is not None:
        return f"module:{script}"
    if script is not None and str(script) not in ("", "-c", "-"):
        p = Path(script)
        try:
            return "path:" + os.path.realpath(p)
        except (OSError, ValueError):
            return "path:" + os.path.abspath(p)
    return f"name:{name or script or 'interactive'}"


OWNER = ".tltrace-script.json"  # in each script dir: the identity that owns it

_problems: dict[str, list[str]] = {}  # trace dir -> what a claim found wrong, until someone says it


def _registry(trace_dir: Path) -> tuple[dict[str, str], str | None]:
    """Return the registry's identity -> dir name map, and what is wrong with the file (None: fine or absent).

    Entries that are not safe names are dropped.
    """
    path = Path(trace_dir) / REGISTRY
    try:
        if path.is_symlink():
            return {}, f"{path} is a symbolic link"
        if not path.exists():
            return {}, None
        data = json.loads(safe_read.read_text(path))
        scripts = data.get("scripts", {})
        return {str(k): v for k, v in scripts.items() if isinstance(v, str) and is_safe_component(v)}, None
    except (OSError, ValueError, AttributeError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else getattr(exc, "strerror", None) or exc
        return {}, f"{path} is damaged ({why})"


def _load(trace_dir: Path) -> dict[str, str]:
    return _registry(trace_dir)[0]


_UNREADABLE = "?"  # an owner record that exists but cannot be read: owned, by nobody we can name


def owner_of(script_dir: Path) -> str | None:
    """Return the identity recorded in a script dir (its owner record); None when it has none."""
    path = Path(script_dir) / OWNER
    try:
        if path.is_symlink():
            return _UNREADABLE
        if not path.exists():
            return None
        ident = json.loads(safe_read.read_text(path)).get("identity")
        return ident if isinstance(ident, str) and ident else _UNREADABLE
    except (OSError, ValueError, AttributeError):
        return _UNREADABLE


def _used(d: Path) -> bool:
    """A directory holding a traced script's files (run records, working files)."""
    try:
        return (d / RUN_RECORDS).exists() or (d / KERNEL_REGISTRY).exists()
    except OSError:
        return True


def _assign(
    registry: dict[str, str], identity: str, name: str, td: Path | None = None, trusted: bool = True
) -> str:
    """Pick the directory of `identity`; the owner records in the dirs (under `td`) overrule the registry.

    `trusted`: the registry was read whole. When it was not (lost, damaged), a used dir
    with no owner record belongs to someone no record names: it is not guessed, but skipped.
    """
    base = safe_component(name)
    if identity.startswith("name:"):
        return base  # no path to tell it apart (python -c, a bare Settings): the plain name, as before
    if identity in registry:
        hit = registry[identity]
        owner = owner_of(td / hit) if td is not None else None
        if owner is None or owner == identity:
            return hit
    if td is not None:  # recover from the dirs themselves: the one that records this identity
        for cand in _candidates(base):
            owner = owner_of(td / cand)
            if owner == identity:
                return cand
            if owner is None and not (td / cand).exists():
                break
    # Only scripts with a path or module name own a directory; a bare name shares the plain one.
    taken = {v for k, v in registry.items() if not k.startswith("name:") and k != identity}
    for cand in _candidates(base):
        if cand in taken:
            continue
        if td is not None:
            owner = owner_of(td / cand)
            if owner is not None and owner != identity:
                continue
            if owner is None and not trusted and _used(td / cand):
                continue  # whose it is, no record says: never guessed
        return cand
    raise AssertionError("unreachable")


def _candidates(base: str):
    yield base
    n = 2
    while True:
        yield f"{base}_{n}"
        n += 1


def lookup(trace_dir: str | os.PathLike, name: str, identity: str) -> Path:
    """Return the script directory of `identity` (trace name `name`); reads the registry, writes nothing."""
    td = Path(trace_dir)
    with _claimed_lock:
        hit = _claimed.get((str(td.absolute()), identity))
    if hit is not None:
        return td / hit
    registry, problem = _registry(td)
    return td / _assign(registry, identity, name, td, trusted=problem is None and (td / REGISTRY).exists())


def take_problems(trace_dir: str | os.PathLike) -> list[str]:
    """Return (once) what claims under `trace_dir` found wrong with the script registry."""
    with _claimed_lock:
        return _problems.pop(str(Path(trace_dir).absolute()), [])


def _write_owner(d: Path, identity: str) -> None:
    if identity.startswith("name:") or d.is_symlink() or owner_of(d) == identity:
        return  # never written through a link (the run then refuses the dir and says so)
    d.mkdir(parents=True, exist_ok=True)
    data = json.dumps({"version": 1, "identity": identity}, ensure_ascii=False) + "\n"
    atomic_write(d / OWNER, data.encode("utf-8"))


def claim(trace_dir: str | os.PathLike, name: str, identity: str) -> Path:
    """Return the script directory of `identity`, recording it (owner record, then registry) on first use.

    Never raises for an unwritable registry: the directory is then the one `lookup` gives.
    A damaged or lost registry is said (`take_problems`), and rebuilt from the owner records.
    """
    td = Path(trace_dir)
    key = (str(td.absolute()), identity)
    with _claimed_lock:
        hit = _claimed.get(key)
    if hit is not None:
        return td / hit
    reg = td / REGISTRY
    said: list[str] = []
    try:
        td.mkdir(parents=True, exist_ok=True)
        with locked(td / f".{REGISTRY}.lock"):
            remove_stale_temps(td, [REGISTRY])
            registry, problem = _registry(td)
            trusted = problem is None and reg.exists()
            if problem is None and not reg.exists() and any(_used(d) for d in _dirs(td)):
                problem = f"{reg} is missing"
            dirname = _assign(registry, identity, name, td, trusted=trusted)
            if registry.get(identity) != dirname and identity in registry:
                said.append(
                    f"{reg} gave {identity.split(':', 1)[-1]} the directory {registry[identity]}/, "
                    f"whose owner record names another script; using {dirname}/"
                )
            if problem is not None:
                registry = _rebuilt(td, registry)
                said.append(
                    f"{problem}; script directories are matched by the owner records in them "
                    f"({OWNER}), and {identity.split(':', 1)[-1]} uses {dirname}/"
                )
            if (td / dirname).is_dir() and not (td / dirname).is_symlink():
                remove_stale_temps(td / dirname, [OWNER])  # a killed write of the owner record
            _write_owner(td / dirname, identity)
            if registry.get(identity) != dirname or problem is not None:
                registry[identity] = dirname
                if problem is not None and reg.is_file() and not reg.is_symlink():
                    os.replace(reg, reg.with_name(reg.name + ".damaged"))  # kept for a look
                if not reg.is_symlink():
                    data = (
                        json.dumps({"version": 1, "scripts": registry}, indent=1, ensure_ascii=False) + "\n"
                    )
                    atomic_write(reg, data.encode("utf-8"))
    except OSError:
        return lookup(td, name, identity)
    with _claimed_lock:
        _claimed[key] = dirname
        if said:
            _problems.setdefault(key[0], []).extend(said)
    return td / dirname


def _dirs(td: Path) -> list[Path]:
    try:
        return [d for d in td.iterdir() if not d.name.startswith(".") and d.is_dir() and not d.is_symlink()]
    except OSError:
        return []


def _rebuilt(td: Path, registry: dict[str, str]) -> dict[str, str]:
    """The registry's entries, with the owner records of the dirs added (they win)."""
    out = {k: v for k, v in registry.items() if owner_of(td / v) in (None, k)}
    for d in _dirs(td):
        owner = owner_of(d)
        if owner not in (None, _UNREADABLE) and is_safe_component(d.name):
            out[str(owner)] = d.name
    return out


def script_dir_for(trace_dir: str | os.PathLike, script: str | os.PathLike) -> Path:
    """Return the script directory a SCRIPT argument of show/clean/diff-runs/resolve-conflict names.

    A path to a script is looked up by its real path, so `x/kernel.py` and `y/kernel.py`
    find their own directories; a `.py` path that does not exist here falls back to the
    plain name, and so does a bare name.
    """
    text = str(script)
    p = Path(text)
    name = script_name_from_argv(text)
    if p.is_file() or (p.is_dir() and (p / "__main__.py").exists()):
        return lookup(trace_dir, name, identity_of(text))
    if p.suffix == ".py":  # no such file (here): its own registered dir, else the plain name
        ident = identity_of(text)
        return Path(trace_dir) / _load(Path(trace_dir)).get(ident, safe_component(name))
    return Path(trace_dir) / safe_component(p.name or text)


def unusable(trace_dir: str | os.PathLike, script_dir: Path) -> str | None:
    """Return why tltrace could record nothing under `script_dir` of `trace_dir` (one line), or None.

    Looks, never writes: a trace dir (or a folder above it) that is a file, and a script
    directory or `.run_records` that is a symbolic link, which the store refuses to write
    through (nothing is written outside the trace dir). A trace dir that is itself a link
    is used (the link was the user's choice of place). Permissions are left to a probe.
    """
    td = Path(trace_dir)
    for p in (td, *td.parents):
        try:
            if p.exists() and not p.is_dir():
                what = "it" if p == td else str(p)
                return f"cannot write to trace dir {td} ({what} is a file, not a directory)"
        except OSError:
            break
    for d in (Path(script_dir), Path(script_dir) / RUN_RECORDS):
        if d.is_symlink():
            return (
                f"cannot write to trace dir {td} ({d} is a symbolic link; tltrace writes nothing "
                "through it: remove the link, or choose another trace dir)"
            )
    return None
