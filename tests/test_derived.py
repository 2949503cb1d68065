"""Derived views at read time (issue 51 item 3): the +/- counts and the facts of a compile traced
with no live view (`--quiet`) are left out at capture and computed by the first reader.

The same three compiles (the CPU add, the CPU gemm, an sm_90a compile-only GEMM) are traced twice:
with the HTML mode's settings (counted and facts computed at capture, as before) and quiet (left
to the reader). Every reader's value must equal the capture-time one, and each count must equal
an independent count of difflib's unified diff of the two recorded texts (read from the pack by
its documented layout: tests/_records.pack_texts).
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import pytest

from tltrace.config import Settings
from tltrace.format import derived
from tltrace.format.layout import SOURCEMAP_LOG
from tltrace.format.records import CHANGED, RunManifest
from tltrace.format.sourcemap import LineMap
from tltrace.history.loading import load_manifest, load_run
from tltrace.history.sourcemaps import load as load_maps
from tltrace.runner import Target, run_target

from ._kernels import SM90A
from ._records import pack_texts
from .conftest import EXAMPLES

SCRIPTS = ("elementwise_add", "gemm", "sm90a")


def _trace(script: Path, trace_dir: Path, name: str, *, live: bool) -> list[Path]:
    settings = Settings(
        mode="html" if live else "terminal",
        trace_dir=trace_dir,
        script_name=name,
        quiet=not live,
        codegen_output=None,
    )
    assert run_target(Target(str(script)), settings, lambda e: None) == 0
    runs = sorted((trace_dir / name / ".run_records").glob("run_*"))
    return sorted(runs, key=lambda d: json.loads((d / "manifest.json").read_text())["started"])


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> dict[str, tuple[list[Path], list[Path]]]:
    """script -> (run dirs traced live, run dirs traced quiet), in compile order."""
    import tilelang  # noqa: F401

    tmp = tmp_path_factory.mktemp("derived")
    sm90a = tmp / "sm90a.py"
    sm90a.write_text(SM90A)
    scripts = {
        "elementwise_add": EXAMPLES / "elementwise_add.py",
        "gemm": EXAMPLES / "gemm.py",
        "sm90a": sm90a,
    }
    os.environ["TILELANG_DISABLE_CACHE"] = "1"
    return {
        name: (_trace(path, tmp / "live", name, live=True), _trace(path, tmp / "quiet", name, live=False))
        for name, path in scripts.items()
    }


def _raw(run_dir: Path) -> RunManifest:
    return RunManifest.from_json(json.loads((run_dir / "manifest.json").read_text()))


def _difflib_counts(before: str, after: str) -> tuple[int, int]:
    """(added, removed): the '+' and '-' lines of difflib's unified diff, headers left out."""
    added = removed = 0
    for line in difflib.unified_diff(before.split("\n"), after.split("\n"), lineterm="", n=0):
        if line.startswith(("+++", "---")):
            continue
        added += line.startswith("+")
        removed += line.startswith("-")
    return added, removed


@pytest.mark.parametrize("name", SCRIPTS)
def test_quiet_capture_leaves_counts_and_facts_to_the_reader(traced, name) -> None:
    _, quiet = traced[name]
    assert quiet
    for run_dir in quiet:
        m = _raw(run_dir)
        changed = [r for r in m.records if r.status == CHANGED]
        assert changed and all(r.added is None and r.removed is None for r in changed)
        assert m.facts is None
        assert not (run_dir / derived.DERIVED).exists()


@pytest.mark.parametrize("name", SCRIPTS)
def test_read_time_counts_and_facts_equal_the_capture_time_ones(traced, name) -> None:
    live, quiet = traced[name]
    assert len(live) == len(quiet)
    compared = 0
    for live_dir, quiet_dir in zip(live, quiet):
        then = _raw(live_dir)
        now = load_manifest(quiet_dir, derive=True)
        assert [(r.index, r.name, r.status) for r in then.records] == [
            (r.index, r.name, r.status) for r in now.records
        ]
        assert [(r.added, r.removed) for r in now.records] == [(r.added, r.removed) for r in then.records]
        assert then.facts is not None and now.facts == then.facts
        compared += len(now.records)
        # The cache is written, and the next reader reads it: the same values.
        assert (quiet_dir / derived.DERIVED).is_file()
        assert load_manifest(quiet_dir, derive=True) == now
        assert load_run(quiet_dir).derived().manifest == now
    print(f"{name}: {compared} records, read-time counts and facts equal to capture-time ones")


