"""Facts: what the compiler made of each kernel, as named, typed numbers (docs/facts.md).

- `registry`: every fact's definition (`FACTS`: name, type, unit, source text, meaning).
- `device`, `tir`: pure extraction from the generated device source and from TIR text.
- `collect`: which recorded texts a run's facts come from, and the `facts` object stored
  in its manifest (computed by the printing worker when the run ends).
- `ptxas`: machine facts (registers, spills) from `nvcc -Xptxas -v`, when asked.

`facts_of(run)` is the reader's one call: the stored values (a run traced with the
HTML report or --ptxas, or an older run), else the same values computed from its
recorded texts when first read and cached beside the run (format/derived.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..format import derived
from ..format.layout import MANIFEST
from ..format.records import RunManifest
from ..format.texts import text_of  # the one confined reader of recorded texts
from .collect import compute, stored_values
from .compare import changes, describe
from .registry import BY_NAME, FACTS, MACHINE, NAMES, SOURCES, Fact, Value

__all__ = [
    "BY_NAME",
    "FACTS",
    "MACHINE",
    "NAMES",
    "SOURCES",
    "Fact",
    "Value",
    "changes",
    "derived_facts",
    "describe",
    "facts_json",
    "facts_of",
    "facts_record",
]


def facts_record(run: Any) -> dict[str, Any]:
    """Return a run's `facts` object ({version, values, texts[, machine]}): stored, else computed now.

    `run` is a `tltrace.history.loading.Run` (what `tltrace.load`, show and diff-runs
    hold): its `path` and loaded `manifest`. Texts are read inside the run directory only
    (format/texts.py). A damaged run (no manifest) gives every fact null.
    """
    manifest = getattr(run, "manifest", None)
    if manifest is None:
        return {"version": 1, "values": dict.fromkeys(NAMES), "texts": {}}
    values = stored_values(manifest)
    if values is not None:
        return {**manifest.facts, "values": values}
    return derived_facts(run.path, manifest)


def derived_facts(run_dir: Any, manifest: RunManifest) -> dict[str, Any]:
    """Return a run's `facts` object computed from its recorded texts: cached beside the run
    (format/derived.py) once it has ended, so only the first reader computes it."""
    cached = derived.read(run_dir, manifest).get("facts")
    if isinstance(cached, dict) and isinstance(cached.get("values"), dict):
        values = stored_values(replace(manifest, facts=cached))
        return {**cached, "values": values}
    facts = compute(manifest, lambda rec, side: text_of(run_dir, rec, side, errors="replace"), run_dir)
    derived.update(run_dir, manifest, facts=facts)
    return facts


def facts_of(run: Any) -> dict[str, Value]:
    """Return {fact name: value} for one run (every name of FACTS; null where not known)."""
    values: dict[str, Value] = facts_record(run)["values"]
    return values


def facts_json(run: Any) -> dict[str, Any]:
    """Return one compile's facts as `show --facts --json` prints them (docs/show.schema.json "facts").

    {run_id, path, signature, kernel, values: {name: value}, facts: [{name, value, type,
    unit, source, text, doc}], machine}: `text` is the run-relative file the fact was read
    from (null when that text was not recorded); for a ptxas fact, manifest.json, where
    ptxas's report of the device source's build is stored (`facts.machine`).
    """
    rec = facts_record(run)
    texts = rec.get("texts") or {}
    manifest = getattr(run, "manifest", None)
    rows = []
    for f in FACTS:
        where = texts.get(f.source) if isinstance(texts, dict) else None
        text = where.get("file") if isinstance(where, dict) else None
        if f.source == "ptxas":  # ptxas's report (facts.machine), not the device source it built
            text = MANIFEST if rec["values"].get(f.name) is not None and rec.get("machine") else None
        rows.append({**f.to_json(), "value": rec["values"].get(f.name), "text": text})
    return {
        "run_id": run.path.name,
        "path": str(run.path),
        "signature": getattr(manifest, "signature", None),
        "kernel": getattr(manifest, "kernel", None),
        "values": rec["values"],
        "facts": rows,
        "machine": rec.get("machine"),
    }
