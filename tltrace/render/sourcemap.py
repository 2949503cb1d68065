"""The report's source-map data: chunks that sourcemap.js reads (the page's Source pane).

{"t":"smap","h":H,"files":[...],"lines":[...]}   one line map, once per report
{"t":"src","path":P,"s":TEXT}                    a Python source a map names, once
{"t":"srec","i":INDEX,"b":H|null,"a":H|null}     the maps of a record's two texts
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..format.records import RunManifest
from ..format.sourcemap import LineMap, read_source
from ..history.sourcemaps import load


class ReportMaps:
    """What one report already holds, so each map and source goes in once."""

    def __init__(self) -> None:
        self.maps: set[str] = set()
        self.files: set[str] = set()

    def chunks(
        self,
        index: int,
        before: LineMap | None,
        after: LineMap | None,
        sources: dict[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Return the chunks that give record `index` its maps (sources read at capture when not given)."""
        if before is None and after is None:
            return []
        out: list[dict[str, Any]] = []
        hashes: list[str | None] = []
        for lmap in (before, after):
            if lmap is None:
                hashes.append(None)
                continue
            h = lmap.digest()
            hashes.append(h)
            if h in self.maps:
                continue
            self.maps.add(h)
            for f in lmap.files:
                if f in self.files:
                    continue
                self.files.add(f)
                text = sources.get(f) if sources is not None else read_source(f)
                if text is not None:
                    out.append({"t": "src", "path": f, "s": text})
            out.append({"t": "smap", "h": h, **lmap.to_json()})
        out.append({"t": "srec", "i": index, "b": hashes[0], "a": hashes[1]})
        return out


def run_chunks(run_dir: Path, manifest: RunManifest) -> list[dict[str, Any]]:
    """Return every source-map chunk of a recorded run (for a rebuilt report); sources from the records."""
    maps = load(run_dir)
    if not maps:
        return []
    rm = ReportMaps()
    out: list[dict[str, Any]] = []
    for rec in manifest.records:
        out.extend(
            rm.chunks(rec.index, maps.of(rec.index, "before"), maps.of(rec.index, "after"), maps.sources)
        )
    return out
