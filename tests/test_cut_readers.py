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


OOB_TRACE = (
    Path(__file__).resolve().parent / "data" / "sanitizer" / "oob_trace"
)  # a compile with reproducer data


def _with_a_cut_compile(tmp_path: Path, frontend_saved: bool) -> tuple[Path, str, str]:
    """The recorded GPU trace's compile (it has reproducer data) and a copy of it as the next compile of
    its invocation, cut as a kill leaves it: before (frontend_saved=False) or after its frontend IR and
    context were saved. Returns (trace dir, the complete run's id, the cut one's)."""
    import shutil

    trace = tmp_path / "traces"
    shutil.copytree(OOB_TRACE, trace)
    first = next((trace / "oob" / ".run_records").glob("run_*"))
    cut = first.with_name(first.name.replace("069850Z", "069851Z"))  # a microsecond later
    shutil.copytree(first, cut)
    manifest = json.loads((cut / "manifest.json").read_text())
    (cut / "manifest.json").write_text(json.dumps({**manifest, "run_id": cut.name}))
    _cut_as_a_kill_leaves_it(cut)
    if not frontend_saved:
        for name in ("repro_frontend.json", "repro_context.json"):
            (cut / name).unlink()
    return trace, first.name, cut.name


def _bundled(path: Path) -> list[str]:
    """The run ids a bundle holds, as its own bundle.json lists them (read as a plain zip)."""
    import zipfile

    with zipfile.ZipFile(path) as z:
        return [c["run_id"] for c in json.loads(z.read("bundle.json"))["compiles"]]


def test_bundle_says_a_cut_compile_it_carries(tmp_path: Path) -> None:
    trace, first, cut = _with_a_cut_compile(tmp_path, frontend_saved=True)
    res = cli_invoke("bundle", "--trace-dir", trace, "oob", "-1", "-o", tmp_path / "b.zip")
    assert res.exit_code == 0, res.output
    assert _bundled(tmp_path / "b.zip") == [first, cut]
    assert "(2 compile(s)" in res.stdout and "1 cut short (interrupted)" in res.stdout, res.stdout
    assert "left out" not in res.stderr, res.stderr


def test_bundle_leaves_out_a_compile_cut_before_its_frontend_ir_was_saved_and_says_so(tmp_path: Path) -> None:
    """Before, the whole invocation was refused ('has no saved frontend IR data (recorded by tltrace ...
    without reproducer data, or removed)'), though the rest of it bundles and the cut one has nothing to
    replay."""
    trace, first, cut = _with_a_cut_compile(tmp_path, frontend_saved=False)
    res = cli_invoke("bundle", "--trace-dir", trace, "oob", "-1", "-o", tmp_path / "b.zip")
    assert res.exit_code == 0, res.output
    assert _bundled(tmp_path / "b.zip") == [first]
    assert "(1 compile(s)" in res.stdout and "cut short" not in res.stdout, res.stdout
    want = f"tltrace: warning: left out 1 compile(s) cut short before their frontend IR was saved: {cut} (interrupted)"
    assert res.stderr.strip() == want, res.stderr
    alone = cli_invoke("bundle", trace / "oob" / ".run_records" / cut, "-o", tmp_path / "c.zip")
    assert alone.exit_code == 3 and alone.stderr.strip().startswith(
        "tltrace: error: nothing to bundle: the 1 "
    )


def test_repro_names_the_pass_a_cut_compile_died_in(tmp_path: Path) -> None:
    """A killed compile failed at no pass: `repro` without --pass says it was cut and inside which pass (the
    one its `inflight` note names, as the cut here wrote it), and --pass naming that pass says it has no
    record to rerun (before: "failed at no pass" and "no pass with index N")."""
    trace, _, cut = _with_a_cut_compile(tmp_path, frontend_saved=True)
    run = trace / "oob" / ".run_records" / cut
    at = json.loads((run / "inflight").read_text())
    res = cli_invoke("repro", run, "-o", tmp_path / "r")
    assert res.exit_code == 2 and res.stdout == "", res.output
    assert (
        f"was cut short (interrupted) inside pass {at['index']} ({at['name']}), which has no record"
        in res.stderr
    )
    for spec in (str(at["index"]), at["name"].rsplit(".", 1)[-1]):
        res = cli_invoke("repro", run, "--pass", spec, "-o", tmp_path / "r")
        assert res.exit_code == 2, res.output
        assert res.stderr.strip().endswith(
            f"was running when its process ended (interrupted): it has no record to rerun; "
            f"its input is the output of pass {at['index'] - 1}"
        ), res.stderr
    assert not (tmp_path / "r").exists()
