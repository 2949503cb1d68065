"""Runs ordered by an absolute time whatever the time zone; liveness by a lock, never by a host name."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tltrace.format import liveness
from tltrace.format.ids import id_time_is_absolute, new_run_id, time_of_id
from tltrace.history import runs
from tltrace.history.retention import clean

from ._records import EXAMPLES

REPO = Path(__file__).resolve().parent.parent

# One traced compile through the standalone PassInstrument (no TileLang compile: fast),
# then, with a second argument, sleep until killed.
_SCRIPT = """
import sys, time
sys.path.insert(0, {examples!r})
import tltrace
from tilelang import tvm
import tilelang.transform as transform
from elementwise_add import make_add
inst = tltrace.create_pass_instrument(mode="terminal", trace_dir=sys.argv[1], name="k")
with tvm.transform.PassContext(instruments=[inst]):
    tvm.transform.Sequential([transform.Simplify()])(tvm.IRModule({{"main": make_add(256, 64)}}))
print("RUN", inst.last_run_dir, flush=True)
if len(sys.argv) > 2:
    time.sleep(600)
"""


def _env(**extra: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    env.pop("TL_LOWER_TRACE", None)
    return env


def _traced(td: Path, script: Path, **env: str) -> Path:
    out = subprocess.run(
        [sys.executable, str(script), str(td)], capture_output=True, text=True, env=_env(**env), timeout=300
    )
    assert out.returncode == 0, out.stderr
    found = re.search(r"^RUN (\S+)", out.stdout, re.M)
    assert found, out.stdout
    return Path(found.group(1))


def test_ids_are_utc_and_old_local_ids_stay_readable() -> None:
    rid = new_run_id()
    assert id_time_is_absolute(rid) and abs(time_of_id(rid) - time.time()) < 60
    old = "run_20240101_120000_000000_1_aaaaaaaa"  # naive local time, as written before
    assert not id_time_is_absolute(old) and time_of_id(old) is not None


def test_time_zones_do_not_reorder_runs(run_cli, tmp_path: Path) -> None:
    td = tmp_path / "tr"
    script = tmp_path / "k.py"
    script.write_text(_SCRIPT.format(examples=str(EXAMPLES)))
    first = _traced(td, script, TZ="UTC")
    second = _traced(td, script, TZ="America/Los_Angeles")  # a local clock 8 hours behind
    sd = first.parent.parent
    assert runs.invocations(sd)[-1].runs[0].path == second  # -1 is the newest
    r = run_cli("show", sd, "-1", "--json")
    assert r.exit_code == 0, r.stderr
    assert str(second.name) in r.stdout and str(first.name) not in r.stdout
    r = run_cli("clean", sd, "--keep", "1")
    assert r.exit_code == 0, r.stderr
    assert second.is_dir() and not first.exists()


def test_old_local_ids_order_by_their_manifests_absolute_start(tmp_path: Path) -> None:
    """Two old-style runs: the later one has an earlier local-time id (written 8 hours west)."""
    sd = tmp_path / "s"
    made = []
    for rid, started in (
        ("run_20240101_120000_000000_1_aaaaaaaa", 1704110400.0),  # 12:00 UTC
        ("run_20240101_050000_000000_1_bbbbbbbb", 1704114000.0),  # 13:00 UTC, 05:00 in Los Angeles
    ):
        d = sd / ".run_records" / rid
        d.mkdir(parents=True)
        m = {"run_id": rid, "script": "s", "status": "complete", "schema_version": 2, "started": started}
        (d / "manifest.json").write_text(json.dumps(m))
        made.append(d)
    assert [i.runs[0].path for i in runs.invocations(sd)] == made
    res = clean([sd], keep=1)
    assert made[1].is_dir() and not made[0].exists() and res.failed == []


def test_a_run_killed_under_another_host_name_can_be_removed(run_cli, tmp_path: Path) -> None:
    td = tmp_path / "tr"
    script = tmp_path / "k.py"
    script.write_text(_SCRIPT.format(examples=str(EXAMPLES)))
    proc = subprocess.Popen(
        [sys.executable, str(script), str(td), "sleep"], stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        line = ""
        while not line.startswith("RUN "):
            line = proc.stdout.readline()
            assert line, "the traced script ended early"
        run = Path(line.split("RUN ", 1)[1].split()[0])
        mpath = run / "manifest.json"
        m = json.loads(mpath.read_text())
        m["status"] = "running"  # as a compile killed midway leaves it
        m["writer"]["host"] = "ci-container-1"  # written in a container with another host name
        mpath.write_text(json.dumps(m))
        key = m.get("invocation") or run.name
        assert liveness.state(run.parent, key) is True  # alive: its writer holds the lock
        assert clean([run.parent.parent], remove_all=True).removed == [] and run.is_dir()
        # `show` says a running compile's counts are counts so far.
        r = run_cli("show", run.parent.parent, "-1")
        assert r.exit_code == 0 and "so far (still running)" in r.stdout, r.stdout
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert liveness.state(run.parent, key) is False  # the lock died with the process
    r = run_cli("show", run.parent.parent, "--json")
    assert r.exit_code == 0 and '"interrupted"' in r.stdout, r.stdout
    r = run_cli("clean", "--trace-dir", td, "--all")
    assert r.exit_code == 0, r.stderr
    assert not run.exists() and not liveness.lock_path(run.parent, key).exists()  # type: ignore[union-attr]


def test_an_old_run_of_another_host_goes_with_force(run_cli, tmp_path: Path) -> None:
    """Written before the lock (no lock file) on another host: kept, and named; --force removes it."""
    sd = tmp_path / "tr" / "s"
    d = sd / ".run_records" / "run_20240101_000000_000000_7_cccccccc"
    d.mkdir(parents=True)
    m = {
        "run_id": d.name,
        "script": "s",
        "status": "running",
        "schema_version": 2,
        "started": 1.0,
        "invocation": "inv_20240101_000000_000000_7_c",
        "writer": {"pid": 7, "start": "1", "host": "ci-container-1"},
    }
    (d / "manifest.json").write_text(json.dumps(m))
    r = run_cli("clean", "--trace-dir", tmp_path / "tr", "--all")
    assert r.exit_code == 0 and d.is_dir() and "--force" in r.stderr, r.stderr
    r = run_cli("clean", "--trace-dir", tmp_path / "tr", "--all", "--force")
    assert r.exit_code == 0 and not d.exists(), r.stderr


def test_the_lock_file_lies_beside_the_runs_and_an_older_writers_lock_is_still_asked(tmp_path: Path) -> None:
    """The lock is `.run_records/.live.<id>` (no `.live/` directory: a block on disk for one empty
    file). A lock an older writer holds in `.live/<id>` still says "running", and `forget_others`
    removes free lock files of both kinds."""
    import fcntl

    root = tmp_path / ".run_records"
    root.mkdir()
    assert liveness.hold(root, "inv_new")
    try:
        assert (root / ".live.inv_new").is_file() and not (root / liveness.LIVE).exists()
        assert liveness.state(root, "inv_new") is True
        old = root / liveness.LIVE / "inv_old"
        old.parent.mkdir()
        old.touch()
        (root / liveness.LIVE / "inv_gone").touch()
        with open(old) as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)  # an older tltrace writing: its lock in .live/
            assert liveness.state(root, "inv_old") is True
            liveness.forget_others(root, set())
            assert old.exists() and (root / ".live.inv_new").exists()  # held: kept
        assert liveness.state(root, "inv_old") is False
        assert not (root / liveness.LIVE / "inv_gone").exists()  # free: removed
    finally:
        liveness.release("inv_new")
    liveness.forget_others(root, set())
    assert not (root / ".live.inv_new").exists() and not old.exists()
