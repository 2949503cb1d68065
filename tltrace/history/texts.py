"""A record's texts read for a loaded run (a missing one is a RecordsError that says why, a torn
pack's lost bytes counted), and finding a record by a --pass NAME|INDEX.

The confined reader itself (the run's pack by hash; older runs: paths inside the run directory,
stored objects by hash) is format/texts.py's; facts/ reads through it too.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RecordsError, UsageError
from ..format import pack
from ..format.layout import OBJECTS, RUN_RECORDS
from ..format.records import PassRecord, RunManifest
from ..format.texts import generated_text as generated_text
from ..format.texts import object_path as object_path
from ..format.texts import pack_text as pack_text
from ..format.texts import record_path as record_path
from ..format.texts import run_pack as run_pack
from ..format.texts import stored_text as stored_text
from ..format.texts import text_of as text_of
from ..fs import safe_read
from .loading import Run


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
        if digest in found.index:  # whole, but its deflated bytes do not inflate: damage, not a kill
            which = (
                "its entry, or the earlier one it is deflated with," if digest in found.bases else "its entry"
            )
            raise RecordsError(
                f"{run.path / pack.PACK}: the {side} text of {record.name} (#{record.index}) is damaged "
                f"({which} does not inflate); rerun the script to record it again"
            )
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
        died = died_in(manifest, run_dir)
        named = p.name.lower() if p is not None and p.name else None
        if died is not None and p is not None and (p.index == died[0] or named in _names_of(died[1])):
            last = f"; its input is the output of pass {died[0] - 1}" if died[0] else ""
            raise UsageError(
                f"pass {died[0]} ({died[1]}) of run {manifest.run_id} was running when its process ended "
                f"({manifest.status}): it has no record to rerun{last}"
            )
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


def _names_of(name: str) -> tuple[str, str]:
    """A pass name as a --pass reference may spell it: whole, or the end of a dotted name (any case)."""
    return name.lower(), name.rsplit(".", 1)[-1].lower()


def died_in(manifest: RunManifest, run_dir: Path | None) -> tuple[int, str] | None:
    """Return (index, name) of the pass a cut compile's process ended inside (its `inflight` note), or None
    (not cut short, no note, or the note names no pass index past the records)."""
    from ..format.names import pass_display_name
    from ..format.notes import where_of
    from ..format.records import CUT_SHORT

    if run_dir is None or manifest.status not in CUT_SHORT:
        return None
    where = where_of(Path(run_dir))
    if where is None or where["at"] != "in" or "index" not in where:
        return None
    return where["index"], pass_display_name(where["name"])
