"""A kill -9 at random points of a traced autotune (issue 51): every reader opens what is left,
and says what was cut.

The workload is bench/autotune_cpu.py (TileLang's autotuner's shape on the CPU: one
`tilelang.compile` per config from a pool of threads, every kernel named `main`) under
`tltrace run --quiet`, into one trace dir. It is killed with SIGKILL KILLS times, each at a
seeded random moment: after the k-th compile began (the script says so, k drawn from the
configs) and a random fraction of a second more. After each kill every reader runs on what
is left: `show` (the list, the killed invocation, --json, --facts), the report of each cut
compile and the invocation's index (`show --html`), `diff-runs` between two killed
invocations and between two cut compiles, `clean --dry-run`, `export --tir`. Each exits 0 or
with its documented status and one line, never a traceback.

The oracle of what was cut is the run directory itself, not tltrace's reading of it: a run
whose final manifest was written has no `records.jsonl` left (the manifest replaces the log,
format/writer.py) and a final status; one that still has the log, has no manifest, or whose
manifest still says `running` (the first one, written as the compile began) was cut by the kill.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ._cli import cli_env, cli_invoke

pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parent.parent / "bench"
CONFIGS = 6  # compiles per autotune (2 threads): a kill lands in any of them
KILLS = 3
SEED = 51
CUT = ("interrupted", "exited")  # how `show` names a compile its process did not finish
EXIT_CODES = {0, 2, 3}  # show, clean, export (their --help): ok, bad usage, missing or damaged records
DIFF_CODES = {0, 1, 2}  # diff-runs, as diff's: the same, any differ, trouble

TUNE = f"""
import sys
sys.path.insert(0, {str(BENCH)!r})
import tilelang  # noqa: F401
import autotune_cpu

_make = autotune_cpu.make_kernel


def make_kernel(*args, **kwargs):  # called right before each config's tilelang.compile
    print("compile", flush=True)
    return _make(*args, **kwargs)


