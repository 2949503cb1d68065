"""Helpers shared by the run-records tests: the recorded traces (tests/data/traces), manifests, the entry point."""

from __future__ import annotations

import json
import subprocess
import zlib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def trace(trace_dir: Path, *runs: tuple[str, ...]) -> Path:
    """Trace each (script, *args) of examples/ under `tltrace run -q`; return trace_dir.

    Only for tests that need what the recorded traces leave out (repro inputs, source maps,
    reports); read-side tests use the `recorded` fixture instead.
    """
    from typer.testing import CliRunner

    from tltrace.cli.app import app

    runner = CliRunner()
    for script, *args in runs:
        res = runner.invoke(
            app,
            ["run", "-q", "--trace-dir", str(trace_dir), str(EXAMPLES / script), *args],
            catch_exceptions=False,
        )
        assert res.exit_code == 0, res.output
    return trace_dir


def copy_tree(src: Path, dest: Path) -> Path:
    """Copy a trace dir keeping its hard links (the store's .objects rely on link counts)."""
    subprocess.run(["cp", "-a", str(src), str(dest)], check=True)
    return dest


def run_dirs(script_dir: Path) -> list[Path]:
    return sorted((script_dir / ".run_records").glob("run_*"))


def read_manifest(run_dir: Path) -> dict:
    """A run's manifest.json as JSON, every field spelled out (schema 3 leaves some out on disk).

    The pipeline facts (pass counts, versions) tests compare against. Written back as is,
    it is still a valid manifest of its schema version.
    """
    import json

    from tltrace.format.records import RunManifest

    return RunManifest.from_json(json.loads((run_dir / "manifest.json").read_text())).to_json()


def manifests(script_dir: Path) -> list:
    """Every run's manifest under script_dir, oldest first, as RunManifest (tltrace's reader of the format)."""
    from tltrace.format.records import RunManifest

    return [
        RunManifest.from_json(json.loads((r / "manifest.json").read_text())) for r in run_dirs(script_dir)
    ]


def newest_manifest(script_dir: Path) -> dict:
    """The newest run's manifest under script_dir."""
    return read_manifest(run_dirs(script_dir)[-1])


def summary(manifest: dict) -> str:
    """The counts line the terminal and `show` print for a run: 'N passes, C changed, F failed, G codegen'."""
    statuses = [r["status"] for r in manifest["records"]]
    return (
        f"{len(statuses)} passes, {statuses.count('changed')} changed, {statuses.count('failed')} failed, "
        f"{statuses.count('codegen')} codegen"
    )


def tltrace_executable() -> str | None:
    """The installed `tltrace` console script: beside this Python first (a venv's), else on PATH.

    Tests that need it skip when it is missing, except under CI (env CI set), where they fail:
    .ci/run installs it, so a missing one means the install is broken.
    """
    import os
    import shutil
    import sys

    beside = Path(sys.executable).parent / "tltrace"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("tltrace")


def require_tltrace_executable() -> str:
    """tltrace_executable(), or skip (fail under CI) when it is not installed."""
    import os

    import pytest

    exe = tltrace_executable()
    if exe is None:
        msg = "the tltrace entry point is not installed (pip install -e .)"
        if os.environ.get("CI"):
            pytest.fail(msg + "; under CI it must be")
        pytest.skip(msg)
    return exe


def schema3_text(manifest) -> str:
    """manifest.json as tltrace wrote it at schema 3 (records less what their place implies), to test the reader."""
    from tltrace.format.records import NOOP

    data = manifest.to_json()
    data["schema_version"] = 3
    out = []
    prev = None
    for pos, r in enumerate(manifest.records):
        d = r.to_stored()
        if d["index"] == pos:
            del d["index"]
        if d["status"] == NOOP:
            del d["status"]
        if prev is not None:
            if d["phase"] == prev.phase:
                del d["phase"]
            if r.before_hash == prev.after_hash:
                d.pop("before_hash", None)
            elif r.before_hash is None:
                d["before_hash"] = None
        out.append(d)
        prev = r
    data["records"] = out
    return json.dumps(data, separators=(",", ":"))


RECORDED = REPO / "tests" / "data" / "traces"  # made by tests/data/make_traces.py (see its docstring)


