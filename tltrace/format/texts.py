"""The texts a run's records name, read back: by hash in the run's pack; older runs: per-pass files, `.objects`.

A run written today keeps its texts in `<run_dir>/texts.pack` (format/pack.py), read by
the hash the records carry. A run of an older tltrace has per-pass files inside the run
directory, hard links to `.run_records/.objects/<hash>`; both still read. Paths read from a
manifest are resolved inside the run directory only, and stored texts by a validated hash
inside `.run_records/.objects`: records on disk never make tltrace read elsewhere. The one
confined reader of recorded texts: history/ (show, diff-runs, the report) and facts/ (a run's
facts computed from its texts) read through it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..fs import safe_read
from . import pack
from .layout import OBJECTS, RUN_RECORDS, is_hash
from .records import PassRecord


def record_path(run_dir: Path, rel: str | None) -> Path | None:
    """Return the file a record's relative path names inside run_dir, or None when it would leave it.

    Refused: absolute paths, '..' parts, and paths whose real location (symlinks
    followed) is not under the run directory's real location.
    """
    if not rel or not isinstance(rel, str) or "\x00" in rel:
        return None
    parts = rel.replace("\\", "/").split("/")
    if (
        rel.startswith("/")
        or any(p in ("..",) for p in parts)
        or os.path.isabs(rel)
        or (len(rel) > 1 and rel[1] == ":")
    ):
        return None
    base = os.path.realpath(run_dir)
    full = os.path.realpath(os.path.join(base, *[p for p in parts if p not in ("", ".")]))
    if os.path.commonpath([base, full]) != base or full == base:
        return None
    return Path(full)


def object_path(script_dir: Path, digest: str | None) -> Path | None:
    """Return the stored text named by `digest` in the script's .objects, or None (bad hash, outside the tree)."""
    if not digest or not is_hash(digest):
        return None
    root = os.path.realpath(Path(script_dir) / RUN_RECORDS)
    full = os.path.realpath(os.path.join(Path(script_dir) / RUN_RECORDS, OBJECTS, digest))
    if os.path.commonpath([root, full]) != root:
        return None  # .objects (or the object) is a link out of the trace dir
    return Path(full)


def run_pack(run_dir: Path) -> pack.Pack | None:
    """Return the run's texts pack as it stands (cached while unchanged), or None (an older run, or none)."""
    return pack.read(Path(run_dir) / pack.PACK)


def pack_text(run_dir: Path, digest: str | None, errors: str = "strict") -> str | None:
    """Return the text stored under `digest` in the run's pack, or None."""
    if not digest or not is_hash(digest):
        return None
    found = run_pack(run_dir)
    if found is None:
        return None
    try:
        return found.text(digest, errors)
    except UnicodeDecodeError:
        return None


def stored_text(run_dir: Path, rel: str | None, digest: str | None, errors: str = "strict") -> str | None:
    """Return a text the records name by file and hash: the run's pack, else (older runs) the
    file inside the run dir, else the stored object by hash; None when no copy is readable."""
    run_dir = Path(run_dir)
    text = pack_text(run_dir, digest, errors)
    if text is not None:
        return text
    for p in (record_path(run_dir, rel), object_path(run_dir.parent.parent, digest)):
        if p is None:
            continue
        try:
            return safe_read.read_text(p, errors=errors)
        except (OSError, UnicodeDecodeError):
            continue
    return None


def text_of(run_dir: Path, record: PassRecord, side: str, *, errors: str = "strict") -> str | None:
    """Return one side ('before'/'after') of a record's text, or None when no copy is readable."""
    rel = record.before_file if side == "before" else record.after_file
    digest = record.before_hash if side == "before" else record.after_hash
    return stored_text(run_dir, rel, digest, errors)


def generated_text(run_dir: Path, edit: dict) -> str | None:
    """Return the source TileLang generated for an edited codegen call (an entry of the manifest's
    `build.edits`, format/build.py), or None when no copy is readable."""
    rel, digest = edit.get("generated_file"), edit.get("generated_hash")
    return stored_text(run_dir, rel, digest, "surrogateescape")