autotune_cpu.make_kernel = make_kernel
autotune_cpu.run({CONFIGS}, 2)
print("done", flush=True)
"""


def _kill_at(cmd: list[str], cwd: Path, nth: int, extra_s: float) -> bool:
    """Run `cmd`, SIGKILL it `extra_s` seconds after its `nth` compile began; return True if it was killed
    (False: it ended first)."""
    p = subprocess.Popen(
        cmd, cwd=cwd, env=cli_env(clean=True), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert p.stdout is not None
        seen = 0
        for line in p.stdout:
            seen += line.strip() == "compile"
            if seen >= nth:
                break
        time.sleep(extra_s)
        alive = p.poll() is None
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(60)
    return alive


def _cut_on_disk(run_dir: Path) -> bool:
    """The oracle: the kill left this run unfinished: its log not replaced by a final manifest, or its
    manifest still the first one, which says `running` (read as plain JSON)."""
    if (run_dir / "records.jsonl").exists() or not (run_dir / "manifest.json").exists():
        return True
    return json.loads((run_dir / "manifest.json").read_text()).get("status") == "running"


def _read(*args: object) -> Any:
    """Run one reader in this process; assert its documented status, one line when refused, no traceback."""
    res = cli_invoke(*args, catch_exceptions=True)
    assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception, res.output)
    assert "Traceback" not in res.output, (args, res.output)
    diff = args[0] == "diff-runs"
    assert res.exit_code in (DIFF_CODES if diff else EXIT_CODES), (args, res.exit_code, res.output)
    if res.exit_code and not (diff and res.exit_code == 1):
        err = res.stderr.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tltrace: error: "), (args, res.stderr)
    return res


@pytest.fixture(scope="module")
def killed(tmp_path_factory) -> list[tuple[Path, set[str]]]:
    """Kill the traced autotune KILLS times; after each kill, run every reader (the test's checks) and
    keep (the trace dir, the run ids the kill cut) for the summary."""
    work = tmp_path_factory.mktemp("killed")
    (work / "tune.py").write_text(TUNE)
    trace = work / "trace"
    rng = random.Random(SEED)
    cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", "--trace-dir", str(trace), "tune.py"]
    seen: list[tuple[Path, set[str]]] = []
    for i in range(KILLS):
        nth, extra = rng.randint(1, CONFIGS), rng.uniform(0.0, 1.5)
        was_killed = _kill_at(cmd, work, nth, extra)
        records = trace / "tune" / ".run_records"
        before = {r for _, cut in seen for r in cut}
        cut = {d.name for d in records.glob("run_*") if _cut_on_disk(d)} - before
        print(f"kill {i + 1}: after compile {nth} + {extra:.2f} s, killed={was_killed}, cut runs: {len(cut)}")
        _every_reader(trace, work / f"tir{i}", cut, invocations=i + 1)
        seen.append((trace, cut))
    return seen


def _every_reader(trace: Path, tir: Path, cut: set[str], invocations: int) -> None:
    td = ["--trace-dir", trace]
    listing = _read("show", *td, "--json")
    data = json.loads(listing.stdout)
    runs = {r["run_id"]: r for r in data["runs"]}
    for run_id in cut:  # every run the kill cut is listed as cut, with the reason
        assert runs[run_id]["status"] in CUT, (run_id, runs[run_id]["status"])
        assert runs[run_id]["error"], run_id
    text = _read("show", *td).stdout
    for run_id in cut:  # and so is its row of the table
        row = next(line for line in text.splitlines() if run_id in line)
        assert runs[run_id]["status"] in row.split(), row
    newest = json.loads(_read("show", *td, "tune", "-1", "--json").stdout)
    if isinstance(
        newest.get("invocation"), dict
    ):  # several compiles (one's manifest names its invocation id)
        said = {c["run_id"]: c["status"] for c in newest["invocation"]["compiles"]}
    else:  # the invocation's one compile, shown whole (a manifest: run_id and status)
        said = {newest["run_id"]: newest["status"]}
    assert {r for r, status in said.items() if status in CUT} == cut & set(said)
    _read("show", *td, "tune", "-1")
    facts = _read("show", *td, "tune", "-1", "--facts", "--json")
    for one in json.loads(facts.stdout)["compiles"]:  # the facts of a cut compile say it was cut
        assert (one["status"] in CUT) == (one["run_id"] in cut), one["run_id"]
    facts_text = _read("show", *td, "tune", "-1", "--facts").stdout
    for status in {runs[r]["status"] for r in cut}:
        assert status in facts_text, facts_text
    for run_id in sorted(cut):  # the report of each cut compile says so
        report = _read("show", runs[run_id]["path"], "--html")
        page = Path(report.stdout.strip()).read_text()
        assert runs[run_id]["status"] in page
    _read("show", *td, "tune", "--html")  # the index of the newest invocation
    if invocations >= 2:
        diff = _read("diff-runs", *td, "tune:-1", "tune:-2", "--json")
        if diff.exit_code in (0, 1) and diff.stdout.strip():
            for c in json.loads(diff.stdout)["compiles"]:
                for side in ("a", "b"):
                    if c[f"{side}_run_id"] in cut:
                        assert c[f"{side}_status"] in CUT, c
        said = _read("diff-runs", *td, "tune:-1", "tune:-2").stdout
        if cut:
            assert "cut short" in said, said
    all_cut = [r for r in runs.values() if r["status"] in CUT]
    if len(all_cut) >= 2:  # two cut compiles, pass by pass
        _read("diff-runs", all_cut[0]["path"], all_cut[1]["path"])
    _read("clean", *td, "--dry-run", "--keep", "1")
    exported = _read("export", *td, "tune", "-1", "--tir", tir)
    if cut:
        assert f"{len(cut)} cut short" in exported.stderr, exported.stderr


def test_every_reader_opens_what_a_kill_9_left_and_says_what_was_cut(killed) -> None:
    cut = [c for _, c in killed]
    print(f"{len(cut)} kills; cut runs per kill: {[len(c) for c in cut]}")
    assert any(cut), "no kill landed while a compile's records were being written (nothing was tested)"
