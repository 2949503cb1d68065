"""A compile's facts from its recorded texts: which record each text is, and the values read off them.

`compute` is what the printing worker calls when a run ends (session/capture.py) and
what a reader calls for a run recorded before facts were stored (`facts_of`): the same
function over the same texts, so an old trace reads as a new one. Nothing here raises
for a text it cannot read: that text's facts are null.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..format.layout import MANIFEST, SOURCEMAP_LOG
from ..format.records import FAILED, PassRecord, RunManifest
from ..format.sourcemap import LineMap
from .device import device_facts
from .registry import CODEGEN_INPUT, DEVICE, FRONTEND, NAMES, REMARKS, SOURCE_MAP, Value
from .tir import codegen_input_facts, frontend_facts

VERSION = 1  # of the stored `facts` object (docs/facts.md)

Read = Callable[
    [PassRecord, str], "str | None"
]  # (record, "before" | "after") -> its text, None if unreadable


def select(manifest: RunManifest) -> dict[str, tuple[PassRecord, str]]:
    """Return source -> (record, side) of the texts facts are read from (docs/facts.md, "Sources").

    The device source is the last codegen record of role "device" that produced a text,
    the codegen input its before text; the frontend IR is the first record's before text.
    Read from the manifest's roles, never from pass names of one pipeline.
    """
    out: dict[str, tuple[PassRecord, str]] = {}
    records = manifest.records
    if records:
        out[FRONTEND] = (records[0], "before")
    device = [r for r in records if r.role == "device" and r.status != FAILED and r.after_hash]
    if device:
        out[DEVICE] = (device[-1], "after")
        out[CODEGEN_INPUT] = (device[-1], "before")
    return out


def compute(manifest: RunManifest, read: Read, run_dir: Path | None = None) -> dict[str, Any]:
    """Return the `facts` object of a run: {version, values, texts} (docs/facts.md)."""
    values: dict[str, Value] = dict.fromkeys(NAMES)
    texts: dict[str, dict[str, Any]] = {}
    chosen = select(manifest)
    readers = {DEVICE: device_facts, CODEGEN_INPUT: codegen_input_facts, FRONTEND: frontend_facts}
    for source, (rec, side) in chosen.items():
        text = read(rec, side)
        if text is None:
            continue
        values.update(readers[source](text))
        texts[source] = _where(rec, side)
    remarks = remark_facts(manifest.remarks)
    if remarks is not None:
        values.update(remarks)
        texts[REMARKS] = {
            "file": MANIFEST,
            "field": "remarks",
            "passes": [p.get("index") for p in _remark_passes(manifest.remarks)],
        }
    if run_dir is not None and DEVICE in chosen and DEVICE in texts:
        cov = _coverage(run_dir, chosen[DEVICE][0])
        if cov is not None:
            values["sourcemap_coverage"] = cov
            texts[SOURCE_MAP] = {
                "file": SOURCEMAP_LOG,
                "record": chosen[DEVICE][0].index,
                "side": "after",
            }
    return {"version": VERSION, "values": values, "texts": texts}


def _remark_passes(remarks: Any) -> list[dict[str, Any]]:
    if not isinstance(remarks, dict) or not isinstance(remarks.get("passes"), list):
        return []
    return [p for p in remarks["passes"] if isinstance(p, dict) and isinstance(p.get("text"), str)]


def remark_facts(remarks: Any) -> dict[str, Value] | None:
    """Return the facts of a manifest's `remarks` (remarks/recorder.py); None when remarks were not captured."""
    if not isinstance(remarks, dict):
        return None
    from ..remarks.recorder import kinds_of  # (here: a run without --remarks never imports remarks/)

    lines = 0
    ws: str | None = None
    fallbacks = 0
    for p in _remark_passes(remarks):
        text = p["text"]
        lines += len(text.splitlines())
        kinds = kinds_of(text)
        if ws is None and kinds.get("ws_skipped"):
            first = kinds["ws_skipped"][0]
            ws = first.split("skipped:", 1)[1].strip() if "skipped:" in first else first
        fallbacks += len(kinds.get("layout_fallback", ()))
    return {"remarks": lines, "ws_skipped": ws, "layout_fallbacks": fallbacks}


def _where(rec: PassRecord, side: str) -> dict[str, Any]:
    return {
        "record": rec.index,
        "name": rec.name,
        "side": side,
        "file": rec.after_file if side == "after" else rec.before_file,
        "hash": rec.after_hash if side == "after" else rec.before_hash,
    }


def _coverage(run_dir: Path, rec: PassRecord) -> int | None:
    """Return the percent of the device source's lines that have a Python line, None without a map.

    Reads only the two lines of sourcemap.jsonl it needs (the record's, then its map's), not
    the whole log (sourcemap/store.load parses every map and source: milliseconds).
    """
    path = Path(run_dir) / SOURCEMAP_LOG
    if path.is_symlink() or not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    want = f'"index":{rec.index},'
    digest = None
    for line in reversed(lines):
        if want in line.replace(" ", ""):
            d = _json(line)
            if d is not None and d.get("t") == "rec" and d.get("index") == rec.index:
                digest = d.get("after")
                break
    if not isinstance(digest, str):
        return None
    for line in lines:
        if digest in line:
            d = _json(line)
            if d is not None and d.get("t") == "map" and d.get("h") == digest:
                lmap = LineMap.from_json(d)
                if not lmap.lines:
                    return None
                return round(100 * sum(1 for v in lmap.lines if v is not None) / len(lmap.lines))
    return None


def _json(line: str) -> dict[str, Any] | None:
    try:
        d = json.loads(line)
    except ValueError:
        return None
    return d if isinstance(d, dict) else None


def stored_values(manifest: RunManifest) -> dict[str, Value] | None:
    """Return the facts stored in a manifest, every registered name present; None when none were stored."""
    facts = manifest.facts
    if not isinstance(facts, dict) or not isinstance(facts.get("values"), dict):
        return None
    values: dict[str, Value] = dict.fromkeys(NAMES)
    for k, v in facts["values"].items():
        if k in values and (v is None or isinstance(v, (int, str, bool))):
            values[k] = v
    return values
