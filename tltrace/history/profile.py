"""Where a compile spends its time: per-pass timelines and profiles aggregated by pass name.

Pure data: reads RunManifests, returns dataclasses and JSON-ready dicts; prints
nothing. `show --profile`, `show --format markdown`, the Chrome-trace export and
the report's profile view all read what this module returns.

What is timed, and how:

- every pass and codegen call: its record's `duration_s` (measured by tltrace's
  instrument around the pass, excluding the capture of its own IR text);
- when records carry `start_s` (tltrace >= 0.1.0 schema 2 writers), where each
  pass sits in the compile; older records are laid out back to back instead;
- the compile itself: the manifest's `finished - started`, i.e. TileLang's compile
  session from its first tool call to its end;
- `backend build`: from the end of the last codegen call to the end of the
  session. In TileLang 0.1.15 that span is the execution backend's adapter
  construction, which for cython and nvrtc compiles the generated source
  (g++/nvcc/hipcc, NVRTC) and loads the library. TileLang gives no finer seam
  (no event around the compiler call), so it is one row; on tvm_ffi the device
  compiler (nvcc) runs inside `codegen_device` and this row is only the adapter.
- `untimed`: the rest of the compile (TileLang's Python between passes,
  tltrace's own IR capture), so that the shares of the top-level rows add to 100%.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..format.records import CODEGEN, FAILED, RunManifest

PASS = "pass"
CODEGEN_KIND = "codegen"
BACKEND = "backend"
UNTIMED = "untimed"
BACKEND_NAME = "backend build"
UNTIMED_NAME = "untimed"
_EPS = 1e-9


@dataclass(frozen=True)
class Slice:
    """One timed span of a compile: a pass, a codegen call, or the backend build after codegen."""

    name: str
    start_s: float  # seconds after the compile began
    duration_s: float
    kind: str = PASS
    index: int | None = None  # the record's index; None for the backend build
    phase: str = ""
    depth: int = 0
    parent: int | None = None
    status: str = ""
    added: int = 0
    removed: int = 0
    exact: bool = True  # start_s came from the record, not laid out back to back

    @property
    def end_s(self) -> float:
        return self.start_s + self.duration_s


@dataclass(frozen=True)
class CompileTimes:
    """One compile's timeline: its slices in record order and its wall time."""

    manifest: RunManifest
    slices: tuple[Slice, ...]
    wall_s: float  # the compile session's wall time (or the end of its last slice when unfinished)
    exact: bool  # every slice has a recorded start

    @property
    def top_level_s(self) -> float:
        return sum(s.duration_s for s in self.slices if s.depth == 0)


def _kind(status: str) -> str:
    return CODEGEN_KIND if status == CODEGEN else PASS