def recorded_copy(dest: Path) -> Path:
    """Copy the checked-in recorded traces to `dest` and return it, as tltrace left them.

    The recording keeps each text once, in `.run_records/.objects`; the per-pass files
    tltrace writes as hard links into it are linked again here from the manifests'
    hashes, read-only, so a copy has the same files and link counts as a live trace dir.
    Nothing is compiled: read-side tests use this (the quick loop).
    """
    import os
    import shutil

    shutil.copytree(RECORDED, dest)
    for manifest in sorted(dest.glob("*/.run_records/run_*/manifest.json")):
        run_dir = manifest.parent
        objects = run_dir.parent / ".objects"
        for rec in json.loads(manifest.read_text())["records"]:
            for rel, digest in (
                (rec.get("before_file"), rec.get("before_hash")),
                (rec.get("after_file"), rec.get("after_hash")),
            ):
                if rel and digest and (objects / digest).is_file() and not (run_dir / rel).exists():
                    (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                    os.link(objects / digest, run_dir / rel)
    for obj in dest.glob("*/.run_records/.objects/*"):
        obj.chmod(0o444)
    return dest


def recorded_runs(trace_dir: Path, script: str) -> list[Path]:
    """The run dirs of one script in a recorded copy, oldest first."""
    return run_dirs(trace_dir / script)


def recorded_subset(recorded: Path, dest: Path, **keep: slice | None) -> Path:
    """Copy some scripts of a recorded copy to `dest`: script name=slice of its run dirs (None: all).

    `recorded_subset(recorded, tmp, elementwise_add=slice(0, 2), gemm=None)` keeps the
    first two compiles of elementwise_add and every compile of gemm; the scripts
    registry keeps only their entries. Hard links are kept (copy_tree).
    """
    import shutil

    copy_tree(recorded, dest)
    for sd in [p for p in dest.iterdir() if p.is_dir()]:
        if sd.name not in keep:
            shutil.rmtree(sd)
            continue
        which = keep[sd.name]
        if which is not None:
            every = run_dirs(sd)
            for run in every:
                if run not in every[which]:
                    shutil.rmtree(run)
    registry = dest / ".tltrace-scripts.json"
    if registry.is_file():
        data = json.loads(registry.read_text())
        data["scripts"] = {k: v for k, v in data["scripts"].items() if v in keep}
        registry.write_text(json.dumps(data, indent=1))
    return dest


def recorded_fixture(doc: str, **keep: slice | None):
    """A module-scoped fixture: `recorded_subset` of the session's recorded traces with `keep`, in a fresh
    tmp dir, read only (a test that writes copies it). `doc` says what it holds."""
    import pytest

    @pytest.fixture(scope="module")
    def traced(recorded: Path, tmp_path_factory) -> Path:
        return recorded_subset(recorded, tmp_path_factory.mktemp("recorded") / "traces", **keep)

    traced.__doc__ = doc
    return traced


def recorded_add_with(recorded: Path, dest: Path, **fields: Any) -> Path:
    """The recorded elementwise_add's first compile alone, copied to `dest` (recorded_subset), its
    manifest's `fields` set (data a CPU recording cannot hold, e.g. a GPU's `layouts`); returns its run dir."""
    (run,) = run_dirs(recorded_subset(recorded, dest, elementwise_add=slice(0, 1)) / "elementwise_add")
    m = json.loads((run / "manifest.json").read_text())
    m.update(fields)
    (run / "manifest.json").write_text(json.dumps(m))
    return run


def pack_texts(run_dir: Path) -> dict[str, str]:
    """The run's `texts.pack` read here by its documented layout (docs/architecture.md: a magic line
    `TLPACK1`, then `Z <hash> <len>` and the text's UTF-8 deflated by zlib, `T <hash> <len>` and the
    UTF-8 itself, or `D <hash> <len> <base>` and the UTF-8 deflated with the base entry's text as
    zlib's dictionary, per entry), not by tltrace's reader: the oracle's own reading of what was
    stored. {} for a run without a pack."""
    return {d: b.decode("utf-8", "replace") for d, (_, b) in pack_entries(run_dir).items()}


def pack_entries(run_dir: Path) -> dict[str, tuple[str | None, bytes]]:
    """{hash: (the base a D entry leans on, else None; the text's UTF-8)} of a run's `texts.pack`,
    read by its documented layout (pack_texts)."""
    try:
        data = (Path(run_dir) / "texts.pack").read_bytes()
    except OSError:
        return {}
    head = b"TLPACK1\n"
    assert data.startswith(head), f"{run_dir}/texts.pack does not start with its magic line"
    out: dict[str, tuple[str | None, bytes]] = {}
    at = len(head)
    while at < len(data):
        nl = data.index(b"\n", at)
        tag, digest, size, *base = data[at:nl].decode().split(" ")
        assert tag in ("T", "Z", "D") and len(base) == (tag == "D"), (tag, base)
        body = data[nl + 1 : nl + 1 + int(size)]
        if tag == "D":
            z = zlib.decompressobj(zdict=out[base[0]][1])
            body = z.decompress(body) + z.flush()
        out[digest] = (base[0] if base else None, zlib.decompress(body) if tag == "Z" else body)
        at = nl + 1 + int(size) + 1
    return out


def rec_text(run_dir: Path, rec: Any, side: str = "after") -> str:
    """One side of a record's text (a manifest's record dict, or a PassRecord), read as every reader
    reads it: the run's pack by hash (older runs: the per-pass file, else `.objects`)."""
    from tltrace.history.texts import stored_text

    get = rec.get if isinstance(rec, dict) else lambda k: getattr(rec, k)
    text = stored_text(Path(run_dir), get(f"{side}_file"), get(f"{side}_hash"))
    assert text is not None, f"{run_dir}: no {side} text of {get('name')}"
    return text
