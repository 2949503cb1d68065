"""Past runs on disk: find script directories and runs, resolve RUN specs, load manifests.

Layout (see session/store.py)::

    <trace_dir>/<script>/.run_records/run_<ts>_<pid>_<uid>/manifest.json

Everything here reads; nothing writes. Damaged trees raise RecordsError with one
line that names the path and says what to do; a listing of many runs reports a
damaged run as a row rather than failing as a whole.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import RecordsError, UsageError
from .session.names import safe_component
from .session.scripts import script_dir_for
from .session.records import READABLE_SCHEMA_VERSIONS, RUNNING, SCHEMA_VERSION, PassRecord, RunManifest
from .session.store import MANIFEST, OBJECTS, RECORDS_LOG, RUN_RECORDS, time_of_id, tree_bytes
from .session.writer import writer_alive

INTERRUPTED = "interrupted"  # shown for a run whose process is gone but never finished
DAMAGED = "damaged"

_RUN_ID = re.compile(r"^run_(\d{8})_(\d{6})_(\d+)_(\d+)_([0-9a-f]+)$")
_RELATIVE = re.compile(r"^(?:latest|-\d+)$")


@dataclass(frozen=True)
class Run:
    """One run directory and, once loaded, its manifest (or why it could not be read)."""

    path: Path
    manifest: RunManifest | None = None
    problem: str | None = None  # one line when the run is damaged
    size: int = 0

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def script_dir(self) -> Path:
        return self.path.parent.parent

    @property
    def status(self) -> str:
        if self.manifest is None:
            return DAMAGED
        return self.manifest.status

    def require(self) -> RunManifest:
        """Return the manifest, or raise RecordsError when the run is damaged."""
        if self.manifest is None:
            raise RecordsError(self.problem or f"run {self.path} cannot be read")
        return self.manifest


# -- locating ----------------------------------------------------------------
def is_run_dir(path: Path) -> bool:
    return path.is_dir() and path.name.startswith("run_") and path.parent.name == RUN_RECORDS


def is_script_dir(path: Path) -> bool:
    return (path / RUN_RECORDS).is_dir()


def looks_like_run_spec(text: str) -> bool:
    """Return True for 'latest', '-N', or something shaped like a run id (prefix)."""
    return bool(_RELATIVE.match(text)) or text.startswith("run_")


@dataclass(frozen=True)
class Location:
    """What a SCRIPT_OR_DIR argument names: script directories, or one run directory."""

    script_dirs: tuple[Path, ...]
    run_dir: Path | None = None
    root: Path | None = None  # the trace dir, when the argument named one


def locate(arg: str | os.PathLike | None, trace_dir: str | os.PathLike) -> Location:
    """Resolve SCRIPT_OR_DIR (None: the whole trace dir) into script dirs or a run dir.

    Accepted: a run directory; a `.run_records` directory; a script directory (it holds
    `.run_records`); a trace directory (its children do); a script path or name, looked
    up as `<trace_dir>/<stem>`.
    """
    trace_dir = Path(trace_dir)
    if arg is None:
        return _trace_root(trace_dir, explicit=False)
    text = str(arg)
    path = Path(text)
    if path.name == RUN_RECORDS and path.exists() and not path.is_dir():
        raise RecordsError(_not_a_dir(path))
    if path.is_dir():
        if is_run_dir(path):
            return Location((path.parent.parent,), run_dir=path)
        if path.name == RUN_RECORDS:
            return Location((path.parent,))
        if is_script_dir(path):
            return Location((path,))
        found = _script_dirs_under(path)
        if found:
            return Location(tuple(found), root=path)
        # A script's own directory (e.g. a package run with -m) may share its name with
        # a trace: fall through to the name lookup before giving up.
        by_name = trace_dir / safe_component(path.name)
        if path.name and is_script_dir(by_name):
            return Location((by_name,))
        _raise_if_records_not_dirs(path)
        raise RecordsError(f"no run records under {path}; run 'tltrace run SCRIPT --trace-dir {path}' first")
    name = path.stem if path.suffix == ".py" else path.name
    if path.name == "__main__.py":
        name = path.resolve().parent.name
    candidate = script_dir_for(trace_dir, text)  # x/kernel.py and y/kernel.py have their own dirs
    if name and is_script_dir(candidate):
        return Location((candidate,))
    if name and (candidate / RUN_RECORDS).exists():
        raise RecordsError(_not_a_dir(candidate / RUN_RECORDS))
    if path.exists():
        raise RecordsError(f"no run records for {text} under {candidate}; run 'tltrace run {text}' first "
                           f"(or pass --trace-dir)")
    raise RecordsError(f"{text} is neither a run, a trace directory nor a traced script "
                       f"(looked in {trace_dir}); see 'tltrace show' for what is there")


def _trace_root(trace_dir: Path, *, explicit: bool) -> Location:
    if not trace_dir.is_dir():
        raise RecordsError(f"no run records under {trace_dir}; run 'tltrace run SCRIPT' first (or pass --trace-dir)")
    if is_script_dir(trace_dir):
        return Location((trace_dir,))
    found = _script_dirs_under(trace_dir)
    if not found:
        _raise_if_records_not_dirs(trace_dir)
        raise RecordsError(f"no run records under {trace_dir}; run 'tltrace run SCRIPT' first (or pass --trace-dir)")
    return Location(tuple(found), root=trace_dir)


def _not_a_dir(records: Path) -> str:
    return (f"{records} is not a directory, so it holds no runs; remove it ('rm {records}') "
            "and the next 'tltrace run' recreates it")


def _raise_if_records_not_dirs(path: Path) -> None:
    """Raise RecordsError when path, or a directory in it, has a .run_records that is not a directory."""
    try:
        candidates = [path, *sorted(p for p in path.iterdir() if p.is_dir())]
    except OSError:
        return
    for p in candidates:
        rr = p / RUN_RECORDS
        if rr.exists() and not rr.is_dir():
            raise RecordsError(_not_a_dir(rr))


def _script_dirs_under(path: Path) -> list[Path]:
    try:
        children = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []
    return [p for p in children if is_script_dir(p)]


def run_dirs(script_dir: Path) -> list[Path]:
    """Return the run directories of one script, oldest first (run ids sort by time)."""
    root = Path(script_dir) / RUN_RECORDS
    try:
        entries = [p for p in root.iterdir() if p.name.startswith("run_") and p.is_dir()]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordsError(f"cannot read {root} ({exc.strerror or exc})") from None
    return sorted(entries, key=lambda p: p.name)


# -- resolving RUN -----------------------------------------------------------
def kernel_of(run_dir: Path) -> str | None:
    """Return the kernel a run compiled (None when its manifest cannot be read)."""
    try:
        return load_manifest(run_dir).kernel
    except RecordsError:
        return None


def resolve_run(script_dir: Path, spec: str | None, kernel: str | None = None) -> Path:
    """Return the run directory that `spec` names among script_dir's runs (of `kernel`, when given).

    spec: None or 'latest' (the newest), '-1' (same), '-2' (the one before), ...,
    a run id, or a unique prefix of one (with or without 'run_').
    """
    runs = run_dirs(script_dir)
    if not runs:
        raise RecordsError(f"no run records under {script_dir}; run 'tltrace run SCRIPT' first")
    if kernel is not None:
        runs = [p for p in runs if kernel_of(p) == kernel]
        if not runs:
            raise UsageError(f"no run of kernel {kernel!r} under {script_dir}; 'tltrace show {script_dir}' "
                             "lists the kernels")
    spec = (spec or "latest").strip()
    if spec == "latest":
        return runs[-1]
    if re.fullmatch(r"-\d+", spec):
        n = int(spec[1:])
        if n == 0:
            raise UsageError("run '-0' does not exist; '-1' is the newest run, '-2' the one before")
        if n > len(runs):
            what = f"run(s) of kernel {kernel!r}" if kernel else "run(s)"
            raise UsageError(f"run {spec} does not exist: {script_dir.name} has {len(runs)} {what}")
        return runs[-n]
    for p in runs:
        if p.name == spec:
            return p
    prefixes = (spec, f"run_{spec}")
    hits = [p for p in runs if p.name.startswith(prefixes)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise UsageError(f"run {spec!r} is ambiguous ({len(hits)} runs match: {hits[0].name}, {hits[1].name}, ...); "
                         "give more of the id")
    raise UsageError(f"no run {spec!r} under {script_dir}; 'tltrace show {script_dir}' lists its runs")


# -- loading -----------------------------------------------------------------
def load_manifest(run_dir: Path) -> RunManifest:
    """Return the run's manifest, with records.jsonl merged in while it is running.

    Raises RecordsError (one line, names the file, says what to do) when it is
    missing, truncated, of another schema, or not a manifest at all.
    """
    run_dir = Path(run_dir)
    mpath = run_dir / MANIFEST
    log = run_dir / RECORDS_LOG
    hint = f"remove it with 'rm -r {run_dir}' or 'tltrace clean'"
    if not run_dir.is_dir():
        raise RecordsError(f"run directory {run_dir} does not exist")
    try:
        text = mpath.read_text(encoding="utf-8")
    except FileNotFoundError:
        if log.is_file():
            return _from_log_only(run_dir)
        raise RecordsError(f"run {run_dir.name} has no {MANIFEST} (damaged or never started); {hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordsError(f"cannot read {mpath} ({getattr(exc, 'strerror', None) or exc}); {hint}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if log.is_file():
            return _from_log_only(run_dir)
        what = "empty" if not text.strip() else f"truncated or not JSON ({exc.msg} at char {exc.pos})"
        raise RecordsError(f"manifest {mpath} is {what}; {hint}") from None
    if not isinstance(data, dict):
        raise RecordsError(f"manifest {mpath} is not a run manifest; {hint}")
    version = data.get("schema_version")
    if isinstance(version, bool) or version not in READABLE_SCHEMA_VERSIONS:
        raise RecordsError(f"manifest {mpath} has schema version {version!r}; this tltrace reads versions "
                           f"{READABLE_SCHEMA_VERSIONS} (writes {SCHEMA_VERSION}) (use the tltrace that wrote it, or {hint})")
    try:
        manifest = RunManifest.from_json(data)
    except (TypeError, ValueError, KeyError) as exc:
        raise RecordsError(f"manifest {mpath} is damaged ({type(exc).__name__}: {exc}); {hint}") from None
    if manifest.status == RUNNING:
        manifest = _merge_log(run_dir, manifest)
    return manifest


def _read_log(run_dir: Path) -> list[PassRecord]:
    """Return the records in records.jsonl; a torn last line (a killed writer) is skipped."""
    out: dict[int, PassRecord] = {}
    try:
        lines = (run_dir / RECORDS_LOG).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            rec = PassRecord.from_json(json.loads(line))
        except (ValueError, TypeError, KeyError):
            continue
        out[rec.index] = rec
    return [out[k] for k in sorted(out)]


def _merge_log(run_dir: Path, manifest: RunManifest) -> RunManifest:
    logged = _read_log(run_dir)
    if logged:
        known = {r.index: r for r in manifest.records}
        known.update({r.index: r for r in logged})
        manifest = manifest.with_records([known[k] for k in sorted(known)])
    if not _process_alive(run_dir.name, manifest.writer):
        manifest = replace(manifest, status=INTERRUPTED)
    return manifest


def _from_log_only(run_dir: Path) -> RunManifest:
    started = time_of_id(run_dir.name) or 0.0
    manifest = RunManifest(run_id=run_dir.name, script=run_dir.parent.parent.name, started=started)
    return _merge_log(run_dir, manifest)


def _process_alive(run_id: str, writer: dict | None = None) -> bool:
    # The writer record (pid, start time, host) when the manifest has one, else the run id's pid.
    return writer_alive(writer, run_id)


def is_active(run: Run) -> bool:
    """Return True while the process that writes this run may still be writing it."""
    return run.status == RUNNING and _process_alive(run.run_id, run.manifest.writer if run.manifest else None)


def dir_size(path: Path) -> int:
    """Return the apparent size in bytes of the files under `path`."""
    return tree_bytes(path)


def load_run(run_dir: Path, *, size: bool = False) -> Run:
    """Return the Run at run_dir; a damaged one carries `problem` instead of raising."""
    try:
        manifest, problem = load_manifest(run_dir), None
    except RecordsError as exc:
        manifest, problem = None, str(exc)
    return Run(Path(run_dir), manifest, problem, dir_size(run_dir) if size else 0)


def list_runs(location: Location, *, size: bool = True, kernel: str | None = None) -> list[Run]:
    """Return every run of the located scripts (or the one run), oldest first per script; only `kernel`'s if given."""
    if location.run_dir is not None:
        return [load_run(location.run_dir, size=size)]
    out: list[Run] = []
    for sd in location.script_dirs:
        out.extend(load_run(p, size=size) for p in run_dirs(sd))
    if kernel is not None:
        out = [r for r in out if r.manifest is not None and r.manifest.kernel == kernel]
    return out


