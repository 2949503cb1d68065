"""An invocation that traced no compile says so, is recorded, and `-1` names it (#32 item 2)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from tltrace.format import empty
from tltrace.history.retention import clean
from tltrace.history.runs import invocations

from ._schema import check

NOTHING = "print('no kernel here')\n"


def _records(trace: Path, script: str) -> Path:
    return trace / script / ".run_records"


def test_a_script_that_compiles_nothing_says_so_and_is_minus_one(run_cli, tmp_path):
    (tmp_path / "nothing.py").write_text(NOTHING)
    r = run_cli("run", "nothing.py", "--trace-dir", "traces")
    assert r.exit_code == 0, r.stderr  # the script's own status: it did not fail
    out = r.stdout + r.stderr
    # In-process, an earlier test may have imported tilelang already.
    imported = "tilelang" in sys.modules
    why = "the script compiled no kernel" if imported else "the script never imported tilelang"
    assert f"no TileLang compile was traced: {why}" in out
    # The line names the command that shows it, with the trace dir it needs.
    shown = out.split("recorded as invocation -1: ", 1)[1].split()
    assert shown[:2] == ["tltrace", "show"] and "--trace-dir" in shown and shown[-2:] == ["nothing", "-1"]
    r = run_cli(*shown[1:])
    assert r.exit_code == 0, r.stderr
    assert "no TileLang compile was traced" in r.stdout
    assert (
        "\n$ tltrace" in r.stdout
    )  # the command line it ran (in-process here: pytest's argv, none under xdist)
    data = json.loads(run_cli("show", "--trace-dir", "traces", "nothing", "-1", "--json").stdout)
    check(data, "one_invocation")  # docs/show.schema.json describes it
    r = run_cli("show", "--trace-dir", "traces", "nothing", "--json")
    check(json.loads(r.stdout), "listing")
    inv = data["invocation"]
    assert inv["status"] == "empty" and inv["compiles"] == []
    assert inv["empty"]["imported"] is imported and inv["empty"]["cwd"] == str(tmp_path)
    # Nothing to open in it: one line, exit 2, for every command that needs a compile.
    for args in (("--pass", "1"), ("--html",), ("--source-map",)):
        r = run_cli("show", "--trace-dir", "traces", "nothing", "-1", *args)
        assert r.exit_code == 2, (args, r.stdout)
        assert "traced no TileLang compile" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("diff-runs", "--trace-dir", "traces", "nothing:-1", "nothing:-1")
    assert r.exit_code == 2 and "traced no TileLang compile" in r.stderr


def test_the_listing_counts_an_empty_invocation_and_retention_removes_it(run_cli, tmp_path):
    (tmp_path / "nothing.py").write_text(NOTHING)
    for _ in range(3):
        assert run_cli("run", "nothing.py", "--keep", "2").exit_code == 0
    root = _records(tmp_path / "tmp" / "lower_trace_dir", "nothing")
    # --keep counts invocations, these included: the oldest went.
    assert len(empty.read_all(root)) == 2
    invs = invocations(root.parent)
    assert [i.position for i in invs] == [-2, -1] and all(i.status == "empty" for i in invs)
    r = run_cli("show", "nothing")
    assert r.stdout.count("no TileLang compile traced") == 2, r.stdout
    res = clean([root.parent], remove_all=True)
    assert res.invocations_removed == 2 and empty.read_all(root) == []
    r = run_cli("show", "nothing")
    assert r.exit_code == 3


def test_an_empty_invocation_between_compiles_takes_its_place(recorded, tmp_path, run_cli):
    """Recorded compiles, then an empty invocation: -1 is the empty one, -2 the compiles before it."""
    trace = tmp_path / "traces"
    shutil.copytree(recorded, trace, symlinks=True)
    sd = trace / "two_kernels"
    before = invocations(sd)
    newest = before[-1]
    rec = empty.EmptyInvocation(
        invocation="inv_29990101_000000_000000Z_1_abcdef12",
        script="two_kernels",
        started=(newest.started or 0) + 60,
        kernels="vmull",
        skipped=("vadd", "vmul"),
    )
    empty.write(sd / ".run_records", rec)
    after = invocations(sd)
    assert len(after) == len(before) + 1
    assert after[-1].empty == rec and after[-2].id == newest.id
    r = run_cli("show", "--trace-dir", trace, "two_kernels", "-1")
    assert "--kernels 'vmull' matched none of the 2 kernels it compiled (vadd, vmul)" in r.stdout
    r = run_cli("show", "--trace-dir", trace, "two_kernels", "-2", "--json")
    assert json.loads(r.stdout)["invocation"]["invocation"] == newest.id
    # A record that is not one (a foreign file, a damaged one) is left out, never a traceback.
    (sd / ".run_records" / "inv_bad.json").write_text("{not json")
    assert len(invocations(sd)) == len(after)


def test_a_kernels_typo_names_what_it_skipped(examples_dir, run_cli):
    """A --kernels filter that matched nothing: the line names it and every kernel the script compiled."""
    assert run_cli("run", "-q", examples_dir / "two_kernels.py").exit_code == 0
    data = json.loads(run_cli("show", "two_kernels", "-1", "--json").stdout)
    kernels = sorted({c["kernel"] for c in data["invocation"]["compiles"]})
    assert len(kernels) >= 2
    r = run_cli("run", "-q", "--kernels", "^no_such_kernel$", examples_dir / "two_kernels.py")
    assert r.exit_code == 0, r.stderr
    out = r.stdout + r.stderr
    assert "no TileLang compile was traced: --kernels '^no_such_kernel$' matched none of the" in out
    assert all(k in out.split("no TileLang compile was traced", 1)[1] for k in kernels)
    data = json.loads(run_cli("show", "two_kernels", "-1", "--json").stdout)["invocation"]
    assert data["status"] == "empty" and sorted(data["empty"]["skipped"]) == kernels
    data = json.loads(run_cli("show", "two_kernels", "-2", "--json").stdout)["invocation"]
    assert sorted(c["kernel"] for c in data["compiles"]) == kernels
