"""Retention by invocation: one pruner for `run --keep`, `clean` and the pytest plugin, live invocations and links left alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tltrace.format.writer import process_start, writer_token
from tltrace.history.retention import clean

from ._cli import script_traced
from ._records import copy_tree, run_dirs
from ._records import manifests as _manifests
from .conftest import EXAMPLES

# Three kernels per invocation, lowered only (no C compiler run): fast, and real.
MULTI = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {examples!r})
    import tilelang
    from tilelang import tvm
    from elementwise_add import make_add

    with tvm.target.Target("c"):
        for n in (256, 512, 768):
            tilelang.lower(make_add(n, 128), target="c")
    """
)


def _invocations(sd: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in _manifests(sd):
        out[m.invocation] = out.get(m.invocation, 0) + 1
    return out


@pytest.fixture(scope="module")
def multi(tmp_path_factory) -> tuple[Path, Path]:
    """Three invocations of a three-compile script, run with `tltrace run -q --keep 2`."""
    tmp = tmp_path_factory.mktemp("ret")
    td = tmp / "traces"
    outs = []
    for _ in range(3):
        script, res = script_traced(
            tmp, "multi.py", MULTI.format(examples=str(EXAMPLES)), "--keep", "2", trace_dir=td
        )
        outs.append(res.stdout)
    (td / "outs.json").write_text(json.dumps(outs))
    return td, script


def test_run_keep_counts_invocations(multi) -> None:
    td, _ = multi
    outs = json.loads((td / "outs.json").read_text())
    sd = td / "multi"
    # The newest two invocations, each with all three of its compiles.
    assert sorted(_invocations(sd).values()) == [3, 3]
    assert "pruned" not in outs[0] and "pruned" not in outs[1]
    pruned = [ln for ln in outs[2].splitlines() if "pruned" in ln]
    assert len(pruned) == 1 and "pruned 3 runs (1 older invocation)" in pruned[0]
    assert "--keep 2" in pruned[0]
    # A run's texts are in its own pack (no shared store to collect): the kept runs read whole.
    assert not (sd / ".run_records" / ".objects").exists()
    assert all((r / "texts.pack").is_file() for r in (sd / ".run_records").glob("run_*"))


def test_quiet_table_names_compiles_by_signature(multi) -> None:
    td, _ = multi
    out = json.loads((td / "outs.json").read_text())[0]
    lines = out.splitlines()
    (head,) = [i for i, ln in enumerate(lines) if ln.startswith("3 compiles, 0 failed")]
    assert lines[head + 1].split()[:3] == ["status", "compile", "passes"]
    rows = lines[head + 3 : head + 6]
    sigs = {m.signature for m in _manifests(td / "multi")}
    for row, n in zip(rows, (256, 512, 768)):
        assert row.startswith("ok ") and f"add {n},{n},{n} f32 grid {n // 128} thr 128 #" in row
        assert any(sig in row for sig in sigs)
    assert not any(ln.startswith("[add") for ln in lines)  # no line per compile


def test_own_invocation_is_never_pruned_mid_run(run_cli, multi, tmp_path) -> None:
    td, script = multi
    td = copy_tree(td, tmp_path / "traces")
    res = run_cli("run", "-q", "--keep", "1", "--trace-dir", td, script)
    assert res.exit_code == 0, res.stderr
    inv = _invocations(td / "multi")
    assert list(inv.values()) == [3]  # this invocation's three compiles, the others pruned at its end
    assert "pruned 6 runs (2 older invocations)" in res.stdout


def test_clean_keep_one_keeps_the_newest_invocation(run_cli, multi, tmp_path) -> None:
    td, _ = multi
    td = copy_tree(td, tmp_path / "traces")
    newest = _manifests(td / "multi")[-1].invocation
    res = run_cli("clean", "--trace-dir", td, "multi", "--keep", "1")
    assert res.exit_code == 0, res.stderr
    assert "removed 3 run(s) of 1 invocation(s), kept 3" in res.stdout
    assert _invocations(td / "multi") == {newest: 3}


def _fake_run(sd: Path, name: str, **fields) -> Path:
    run = sd / ".run_records" / name
    run.mkdir(parents=True)
    data = {
        "run_id": name,
        "script": sd.name,
        "status": "complete",
        "schema_version": 2,
        "started": 1.0,
        **fields,
    }
    (run / "manifest.json").write_text(json.dumps(data))
    return run


def test_a_named_invocation_goes_whatever_its_age(multi, tmp_path) -> None:
    """The pytest plugin's policy (--tltrace-only-failed): one named invocation goes, the others stay."""
    td, _ = multi
    td = copy_tree(td, tmp_path / "traces")
    sd = td / "multi"
    older, newer = sorted(
        _invocations(sd), key=lambda i: min(m.started for m in _manifests(sd) if m.invocation == i)
    )
    res = clean([sd], invocations={older})
    assert res.invocations_removed == 1 and len(res.removed) == 3 and not res.failed
    assert _invocations(sd) == {newer: 3}
    # Its texts went with its runs' packs; the other's runs keep theirs.
    assert all((r / "texts.pack").is_file() for r in (sd / ".run_records").glob("run_*"))


def test_history_retention_is_the_one_pruner() -> None:
    """No module but history/retention.py removes runs or collects stored texts (docs/architecture.md)."""
    import ast

    pkg = Path(__file__).resolve().parent.parent / "tltrace"
    for path in pkg.rglob("*.py"):
        rel = path.relative_to(pkg).as_posix()
        if rel == "history/retention.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("retention"):
                names = {a.name for a in node.names}
                assert not names & {"_remove_run", "collect_garbage"}, (
                    f"tltrace/{rel} prunes on its own ({sorted(names)}): use retention.clean or prune"
                )


def test_a_live_writer_keeps_its_invocation(tmp_path) -> None:
    sd = tmp_path / "tr" / "s"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        me = writer_token()
        other = {"pid": sleeper.pid, "start": process_start(sleeper.pid), "host": me["host"]}
        live = _fake_run(
            sd,
            "run_20240101_000000_000000_1_aaaaaaaa",
            invocation="inv_20240101_000000_000000_1_a",
            writer=other,
        )
        # The same pid, another start time: a dead writer whose pid was reused.
        reused = _fake_run(
            sd,
            "run_20240101_000001_000000_1_bbbbbbbb",
            invocation="inv_20240101_000001_000000_1_b",
            writer={**other, "start": "1"},
            status="running",
        )
        # Schema 1 (no writer): the pid in the run id decides; a complete run of a dead pid goes.
        old = _fake_run(sd, "run_20240101_000002_000000_4194999_cccccccc", schema_version=1)
        res = clean([sd], remove_all=True)
        assert res.skipped_active == [live] and live.is_dir()
        assert sorted(res.removed) == sorted([reused, old]) and not reused.exists() and not old.exists()
        assert res.invocations_removed == 2 and res.failed == []
    finally:
        sleeper.kill()
        sleeper.wait()
    assert clean([sd], remove_all=True).removed == [live]


def test_an_open_enable_span_is_never_pruned(tmp_path) -> None:
    import tilelang  # noqa: F401
    from tilelang import tvm

    import tltrace
    from tltrace.api import enabled

    sys.path.insert(0, str(EXAMPLES))
    from elementwise_add import make_add

    td = tmp_path / "tr"
    tltrace.enable("terminal", td, quiet=True, keep=1)
    try:
        sd = enabled().script_dir
        with tvm.target.Target("c"):
            tilelang.lower(make_add(256, 128), target="c")
        tltrace.flush()  # the worker may make the run's directory after the compile returns
        res = clean([sd], remove_all=True)
        assert len(res.skipped_active) == 1 and res.removed == []
    finally:
        tltrace.disable()
        sys.path.remove(str(EXAMPLES))
    assert len(clean([sd], remove_all=True).removed) == 1


def _outside_files(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("0123456789abcdef0123", "precious.txt", ".0123456789abcdef0123.x.tmp"):
        (outside / name).write_text("keep me")  # singly linked: what garbage collection would take
    return outside


def test_linked_objects_dir_is_never_collected(run_cli, multi, tmp_path) -> None:
    td, script = multi
    td = copy_tree(td, tmp_path / "traces")
    outside = _outside_files(tmp_path)
    objects = td / "multi" / ".run_records" / ".objects"  # an older tltrace's store of texts
    shutil.rmtree(objects, ignore_errors=True)
    objects.symlink_to(outside, target_is_directory=True)
    before = sorted(p.name for p in outside.iterdir())
    res = run_cli("clean", "--trace-dir", td, "multi", "--all")
    assert res.exit_code == 3
    assert "not a directory of tltrace's own" in res.stderr and str(objects) in res.stderr
    assert sorted(p.name for p in outside.iterdir()) == before
    assert all(p.read_text() == "keep me" for p in outside.iterdir())
    # run --keep goes through the same pruner.
    res = run_cli("run", "-q", "--keep", "1", "--trace-dir", td, script)
    assert res.exit_code == 0
    assert sorted(p.name for p in outside.iterdir()) == before


def test_linked_records_dir_and_run_links_are_left_alone(tmp_path) -> None:
    outside = _outside_files(tmp_path)
    run_like = outside / "run_20240101_000000_000000_1_aaaaaaaa"
    run_like.mkdir()
    (run_like / "manifest.json").write_text("{}")
    sd = tmp_path / "tr" / "s"
    sd.mkdir(parents=True)
    (sd / ".run_records").symlink_to(outside, target_is_directory=True)
    res = clean([sd], remove_all=True)
    assert res.removed == [] and "not a directory of tltrace's own" in res.failed[0]
    assert run_like.is_dir() and (outside / "precious.txt").exists()
    # A run_* entry that is a link inside a real .run_records is not a run: never followed.
    (sd / ".run_records").unlink()
    (sd / ".run_records").mkdir()
    (sd / ".run_records" / run_like.name).symlink_to(run_like, target_is_directory=True)
    res = clean([sd], remove_all=True)
    assert res.removed == [] and (run_like / "manifest.json").exists()


def _freeze(paths: list[Path]) -> bool:
    """Make `paths` impossible to change, as a read-only file system would; True when it worked."""
    if os.geteuid() == 0:
        ok = all(subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode == 0 for p in paths)
        return ok
    for p in paths:
        p.chmod(0o555)
    return True


def _thaw(paths: list[Path]) -> None:
    for p in paths:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(p)], capture_output=True)
        else:
            p.chmod(0o755)


