"""The package order of docs/architecture.md, enforced: no import runs from a lower layer to a higher one.

Every import counts, module level and inside functions (the graph of tests/test_import_cycles.py).
Modules of one layer may import each other (the cycle test keeps them acyclic).
"""

from __future__ import annotations

from pathlib import Path

from tests.test_import_cycles import import_graph

# Top to bottom. A module belongs to the first entry its dotted name falls under.
LAYERS: list[tuple[str, ...]] = [
    ("tltrace", "tltrace.__main__", "tltrace._boot"),
    ("tltrace.cli",),
    # The entry points: each opens an invocation (tracing.lifecycle) with render's listeners.
    # rerun.replay_child is the main of `tltrace replay`'s child process (nothing imports it).
    (
        "tltrace.api",
        "tltrace.runner",
        "tltrace.pytest_plugin",
        "tltrace.ipython",
        "tltrace._child",
        "tltrace.reading",
        "tltrace.rerun.replay_child",
    ),
    ("tltrace.render",),
    ("tltrace.tracing",),
    (
        "tltrace.bisect",
        "tltrace.rerun",
        "tltrace.history",
        "tltrace.reconcile",
        "tltrace.facts",
        "tltrace.layouts",
        "tltrace.stages",
        "tltrace.checking",
        "tltrace.remarks",
        "tltrace.sourcemap",
        "tltrace.callsites",
        "tltrace.toolchain",
    ),
    ("tltrace.session",),
    ("tltrace.config",),  # the settings read format/'s names, ids and script dirs
    ("tltrace.format",),  # the on-disk format
    (
        "tltrace.diff",
        "tltrace.passref",
        "tltrace.safe_read",
        "tltrace._atomic",
        "tltrace.errors",
        "tltrace._version",
        "tltrace.output_path",
        "tltrace._shell",
        "tltrace._pychild",
        "tltrace.testing",
        "tltrace.filecheck",
        "tltrace.expect",
    ),
]


# Known upward imports being removed on another branch: each must still exist (else delete it here).
PENDING: set[tuple[str, str]] = set()


def layer_of(module: str) -> int:
    """Return the index in LAYERS of the module's layer (0 is the top); the longest matching prefix wins."""
    best, best_len = -1, -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best_len:
                best, best_len = i, len(name)
    if best < 0:
        raise AssertionError(
            f"{module} is in no layer of tests/test_layers.py: add it where docs/architecture.md puts it"
        )
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Return (importer, imported) for every import of a module in a higher layer than the importer's."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if layer_of(b) < layer_of(a))


def test_the_checker_finds_an_upward_import() -> None:
    graph = {
        "tltrace.session.tool": {"tltrace.reconcile.files", "tltrace.errors"},
        "tltrace.cli.app": {"tltrace.api"},
    }
    assert upward_imports(graph) == [("tltrace.session.tool", "tltrace.reconcile.files")]
    assert layer_of("tltrace.format.ids") == layer_of("tltrace.format") > layer_of("tltrace.session.store")
    assert layer_of("tltrace.format") > layer_of("tltrace.config") > layer_of("tltrace.session")


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        layer_of(module)


def test_imports_go_downward_only() -> None:
    graph = import_graph()
    assert "tltrace.session.tool" in graph and graph["tltrace.session.tool"]  # the graph is real
    up = [e for e in upward_imports(graph) if e not in PENDING]
    detail = "\n".join(f"  {a} -> {b}" for a, b in up)
    assert not up, (
        f"{len(up)} imports run up the package order (tests/test_layers.py, docs/architecture.md):\n{detail}"
    )


def test_pending_upward_imports_still_exist() -> None:
    up = set(upward_imports(import_graph()))
    gone = PENDING - up
    assert not gone, f"no longer imported upward; remove from PENDING: {sorted(gone)}"


def test_config_imports_only_what_is_below_it() -> None:
    mine = layer_of("tltrace.config")
    imported = import_graph()["tltrace.config"]
    assert all(layer_of(m) > mine for m in imported), sorted(imported)


def test_the_layers_match_the_tree() -> None:
    root = Path(__file__).resolve().parent.parent / "tltrace"
    for names in LAYERS:
        for name in names:
            if name == "tltrace":
                continue
            rel = Path(*name.split(".")[1:])
            assert (root / rel).is_dir() or (root / rel).with_suffix(".py").is_file(), (
                f"{name} no longer exists"
            )
