"""Every reader on a recorded trace cut as a kill -9 leaves it (the quick loop's share of issue 51's
kill check; tests/test_kill_autotune.py kills a real traced autotune, in the slow tests).

The recorded `two_kernels` trace (two invocations of two compiles) is copied and the newest
invocation's first compile is cut the way a killed writer leaves a run (format/writer.py): its
manifest is the first one, written as the compile began (status `running`, no records), its
records are the first half of the recorded ones in `records.jsonl`, the last line torn, its
`inflight` note names the pass after them, and the process that wrote it is long gone. The oracle is that cut, made here: the readers must say it.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._cli import cli_invoke
from ._readers import every_reader
from ._records import recorded_subset, run_dirs


def _cut_as_a_kill_leaves_it(run_dir: Path) -> None:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    records = manifest["records"]
    kept = records[: len(records) // 2]
    assert kept and len(kept) < len(records)
    head = {**manifest, "status": "running", "finished": None, "error": None, "records": []}
    (run_dir / "manifest.json").write_text(json.dumps(head))
    at = records[len(kept)]  # the pass it died in
    lines = [json.dumps(r) for r in kept] + [json.dumps(at)[:20]]  # the torn last line
    (run_dir / "records.jsonl").write_text("\n".join(lines))
    # Where it was (format/notes.py's documented line: rewritten before and after each top-level pass).
    where = json.dumps({"at": "in", "name": at["name"], "index": at["index"], "phase": at["phase"]})
    (run_dir / "inflight").write_text(where.ljust(511) + "\n")


def test_every_reader_says_which_compile_a_kill_cut(recorded: Path, tmp_path: Path) -> None:
    trace = recorded_subset(recorded, tmp_path / "traces", two_kernels=None)
    runs = run_dirs(trace / "two_kernels")
    newest = max(json.loads((r / "manifest.json").read_text())["invocation"] for r in runs)
    victim = next(r for r in runs if json.loads((r / "manifest.json").read_text())["invocation"] == newest)
    _cut_as_a_kill_leaves_it(victim)
    every_reader(trace, "two_kernels", tmp_path / "tir", {victim.name})


def test_a_run_dir_a_kill_left_empty_is_interrupted_not_damaged(recorded: Path, tmp_path: Path) -> None:
    """Killed between making its run directory and its first write: nothing is in it. Its writer (the
    pid in its id) is gone, so it is a compile cut as it began, listed and opened as such."""
    trace = recorded_subset(recorded, tmp_path / "traces", two_kernels=None)
    empty = trace / "two_kernels" / ".run_records" / "run_29991231_000000_000000Z_999999999_0000dead"
    empty.mkdir()
    every_reader(trace, "two_kernels", tmp_path / "tir", {empty.name})
    res = cli_invoke("show", empty)
    assert res.exit_code == 0 and "interrupted" in res.stdout and "recorded anything" in res.stdout, (
        res.output
    )
