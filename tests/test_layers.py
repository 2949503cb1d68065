"""The package order of docs/architecture.md, enforced: no import runs from a lower layer to a higher one.

Every import counts, module level and inside functions (the graph of tests/test_import_cycles.py).
Modules of one layer may import each other (the cycle test keeps them acyclic).
"""

from __future__ import annotations

from pathlib import Path

from tests.test_import_cycles import import_graph

# Top to bottom. A module belongs to the first entry its dotted name falls under.
LAYERS: list[tuple[str, ...]] = [
    ("tltrace", "tltrace.__main__", "tltrace.tracing._boot"),
    ("tltrace.cli",),
    # The entry points: each opens an invocation (tracing.lifecycle) with render's listeners.
    ("tltrace.api", "tltrace.runner", "tltrace.pytest_plugin"),
    # tracing.child, the start of a traced job's child, picks render's listeners too.
    ("tltrace.tracing",),
    ("tltrace.render",),
    (
        "tltrace.bisect",
        "tltrace.rerun",
        "tltrace.history",
        "tltrace.reconcile",
        "tltrace.facts",
        "tltrace.layouts",
        "tltrace.stages",
        "tltrace.check",
        "tltrace.remarks",
        "tltrace.sourcemap",
        "tltrace.callsites",
        "tltrace.toolchain",
        "tltrace.launches",
        "tltrace.runtime",
    ),
    ("tltrace.session",),
    ("tltrace.config",),  # the settings read format/'s names, ids and script dirs
    ("tltrace.format",),  # the on-disk format
    (
        "tltrace.diff",
        "tltrace.fs",
        "tltrace.proc",
        "tltrace.errors",
        "tltrace._version",
    ),
]


# Known upward imports being removed on another branch: each must still exist (else delete it here).
PENDING: set[tuple[str, str]] = set()

# The imports meant between two entries of one layer (importer, imported), each with its reason.
# Any other import across entries of a layer fails, as an upward one does; each listed one must
# still be made (else delete it here), and the entries' graph they draw has no cycle.
SIDEWAYS: dict[tuple[str, str], str] = {
    # the entry points
    (
        "tltrace.pytest_plugin",
        "tltrace.api",
    ): "a test's compiles handed to it as tltrace.load's (api/reading)",
    # the features and the readers
    ("tltrace.bisect", "tltrace.history"): "a step's runs read back",
    ("tltrace.bisect", "tltrace.facts"): "--configs: the facts each flip changed, against step 1's",
    (
        "tltrace.bisect",
        "tltrace.rerun",
    ): "the probe recompiles the recorded kernel as repro.py does; the config allow-list",
    ("tltrace.check", "tltrace.facts"): "checks over facts",
    ("tltrace.check", "tltrace.history"): "the compiles checked, resolved from a REF",
    ("tltrace.facts", "tltrace.remarks"): "the remarks' kinds counted as facts",
    ("tltrace.facts", "tltrace.toolchain"): "--ptxas's machine facts: ptxas's report of the nvcc build",
    (
        "tltrace.history",
        "tltrace.facts",
    ): "show --line: the device source's facts beside its lines (history/byline)",
    (
        "tltrace.history",
        "tltrace.stages",
    ): "show --ptx-line, --sass-line: the stages' texts read (history/byline); hot lines: the SASS stage's "
    "kernel.cu marks (history/hot)",
    (
        "tltrace.history",
        "tltrace.sourcemap",
    ): "a failed pass's site: TileLang's error marker read (history/failsite); hot lines: the kernel.cu lines "
    "whose span a pass dropped, given a line (sourcemap/dropped)",
    (
        "tltrace.layouts",
        "tltrace.bisect",
    ): "the layout explanation's child delta-debugs tile operations with ddmin",
    (
        "tltrace.layouts",
        "tltrace.history",
    ): "the layout explanation reads the failed run's IR text and source map",
    (
        "tltrace.layouts",
        "tltrace.rerun",
    ): "the layout explanation reruns the failed pass's saved input; the config allow-list",
    ("tltrace.reconcile", "tltrace.history"): "watch reruns and reads the runs it made",
    (
        "tltrace.reconcile",
        "tltrace.facts",
    ): "watch says which facts each build changed (reconcile/buildfacts)",
    ("tltrace.rerun", "tltrace.history"): "repro and bundle read the recorded runs",
    ("tltrace.sourcemap", "tltrace.callsites"): "library lines mapped to the user's call in every map",
    ("tltrace.history", "tltrace.callsites"): "a quiet compile's maps get their call sites when read",
    ("tltrace.stages", "tltrace.toolchain"): "the PTX and SASS stages: the nvcc build's PTX and cubin",
    ("tltrace.toolchain", "tltrace.sourcemap"): "TileLang's own #line directives blanked before the build",
    (
        "tltrace.runtime",
        "tltrace.history",
    ): "run --sanitize: the errors named through the invocation's recorded runs (history/byline); run --ncu: "
    "the profiled compiles' texts, maps and hot lines read back (history/hotlines)",
    (
        "tltrace.runtime",
        "tltrace.stages",
    ): "run --sanitize: compute-sanitizer found as the SASS tools are; a pc looked up in the stored SASS",
    # the bottom
    ("tltrace.fs", "tltrace.errors"): "a bad output path is a UsageError",
}


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


