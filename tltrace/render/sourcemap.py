"""The report's source-map data: chunks that sourcemap.js reads (the page's Source pane).

{"t":"smap","h":H,"files":[...],"lines":[...]}   one line map, once per report
{"t":"src","path":P,"s":TEXT}                    a Python source a map names, once
{"t":"srec","i":INDEX,"b":H|null,"a":H|null}     the maps of a record's two texts
{"t":"hot","lines":[[P,N,SHARE,STALL,KERNEL]...]}   each Python line's hot-line share (run --ncu)
{"t":"launches","rows":[...],"more":M}            the compile's launches (run --launches; report-header.js)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..format.sourcemap import LineMap
from ..history.report_model import CompileReport
from .safejson import Encoded, script_safe

_STR_JSON = json.encoder.encode_basestring_ascii  # a str as json.dumps writes it


def no_source(path: str) -> str | None:
    """A source left unread: the report shows the maps without it."""
    return None


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
        source: Callable[[str], str | None] = no_source,
    ) -> list[dict[str, Any]]:
        """Return the chunks that give record `index` its maps; `source(path)`: the text of a Python
        source they name, the first time (None: left out)."""
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
                text = source(f)
                if text is not None:
                    out.append({"t": "src", "path": f, "s": text})
            out.append(map_value(h, lmap))
        out.append({"t": "srec", "i": index, "b": hashes[0], "a": hashes[1]})
        return out


def map_value(digest: str, lmap: LineMap) -> Encoded:
    """A map's chunk, {"t":"smap","h":H,...the map's JSON}, its JSON made from the map's own
    (`LineMap.json_text`, made once per map for its digest: the map is not encoded again)."""
    head = '{"t":"smap","h":' + _STR_JSON(digest) + ","
    return Encoded({"t": "smap", "h": digest, **lmap.json_value()}, head + script_safe(lmap.json_text()[1:]))


def run_chunks(report: CompileReport) -> list[dict[str, Any]]:
    """Return every source-map chunk of a compile's report model (a rebuilt report); sources from the records."""
    rm = ReportMaps()
    out: list[dict[str, Any]] = []
    for r in report.records:
        out.extend(rm.chunks(r.record.index, r.before_map, r.after_map, report.sources.get))
    return out


def run_views(report: CompileReport) -> list[dict[str, Any]]:
    """Return the chunks of what the compile did when it ran: its launches (a table under the header)
    and its Python lines' hot-line shares (the Source pane's shading); none where it has neither."""
    out: list[dict[str, Any]] = []
    if report.launches:
        out.append(launches_value(report.launches, report.launches_more))
    if report.hot:
        rows = [[h["file"], h["line"], h["share"], h["stall"], h["kernel"]] for h in report.hot]
        out.append({"t": "hot", "lines": rows})
    return out


def launches_value(rows: Iterable[Mapping[str, Any]], more: int) -> dict[str, Any]:
    """The chunk of a compile's launches (history/report_reads.launch_rows): the rows listed, the rest counted."""
    return {"t": "launches", "rows": [dict(r) for r in rows], "more": more}
