"""The source map asked by line: what came of one Python line, and which Python line a generated line came from.

Data only (plain dicts ready for JSON); `cli/byline.py` prints them (`show --line`, `--cuda-line`,
`--ptx-line`, `--sass-line`). Read from the same records the report's Source pane reads
(render/assets/sourcemap.js, report-machine.js): each record's line maps in `sourcemap.jsonl`
(history/sourcemaps.py), the PTX and SASS stages' maps (stages/maps.py) and their texts, read
with stages/ptx.py and stages/sass.py.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import RecordsError, UsageError
from ..facts.device import device_facts
from ..format.records import CODEGEN, STAGE_ROLES, PassRecord, RunManifest
from ..format.sourcemap import LineMap, RunMaps
from ..stages import ptx as ptx_text
from ..stages import sass as sass_text
from . import runs
from . import sourcemaps as V

# The generated lines each way back starts from: the flag's name and the record role it reads.
BACK = {"cuda": "device", "ptx": "ptx", "sass": "sass"}
NEAREST = 3  # mapped lines named around a line no code comes from


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _src(lmap: LineMap | None, i: int) -> dict[str, Any] | None:
    """The `src` of line `i` (0-based) as history/sourcemaps.annotated gives it."""
    s = lmap.src(i) if lmap is not None else None
    if s is None or lmap is None:
        return None
    out: dict[str, Any] = {"file": s[0], "line": s[1]}
    if i in lmap.inferred:
        out["inferred"] = True
    via = lmap.via_src(i)
    if via is not None:
        out["via"] = {"file": via[0], "line": via[1]}
    return out


def _hits(text: str | None, lmap: LineMap | None, key: tuple[str, int]) -> list[dict[str, Any]]:
    """The lines of `text` whose Python line is `key`: [{line, text, src}]."""
    if text is None or lmap is None:
        return []
    out = []
    for i, t in enumerate(_lines(text)):
        if i < len(lmap.lines) and lmap.src(i) == key:
            out.append({"line": i + 1, "text": t, "src": _src(lmap, i)})
    return out


def _text(run: runs.Run, rec: PassRecord, side: str) -> str | None:
    return runs.text_of(run.path, rec, side, errors="surrogateescape")


def _has_text(rec: PassRecord, side: str) -> bool:
    return (
        bool(rec.before_file or rec.before_hash)
        if side == "before"
        else bool(rec.after_file or rec.after_hash)
    )


def _generated(manifest: RunManifest) -> dict[str, PassRecord]:
    """The last codegen record of each role with a text (device, host, ptx, sass), as the pane takes them."""
    out: dict[str, PassRecord] = {}
    for rec in manifest.records:
        if rec.status == CODEGEN and _has_text(rec, "after"):
            out[rec.role or "device"] = rec
    return out


def parse_line(spec: str, kernel: str | None, maps: RunMaps, flag: str = "--line") -> tuple[str, int]:
    """Return (file, line) for `--line N` (the kernel's file) or `--line FILE:N` (a file the map names)."""
    text = str(spec).strip()
    name, sep, num = text.rpartition(":")
    if not sep:
        name, num = "", text
    try:
        n = int(num)
    except ValueError:
        raise UsageError(f"{flag} {spec!r}: give a line number, or FILE:LINE") from None
    if n < 1:
        raise UsageError(f"{flag} {n}: lines count from 1")
    if not name:
        if kernel is None:
            raise RecordsError("this compile's source map names no Python file")
        return kernel, n
    files = sorted({f for m in maps.maps.values() for f in m.files} | set(maps.sources))
    exact = [f for f in files if f == name]
    found = exact or [f for f in files if f.endswith("/" + name) or os.path.basename(f) == name]
    if len(found) != 1:
        named = ", ".join(os.path.basename(f) for f in files[:6]) or "none"
        why = "names no file" if not found else "names several files"
        raise UsageError(f"{flag} {spec!r}: {name!r} {why} of this compile's source map (it has: {named})")
    return found[0], n


def _lost_in(manifest: RunManifest, maps: RunMaps, key: tuple[str, int]) -> list[dict[str, Any]]:
    """The passes that lose `key` for good: its input has it, its output not, and no later text
    has it again (sourcemap.js lostIn, tirx.Filter's host half not named)."""
    out: list[dict[str, Any]] = []
    later = False
    for rec in reversed(manifest.records):
        b, a = maps.of(rec.index, "before"), maps.of(rec.index, "after")
        if b is None and a is None:
            continue
        in_b = b is not None and key in b.python_lines()
        in_a = a is not None and key in a.python_lines()
        if not later and in_b and a is not None and not in_a and rec.status != CODEGEN:
            out.insert(0, {"index": rec.index, "name": rec.name})
        if in_b or in_a:
            later = True
    return out


def _mix(rows: list[dict[str, Any]]) -> dict[str, int]:
    counts = {k: 0 for k in sass_text.MIX}
    for r in rows:
        if r.get("class"):
            counts[r["class"]] += 1
    return {"insns": sum(1 for r in rows if r.get("insn")), **counts}


def _stage(run: runs.Run, rec: PassRecord, maps: RunMaps, key: tuple[str, int]) -> dict[str, Any]:
    """A PTX or SASS stage's lines from `key`, each with its kernel.cu line (and SASS: its mix class)."""
    text = _text(run, rec, "after")
    if text is None:
        raise RecordsError(f"{rec.name} (#{rec.index}): its text is missing (run records damaged)")
    lmap = maps.of(rec.index, "after")
    cu = ptx_text.loc_lines(text)[0] if rec.role == "ptx" else sass_text.cu_lines(text)
    hits = _hits(text, lmap, key)
    for h in hits:
        h["cu"] = cu[h["line"] - 1] if h["line"] - 1 < len(cu) else None
        if rec.role == "sass":
            h["insn"] = sass_text.opcode(h["text"]) is not None
            h["class"] = sass_text.opcode_class(h["text"])
            h["spill"] = h["class"] in sass_text.SPILLS
    out: dict[str, Any] = {"record": rec.index, "name": rec.name, "lines": hits}
    if rec.role == "sass":
        out["mix"] = _mix(hits)
        out["spills"] = out["mix"]["LDL"] + out["mix"]["STL"]
    return out


def _absent(manifest: RunManifest, role: str) -> str:
    """Why a compile has no PTX (SASS) stage, and how to get one."""
    target = str(manifest.target or "")
    if target and not target.startswith("cuda"):
        return (
            f"absent: a compile for target {target.split()[0]!r} has no PTX or SASS; compile for a CUDA "
            "target (e.g. 'cuda -arch=sm_90a', no GPU needed) under 'tltrace run --ptx --sass'"
        )
    flags = "--ptx" if role == "ptx" else "--sass"
    return f"absent: not recorded; rerun with 'tltrace run {flags}' (nvcc; --sass also nvdisasm or cuobjdump)"


def _known_lines(maps: RunMaps, file: str) -> list[int]:
    return sorted({n for m in maps.maps.values() for f, n in m.python_lines() if f == file})


def forward(run: runs.Run, spec: str) -> dict[str, Any]:
    """Return what came of one Python line (`show --line`): the passes that changed its IR, the
    generated source's lines, the PTX and SASS lines with the instruction mix, where it is lost.

    An out-of-range line or an unknown file is a UsageError (exit 2); a line no statement maps to
    gives `code: false` and the nearest lines that have code.
    """
    manifest = run.require()
    maps = V.require(run.path)
    kernel = V.kernel_file(maps)
    file, n = parse_line(spec, kernel, maps)
    source = maps.sources.get(file)
    src_lines = _lines(source) if source is not None else None
    if src_lines is not None and n > len(src_lines):
        raise UsageError(f"--line {n}: {os.path.basename(file)} has {len(src_lines)} lines")
    key = (file, n)
    known = _known_lines(maps, file)
    out: dict[str, Any] = {
        "run_id": run.run_id,
        "path": str(run.path),
        "target": manifest.target,
        "file": file,
        "line": n,
        "text": src_lines[n - 1] if src_lines is not None else None,
        "code": n in known,
        "nearest": [],
        "passes": [],
        "carried_by": 0,
        "generated": {},
        "ptx": None,
        "sass": None,
        "absent": {},
        "lost_in": [],
        "facts": {},
    }
    if not out["code"]:
        out["nearest"] = sorted(sorted(known, key=lambda x: (abs(x - n), x))[:NEAREST])
        return out
    gens = _generated(manifest)
    for rec in manifest.records:
        if rec.status == CODEGEN:
            continue
        b, a = maps.of(rec.index, "before"), maps.of(rec.index, "after")
        in_b = b is not None and key in b.python_lines()
        in_a = a is not None and key in a.python_lines()
        if in_b or in_a:
            out["carried_by"] += 1
        if not (in_b or in_a) or a is None or not _has_text(rec, "after"):
            continue  # an unchanged pass, or a failed one (no output)
        before = _hits(_text(run, rec, "before"), b, key)
        after = _hits(_text(run, rec, "after"), a, key)
        if [h["text"].strip() for h in before] != [h["text"].strip() for h in after]:
            out["passes"].append(
                {
                    "index": rec.index,
                    "name": rec.name,
                    "phase": rec.phase,
                    "status": rec.status,
                    "before": before,
                    "after": after,
                }
            )
    for role, rec in gens.items():
        if role in STAGE_ROLES:
            out[role] = _stage(run, rec, maps, key)
        else:
            out["generated"][role] = {
                "record": rec.index,
                "name": rec.name,
                "lines": _hits(_text(run, rec, "after"), maps.of(rec.index, "after"), key),
            }
    for role in STAGE_ROLES:
        if out[role] is None:
            out["absent"][role] = _absent(manifest, role)
    out["lost_in"] = _lost_in(manifest, maps, key)
    out["facts"] = line_facts(out)
    return out


def line_facts(data: dict[str, Any]) -> dict[str, Any]:
    """The facts of docs/facts.md that belong to the line: the device-source facts counted over its
    generated device lines alone (call sites: wgmma 1, tma_load 2, ...; the widest vector load and
    store), only those it has, and with a SASS stage its instructions and spill instructions."""
    dev = data["generated"].get("device")
    out: dict[str, Any] = {}
    if dev and dev["lines"]:
        for name, value in device_facts("\n".join(h["text"] for h in dev["lines"])).items():
            if name in ("kernels", "launch_bounds", "launch_min_blocks") or not value:
                continue
            out[name] = value
    if data["sass"] is not None:
        out["sass_instructions"] = data["sass"]["mix"]["insns"]
        out["spill_instructions"] = data["sass"]["spills"]
    return out


def back(run: runs.Run, kind: str, n: int) -> dict[str, Any]:
    """Return the Python line behind line `n` of the generated device source (`kind` "cuda"), the
    PTX or the SASS (`show --cuda-line/--ptx-line/--sass-line N`); a PTX or SASS line also gives
    its kernel.cu line. Bad input (no such text, a line past its end) is a UsageError (exit 2)."""
    manifest = run.require()
    maps = V.load(run.path)
    flag = f"--{kind}-line"
    rec = _generated(manifest).get(BACK[kind])
    if rec is None:
        what = "generated device source" if kind == "cuda" else kind.upper()
        why = "" if kind == "cuda" else f" ({_absent(manifest, kind)})"
        raise UsageError(f"{flag}: this compile has no {what}{why}")
    text = _text(run, rec, "after")
    if text is None:
        raise RecordsError(f"{rec.name} (#{rec.index}): its text is missing (run records damaged)")
    lines = _lines(text)
    if not 1 <= n <= len(lines):
        raise UsageError(f"{flag} {n}: {rec.name} has lines 1 to {len(lines)}")
    lmap = maps.of(rec.index, "after")
    out: dict[str, Any] = {
        "run_id": run.run_id,
        "path": str(run.path),
        "kind": kind,
        "cuda_target": str(manifest.target or "").startswith("cuda"),
        "record": rec.index,
        "name": rec.name,
        "line": n,
        "text": lines[n - 1],
        "cu": None,
        "src": _src(lmap, n - 1),
        "python": None,
        "mapped": lmap is not None,
    }
    if kind != "cuda":
        cu = ptx_text.loc_lines(text)[0] if kind == "ptx" else sass_text.cu_lines(text)
        c = cu[n - 1] if n - 1 < len(cu) else None
        if c is not None:
            device = _generated(manifest).get("device")
            dtext = _text(run, device, "after") if device is not None else None
            dl = _lines(dtext) if dtext is not None else []
            out["cu"] = {"line": c, "text": dl[c - 1] if 0 < c <= len(dl) else None}
    if kind == "sass":
        out["class"] = sass_text.opcode_class(lines[n - 1])
    src = out["src"]
    if src is not None:
        body = maps.sources.get(src["file"])
        bl = _lines(body) if body is not None else []
        out["python"] = bl[src["line"] - 1] if 0 < src["line"] <= len(bl) else None
    return out