def timeline(manifest: RunManifest) -> CompileTimes:
    """Return the compile's slices: every record, nested inside its parent, then the backend build.

    Children are clamped into their parent's span (rounding to microseconds could
    otherwise push a child a microsecond past its parent's end), so that the
    slices nest properly wherever they are drawn.
    """
    records = sorted(manifest.records, key=lambda r: r.index)
    exact = bool(records) and all(r.start_s is not None for r in records)
    spans: dict[int, tuple[float, float]] = {}
    cursor: dict[int | None, float] = {None: 0.0}  # where the next child of a parent starts (no start_s)
    out: list[Slice] = []
    for r in records:
        parent = r.parent if r.parent in spans else None
        dur = _seconds(r.duration_s)  # a hand-edited Infinity or NaN counts as untimed, never as a crash
        if exact:
            start = _seconds(r.start_s)
        else:
            start = cursor.get(parent, 0.0)
        if parent is not None:
            p0, p1 = spans[parent]
            start = min(max(start, p0), p1)
            dur = min(dur, p1 - start)
        cursor[parent] = start + dur
        cursor[r.index] = start
        spans[r.index] = (start, start + dur)
        out.append(
            Slice(
                name=r.name,
                start_s=start,
                duration_s=dur,
                kind=_kind(r.status),
                index=r.index,
                phase=r.phase,
                depth=r.depth if parent is not None else 0,
                parent=parent,
                status=r.status,
                added=r.added or 0,  # derived by the reader (history/derived.py) before this
                removed=r.removed or 0,
                exact=exact,
            )
        )
    last_end = max((s.end_s for s in out if s.depth == 0), default=0.0)
    wall = last_end
    if _finite(manifest.finished) and _finite(manifest.started) and manifest.started:
        wall = max(last_end, float(manifest.finished) - float(manifest.started))  # type: ignore[arg-type]
    codegen_ends = [s.end_s for s in out if s.kind == CODEGEN_KIND and s.status != FAILED]
    if exact and codegen_ends and _finite(manifest.finished):
        start = max(codegen_ends)
        # Only after the last top-level slice: a codegen call followed by more passes is not the build.
        if start >= last_end - _EPS and wall - start > _EPS:
            out.append(
                Slice(
                    name=BACKEND_NAME,
                    start_s=start,
                    duration_s=wall - start,
                    kind=BACKEND,
                    phase="backend",
                    status=manifest.status if manifest.status in ("error", "interrupted") else "complete",
                )
            )
    return CompileTimes(manifest, tuple(out), wall, exact)


def _seconds(x: object) -> float:
    """Return a recorded time as a float, 0 when it is missing, negative or implausible (NaN, 1e300)."""
    if not isinstance(x, (int, float)) or not _finite(x) or x < 0:
        return 0.0
    return float(x)


def _finite(x: object) -> bool:
    """True for a real, plausible time (a damaged manifest may hold NaN or 1e300)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e11


@dataclass
class Row:
    """One line of a profile: a pass name (or codegen, backend build, untimed) over one or more compiles."""

    name: str
    kind: str
    count: int = 0
    total_s: float = 0.0
    self_s: float = 0.0  # total minus the time of the passes nested in it
    top_level_s: float = 0.0  # the part of total spent where it ran at depth 0 (these add up to the compile)
    max_s: float = 0.0
    phases: list[str] = field(default_factory=list)
    nested: bool = False  # ran inside another pass (its time is inside its parent's too)
    per_compile: dict[str, float] = field(default_factory=dict)  # run_id -> time in that compile

    @property
    def mean_s(self) -> float:
        return self.total_s / self.count if self.count else 0.0

    def spread(self) -> dict[str, float]:
        """Return min / quartiles / max of this row's time per compile it ran in."""
        values = sorted(self.per_compile.values())
        if not values:
            return {}
        if len(values) == 1:
            q1 = med = q3 = values[0]
        else:
            q1, med, q3 = statistics.quantiles(values, n=4, method="inclusive")
        return {"min": values[0], "q1": q1, "median": med, "q3": q3, "max": values[-1]}


@dataclass
class Profile:
    """Time per pass name over one compile or the compiles of an invocation."""

    compiles: list[CompileTimes]
    rows: list[Row]  # every row, slowest first
    wall_s: float  # sum of the compiles' wall times
    recorded_s: float  # sum of every record's duration (nested ones included)

    @property
    def exact(self) -> bool:
        return all(c.exact for c in self.compiles)

    def top(self, n: int | None) -> list[Row]:
        return self.rows if n is None else self.rows[: max(0, n)]

    def share(self, row: Row) -> float:
        return row.total_s / self.wall_s if self.wall_s > 0 else 0.0

    def to_json(self, top: int | None = None, *, spread: bool = False) -> dict[str, Any]:
        """Return the profile as JSON data (times in seconds; shares of the summed compile time)."""
        first = self.compiles[0].manifest if self.compiles else None
        rows = []
        for r in self.top(top):
            d: dict[str, Any] = {
                "name": r.name,
                "kind": r.kind,
                "count": r.count,
                "compiles": len(r.per_compile),
                "total_s": round(r.total_s, 6),
                "self_s": round(r.self_s, 6),
                "mean_s": round(r.mean_s, 6),
                "max_s": round(r.max_s, 6),
                "top_level_s": round(r.top_level_s, 6),
                "share": round(self.share(r), 6),
                "phases": list(r.phases),
                "nested": r.nested,
            }
            if spread:
                d["spread_s"] = {k: round(v, 6) for k, v in r.spread().items()}
            rows.append(d)
        return {
            "script": first.script if first else None,
            "invocation": first.invocation if first else None,
            "runs": [c.manifest.run_id for c in self.compiles],
            "compiles": len(self.compiles),
            "compile_s": round(self.wall_s, 6),
            "recorded_s": round(self.recorded_s, 6),
            "exact_starts": self.exact,
            "rows_total": len(self.rows),
            "rows": rows,
        }


