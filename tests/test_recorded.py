"""The recorded traces (tests/data/traces) and the read side on them: no compile, the quick loop.

The first tests are the format-drift check: every recorded manifest must still load with
the current reader at the current schema version, and hold what the read-side tests
rely on. When the on-disk format changes, they fail first: regenerate the recording
with `python tests/data/make_traces.py` (its docstring says how and when) and commit it
with the change. A reader that must still read the old format keeps a test of its own
(tests/test_runs.py reads schema 3 back).

The rest read the recording through every view: `tltrace.load`, the summary model,
`show`, `show --profile`, `export --chrome-trace`, the resolver and the index page built
from records. Facts (pass counts, names, statuses, invocations) come from the manifests.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import tltrace
from tltrace.format.records import SCHEMA_VERSION, RunManifest
from tltrace.history import runs
from tltrace.history.summary import CompileSummary, order

from ._records import RECORDED, read_manifest, run_dirs

REGENERATE = "the recorded traces no longer match the format: run `python tests/data/make_traces.py`"


def _manifests(root: Path) -> dict[Path, dict]:
    return {
        p.parent: json.loads(p.read_text()) for p in sorted(root.glob("*/.run_records/run_*/manifest.json"))
    }


# -- the format-drift check (on the checked-in files themselves) ------------------------------------
def test_every_recorded_manifest_loads_at_the_current_schema() -> None:
    found = _manifests(RECORDED)
    assert len(found) >= 5, f"no recorded traces under {RECORDED}; {REGENERATE}"
    for run_dir, data in found.items():
        assert data.get("schema_version") == SCHEMA_VERSION, f"{run_dir}: {REGENERATE}"
        m = RunManifest.from_json(data)  # raises on a field the reader no longer knows the type of
        assert m.run_id == run_dir.name and m.records, f"{run_dir}: {REGENERATE}"
        assert m.to_json()["records"] == RunManifest.from_json(m.to_json()).to_json()["records"]
        objects = run_dir.parent / ".objects"
        for rec in m.records:
            for digest in (rec.before_hash, rec.after_hash):
                assert digest is None or (objects / digest).is_file(), f"{run_dir}: no text {digest}"


# Fields no CPU recording can fill, and why. Anything else RunManifest or PassRecord declares must
# be filled in some recorded manifest: a recorder's new field makes this fail until the recording
# is made again with it (the schema version alone does not notice a new field).
UNFILLED = {
    "target_host": "no recorder writes it (TileLang's host target is in the repro context)",
    "params": "no recorder writes it yet (an autotuner's config, when TileLang exposes one)",
}


def _filled(value: object, default: object) -> bool:
    return value is not None and value != default and value not in ([], {}, "")


def test_the_recording_fills_every_field_of_the_manifest_and_its_records() -> None:
    """Every field of RunManifest and of PassRecord, present and filled somewhere in the recording."""
    from dataclasses import MISSING, fields

    from tltrace.format.records import PassRecord

    found = list(_manifests(RECORDED).values())
    stale: list[str] = []
    for kind, cls, docs in (
        ("RunManifest", RunManifest, found),
        ("PassRecord", PassRecord, [r for m in found for r in m["records"]]),
    ):
        declared = {f.name: None if f.default is MISSING else f.default for f in fields(cls)}
        declared.pop("schema_version", None)  # always the default: the test above checks its value
        absent = sorted(k for k in declared if not all(k in d for d in docs))
        assert not absent, f"recorded {kind}s lack {absent}; {REGENERATE}"
        unfilled = {k for k, default in declared.items() if not any(_filled(d[k], default) for d in docs)}
        new = sorted(unfilled - set(UNFILLED))
        assert not new, (
            f"no recorded {kind} fills {new}; {REGENERATE} (add a run that fills it to RUNS there, or, "
            "when no CPU recording can, name it in UNFILLED with why)"
        )
        stale += sorted(k for k in UNFILLED if k in declared and k not in unfilled)
    assert not stale, f"the recording fills {stale} now: take them out of UNFILLED"


def test_the_recording_holds_what_the_read_side_tests_need() -> None:
    found = list(_manifests(RECORDED).values())
    outcomes = Counter(r["reconcile"] for m in found for r in m["records"] if r.get("reconcile"))
    assert outcomes["PATCHED"] >= 1 and outcomes["CONFLICT"] >= 1, outcomes  # an edited run, a conflict
    assert any(r["status"] == "failed" for m in found for r in m["records"])  # a failed pass
    per_invocation = Counter((m["script"], m["invocation"]) for m in found)
    assert max(per_invocation.values()) >= 2  # an invocation of several compiles
    assert {"elementwise_add", "gemm", "two_kernels"} <= {m["script"] for m in found}


def test_the_copy_links_every_per_pass_file_as_tltrace_writes_it(recorded: Path) -> None:
    for run_dir in _manifests(recorded):
        run = runs.load_run(run_dir)
        assert run.manifest is not None and run.status != runs.DAMAGED, run.problem
        assert runs.missing_files(run) == 0
        rec = next(r for r in run.manifest.records if r.after_file)
        assert (run_dir / rec.after_file).stat().st_nlink >= 2  # a hard link into .objects


# -- the read side on the recording --------------------------------------------------------------------
def test_load_reads_every_invocation_and_compile(recorded: Path) -> None:
    found = _manifests(recorded)
    t = tltrace.load(recorded)
    assert {c.run_id for c in t.compiles} == {d.name for d in found}
    assert len(t.invocations) == len({(m["script"], m["invocation"]) for m in found.values()})
    for c in t.compiles:
        m = next(m for d, m in found.items() if d.name == c.run_id)
        assert c.status == m["status"] and [p.name for p in c.passes] == [r["name"] for r in m["records"]]


def test_summary_model_orders_the_failed_compile_first(recorded: Path) -> None:
    found = list(_manifests(recorded).values())
    summaries = [CompileSummary.of(RunManifest.from_json(m), position=i) for i, m in enumerate(found)]
    ordered = order(summaries)
    bad = [s for s in summaries if not s.ok]
    assert bad and ordered[: len(bad)] == sorted(bad, key=lambda s: (s.started, s.position))
    failed = next(s for s in bad if s.failed)
    m = next(m for m in found if m["run_id"] == failed.run_id)
    first = next(r["name"] for r in m["records"] if r["status"] == "failed")
    assert failed.failed_at == first and failed.error and "\n" not in failed.error


def test_show_names_the_edit_outcome_of_each_codegen(run_cli, recorded: Path) -> None:
    for run_dir in run_dirs(recorded / "elementwise_add"):
        m = read_manifest(run_dir)
        res = run_cli("show", "--trace-dir", recorded, str(run_dir))
        assert res.exit_code == 0, res.output
        for r in m["records"]:
            if r.get("reconcile"):
                row = next(line for line in res.stdout.splitlines() if f" {r['name']} " in line)
                assert r["reconcile"] in row, row


def test_show_a_failed_compile_names_its_error_and_pass(run_cli, recorded: Path) -> None:
    run_dir = next(d for d, m in _manifests(recorded).items() if m["status"] != "complete")
    m = read_manifest(run_dir)
    res = run_cli("show", "--trace-dir", recorded, str(run_dir), "--json")
    data = json.loads(res.stdout)
    assert data["status"] == m["status"] and data["error"] == m["error"]
    failed = next(r for r in m["records"] if r["status"] == "failed")
    res = run_cli("show", "--trace-dir", recorded, str(run_dir), "--pass", str(failed["index"]))
    assert res.exit_code == 0 and "FAILED" in res.stdout, res.output


def _invocation(recorded: Path, script: str, position: int) -> list[dict]:
    invs = runs.invocations(recorded / script)
    return [read_manifest(r.path) for r in invs[position].runs]


def test_profile_of_a_two_compile_invocation_adds_up(run_cli, recorded: Path) -> None:
    ms = _invocation(recorded, "two_kernels", -1)
    assert len(ms) >= 2
    res = run_cli(
        "show", "--trace-dir", recorded, "two_kernels", "-1", "--profile", "--json", "--top", "1000"
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["compiles"] == len(ms) and sorted(data["runs"]) == sorted(m["run_id"] for m in ms)
    recorded_s = sum(r["duration_s"] for m in ms for r in m["records"])
    assert data["recorded_s"] == pytest.approx(recorded_s, abs=1e-5)
    one = ms[0]["run_id"]  # a run id means that compile alone, in --profile as in export
    res = run_cli("show", "--trace-dir", recorded, "two_kernels", one, "--profile", "--json")
    assert json.loads(res.stdout)["runs"] == [one]


def test_export_means_what_show_means(run_cli, recorded: Path, tmp_path: Path) -> None:
    ms = _invocation(recorded, "two_kernels", -1)
    out = tmp_path / "t.json"
    for spec, want in ((ms[0]["run_id"], [ms[0]["run_id"]]), ("-1", [m["run_id"] for m in ms])):
        res = run_cli("export", "--trace-dir", recorded, "two_kernels", spec, "--chrome-trace", out)
        assert res.exit_code == 0, res.output
        events = json.loads(out.read_text())["traceEvents"]
        got = sorted(e["args"]["run_id"] for e in events if e.get("cat") == "compile")
        assert got == sorted(want)
        passes = [e for e in events if e["ph"] == "X" and e["cat"] not in ("compile", "backend")]
        assert len(passes) == sum(len(m["records"]) for m in ms if m["run_id"] in want)


def test_diff_runs_of_the_two_invocations_pairs_their_compiles(run_cli, recorded: Path) -> None:
    kernels = sorted(m["kernel"] for m in _invocation(recorded, "two_kernels", -1))
    res = run_cli("diff-runs", "--trace-dir", recorded, "two_kernels:-2", "two_kernels:-1", "--json")
    assert res.exit_code == 0, res.output
    assert sorted(c["kernel"] for c in json.loads(res.stdout)["compiles"]) == kernels


def test_index_built_from_records_lists_the_invocation(recorded: Path, tmp_path: Path) -> None:
    from tltrace.history.report_reads import index_report
    from tltrace.render.index import index_rows, write_index

    sd = recorded / "two_kernels"
    first = runs.invocations(sd)[0]
    out = write_index(index_report(sd, [r.path for r in first.runs]), tmp_path / "index.html")
    rows = index_rows(out)
    assert sorted(r["run_id"] for r in rows) == sorted(r.path.name for r in first.runs)
    assert all(r["status"] == "complete" for r in rows)