def open_run(arg: str | None, run: str | None, trace_dir: str | os.PathLike, kernel: str | None = None) -> Run:
    """Resolve SCRIPT_OR_DIR + RUN to one loaded run; raise RecordsError/UsageError when it cannot be read."""
    loc = locate(arg, trace_dir)
    if loc.run_dir is not None:
        if run is not None:
            raise UsageError(f"{arg} is already a run directory; drop the RUN argument {run!r}")
        path = loc.run_dir
    else:
        if len(loc.script_dirs) > 1:
            names = ", ".join(p.name for p in loc.script_dirs[:5])
            raise UsageError(f"{loc.root} holds runs of several scripts ({names}); name one, "
                             f"e.g. 'tltrace show {loc.script_dirs[0].name} {run or 'latest'}'")
        path = resolve_run(loc.script_dirs[0], run, kernel)
    r = load_run(path)
    r.require()
    return r


def parse_run_ref(ref: str, trace_dir: str | os.PathLike, default: str | None = None,
                  kernel: str | None = None) -> Run:
    """Resolve one operand of diff-runs: a run dir, a script (its newest run), 'SCRIPT:RUN', or a RUN.

    A bare RUN ('-2', 'latest', an id prefix) is looked up under `default` (a
    SCRIPT_OR_DIR), or under the trace dir when it holds one script only.
    """
    path = Path(ref)
    if path.exists():
        loc = locate(ref, trace_dir)
        return open_run(ref, None if loc.run_dir is not None else "latest", trace_dir, kernel)
    if looks_like_run_spec(ref):
        loc = locate(default, trace_dir)
        if loc.run_dir is None and len(loc.script_dirs) > 1:
            names = ", ".join(p.name for p in loc.script_dirs[:5])
            first = loc.script_dirs[0].name
            raise UsageError(f"{loc.root} holds runs of several scripts ({names}); say which, e.g. "
                             f"'--script {first}' or '{first}:{ref}'")
        return open_run(default, ref, trace_dir, kernel)
    script, sep, spec = ref.rpartition(":")
    if sep and script and spec:
        return open_run(script, spec, trace_dir, kernel)
    return open_run(ref, "latest", trace_dir, kernel)