def test_failed_removal_is_reported_not_claimed(run_cli, multi, tmp_path) -> None:
    td, _ = multi
    td = copy_tree(td, tmp_path / "traces")
    records = td / "multi" / ".run_records"
    frozen = [records, records / ".objects", *run_dirs(td / "multi")]
    if not _freeze(frozen):
        pytest.skip("cannot make files immutable here (chattr)")
    try:
        res = run_cli("clean", "--trace-dir", td, "multi", "--all")
        data = run_cli("clean", "--trace-dir", td, "multi", "--all", "--json")
    finally:
        _thaw(frozen)
    assert res.exit_code == 3
    assert "removed 0 run(s) of 0 invocation(s), kept 6; freed 0 B" in res.stdout
    assert res.stderr.count("tltrace: warning: could not remove") == 6
    assert len(run_dirs(td / "multi")) == 6
    parsed = json.loads(data.stdout)
    assert data.exit_code == 3 and parsed["removed"] == [] and len(parsed["failed"]) == 6


def test_an_invocation_never_prunes_itself_when_a_newer_one_finished_first(tmp_path) -> None:
    """`run --keep 1` of a long invocation A, while a shorter B that started later ended first.

    A prunes at its end (after its tool is uninstalled): its own compiles stay, whatever
    is newer; only invocations older than the kept ones go.
    """
    from tltrace.config import Settings
    from tltrace.tracing.invocation import Invocation

    td = tmp_path / "tr"
    settings = Settings(
        mode="terminal", trace_dir=td, script_name="s", keep=1, invocation="inv_20240101_000001_000000_1_a"
    )
    sd = settings.script_dir
    me = writer_token()
    dead = {"pid": 4194999, "start": "1", "host": me["host"]}
    older = _fake_run(
        sd, "run_20240101_000000_000000_9_00000000", invocation="inv_20240101_000000_000000_9_o", writer=dead
    )
    own = [
        _fake_run(sd, f"run_20240101_00000{i}_000000_1_aaaaaaa{i}", invocation=settings.invocation, writer=me)
        for i in (1, 2)
    ]
    newer = _fake_run(
        sd, "run_20240101_000003_000000_9_bbbbbbbb", invocation="inv_20240101_000003_000000_9_b", writer=dead
    )
    events: list = []
    Invocation(settings, events.append).finish()
    assert all(p.is_dir() for p in own), "the invocation pruned its own compiles"
    assert newer.is_dir() and not older.exists()


