"""Source maps read back for a recorded compile: per pass coverage, annotated texts, the kernel's source.

Data only (plain dicts ready for JSON); `cli/sourcemap.py` prints them. Everything is
read inside the run directory (`sourcemap.jsonl`, whose codec is format/sourcemap.py,
read by `load`, and the texts through history/runs.py); the Python sources are the
copies taken at capture.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..callsites import library as cs
from ..errors import RecordsError
from ..format.layout import OBJECTS, SOURCEMAP_LOG, source_hash
from ..format.records import FAILED, STAGE_ROLES, PassRecord, RunManifest
from ..format.sourcemap import RunMaps, apply_line
from ..fs import safe_read
from . import runs
from .texts import pack_text


def load(run_dir: Path) -> RunMaps:
    """Return the maps of a run directory (empty when it has none); damaged lines are skipped."""
    out = RunMaps()
    path = Path(run_dir) / SOURCEMAP_LOG
    if os.path.islink(path) or not path.is_file():
        return out
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                try:
                    stored = apply_line(out, json.loads(line))
                    if stored is not None:
                        text = _stored_source(Path(run_dir), stored[1])
                        if text is not None:
                            out.sources[stored[0]] = text
                except (ValueError, TypeError, AttributeError):
                    continue
    except OSError:
        pass
    if out.library_roots is not None:
        out = with_call_sites(Path(run_dir), out)
    return out


def with_call_sites(run_dir: Path, maps: RunMaps) -> RunMaps:
    """Return `maps` with TileLang's library lines mapped to the user's calls (callsites/library.py),
    as capture does for a live view: the records' maps in the order they were stored, with their
    texts. A run whose manifest cannot be read keeps its maps as stored."""
    try:
        records = {r.index: r for r in runs.load_manifest(run_dir).records}
    except RecordsError:
        return maps
    calls = cs.CallSites(roots=maps.library_roots)
    out = RunMaps(sources=maps.sources)
    for index, (bh, ah) in maps.records.items():
        rec = records.get(index)
        b, a = maps.maps.get(bh) if bh else None, maps.maps.get(ah) if ah else None
        if rec is not None and (b is not None or a is not None):
            before = runs.text_of(run_dir, rec, "before", errors="surrogateescape") or ""
            after = runs.text_of(run_dir, rec, "after", errors="surrogateescape") if rec.after_hash else None
            b, a = cs.refine(calls, rec, before, after if after is not None else before, (b, a))
        for lmap in (b, a):
            if lmap is not None:
                out.maps.setdefault(lmap.digest(), lmap)
        out.records[index] = (b.digest() if b is not None else None, a.digest() if a is not None else None)
    return out


def require(run_dir: Path) -> RunMaps:
    """Return the maps of a run directory; a RecordsError (one line) when it has none."""
    maps = load(run_dir)
    if not maps:
        raise RecordsError(
            f"{run_dir} has no source map (recorded with TLTRACE_SOURCE_MAP=0, by a tltrace "
            "without source maps, or TileLang gave no spans); rerun the script to record one"
        )
    return maps


def _stored_source(run_dir: Path, rel: Any) -> str | None:
    """Return a source copied into the run's store (its pack by the hash in `source_<hash>.py`; older
    runs: that file, else `.objects/<hash>`), or None.

    Only a name of that form is read, inside the run directory or its script's store, never
    through a symbolic link.
    """
    digest = source_hash(rel)
    if digest is None:
        return None
    text = pack_text(run_dir, digest, "surrogateescape")
    if text is not None:
        return text
    for p in (run_dir / rel, run_dir.parent / OBJECTS / digest):
        if os.path.islink(p) or os.path.islink(p.parent):
            continue
        try:
            return safe_read.read_text(p, errors="surrogateescape")
        except (OSError, UnicodeDecodeError):
            continue
    return None


def _library(path: str) -> bool:
    """A file of TileLang or TVM itself (an expanded T.gemm points there), not the user's."""
    parts = path.replace("\\", "/").split("/")
    return "site-packages" in parts or "dist-packages" in parts or "tilelang" in parts[:-1]


def kernel_file(maps: RunMaps) -> str | None:
    """Return the Python file most lines come from, the user's own before TileLang's; None without maps."""
    count: Counter[str] = Counter()
    for lmap in maps.maps.values():
        for v in lmap.lines:
            if isinstance(v, tuple):
                count[lmap.files[v[0]]] += 1
    if not count:
        return None
    return max(count, key=lambda f: (not _library(f), count[f], f))


