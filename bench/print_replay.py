"""The print and the rules around it, replayed in a quiet loop (issue 51, round 5).

    PYTHONPATH=<tree> python bench/print_replay.py [--reps 15] [--dump OUT.json]

One traced sm_90a lowering (bench/capture_cost.py's kernel, records mode, `--sync`) gives the
module snapshots (heads) that its capture's TextCache turned into texts, in order. They are
replayed through a fresh TextCache and ModulePrinter (the source-map recorder's printer, with the
equality rule) on this thread, REPS times, this thread's CPU per replay: in all and per part
(tltrace's own functions wrapped here for the measurement only, each part's time excluding the
parts it calls). Then the tags' pieces alone over the printed modules: the printer's config with
the tags (TVM's `PrinterConfig`, the dict of tags made an FFI Map) against the tags' Map alone, and
how many prints annotate the same statements as the print before.

`--dump`: every text and map of one replay as JSON (the file names relative to the tree): the
dumps of two trees are equal when a change kept every text and map of the lowering.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ["TILELANG_DISABLE_CACHE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _parts() -> list[tuple[str, str, str]]:
    """(module, attribute path, label): the parts of a replay, capture_steps.py's print rows with
    the cache's text (not its resolve) and the equality rule of its own."""
    from capture_steps import PRINT_PARTS, STEPS

    mods = ("tltrace.sourcemap.lines", "tltrace.sourcemap.compose", "tltrace.session.snapshot")
    rows = [r for r in STEPS + PRINT_PARTS if r[0] in mods]
    cache = ("tltrace.session.snapshot", "TextCache.text", "reuse rule and module rebuild (the rest)")
    rule = ("tltrace.session.snapshot", "equal_rule", "equality rule (RecursiveEq, StructuralEqual)")
    return [cache if r[0] == cache[0] else r for r in rows] + [rule]


def traced_heads() -> list:
    """The heads one traced sm_90a lowering resolved, in order (`--sync`: on this thread)."""
    from capture_cost import traced_calls

    from tltrace.session import snapshot

    return traced_calls(snapshot.TextCache, "text", "tltrace records --sync", arg=1)


def replay(heads: list) -> tuple[float, list]:
    """One replay: (thread CPU, [(text, map), ...])."""
    from tltrace.session import snapshot
    from tltrace.sourcemap import compose

    cache = snapshot.TextCache(compose.ModulePrinter(snapshot.equal_rule()))
    out = []
    t0 = time.thread_time()
    for head in heads:
        out.append((cache.text(head), cache._extra))
    return time.thread_time() - t0, out


def _timed(f: Any, label: str, acc: dict[str, float], stack: list[float]) -> Any:
    """`f`, its exclusive thread CPU added to acc[label]."""

    def timed(*a: Any, **k: Any) -> Any:
        stack.append(0.0)
        t0 = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            spent = time.thread_time() - t0
            acc[label] += spent - stack.pop()
            if stack:
                stack[-1] += spent

    return timed


def _wrap(acc: dict[str, float]) -> list:
    """Wrap each part (the equality rule: the function `equal_rule()` hands out); return the undo list."""
    import importlib

    from tltrace.session import snapshot

    stack: list[float] = []
    undo = []
    for mod_name, attr, label in _parts():
        owner: Any = importlib.import_module(mod_name)
        *path, name = attr.split(".")
        for p in path:
            owner = getattr(owner, p)
        if name == "equal_rule":
            rule = snapshot.equal_rule()
            owner, name = snapshot._EQUAL, 0
            undo.append((owner, name, rule))
            owner[0] = _timed(rule, label, acc, stack)
            continue
        f = getattr(owner, name)
        undo.append((owner, name, f))
        setattr(owner, name, _timed(f, label, acc, stack))
    return undo


def parts(heads: list, reps: int) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = defaultdict(list)
    for _ in range(reps):
        acc: dict[str, float] = defaultdict(float)
        undo = _wrap(acc)
        try:
            total, _ = replay(heads)
        finally:
            for owner, name, f in reversed(undo):
                if isinstance(owner, list):
                    owner[name] = f
                else:
                    setattr(owner, name, f)
        for label, v in acc.items():
            rows[label].append(v * 1e3)
        rows["the replay in all"].append(total * 1e3)
    return rows


def tag_pieces(heads: list, reps: int) -> dict[str, list[float]]:
    """The printed modules' tags: the config with them, and the Map conversion alone."""
    import tvm_ffi  # type: ignore[import-not-found]
    from tvm.runtime.script_printer import PrinterConfig  # type: ignore[import-not-found]

    from tltrace.sourcemap import lines

    mods: list = []
    orig = lines.print_module

    def keep(mod: Any, held: Any = None) -> Any:
        mods.append(mod)
        return orig(mod, held)

    lines.print_module = keep  # type: ignore[assignment]
    try:
        replay(heads)
    finally:
        lines.print_module = orig  # type: ignore[assignment]
    held = lines.Tags()
    tagged = [lines._tags(m, held)[0] for m in mods]
    rows: dict[str, list[float]] = defaultdict(list)
    clock = time.thread_time
    for _ in range(reps):
        t0 = clock()
        for tags in tagged:
            PrinterConfig(obj_to_annotate=tags)
        t1 = clock()
        for _tags in tagged:
            PrinterConfig()
        t2 = clock()
        for tags in tagged:
            tvm_ffi.Map(tags)
        t3 = clock()
        rows["printer config with the tags"].append((t1 - t0) * 1e3)
        rows["printer config without"].append((t2 - t1) * 1e3)
        rows["the tags made a Map, alone"].append((t3 - t2) * 1e3)
    same = sum(1 for a, b in zip(tagged, tagged[1:]) if a == b)
    print(
        f"{len(mods)} prints, {sum(len(t) for t in tagged)} tags in all; "
        f"{same} prints tag the same statements as the print before"
    )
    return rows


def _table(rows: dict[str, list[float]]) -> None:
    print("| part (thread CPU, ms per replay) | min | median |")
    print("|---|---:|---:|")
    for label, vals in rows.items():
        print(f"| {label} | {min(vals):.2f} | {statistics.median(vals):.2f} |")


def dump(out: list, path: Path) -> None:
    root = str(Path(__file__).resolve().parent.parent)
    rows = []
    for text, lmap in out:
        if lmap is None:
            rows.append([text, None])
            continue
        files = [f.replace(root, "<tree>") for f in lmap.files]
        rows.append([text, [files, [list(v) if isinstance(v, tuple) else v for v in lmap.lines]]])
    path.write_text(json.dumps(rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--dump", type=Path, help="write every text and map of one replay here (JSON)")
    a = ap.parse_args(argv)
    heads = traced_heads()
    print(f"{len(heads)} snapshots of one sm_90a lowering; {a.reps} replays")
    _table(parts(heads, a.reps))
    _table(tag_pieces(heads, a.reps))
    if a.dump is not None:
        dump(replay(heads)[1], a.dump)
    return 0


if __name__ == "__main__":
    sys.exit(main())
