"""The on-disk format is one layer at the bottom: readers read through it, never through the writer.

Counted on every import, module level and inside functions (tests/test_import_cycles.py's
graph): `history/` imports nothing of `tltrace.session`; `render/`, `rerun/` and
`reconcile/` import from it only what is not the format (below); `format/` imports
nothing above config, errors, fs.atomic and fs.safe_read, and nothing outside the standard library.
"""

from __future__ import annotations

import ast
import sys

from .test_import_cycles import PKG, import_graph

READERS = ("history", "render", "rerun", "reconcile")

# What a reader above session/ may still take from it: none of it is the on-disk format.
# Each is live capture or orchestration that the package order (docs/architecture.md)
# allows above session/; the format itself (names, ids, records, source maps, the crash
# notes, liveness, the script registry) comes from format/ only.
NOT_FORMAT = {
    "tltrace.session.events": "what the core tells listeners (render's listeners; reconcile's notices)",
    "tltrace.session.controller": "whether tracing is installed (rerun/best reads installed())",
    "tltrace.session.native": "the checks before native calls (rerun/capture runs inside a compile)",
    "tltrace.session.signature": "the launch shape read from live IR (reconcile/variant, rerun/best)",
    "tltrace.session.recorder": "the recorder interface per-compile extras implement (rerun/capture)",
    "tltrace.session.snapshot": "the one snapshot a recorder reads (rerun/capture's ReproRecorder)",
    "tltrace.session.codegen_nvrtc": "NVRTC's log of an edit it refused (reconcile/build's recorder, in the compile)",
}
STRICT = ("history",)  # the reader of record: nothing of session/ at all

BOTTOM = {"tltrace.config", "tltrace.errors", "tltrace.fs.atomic", "tltrace.fs.safe_read"}


def reader_violations(edges: dict[str, set[str]]) -> list[str]:
    """Return 'module -> import' for every reader import of session/ that the rules above forbid."""
    out = []
    for mod, targets in sorted(edges.items()):
        parts = mod.split(".")
        if len(parts) < 2 or parts[1] not in READERS:
            continue
        for t in sorted(targets):
            if t != "tltrace.session" and not t.startswith("tltrace.session."):
                continue
            if parts[1] in STRICT or t not in NOT_FORMAT:
                out.append(f"{mod} -> {t}")
    return out


def format_violations(edges: dict[str, set[str]]) -> list[str]:
    """Return 'module -> import' for every tltrace import of format/ above the bottom."""
    out = []
    for mod, targets in sorted(edges.items()):
        if mod != "tltrace.format" and not mod.startswith("tltrace.format."):
            continue
        for t in sorted(targets):
            if t in BOTTOM or t == "tltrace.format" or t.startswith("tltrace.format."):
                continue
            out.append(f"{mod} -> {t}")
    return out


def test_the_checkers_find_what_they_forbid() -> None:
    edges = {
        "tltrace.history.x": {"tltrace.session.events", "tltrace.format.records"},
        "tltrace.render.y": {"tltrace.session.events", "tltrace.session.store"},
        "tltrace.rerun.z": {"tltrace.session"},
        "tltrace.cli.w": {"tltrace.session.store"},
        "tltrace.format.v": {"tltrace.fs.safe_read", "tltrace.format.names", "tltrace.history.runs"},
    }
    assert reader_violations(edges) == [
        "tltrace.history.x -> tltrace.session.events",
        "tltrace.render.y -> tltrace.session.store",
        "tltrace.rerun.z -> tltrace.session",
    ]
    assert format_violations(edges) == ["tltrace.format.v -> tltrace.history.runs"]


def test_readers_do_not_import_the_writer_package() -> None:
    bad = reader_violations(import_graph())
    assert not bad, (
        "a reader imports tltrace.session (read the on-disk format through tltrace.format instead):\n  "
        + "\n  ".join(bad)
    )


def test_format_imports_nothing_above_it() -> None:
    edges = import_graph()
    assert any(m.startswith("tltrace.format.") for m in edges)
    bad = format_violations(edges)
    assert not bad, "tltrace.format imports above the bottom:\n  " + "\n  ".join(bad)


def test_format_imports_only_the_standard_library_outside_tltrace() -> None:
    bad = []
    for p in sorted((PKG / "format").rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "tltrace" and top not in sys.stdlib_module_names and top != "__future__":
                    bad.append(f"{p.name}: {name}")
    assert not bad, bad