def profile(manifests: Iterable[RunManifest]) -> Profile:
    """Return the profile of these compiles: one row per pass name, codegen role, backend build, untimed.

    Row totals are sums of recorded durations, so the pass and codegen rows add up
    to the records' durations exactly; nested passes are counted in their own row
    and inside their parent's (`self_s` is a row's time without its nested passes).
    """
    compiles = [timeline(m) for m in manifests]
    rows: dict[tuple[str, str], Row] = {}
    wall = 0.0
    recorded = 0.0
    for c in compiles:
        rid = c.manifest.run_id
        wall += c.wall_s
        child_time: dict[int, float] = {}
        for s in c.slices:
            if s.parent is not None:
                child_time[s.parent] = child_time.get(s.parent, 0.0) + s.duration_s
        by_index = {r.index: r for r in c.manifest.records}
        accounted = 0.0
        for s in c.slices:
            # Totals use the recorded duration (not the clamped slice), so that they add up to the records.
            raw = by_index[s.index].duration_s if s.index is not None else None
            dur = float(raw) if raw is not None and _finite(raw) and raw >= 0 else s.duration_s
            if s.index is not None:
                recorded += dur
            if s.depth == 0:
                accounted += dur
            row = rows.get((s.kind, s.name))
            if row is None:
                row = rows[(s.kind, s.name)] = Row(s.name, s.kind)
            row.count += 1
            row.total_s += dur
            row.self_s += max(0.0, dur - child_time.get(s.index, 0.0)) if s.index is not None else dur
            row.max_s = max(row.max_s, dur)
            if s.depth == 0:
                row.top_level_s += dur
            if s.phase and s.phase not in row.phases:
                row.phases.append(s.phase)
            row.nested = row.nested or s.depth > 0
            row.per_compile[rid] = row.per_compile.get(rid, 0.0) + dur
        rest = c.wall_s - accounted
        if rest > _EPS:
            row = rows.get((UNTIMED, UNTIMED_NAME))
            if row is None:
                row = rows[(UNTIMED, UNTIMED_NAME)] = Row(UNTIMED_NAME, UNTIMED)
            row.count += 1
            row.total_s += rest
            row.self_s += rest
            row.top_level_s += rest
            row.max_s = max(row.max_s, rest)
            row.per_compile[rid] = rest
    ordered = sorted(rows.values(), key=lambda r: (-r.total_s, r.name))
    return Profile(compiles, ordered, wall, recorded)


def pass_times_us(manifest: RunManifest) -> dict[str, int]:
    """Return one compile's time per row name (passes, codegen, backend build, untimed) in whole µs.

    What the invocation index stores per compile, for its aggregated profile view.
    """
    return {r.name: int(round(r.total_s * 1e6)) for r in profile([manifest]).rows}


def invocation_of(manifest: RunManifest) -> str:
    """Return the invocation a compile belongs to: its manifest's, else (schema 1) its own run id."""
    return manifest.invocation or manifest.run_id


def fmt_seconds(s: float) -> str:
    """Return a duration for a table: '1.23 s', '45.6 ms', '789 µs'."""
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 0.001:
        return f"{s * 1000:.1f} ms"
    return f"{s * 1e6:.0f} µs"
