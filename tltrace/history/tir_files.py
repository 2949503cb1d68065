"""The seed's per-pass layout, made on demand: a run's texts written out as `.tir` files.

A run keeps its texts in one pack (format/pack.py); `tltrace export RUN --tir DIR` writes
them where an older tltrace kept them, one directory per compile:

    DIR/<run id>/<phase>/<NN>_<Pass>_before.tir, _after.tir (codegen's after: .cpp)
    DIR/<run id>/<the generated file of an edited codegen call>

The names are the ones the records keep (`before_file`, `after_file`, an edit's
`generated_file`), each checked to stay inside its run's directory under DIR.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import RecordsError, UsageError
from .loading import Run
from .texts import generated_text, record_path, text_of


@dataclass
class Written:
    """What an export wrote: files per run id, and the texts no copy of was left to write."""

    files: int = 0
    runs: int = 0
    missing: list[str] = field(default_factory=list)  # "<run id>/<rel>"


def check_out(out: Path, *, force: bool = False) -> Path:
    """Return DIR for `--tir DIR`: a new directory, an empty one, or (with --force) any directory; not a link."""
    p = Path(out)
    if os.path.islink(p):
        raise UsageError(f"--tir {out} is a symbolic link; tltrace does not write through links")
    if p.exists():
        if not p.is_dir():
            raise UsageError(f"--tir {out} is not a directory; name a new or empty directory")
        if any(p.iterdir()) and not force:
            raise UsageError(
                f"--tir {out} is not empty; choose a new directory, or add --force to write into it"
            )
    elif not p.parent.is_dir():
        raise UsageError(f"--tir {out}: its parent directory does not exist")
    return p


def write_run(run: Run, out: Path, written: Written) -> None:
    """Write one run's texts under `out/<run id>/`; add what was written (or not) to `written`."""
    manifest = run.require()
    base = Path(out) / manifest.run_id
    base.mkdir(parents=True, exist_ok=True)
    todo: list[tuple[str, str | None]] = []
    for rec in manifest.records:
        for side, rel in (("before", rec.before_file), ("after", rec.after_file)):
            if rel:
                todo.append((rel, text_of(run.path, rec, side, errors="surrogateescape")))
    for e in (manifest.build or {}).get("edits") or []:
        if isinstance(e, dict) and isinstance(e.get("generated_file"), str):
            todo.append((e["generated_file"], generated_text(run.path, e)))
    for rel, text in todo:
        dest = record_path(base, rel)
        if dest is None:
            raise RecordsError(
                f"run {manifest.run_id} names a file {rel!r} outside its directory; not written"
            )
        if text is None:
            written.missing.append(f"{manifest.run_id}/{rel}")
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if os.path.islink(dest):
            dest.unlink()
        dest.write_text(text, encoding="utf-8", errors="surrogateescape")
        written.files += 1
    written.runs += 1