def entry_of(module: str) -> str:
    """Return the LAYERS entry the module falls under (the longest matching prefix)."""
    layer = LAYERS[layer_of(module)]
    return max((n for n in layer if module == n or module.startswith(n + ".")), key=len)


def sideways_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Return (importer's entry, imported's entry) for every import between two entries of one layer."""
    return {
        (entry_of(a), entry_of(b))
        for a, targets in graph.items()
        for b in targets
        if layer_of(a) == layer_of(b) and entry_of(a) != entry_of(b) and entry_of(a) != "tltrace"
    }


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


def test_the_checker_finds_a_sideways_import() -> None:
    graph = {
        "tltrace.facts.collect": {"tltrace.layouts.model", "tltrace.facts.registry", "tltrace.session.store"}
    }
    assert sideways_imports(graph) == {("tltrace.facts", "tltrace.layouts")}


def test_sideways_imports_are_the_listed_ones() -> None:
    found = sideways_imports(import_graph())
    unlisted = sorted(found - set(SIDEWAYS))
    detail = "\n".join(f"  {a} -> {b}" for a, b in unlisted)
    assert not unlisted, (
        f"{len(unlisted)} imports between two entries of one layer are not in SIDEWAYS "
        f"(tests/test_layers.py): list each with its reason, or take it out:\n{detail}"
    )
    gone = sorted(set(SIDEWAYS) - found)
    assert not gone, f"no longer imported; remove from SIDEWAYS: {gone}"


# Pairs of one layer's entries that import each other, sideways: each is to be broken (else
# delete it here). None: facts/ reads recorded texts through format/texts, below both.
PENDING_CYCLES: set[frozenset[str]] = set()


def sideways_cycles(edges: set[tuple[str, str]]) -> set[frozenset[str]]:
    """Return the sets of entries that reach each other through `edges` (strongly connected, more than one)."""
    nodes = sorted({n for e in edges for n in e})
    reach = {n: {b for a, b in edges if a == n} for n in nodes}
    changed = True
    while changed:
        changed = False
        for n in nodes:
            more = set().union(*(reach[m] for m in reach[n])) - reach[n] if reach[n] else set()
            if more:
                reach[n] |= more
                changed = True
    return {frozenset({n} | {m for m in reach[n] if n in reach[m]}) for n in nodes if n in reach[n]}


def test_the_checker_finds_a_sideways_cycle() -> None:
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}
    assert sideways_cycles(edges) == {frozenset({"a", "b", "c"})}


def test_the_sideways_imports_draw_no_cycle_but_the_pending() -> None:
    cycles = sideways_cycles(set(SIDEWAYS))
    assert cycles <= PENDING_CYCLES, (
        f"entries of one layer that import each other: {sorted(map(sorted, cycles - PENDING_CYCLES))}"
    )
    gone = PENDING_CYCLES - cycles
    assert not gone, f"no longer a cycle; remove from PENDING_CYCLES: {sorted(map(sorted, gone))}"


def test_session_is_the_capture_engine_only() -> None:
    """No feature's compile-time half lives in session/: each is its own package's (docs/architecture.md)."""
    root = Path(__file__).resolve().parent.parent / "tltrace" / "session"
    features = {
        "remarks",
        "line_directives",
        "skipping",
        "sourcemap",
        "sourcemap_recorder",
        "sourcemap_store",
    }
    features |= {"callsite", "callsites", "cstring", "build"}
    left = sorted(p.stem for p in root.glob("*.py") if p.stem in features)
    assert not left, f"features' modules in session/: {left}"
    graph = import_graph()
    named = sorted(
        (a, b)
        for a, targets in graph.items()
        if a.startswith("tltrace.session")
        for b in targets
        if b.startswith("tltrace.") and layer_of(b) < layer_of(a)
    )
    assert not named, named