# -- texts -------------------------------------------------------------------
def read_text(run: Run, record: PassRecord, side: str) -> str:
    """Return one side ('before' or 'after') of a record's text.

    The per-pass file is a hard link into `.objects`; when the file was deleted
    the stored object (by hash) still serves.
    """
    rel = record.before_file if side == "before" else record.after_file
    digest = record.before_hash if side == "before" else record.after_hash
    if rel is None and digest is None:
        raise RecordsError(f"{record.name} (#{record.index}) has no {side} text (the pass failed)")
    candidates: list[Path] = []
    if rel is not None:
        candidates.append(run.path / rel)
    if digest is not None:
        candidates.append(run.script_dir / RUN_RECORDS / OBJECTS / digest)
    for p in candidates:
        try:
            return p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    where = run.path / rel if rel else candidates[0]
    raise RecordsError(f"{where} is missing (run records damaged); rerun the script to record it again")


def find_record(manifest: RunManifest, spec: str) -> PassRecord:
    """Return the record a --pass NAME|INDEX names: an index, 'phase/name', 'name', or 'name#k' (k-th)."""
    spec = spec.strip()
    if re.fullmatch(r"\d+", spec):
        idx = int(spec)
        for r in manifest.records:
            if r.index == idx:
                return r
        raise UsageError(f"no pass with index {idx} in run {manifest.run_id} (0..{len(manifest.records) - 1})")
    name, occ = spec, 1
    m = re.fullmatch(r"(.+)#(\d+)", spec)
    if m:
        name, occ = m.group(1), int(m.group(2))
    phase = None
    if "/" in name:
        phase, name = name.split("/", 1)
    hits = [r for r in manifest.records if r.name == name and (phase is None or r.phase == phase)]
    if not hits:
        low = name.lower()
        hits = [r for r in manifest.records if low in r.name.lower() and (phase is None or r.phase == phase)]
        names = sorted({r.name for r in hits})
        if len(names) > 1:
            raise UsageError(f"pass {spec!r} matches several passes ({', '.join(names[:5])}); give the full name "
                             "or an index")
    if not hits:
        raise UsageError(f"no pass {spec!r} in run {manifest.run_id}; 'tltrace show' lists its passes")
    if occ > len(hits) or occ < 1:
        raise UsageError(f"pass {name!r} ran {len(hits)} time(s); '#{occ}' does not exist")
    return hits[occ - 1]