def side_of(rec: PassRecord) -> str:
    """The side a pass's coverage is read from: its output, or its input when it failed."""
    return (
        "before" if rec.status == FAILED or (rec.after_hash is None and rec.after_file is None) else "after"
    )


def annotated(run: runs.Run, rec: PassRecord, side: str, maps: RunMaps) -> list[dict[str, Any]]:
    """Return [{line, text, src}] for one side of a record: src is {file, line} or None.

    src has `"inferred": true` when the line's Python line is inferred (sourcemap/lines.py),
    and `"via": {file, line}` when it is the call site of a line in TileLang's library code
    (callsites/library.py).
    """
    text = runs.read_text(run, rec, side)
    lmap = maps.of(rec.index, side)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for i, t in enumerate(lines):
        s = lmap.src(i) if lmap is not None else None
        src: dict[str, Any] | None = {"file": s[0], "line": s[1]} if s else None
        if src is not None and lmap is not None and i in lmap.inferred:
            src["inferred"] = True
        via = lmap.via_src(i) if src is not None and lmap is not None else None
        if via is not None and src is not None:
            src["via"] = {"file": via[0], "line": via[1]}
        out.append({"line": i + 1, "text": t, "src": src})
    return out


def passes(manifest: RunManifest, maps: RunMaps) -> list[dict[str, Any]]:
    """Return [{index, name, phase, status, side, lines, mapped, exact, lost}] for the records with a map.

    lines: statement lines of the text; mapped: those with a Python line; exact: those
    whose Python line is not inferred (sourcemap/lines.py); lost: the
    Python lines the pass's input had and its output has not.
    """
    out = []
    for rec in manifest.records:
        side = side_of(rec)
        lmap = maps.of(rec.index, side)
        if lmap is None:
            continue
        stmts, mapped = lmap.coverage()
        row: dict[str, Any] = {
            "index": rec.index,
            "name": rec.name,
            "phase": rec.phase,
            "status": rec.status,
            "side": side,
            "lines": stmts,
            "mapped": mapped,
            "exact": lmap.exact(),
        }
        before = maps.of(rec.index, "before")
        if side == "after" and before is not None and rec.status != "codegen":
            row["lost"] = [
                {"file": f, "line": n} for f, n in sorted(before.python_lines() - lmap.python_lines())
            ]
        out.append(row)
    return out


def source(maps: RunMaps) -> dict[str, Any] | None:
    """Return {file, lines} for the kernel's Python source as copied at capture, or None."""
    f = kernel_file(maps)
    if f is None or f not in maps.sources:
        return {"file": f, "lines": None} if f else None
    text = maps.sources[f]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {"file": f, "lines": lines}


def codegen(run: runs.Run, manifest: RunManifest, maps: RunMaps) -> dict[str, list[dict[str, Any]]]:
    """Return {"device": [{line, text, src}], "host": [...]}: the last generated source of each role."""
    out: dict[str, list[dict[str, Any]]] = {"device": [], "host": []}
    for rec in manifest.records:
        if rec.status != "codegen" or (rec.after_hash is None and rec.after_file is None):
            continue
        if rec.role in STAGE_ROLES:
            continue  # PTX, SASS: stages of the generated source, not it
        role = rec.role if rec.role in out else "device"
        out[role] = annotated(run, rec, "after", maps)
    return out


def summary(run: runs.Run) -> dict[str, Any]:
    """Return the source map of a compile as `show --source-map --json` prints it."""
    manifest = run.require()
    maps = load(run.path)
    return {
        "run_id": run.run_id,
        "signature": manifest.signature,
        "path": str(run.path),
        "source": source(maps),
        "codegen": codegen(run, manifest, maps),
        "passes": passes(manifest, maps),
    }


def short(src: dict[str, Any] | None, kernel: str | None) -> str:
    """Return a gutter label: the line number alone in the kernel's file, else `file.py:N`;
    `~` after an inferred one; ` via gemm_scalar.py:48` after a call site of library code."""
    if src is None:
        return ""
    mark = "~" if src.get("inferred") else ""
    label = (
        f"{src['line']}{mark}"
        if src["file"] == kernel
        else f"{os.path.basename(src['file'])}:{src['line']}{mark}"
    )
    via = src.get("via")
    if isinstance(via, dict):
        label += f" via {os.path.basename(str(via.get('file')))}:{via.get('line')}"
    return label
