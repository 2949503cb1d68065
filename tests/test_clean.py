"""tltrace clean: retention by count and age; working files and live runs are never touched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tltrace.errors import UsageError
from tltrace.history.retention import clean, parse_duration

from ._records import copy_tree, read_manifest, recorded_fixture, run_dirs

traced = recorded_fixture(
    "The recorded elementwise_add's first three compiles (block 128, 64, 128) and gemm's one.",
    elementwise_add=slice(0, 3),
    gemm=None,
)


@pytest.fixture
def td(traced: Path, tmp_path: Path) -> Path:
    td = copy_tree(traced, tmp_path / "traces")
    sd = td / "elementwise_add"
    for name in (
        "codegen_device.cpp",
        "codegen_device.cpp.original",
        "codegen_device.cpp.latest",
        "codegen_device.cpp.bak",
        "codegen_device.cpp.original.bak",
    ):
        (sd / name).write_text(f"// {name}\n")
    return td


def objects(sd: Path) -> list[Path]:
    return list((sd / ".run_records" / ".objects").iterdir())


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("30s", 30),
        ("10m", 600),
        ("2h", 7200),
        ("7d", 604800),
        ("1w", 604800),
        ("1d12h", 129600),
        ("3", 259200),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "abc", "10x", "5m junk", "m"])
def test_parse_duration_rejects(bad: str) -> None:
    with pytest.raises(UsageError, match="not a duration"):
        parse_duration(bad)


def test_keep_newest(run_cli, td: Path) -> None:
    sd = td / "elementwise_add"
    runs = run_dirs(sd)
    res = run_cli("clean", "--trace-dir", str(td), "elementwise_add", "--keep", "1")
    assert res.exit_code == 0, res.output
    assert run_dirs(sd) == runs[-1:]
    assert "removed 2 run(s) of 2 invocation(s), kept 1" in res.stdout
    assert res.stdout.count("\n") == 1  # the total alone; -v names each run
    for name in ("codegen_device.cpp", "codegen_device.cpp.bak", "codegen_device.cpp.original.bak"):
        assert (sd / name).read_text() == f"// {name}\n"
    # No stored text is left that no run links to, and the kept run still reads whole.
    assert all(o.stat().st_nlink > 1 for o in objects(sd))
    assert len(run_dirs(td / "gemm")) == 1  # another script's runs are not touched
    res = run_cli("show", "--trace-dir", str(td), "elementwise_add", "--pass", "LowerTileOp")
    assert res.exit_code == 0 and "CHANGED" in res.stdout


def test_every_script_and_dry_run(run_cli, td: Path) -> None:
    before = {p: run_dirs(p) for p in (td / "elementwise_add", td / "gemm")}
    res = run_cli("clean", "--trace-dir", str(td), "--all", "--dry-run")
    assert res.exit_code == 0 and "would remove 4 run(s)" in res.stdout
    assert {p: run_dirs(p) for p in before} == before
    res = run_cli("clean", "--trace-dir", str(td), "--all", "--json")
    data = json.loads(res.stdout)
    assert len(data["removed"]) == 4 and data["bytes_freed"] > 0
    assert objects(td / "elementwise_add") == [] and (td / "elementwise_add" / "codegen_device.cpp").exists()


def test_older_than(td: Path) -> None:
    sd = td / "elementwise_add"
    runs = run_dirs(sd)
    # Ages count from the runs' own start times (recorded, so not today's clock).
    newest = max(read_manifest(r)["started"] for r in runs)
    assert clean([sd], older_than=3600, now=newest + 60).removed == []
    later = newest + 2 * 86400
    res = clean([sd], older_than=86400, now=later)
    assert res.removed == runs and run_dirs(sd) == []


def test_active_run_is_kept(td: Path) -> None:
    from tltrace.format.ids import new_run_id

    sd = td / "gemm"
    live = sd / ".run_records" / new_run_id()  # this process, now: still being written
    # Our pid in a run id dated before this process loaded tltrace: another process that
    # had the same pid (pid 1 in containers), long dead; it must not stay "running".
    reused = sd / ".run_records" / f"run_20200101_000000_000000_{os.getpid()}_0badc0de"
    for run in (live, reused):
        run.mkdir()
        (run / "manifest.json").write_text(
            json.dumps({"run_id": run.name, "script": "gemm", "status": "running", "schema_version": 1})
        )
    res = clean([sd], remove_all=True)
    assert res.skipped_active == [live] and live.is_dir()
    assert reused in res.removed and len(res.removed) == 2 and not reused.exists()


def test_usage_errors(run_cli, td: Path) -> None:
    for args, needle in (
        (("clean",), "--keep N"),
        (("clean", "--keep", "0"), "--keep 0 keeps every invocation (as on 'tltrace run')"),
        (("clean", "--older-than", "soon"), "not a duration"),
    ):
        res = run_cli(*args[:1], "--trace-dir", str(td), *args[1:])
        assert res.exit_code == 2 and res.stderr.startswith("tltrace: error: ") and needle in res.stderr
    # --keep 0 means "no limit" on clean as on run: with --older-than only the age decides.
    res = run_cli("clean", "--trace-dir", str(td), "--keep", "0", "--older-than", "1000w", "--dry-run")
    assert res.exit_code == 0 and "would remove 0 run(s)" in res.stdout, res.stdout + res.stderr
    run = run_dirs(td / "gemm")[0]
    res = run_cli("clean", str(run), "--all")
    assert res.exit_code == 2 and "rm -r" in res.stderr and run.is_dir()


def test_verbose_names_each_run(run_cli, td: Path) -> None:
    runs = run_dirs(td / "elementwise_add")
    res = run_cli("clean", "--trace-dir", str(td), "elementwise_add", "--keep", "1", "-v")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[:-1] == [f"removed {p}" for p in runs[:-1]]
    assert lines[-1].startswith("removed 2 run(s) of 2 invocation(s), kept 1")
