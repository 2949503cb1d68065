"""The CONFLICT line names the backups as they will be after `tltrace resolve-conflict` (#54: it named
W.bak, which resolve-conflict then moves to W.bak.1)."""

from __future__ import annotations

import re
from pathlib import Path

from tltrace.config import Settings
from tltrace.reconcile import files
from tltrace.reconcile.workflow import Ledger, reconcile_codegen


def _compile(tmp: Path, text: str):
    settings = Settings(mode="both", trace_dir=tmp, script_name="s")
    return reconcile_codegen(
        settings,
        kernel="k",
        role="device",
        generated=text,
        compiles_source=True,
        backend="cython",
        ledger=Ledger(),
    )


def test_the_conflict_line_names_the_files_resolve_conflict_leaves(run_cli, tmp_path: Path) -> None:
    gap = "\n" * 8  # the codegen's change and the edit far apart: the merge is clean
    wf = _compile(tmp_path, f"gen1{gap}body\n").path
    for round_, gen in enumerate((f"gen2{gap}body\n", f"gen3{gap}body\n"), 1):
        wf.write_text(re.sub(r"body|my edit \d", f"my edit {round_}", wf.read_text()))
        out = _compile(tmp_path, gen)
        assert out.tag == "CONFLICT", out.message
        kept = re.search(r"keeps them as (\S+) and (\S+)\)", out.message)
        assert kept, out.message
        r = run_cli("resolve-conflict", "--trace-dir", tmp_path, "s")
        assert r.exit_code == 0, r.stdout + r.stderr
        edits, baseline = (wf.parent / kept.group(1)), (wf.parent / kept.group(2))
        # The named files are there after the rebase, holding what the CONFLICT saved.
        assert f"my edit {round_}" in edits.read_text(), sorted(p.name for p in wf.parent.iterdir())
        assert baseline.read_text().startswith(f"gen{round_}\n")  # the baseline the edit was made on
        assert not files.WorkingFile(wf).bak.exists()  # W.bak itself is gone: it was moved
        assert f"backups are now {kept.group(1)} and {kept.group(2)}" in r.stdout
    assert kept.group(1).endswith(".bak.2")  # each CONFLICT gets its own slot, never overwritten