@pytest.mark.parametrize("name", SCRIPTS)
def test_read_time_counts_against_difflib(traced, name) -> None:
    """difflib's unified diff of the two stored texts: the net change in lines is the same for every
    record, and so are both counts wherever difflib's matching is as large as tltrace's alignment's
    (difflib's is not always the largest: tltrace's alignment pairs re-indented and changed lines,
    and where it leaves an identical line unpaired its count is the larger; the stream, the report
    and capture used that alignment's counts before, and the read-time ones equal them: above)."""
    _, quiet = traced[name]
    checked, equal, other = 0, 0, []
    for run_dir in quiet:
        texts = pack_texts(run_dir)
        for r in load_manifest(run_dir, derive=True).records:
            if r.status != CHANGED:
                continue
            before, after = texts[r.before_hash], texts[r.after_hash]
            a, d = _difflib_counts(before, after)
            assert r.added - r.removed == a - d, r.name
            assert r.added + r.removed > 0 and a + d > 0
            checked += 1
            if (r.added, r.removed) == (a, d):
                equal += 1
            else:
                other.append(f"{r.name} +{r.added}/-{r.removed} (difflib +{a}/-{d})")
    assert checked and equal >= checked * 0.8, other
    print(f"{name}: {checked} changed records; {equal} with difflib's counts, the rest: {other}")


@pytest.mark.parametrize("name", SCRIPTS)
def test_read_time_call_sites_equal_the_capture_time_ones(traced, name) -> None:
    """The quiet compile's maps are stored as printed (after a `calls` line) and get their call
    sites when read: every record's two maps equal those the live compile stored refined."""
    live, quiet = traced[name]
    sides = mapped = 0
    for live_dir, quiet_dir in zip(live, quiet):
        stored = [json.loads(ln) for ln in (quiet_dir / SOURCEMAP_LOG).read_text().splitlines()]
        assert stored[0]["t"] == "calls" and stored[0]["roots"]
        assert all(d["t"] != "calls" for d in stored[1:])
        assert not any(
            json.loads(ln)["t"] == "calls" for ln in (live_dir / SOURCEMAP_LOG).read_text().splitlines()
        )
        then, now = load_maps(live_dir), load_maps(quiet_dir)
        assert now.records.keys() == then.records.keys()
        for index in then.records:
            for side in ("before", "after"):
                assert now.of(index, side) == then.of(index, side), (index, side)
                sides += 1
                mapped += bool((then.of(index, side) or LineMap((), ())).via)
    if name != "elementwise_add":  # T.gemm expands TileLang's library code: its lines get the call site
        assert mapped
    print(f"{name}: {sides} record sides' maps equal, {mapped} with library lines mapped to their call")


def test_a_stale_or_foreign_cache_is_recomputed(traced) -> None:
    _, quiet = traced["gemm"]
    run_dir = quiet[0]
    good = load_manifest(run_dir, derive=True)
    path = run_dir / derived.DERIVED
    data = json.loads(path.read_text())
    index = next(k for k, v in data["counts"].items() if v != [0, 0])
    for bad in (
        {**data, "version": derived.VERSION + 1, "counts": {index: [999, 999]}},
        {**data, "key": "0" * 64, "counts": {index: [999, 999]}},
        "not json",
    ):
        path.write_text(bad if isinstance(bad, str) else json.dumps(bad))
        assert load_manifest(run_dir, derive=True) == good
        assert json.loads(path.read_text())["counts"][index] != [999, 999]  # rewritten


def test_a_run_that_cannot_be_written_is_read_and_not_cached(traced, tmp_path) -> None:
    """A read-only trace dir (the tests run as root, whom chmod does not stop: a directory where
    the cache would go makes its write fail the same way): computed, shown, nothing left behind."""
    import shutil

    _, quiet = traced["elementwise_add"]
    copy = tmp_path / "ro" / quiet[0].name
    shutil.copytree(quiet[0], copy, ignore=shutil.ignore_patterns(derived.DERIVED))
    expected = load_manifest(quiet[0], derive=True)
    (copy / derived.DERIVED).mkdir()
    before = sorted(p.name for p in copy.iterdir())
    got = load_manifest(copy, derive=True)
    assert [(r.added, r.removed) for r in got.records] == [(r.added, r.removed) for r in expected.records]
    assert got.facts == expected.facts
    assert sorted(p.name for p in copy.iterdir()) == before and not any((copy / derived.DERIVED).iterdir())
