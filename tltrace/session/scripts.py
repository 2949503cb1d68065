"""Which directory under the trace dir belongs to which script.

A script's traces go to `<trace_dir>/<name>/`, `<name>` being the script's stem made
safe (`session/names.py`). Two scripts with one stem (`x/kernel.py`, `y/kernel.py`)
must not share it, so `<trace_dir>/.tltrace-scripts.json` maps each script's identity
(its real path, or `-m` module name) to its directory: the first script keeps the plain
name, a later one with the same name gets `<name>_2`, `<name>_3`, ... A program with no
path (`python -c`, an interactive session) has no identity to tell it apart and uses the
plain name. Every name read
from the registry is checked as a name from IR is (no separator, no leading dot), so a
doctored registry cannot point outside the trace dir; a bad entry is ignored.

A script claims its directory when tltrace first writes there (a run record, a working
file); looking one up (`tltrace show x/kernel.py`) never writes.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from .. import safe_read
from .._atomic import atomic_write, locked, remove_stale_temps
from .names import is_safe_component, safe_component, script_name_from_argv

REGISTRY = ".tltrace-scripts.json"

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


def _load(trace_dir: Path) -> dict[str, str]:
    """Return the registry's identity -> dir name map; entries that are not safe names are dropped."""
    path = Path(trace_dir) / REGISTRY
    try:
        if path.is_symlink():
            return {}
        data = json.loads(safe_read.read_text(path))
        scripts = data.get("scripts", {})
        return {str(k): v for k, v in scripts.items() if isinstance(v, str) and is_safe_component(v)}
    except (OSError, ValueError, AttributeError):
        return {}


def _assign(registry: dict[str, str], identity: str, name: str) -> str:
    if identity in registry:
        return registry[identity]
    base = safe_component(name)
    if identity.startswith("name:"):
        return base  # no path to tell it apart (python -c, a bare Settings): the plain name, as before
    # Only scripts with a path or module name own a directory; a bare name shares the plain one.
    taken = {v for k, v in registry.items() if not k.startswith("name:")}
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    return candidate


def lookup(trace_dir: str | os.PathLike, name: str, identity: str) -> Path:
    """Return the script directory of `identity` (trace name `name`); reads the registry, writes nothing."""
    td = Path(trace_dir)
    with _claimed_lock:
        hit = _claimed.get((str(td.absolute()), identity))
    if hit is not None:
        return td / hit
    return td / _assign(_load(td), identity, name)


def claim(trace_dir: str | os.PathLike, name: str, identity: str) -> Path:
    """Return the script directory of `identity`, recording it in the registry on first use.

    Never raises for an unwritable registry: the directory is then the one `lookup` gives.
    """
    td = Path(trace_dir)
    key = (str(td.absolute()), identity)
    with _claimed_lock:
        hit = _claimed.get(key)
    if hit is not None:
        return td / hit
    reg = td / REGISTRY
    try:
        td.mkdir(parents=True, exist_ok=True)
        with locked(td / f".{REGISTRY}.lock"):
            remove_stale_temps(td, [REGISTRY])
            registry = _load(td)
            dirname = _assign(registry, identity, name)
            if registry.get(identity) != dirname:
                registry[identity] = dirname
                if not reg.is_symlink():
                    data = (
                        json.dumps({"version": 1, "scripts": registry}, indent=1, ensure_ascii=False) + "\n"
                    )
                    atomic_write(reg, data.encode("utf-8"))
    except OSError:
        return lookup(td, name, identity)
    with _claimed_lock:
        _claimed[key] = dirname
    return td / dirname


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
