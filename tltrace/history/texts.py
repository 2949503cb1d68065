"""The texts a run's records name, by hash in the run's pack; older runs: per-pass files, `.objects`.

A run written today keeps its texts in `<run_dir>/texts.pack` (format/pack.py), read by
the hash the records carry. A run of an older tltrace has per-pass files inside the run
directory, hard links to `.run_records/.objects/<hash>`; both still read. Paths read from
a manifest are resolved inside the run directory only, and stored texts by a validated
hash inside `.run_records/.objects`: records on disk never make tltrace read elsewhere.
Also: finding a record by a --pass NAME|INDEX.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import RecordsError, UsageError
from ..format import pack
from ..format.layout import OBJECTS, RUN_RECORDS, is_hash
from ..format.records import PassRecord, RunManifest
from ..fs import safe_read
from .loading import Run


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


def read_text(run: Run, record: PassRecord, side: str) -> str:
    """Return one side ('before' or 'after') of a record's text; RecordsError when no copy is left.

    The run's pack by hash; an older run's per-pass file, else its stored object by hash.
    """
    rel = record.before_file if side == "before" else record.after_file
    digest = record.before_hash if side == "before" else record.after_hash
    if rel is None and digest is None:
        raise RecordsError(f"{record.name} (#{record.index}) has no {side} text (the pass failed)")
    text = text_of(run.path, record, side)
    if text is not None:
        return text
    found = run_pack(run.path)
    if found is not None:
        cut = f"; the pack lost {found.torn} bytes at its end (the compile was killed)" if found.torn else ""
        raise RecordsError(
            f"{run.path / pack.PACK} holds no {side} text of {record.name} (#{record.index}){cut}; "
            "rerun the script to record it again"
        )
    if rel is not None and record_path(run.path, rel) is None:
        raise RecordsError(
            f"{record.name} (#{record.index}) names {side} file {rel!r} outside its run directory "
            f"{run.path} (records tampered with); not read"
        )
    where = run.path / rel if rel else run.script_dir / RUN_RECORDS / OBJECTS / str(digest)
    why = safe_read.why_unreadable(where) or "is missing"  # not UTF-8, a FIFO, ...: say which
    raise RecordsError(f"{where} {why} (run records damaged); rerun the script to record it again")


def missing_files(run: Run) -> int:
    """Return how many texts a run's manifest names that are neither in its pack nor (older runs,
    safely) on disk as per-pass files or stored objects."""
    found = run_pack(run.path)
    n = 0
    for rec in run.require().records:
        for rel, digest in ((rec.before_file, rec.before_hash), (rec.after_file, rec.after_hash)):
            if not rel:
                continue
            if found is not None and digest in found.index:
                continue
            p = record_path(run.path, rel)
            if p is not None and p.exists():
                continue
            o = object_path(run.script_dir, digest)
            if found is None or o is None or not o.exists():
                n += 1
    return n


def find_record(manifest: RunManifest, spec: str, run_dir: Path | None = None) -> PassRecord:
    """Return the record a --pass reference names (tltrace/format/passref.py: index, [phase/]NAME[#k], any case).

    An unknown name says the closest pass names (did you mean), and, given the run's
    directory, the `tltrace show` command that lists the compile's passes.
    """
    from ..format.passref import did_you_mean, resolve

    found = resolve(manifest.records, spec)
    if found.pos < 0:
        p = found.ref
        if p is not None and p.index is not None:
            raise UsageError(
                f"no pass with index {p.index} in run {manifest.run_id} (0..{len(manifest.records) - 1})"
            )
        if found.matches:
            raise UsageError(f"{found.error}; give the full name, NAME#k or an index")
        hint = did_you_mean(dict.fromkeys(r.name for r in manifest.records), spec)
        if run_dir is not None:
            from ..proc.shell import command
            from .resolve import script_words

            lister = command("tltrace", "show", *script_words(Path(run_dir).parent.parent), manifest.run_id)
            hint += f"; {lister} lists its {len(manifest.records)} passes"
        raise UsageError(f"no pass {spec!r} in run {manifest.run_id}{hint}")
    return manifest.records[found.pos]
