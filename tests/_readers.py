"""Every reader of a trace dir a dead process cut (a kill -9): each opens what is left, exits 0 or with
its documented status and one line, never a traceback, and says which compiles were cut.

Shared by tests/test_kill_autotune.py (real kills of a traced autotune) and tests/test_cut_readers.py
(a recorded trace cut as a kill leaves it, in the quick loop). `cut`, the oracle, is what the caller
knows independently of tltrace's reading: the runs the kill left unfinished on disk.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ._cli import cli_invoke

CUT = ("interrupted", "exited")  # how `show` names a compile its process did not finish
EXIT_CODES = {
    0,
    2,
    3,
}  # show, clean, export, bundle (their --help): ok, bad usage, missing or damaged records
DIFF_CODES = {0, 1, 2}  # diff-runs, as diff's: the same, any differ, trouble
SAYS_NO = (
    "diff-runs",
    "check",
)  # their exit 1 is an answer (a difference, a check that failed), said on stdout


def read_ok(*args: object) -> Any:
    """Run one reader in this process; assert its documented status, one line when refused, no traceback."""
    res = cli_invoke(*args, catch_exceptions=True)
    assert res.exception is None or isinstance(res.exception, SystemExit), (args, res.exception, res.output)
    assert "Traceback" not in res.output, (args, res.output)
    no = args[0] in SAYS_NO
    assert res.exit_code in (DIFF_CODES if no else EXIT_CODES), (args, res.exit_code, res.output)
    if res.exit_code and not (no and res.exit_code == 1):
        err = res.stderr.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tltrace: error: "), (args, res.stderr)
    return res


def every_reader(trace: Path, script: str, tir: Path, cut: set[str]) -> None:
    """Run every reader on `trace`, where `cut` are the run ids (of `script`, any invocation) a kill left
    unfinished on disk; the views of the newest invocation (-1) must name exactly its share of them."""
    td = ["--trace-dir", trace]
    data = json.loads(read_ok("show", *td, "--json").stdout)
    runs = {r["run_id"]: r for r in data["runs"]}
    by_position = {i["position"]: {c["run_id"] for c in i["compiles"]} for i in data["invocations"]}
    for run_id in cut:  # every run a kill cut is listed as cut, with the reason
        assert runs[run_id]["status"] in CUT, (run_id, runs[run_id]["status"])
        assert runs[run_id]["error"], run_id
    assert {r for r, one in runs.items() if one["status"] in CUT} == cut
    text = read_ok("show", *td).stdout
    for run_id in cut:  # and so is its row of the table
        row = next(line for line in text.splitlines() if run_id in line)
        assert runs[run_id]["status"] in row.split(), row
    newest = json.loads(read_ok("show", *td, script, "-1", "--json").stdout)
    if isinstance(newest.get("invocation"), dict):  # several compiles (one's manifest names its invocation)
        said = {c["run_id"]: c["status"] for c in newest["invocation"]["compiles"]}
    else:  # the invocation's one compile, shown whole (a manifest: run_id and status)
        said = {newest["run_id"]: newest["status"]}
    assert set(said) == by_position[-1]
    newest_cut = cut & set(said)
    assert {r for r, status in said.items() if status in CUT} == newest_cut
    read_ok("show", *td, script, "-1")
    facts = read_ok("show", *td, script, "-1", "--facts", "--json")
    for one in json.loads(facts.stdout)["compiles"]:  # the facts of a cut compile say it was cut
        assert (one["status"] in CUT) == (one["run_id"] in cut), one["run_id"]
    facts_text = read_ok("show", *td, script, "-1", "--facts").stdout
    for status in {runs[r]["status"] for r in newest_cut}:
        assert status in facts_text, facts_text
    for run_id in sorted(newest_cut):  # the report of each cut compile says so
        report = read_ok("show", runs[run_id]["path"], "--html")
        page = Path(report.stdout.strip()).read_text()
        assert runs[run_id]["status"] in page
    index = Path(read_ok("show", *td, script, "--html").stdout.strip()).read_text()  # the newest invocation's
    if isinstance(newest.get("invocation"), dict):  # its index: the rows its page draws
        rows = {d["run_id"]: d for d in _page_data(index) if d.get("t") == "c"}
        assert set(rows) == set(said), (set(rows), set(said))
        for run_id, row in rows.items():
            assert (row["status"] in CUT) == (run_id in newest_cut) and (run_id not in cut or row["error"]), (
                row
            )
    else:  # its one compile's report
        assert newest["status"] in index
    if len(by_position) >= 2:
        diff = read_ok("diff-runs", *td, f"{script}:-1", f"{script}:-2", "--json")
        for c in json.loads(diff.stdout)["compiles"]:
            for side in ("a", "b"):
                if c[f"{side}_run_id"] is not None:
                    assert (c[f"{side}_status"] in CUT) == (c[f"{side}_run_id"] in cut), c
        said_diff = read_ok("diff-runs", *td, f"{script}:-1", f"{script}:-2").stdout
        assert ("cut short" in said_diff) == bool(cut & (by_position[-1] | by_position[-2])), said_diff
    all_cut = [runs[r] for r in sorted(cut)]
    if len(all_cut) >= 2:  # two cut compiles, pass by pass: each side's header names its status
        heads = read_ok("diff-runs", all_cut[0]["path"], all_cut[1]["path"]).stdout.splitlines()[:2]
        for head, side, one in zip(heads, ("A:", "B:"), all_cut):
            assert head.startswith(side) and one["status"] in head, heads
    read_ok("clean", *td, "--dry-run", "--keep", "1")
    cleaned = read_ok("clean", *td, "--dry-run", "--all").stdout.splitlines()  # every run would go
    assert {line.split()[2].rsplit("/", 1)[-1] for line in cleaned if "(cut short: " in line} == cut, cleaned
    assert (f"({len(cut)} cut short: " in cleaned[-1]) == bool(cut), cleaned[-1]
    exported = read_ok("export", *td, script, "-1", "--tir", tir)
    _says_cut(exported.stderr, newest_cut)
    _says_cut(
        read_ok("export", *td, script, "-1", "--chrome-trace", tir.with_suffix(".json")).stderr, newest_cut
    )
    bundled = read_ok("bundle", *td, script, "-1", "-o", tir.with_suffix(".zip"))
    if bundled.exit_code == 0:  # (3: a trace recorded without reproducer data, refused in one line)
        lost = [
            r for r in newest_cut if r in bundled.stderr
        ]  # cut before its frontend IR was saved: left out
        assert not lost or f"left out {len(lost)} compile(s) cut short" in bundled.stderr, bundled.stderr
        _says_cut(bundled.stdout, newest_cut - set(lost))
    print(f"  bundle: {bundled.stdout.strip() or bundled.stderr.strip()}")
    for run_id in sorted(cut):  # repro of a cut compile: no pass failed, so it says the compile was cut
        repro = read_ok("repro", runs[run_id]["path"], "-o", tir.with_name(f"repro-{run_id}"))
        assert repro.exit_code == 2 and f"cut short ({runs[run_id]['status']})" in repro.stderr, repro.output
    checked = json.loads(read_ok("check", *td, script, "-1", "--expect", "kernels >= 0", "--json").stdout)
    for one in checked["compiles"]:  # a check of a cut compile's facts says it was cut
        was_cut = one["run_id"] in cut
        assert (one["status"] in CUT) == was_cut, one
        assert ("cut short" in one["checks"][0]["message"]) == was_cut, one


def _says_cut(line: str, cut: set[str]) -> None:
    """A writer's line names how many compiles of what it wrote were cut short (none: no such clause)."""
    if cut:
        assert f"{len(cut)} cut short" in line, line
    else:
        assert "cut short" not in line, line


def _page_data(page: str) -> list[dict[str, Any]]:
    """The JSON data blocks of a tltrace HTML page (what its script draws)."""
    blocks = re.findall(r'<script type="application/json" class="tl-d">(.*?)</script>', page, re.S)
    return [json.loads(b) for b in blocks]
