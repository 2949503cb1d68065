"""A run's derived views, computed when first read: the +/- counts of its records, its facts.

Capture stores the texts and leaves out what is a pure function of them (a record's
`added`/`removed` are None where the compile had no live view that shows them: `--quiet`
and the other modes without the stream or the HTML report). The first reader that needs
them (show, the report, diff-runs, the index, `tltrace.load`, the profile) computes them
here from the stored texts, with the same function capture used (diff.count_changes), and
caches them beside the run (format/derived.py); the facts go through facts.derived_facts.
A run recorded with them (an older tltrace, a live view) is returned as it is.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..diff import count_changes
from ..facts import derived_facts
from ..format import derived
from ..format.records import CHANGED, CODEGEN, PassRecord, RunManifest
from ..format.texts import text_of


def uncounted(manifest: RunManifest) -> bool:
    """True when some record's +/- counts were left to the reader."""
    return any(r.added is None or r.removed is None for r in manifest.records)


def count(run_dir: Path, record: PassRecord) -> tuple[int, int] | None:
    """Return a record's (added, removed) from its stored texts; None when a text cannot be read."""
    if record.status not in (CHANGED, CODEGEN) or record.before_hash == record.after_hash:
        return 0, 0
    before = text_of(run_dir, record, "before", errors="surrogateescape")
    after = text_of(run_dir, record, "after", errors="surrogateescape")
    if before is None or after is None:
        return None
    return count_changes(before, after)


def with_counts(run_dir: Path, manifest: RunManifest) -> RunManifest:
    """Return `manifest` with every record's +/- counts (cached beside an ended run; 0 where a text is lost)."""
    if not uncounted(manifest):
        return manifest
    cached = derived.counts_of(derived.read(run_dir, manifest))
    records: list[PassRecord] = []
    computed: dict[str, list[int]] = {}
    whole = True
    for r in manifest.records:
        if r.added is not None and r.removed is not None:
            records.append(r)
            continue
        got = cached.get(r.index)
        if got is None:
            got = count(run_dir, r)
            if got is None:
                whole, got = False, (0, 0)  # said as no change; not cached (the text may come back)
            else:
                computed[str(r.index)] = list(got)
        records.append(replace(r, added=got[0], removed=got[1]))
    if computed and whole:
        derived.update(run_dir, manifest, counts={**{str(k): list(v) for k, v in cached.items()}, **computed})
    return manifest.with_records(records)


def complete(run_dir: Path, manifest: RunManifest) -> RunManifest:
    """Return `manifest` with its derived views filled in: the +/- counts, and the facts of an ended run."""
    out = with_counts(run_dir, manifest)
    if out.facts is None and derived.cacheable(out):
        out = replace(out, facts=derived_facts(run_dir, manifest))
    return out
