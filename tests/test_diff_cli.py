"""The engine through the CLI on a real CPU compile: `run`/`show` with --ignore-whitespace,
and `show --pass P --json` rows for every changed pass (complete, in order, laws kept)."""

from __future__ import annotations

import json
from pathlib import Path

from .test_diff_engine import check_laws


def test_run_and_show_mark_reindents_and_ignore_whitespace_hides_them(
    run_cli, examples_dir: Path, tmp_path: Path
):
    td = tmp_path / "t"
    # -v: the whole diff (by default a long one shows its first changed lines, never a "~" line)
    res = run_cli("run", "-v", "--trace-dir", td, "--only", "LayoutInference", examples_dir / "gemm.py")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert any(line.startswith("    ~") for line in lines)
    assert "    +            T.reads()" in lines
    res = run_cli("run", "-v", "--trace-dir", td, "--only", "LayoutInference", "-w", examples_dir / "gemm.py")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert not any(line.startswith("    ~") for line in lines) and "    +            T.reads()" in lines

    shown = run_cli("show", "--trace-dir", td, "gemm", "--pass", "LayoutInference").stdout
    quiet = run_cli("show", "--trace-dir", td, "gemm", "--pass", "LayoutInference", "-w").stdout
    assert "    ~" in shown and "    ~" not in quiet and "T.reads()" in quiet

    rows = json.loads(
        run_cli("show", "--trace-dir", td, "gemm", "--pass", "LayoutInference", "--json").stdout
    )["rows"]
    assert [r["kind"] for r in rows].count("reindent") >= 10


def test_show_json_rows_match_the_texts(run_cli, examples_dir: Path, tmp_path: Path):
    from tltrace.history import runs

    td = tmp_path / "t"
    assert run_cli("run", "-q", "--trace-dir", td, examples_dir / "elementwise_add.py").exit_code == 0
    run = runs.parse_run_ref("elementwise_add", td, None, None)
    m = run.require()
    for rec in m.records:
        if rec.status != "changed":
            continue
        before, after = runs.read_text(run, rec, "before"), runs.read_text(run, rec, "after")
        rows = check_laws(before, after)
        out = json.loads(
            run_cli("show", "--trace-dir", td, "elementwise_add", "--pass", str(rec.index), "--json").stdout
        )
        assert out["rows"] == [r.to_json() for r in rows]