# -- the pytest plugin's policy (--tltrace-only-failed), applied by the one pruner -------------------
_DEAD = {"pid": 4194999, "start": "1", "host": "elsewhere-never"}
_INV = "inv_20240101_000001_000000_1_t"


def _test_dir(tmp_path: Path) -> Path:
    """A script dir as a passing test leaves it: its run, its index report and a working file."""
    sd = tmp_path / "tr" / "test_x"
    _fake_run(sd, "run_20240101_000001_000000_1_aaaaaaaa", invocation=_INV, writer=writer_token())
    (sd / "report.html").write_text("<html>")
    (sd / "codegen_device.cpp").write_text("// generated")
    return sd


def test_a_passing_tests_dir_goes_whole_when_the_test_made_it(tmp_path) -> None:
    from tltrace.history.retention import Policy, apply

    sd = _test_dir(tmp_path)
    res = apply([sd], Policy.passing_test(_INV, made_dir=True))
    assert res.invocations_removed == 1 and not res.failed
    assert not sd.exists() and (tmp_path / "tr").is_dir()  # the index and working file with it


def test_a_passing_tests_dir_it_did_not_make_keeps_everything_but_its_runs(tmp_path) -> None:
    from tltrace.history.retention import Policy, apply

    sd = _test_dir(tmp_path)
    apply([sd], Policy.passing_test(_INV, made_dir=False))
    assert run_dirs(sd) == [] and (sd / "report.html").is_file() and (sd / "codegen_device.cpp").is_file()


