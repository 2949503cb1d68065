"""Compiles as a Chrome trace (Trace Event Format): opens in Perfetto and chrome://tracing.

Pure data: `chrome_trace(manifests)` returns the JSON object; the CLI writes it.

- one process per invocation (pid 1, 2, ... in start order), named after its script;
  an invocation whose compiles ran in several OS processes (worker pools, child
  interpreters, torchrun ranks) gets one process per OS process, named with its pid
  or rank;
- one track (tid) per compiling thread of that invocation, named after the thread;
  compiles recorded without thread information (schema 1) get a track of their own
  whenever they overlap another;
- each compile is a complete ("X") event, its passes are complete events inside it,
  nested passes inside their parent, and the backend build after codegen closes it;
- args carry the pass index, phase, status and +/- line counts; the compile's carry
  its run id, status, kernel, signature and pass counts.

Timestamps are microseconds from the first compile's start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._version import __version__
from ..format.records import RunManifest
from ..format.writer import process_label
from ..history.profile import BACKEND, CompileTimes, invocation_of, timeline

COMPILE_CAT = "compile"


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def chrome_trace(manifests: Iterable[RunManifest]) -> dict[str, Any]:
    """Return a Trace Event Format object (`{"otherData": {...}, ..., "traceEvents": [...]}`) for these compiles."""
    compiles = sorted((timeline(m) for m in manifests), key=lambda c: (c.manifest.started, c.manifest.run_id))
    origin = min((c.manifest.started for c in compiles), default=0.0)
    events: list[dict[str, Any]] = []
    pids: dict[tuple[str, str], int] = {}
    per_inv: dict[str, set[str]] = {}
    for c in compiles:
        per_inv.setdefault(invocation_of(c.manifest), set()).add(process_label(c.manifest))
    tracks: dict[tuple[int, Any], int] = {}  # (pid, thread key) -> tid
    lanes: dict[int, list[tuple[int, float]]] = {}  # pid -> [(tid, busy until)] for compiles without a thread
    for c in compiles:
        m = c.manifest
        inv = invocation_of(m)
        proc = process_label(m)
        pid = pids.get((inv, proc))
        if pid is None:
            pid = pids[(inv, proc)] = len(pids) + 1
            label = f"{m.script} (invocation {inv})"
            if len(per_inv[inv]) > 1:
                label += f" {proc}"
            events.append(_meta("process_name", pid, 0, {"name": label}))
            events.append(_meta("process_sort_index", pid, 0, {"sort_index": pid}))
        start = max(0.0, m.started - origin)
        tid = _track(m, pid, start, c.wall_s, tracks, lanes, events)
        events.append(_compile_event(c, pid, tid, start))
        for s in c.slices:
            ev: dict[str, Any] = {
                "name": s.name,
                "cat": s.phase or s.kind,
                "ph": "X",
                "pid": pid,
                "tid": tid,
                "ts": _us(start + s.start_s),
                "dur": _us(s.duration_s),
            }
            if s.kind == BACKEND:
                ev["args"] = {
                    "what": "after codegen until the compile ended: the backend's adapter build "
                    "(cython/nvrtc compile the generated source here)"
                }
            else:
                ev["args"] = {
                    "index": s.index,
                    "phase": s.phase,
                    "status": s.status,
                    "added": s.added,
                    "removed": s.removed,
                    "depth": s.depth,
                    "parent": s.parent,
                }
                if not s.exact:
                    ev["args"]["start"] = "laid out back to back (the record has no start time)"
            events.append(ev)
    # otherData first: its producer is how `--chrome-trace PATH` knows a file it may replace
    # (output_path parses the first key, no text match); Perfetto's streaming reader skips it and
    # reads displayTimeUnit best at the start.
    return {
        "otherData": {
            "producer": f"tltrace {__version__}",
            "compiles": len(compiles),
            "invocations": len(per_inv),
        },
        "displayTimeUnit": "ms",
        "traceEvents": events,
    }


def _meta(name: str, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args}


def _track(
    m: RunManifest,
    pid: int,
    start: float,
    wall: float,
    tracks: dict[tuple[int, Any], int],
    lanes: dict[int, list[tuple[int, float]]],
    events: list[dict[str, Any]],
) -> int:
    """Return the tid of the compile's thread track, creating (and naming) it on first use."""
    if m.thread_id is not None or m.thread:
        key: Any = ("thread", m.thread_id, m.thread)
        tid = tracks.get((pid, key))
        if tid is None:
            tid = tracks[(pid, key)] = sum(1 for p, _ in tracks if p == pid) + 1
            events.append(_meta("thread_name", pid, tid, {"name": m.thread or f"thread {m.thread_id}"}))
            events.append(_meta("thread_sort_index", pid, tid, {"sort_index": tid}))
        return tid
    # No thread recorded: reuse the first track that is free by now, so that slices never overlap on one track.
    pool = lanes.setdefault(pid, [])
    for i, (tid, busy) in enumerate(pool):
        if busy <= start:
            pool[i] = (tid, start + wall)
            return tid
    tid = sum(1 for p, _ in tracks if p == pid) + 1
    tracks[(pid, ("lane", tid))] = tid
    pool.append((tid, start + wall))
    events.append(_meta("thread_name", pid, tid, {"name": f"compiles {len(pool)} (thread not recorded)"}))
    return tid


def _compile_event(c: CompileTimes, pid: int, tid: int, start: float) -> dict[str, Any]:
    m = c.manifest
    counts = m.counts
    args: dict[str, Any] = {
        "run_id": m.run_id,
        "status": m.status,
        "kernel": m.kernel,
        "passes": len(m.records),
        "changed": counts.get("changed", 0),
        "failed": counts.get("failed", 0),
    }
    for key in ("signature", "target", "backend", "error"):
        value = getattr(m, key, None)
        if value:
            args[key] = value
    return {
        "name": m.signature or m.kernel or m.run_id,
        "cat": COMPILE_CAT,
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "ts": _us(start),
        "dur": _us(c.wall_s),
        "args": args,
    }
