"""history/runs.py: locate scripts and runs, resolve RUN specs, load manifests (also damaged ones)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tltrace.errors import RecordsError, UsageError
from tltrace.format.records import PassRecord, RunManifest
from tltrace.history import runs

from ._records import copy_tree, recorded_fixture, run_dirs, schema3_text

traced = recorded_fixture(
    "The recorded traces: two runs of elementwise_add (block 128, then 64) and one of gemm.",
    elementwise_add=slice(0, 2),
    gemm=None,
)


@pytest.fixture
def damaged(traced: Path, tmp_path: Path) -> Path:
    return copy_tree(traced, tmp_path / "traces")


def test_locate_every_form(traced: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sd = traced / "elementwise_add"
    run = run_dirs(sd)[0]
    assert runs.locate(None, traced).script_dirs == (sd, traced / "gemm")
    assert runs.locate(str(traced), "/nonexistent").root == traced
    assert runs.locate(str(sd), "/nonexistent").script_dirs == (sd,)
    assert runs.locate(str(sd / ".run_records"), "/nonexistent").script_dirs == (sd,)
    assert runs.locate(str(run), "/nonexistent").run_dir == run
    registry = json.loads((traced / ".tltrace-scripts.json").read_text())["scripts"]
    path = next(k for k, v in registry.items() if v == "elementwise_add").removeprefix("path:")
    assert runs.locate(path, traced).script_dirs == (sd,)  # the script's path as recorded
    elsewhere = tmp_path / "src" / "elementwise_add.py"  # another script of that name: its own dir
    elsewhere.parent.mkdir()
    elsewhere.write_text("")
    with pytest.raises(RecordsError, match="no run records for"):
        runs.locate(str(elsewhere), traced)
    monkeypatch.chdir(tmp_path)
    assert runs.locate("examples/elementwise_add.py", traced).script_dirs == (sd,)  # not here: by its name
    assert runs.locate("elementwise_add", traced).script_dirs == (sd,)
    with pytest.raises(RecordsError, match="neither a run"):
        runs.locate("softmax", traced)
    with pytest.raises(RecordsError, match="no run records under"):
        runs.locate(None, tmp_path / "empty")


def test_resolve_run_specs(traced: Path) -> None:
    sd = traced / "elementwise_add"
    first, second = run_dirs(sd)
    assert runs.resolve_run(sd, None) == second
    assert runs.resolve_run(sd, "latest") == second
    assert runs.resolve_run(sd, "-1") == second
    assert runs.resolve_run(sd, "-2") == first
    assert runs.resolve_run(sd, first.name) == first
    assert runs.resolve_run(sd, first.name[:-3]) == first
    assert runs.resolve_run(sd, first.name[len("run_") :][:22]) == first  # prefix without run_
    with pytest.raises(UsageError, match="invocation -3 does not exist: elementwise_add has 2 invocation"):
        runs.resolve_run(sd, "-3")
    with pytest.raises(UsageError, match="ambiguous"):
        runs.resolve_run(sd, "run_")
    with pytest.raises(UsageError, match="no run, invocation or signature 'nope'"):
        runs.resolve_run(sd, "nope")


def test_load_manifest_of_a_real_run(traced: Path) -> None:
    m = runs.load_manifest(run_dirs(traced / "elementwise_add")[0])
    assert m.status == "complete" and m.kernel == "add" and m.backend == "cython"
    assert [r.index for r in m.records] == list(range(len(m.records)))
    assert m.records[-1].name == "codegen_device"


@pytest.mark.parametrize(
    "damage, message",
    [
        ("missing", "has no manifest.json"),
        ("truncated", "is truncated or not JSON"),
        ("empty", "is empty"),
        ("schema", "has schema version 99"),
        ("list", "is not a run manifest"),
    ],
)
def test_damaged_manifest_is_one_actionable_line(damaged: Path, damage: str, message: str) -> None:
    run = run_dirs(damaged / "elementwise_add")[0]
    mpath = run / "manifest.json"
    text = mpath.read_text()
    if damage == "missing":
        mpath.unlink()
    elif damage == "truncated":
        mpath.write_text(text[: len(text) // 2])
    elif damage == "empty":
        mpath.write_text("")
    elif damage == "schema":
        mpath.write_text(json.dumps({**json.loads(text), "schema_version": 99}))
    else:
        mpath.write_text("[1, 2]")
    with pytest.raises(RecordsError) as err:
        runs.load_manifest(run)
    msg = str(err.value)
    assert message in msg and "\n" not in msg
    assert str(run) in msg  # names the path and how to get rid of it
    loaded = runs.load_run(run)
    assert loaded.manifest is None and loaded.status == "damaged" and loaded.problem == msg


def test_running_manifest_merges_records_jsonl(tmp_path: Path) -> None:
    from tltrace.format.ids import new_run_id

    run = tmp_path / "s" / ".run_records" / new_run_id()  # this process, now: still being written
    run.mkdir(parents=True)
    head = RunManifest(run_id=run.name, script="s", kernel="k")
    (run / "manifest.json").write_text(head.dumps())
    recs = [PassRecord(index=i, name=f"P{i}", phase="pipeline_c") for i in range(3)]
    lines = [json.dumps(r.to_json()) for r in recs]
    (run / "records.jsonl").write_text("\n".join(lines) + '\n{"index": 3, "na')  # torn last line
    m = runs.load_manifest(run)
    assert m.status == "running" and [r.name for r in m.records] == ["P0", "P1", "P2"]
    assert runs.is_active(runs.load_run(run))
    # Same run written by a process that is gone: interrupted, still readable.
    dead = run.with_name("run_20260101_000000_000000_999999999_abcdef02")
    shutil.copytree(run, dead)
    (dead / "manifest.json").unlink()  # only records.jsonl survived
    m2 = runs.load_manifest(dead)
    assert m2.status == runs.INTERRUPTED and len(m2.records) == 3 and m2.script == "s"


def test_read_text_falls_back_to_stored_objects(damaged: Path) -> None:
    run = runs.load_run(run_dirs(damaged / "elementwise_add")[0])
    rec = runs.find_record(run.require(), "LayoutInference")
    after = runs.read_text(run, rec, "after")
    (run.path / rec.after_file).unlink()
    assert runs.read_text(run, rec, "after") == after
    (run.script_dir / ".run_records" / ".objects" / rec.after_hash).unlink()
    with pytest.raises(RecordsError, match="is missing"):
        runs.read_text(run, rec, "after")


def test_find_record_forms(traced: Path) -> None:
    m = runs.load_manifest(run_dirs(traced / "elementwise_add")[0])
    # The pass names and counts are the recorded manifest's (a pass that ran more than once, a mixed-case
    # name), not TileLang's pipeline written here.
    names = [r.name for r in m.records]
    again = next(n for n in names if names.count(n) > 1)
    twice = [r for r in m.records if r.name == again]
    mid = len(m.records) // 2
    assert runs.find_record(m, str(mid)).index == mid
    assert runs.find_record(m, again) == twice[0]
    assert runs.find_record(m, f"{again}#2") == twice[1]
    assert runs.find_record(m, f"{twice[0].phase}/{again}") == twice[0]
    mixed = next(n for n in names if n != n.lower() and names.count(n) == 1)
    assert runs.find_record(m, mixed.lower()).name == mixed
    with pytest.raises(UsageError, match=f"ran {len(twice)} time"):
        runs.find_record(m, f"{again}#{len(twice) + 1}")
    with pytest.raises(UsageError, match="no pass 'Nope'"):
        runs.find_record(m, "Nope")
    with pytest.raises(UsageError, match=f"no pass with index {len(m.records) + 100}"):
        runs.find_record(m, str(len(m.records) + 100))


def test_parse_run_ref(traced: Path) -> None:
    sd = traced / "elementwise_add"
    first, second = run_dirs(sd)
    assert runs.parse_run_ref(str(first), traced).path == first
    assert runs.parse_run_ref("elementwise_add:-2", traced).path == first
    assert runs.parse_run_ref("elementwise_add", traced).path == second
    assert runs.parse_run_ref("-2", traced, "elementwise_add").path == first
    with pytest.raises(UsageError, match="several scripts"):
        runs.parse_run_ref("-1", traced)


def test_schema3_leaves_out_canonical_file_names_and_reads_them_back() -> None:
    from tltrace.format.layout import record_file

    canon = PassRecord(
        index=7,
        name="tirx.Simplify",
        phase="pipeline_c",
        status="changed",
        before_hash="a" * 20,
        after_hash="b" * 20,
        before_file=record_file("pipeline_c", 7, "tirx.Simplify", "before"),
        after_file=record_file("pipeline_c", 7, "tirx.Simplify", "after"),
    )
    codegen = replace(
        canon, index=8, name="codegen_device", phase="codegen", status="codegen", before_hash="b" * 20,
        after_hash="c" * 20, before_file="codegen/08_codegen_device_before.tir",
        after_file="codegen/08_codegen_device_after.cpp",
    )  # fmt: skip
    failed = replace(
        codegen, index=9, name="X", status="failed", before_hash="c" * 20, after_hash=None,
        before_file="codegen/09_X_before.tir", after_file=None,
    )  # fmt: skip
    unlinked = replace(canon, index=10, before_file=None, after_file=None)  # hashes, no files
    noop = replace(canon, index=11, status="noop", after_hash="a" * 20, before_file=None, after_file=None)
    noop = replace(
        noop, before_file=record_file("pipeline_c", 11, noop.name, "before"), after_file="elsewhere.tir"
    )
    recs = (canon, codegen, failed, unlinked, noop)
    data = json.loads(schema3_text(RunManifest(run_id="run_x", script="s", records=recs)))
    assert data["schema_version"] == 3
    j = data["records"]
    assert "before_file" not in j[0] and "after_file" not in j[0]
    assert "before_file" not in j[1] and j[1]["after_file"].endswith("_after.cpp")
    assert "after_file" not in j[2] and "after_hash" not in j[2]
    assert j[3]["before_file"] is None and j[3]["after_file"] is None
    assert "after_hash" not in j[4] and "before_file" not in j[4] and j[4]["after_file"] == "elsewhere.tir"
    # What the record before implies: index = position, same phase, before = the last after, noop.
    assert j[0]["index"] == 7 and j[1]["index"] == 8 and "phase" not in j[2] and j[3]["phase"] == "pipeline_c"
    at_place = (replace(canon, index=0), replace(codegen, index=1))
    placed = json.loads(schema3_text(RunManifest(run_id="run_y", script="s", records=at_place)))
    assert [r.get("index") for r in placed["records"]] == [None, None]
    assert RunManifest.from_json(placed).records == at_place
    assert "before_hash" not in j[1] and "before_hash" not in j[2] and "status" not in j[4]
    back = RunManifest.from_json(data).records
    assert back == recs
    full = RunManifest(run_id="run_x", script="s", records=recs).to_json()["records"]
    assert full[0]["before_file"] == canon.before_file and full[4]["after_hash"] == "a" * 20  # --json output
    assert back[0].before_file == "pipeline_c/07_tirx.Simplify_before.tir"
    # Schema 2 wrote both keys whenever it had a file: absent there still means none.
    old = {**data, "schema_version": 2, "records": [failed.to_json()]}
    assert RunManifest.from_json(old).records[0].after_file is None
    # Schema 4, what tltrace writes: every field of every record, read back as it is.
    v4 = json.loads(RunManifest(run_id="run_x", script="s", records=recs).dumps())
    assert v4["schema_version"] == 4
    assert all(set(r) == set(PassRecord.__dataclass_fields__) for r in v4["records"])
    assert [r["index"] for r in v4["records"]] == [7, 8, 9, 10, 11]
    assert RunManifest.from_json(v4).records == recs