def test_a_passing_tests_made_dir_stays_while_anything_else_is_in_it(tmp_path) -> None:
    """Another invocation's run, or a run of the test's own invocation that a live process may
    still write (a child of the test that outlived it): the directory stays, and so does that run."""
    from tltrace.history.retention import Policy, apply

    sd = _test_dir(tmp_path)
    other = _fake_run(sd, "run_20240101_000000_000000_9_00000000", invocation="inv_other", writer=_DEAD)
    apply([sd], Policy.passing_test(_INV, made_dir=True))
    assert sd.is_dir() and run_dirs(sd) == [other]

    sd2 = _test_dir(tmp_path / "b")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        me = writer_token()
        child = {"pid": sleeper.pid, "start": process_start(sleeper.pid), "host": me["host"]}
        live = _fake_run(sd2, "run_20240101_000002_000000_2_bbbbbbbb", invocation=_INV, writer=child)
        res = apply([sd2], Policy.passing_test(_INV, made_dir=True))
        assert res.skipped_active and live.is_dir() and (sd2 / "report.html").is_file()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_linked_script_dir_is_never_removed_whole(tmp_path) -> None:
    from tltrace.history.retention import Policy, apply

    real = _test_dir(tmp_path / "real")
    link = tmp_path / "tr" / "linked"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(real, target_is_directory=True)
    res = apply([link], Policy.passing_test(_INV, made_dir=True))
    assert res.failed and link.is_symlink() and len(run_dirs(real)) == 1


def test_every_pruning_is_a_policy_of_the_one_pruner() -> None:
    """The pytest plugin removes a passing test's traces through retention (Policy.passing_test), not
    with its own rmtree; the invocation's end prunes through `retention.prune` (Policy.keep_newest)."""
    import ast

    pkg = Path(__file__).resolve().parent.parent / "tltrace"

    def calls(rel: str) -> set[str]:
        out = set()
        for node in ast.walk(ast.parse((pkg / rel).read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                out.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", ""))
        return out

    plugin = calls("pytest_plugin.py")
    assert {"apply", "passing_test"} <= plugin
    assert not plugin & {"rmtree", "unlink", "remove", "rmdir", "clean"}, "the plugin prunes on its own"
    assert "prune" in calls("tracing/invocation.py")
