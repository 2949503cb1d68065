"""The report model: what a compile report and an invocation index show, as plain data.

history/report_reads.py builds it from a run directory (every read of the records is
there); render/html.py and render/index.py only turn it into HTML, reading nothing.
Data only: this module reads no file and imports no reader.

A compile report (`CompileReport`) is its run's manifest (the header: render/pages.py
`meta_of`), each pass record with its two texts and their source maps (`RecordTexts`),
the Python sources those maps name, the sources TileLang generated where an edit was
compiled (`Text`), and, for a report that lives in its run directory, its invocation's
compiles (`Sibling`: the switcher) and the compiles of earlier invocations
(`Earlier`: "Compare with…"), its launches (`run --launches`) and, when `run --ncu` profiled
it, each Python line's share of its warp-stall samples (the Source pane's shading). An index (`IndexReport`) is one invocation's compiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..format.records import PassRecord, RunManifest
from ..format.sourcemap import LineMap


@dataclass(frozen=True)
class Text:
    """A stored text by its hash (a source TileLang generated where an edit was compiled)."""

    digest: str
    text: str


@dataclass(frozen=True)
class RecordTexts:
    """One pass record as the report shows it.

    `record`: its text hashes filled in where the manifest left them out. `before`, `after`:
    its texts (None: the side has no text, or no copy of it is left on disk); the maps: the
    Python line of each line of the two texts (None: no map).
    """

    record: PassRecord
    before: str | None = None
    after: str | None = None
    before_map: LineMap | None = None
    after_map: LineMap | None = None


@dataclass(frozen=True)
class Sibling:
    """A compile of the same invocation, as the report's switcher lists it."""

    run_id: str
    label: str  # its signature, else its kernel, else its run id
    status: str  # "?" when unknown

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> Sibling | None:
        """Return the sibling an index row names (a compile summary's JSON), or None without a run id."""
        run_id = row.get("run_id")
        if not isinstance(run_id, str):
            return None
        return cls(run_id, row.get("signature") or row.get("kernel") or run_id, row.get("status") or "?")


@dataclass(frozen=True)
class Earlier:
    """A compile of an earlier invocation of the script that has a report ("Compare with…")."""

    run_id: str
    kernel: str | None
    label: str  # "started signature (status)"


@dataclass(frozen=True)
class CompileReport:
    """One compile's report, read from its run directory (history/report_reads.compile_report).

    `run_dir` is where the compile's records are: the repro command the report copies names
    it; nothing is read from it. `siblings` (every compile of the invocation, in start order,
    when it has more than one) and `earlier` (newest first) are read only for a report that
    lives in its run directory (`linked`): one written elsewhere has no index two levels up.
    """

    run_dir: Path
    manifest: RunManifest
    records: tuple[RecordTexts, ...]
    sources: Mapping[str, str] = field(default_factory=dict)  # path -> a Python source the maps name
    generated: tuple[Text, ...] = ()
    linked: bool = True
    siblings: tuple[Sibling, ...] = ()
    earlier: tuple[Earlier, ...] = ()
    fail_site: Mapping[str, Any] | None = None  # where the first failed pass failed (history/failsite)
    layout_why: tuple[str, ...] = ()  # why layout inference failed, once explained (layouts/explain)
    launches: tuple[Mapping[str, Any], ...] = ()  # its first launches (report_reads.launch_rows)
    launches_more: int = 0  # its launches past those, counted
    hot: tuple[Mapping[str, Any], ...] = ()  # its Python lines' hot-line shares (report_reads.hot_rows)


@dataclass(frozen=True)
class IndexedRun:
    """One compile of an index: its run id and its manifest (None: a damaged run)."""

    run_id: str
    manifest: RunManifest | None


@dataclass(frozen=True)
class IndexReport:
    """One invocation's index (history/report_reads.index_report): its compiles in the order given.

    `newest`: the invocation is the script's newest that has compiles (its index is then the
    script's `report.html`); `first_run_dir`: where an older invocation's index goes by default.
    """

    script_dir: Path
    invocation: str
    runs: tuple[IndexedRun, ...]
    newest: bool
    first_run_dir: Path
