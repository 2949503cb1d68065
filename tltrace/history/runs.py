"""Past runs on disk: the one reader of run records.

Finds script directories and runs, groups runs (compiles) into invocations,
resolves RUN specs, loads manifests and reads the texts they name. Layout (see
session/store.py)::

    <trace_dir>/<script>/.run_records/run_<ts>_<pid>_<uid>/manifest.json

An *invocation* is one `tltrace run`, one watch rerun, one enable()..disable()
span: every compile of it carries the same manifest `invocation`. A run without
one (schema 1) is an invocation of its own. Paths read from a manifest are
resolved inside the run directory only, and stored texts by a validated hash
inside `.run_records/.objects`: records on disk never make tltrace read elsewhere.

Everything here reads; nothing writes. Damaged trees raise RecordsError with one
line that names the path and says what to do; a listing of many runs reports a
damaged run as a row rather than failing as a whole.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from ..errors import RecordsError, UsageError
from ..session import liveness
from ..session.names import safe_component
from ..session.records import READABLE_SCHEMA_VERSIONS, RUNNING, SCHEMA_VERSION, PassRecord, RunManifest
from ..session.scripts import script_dir_for
from ..session.store import (
    MANIFEST,
    OBJECTS,
    RECORDS_LOG,
    RUN_RECORDS,
    id_time_is_absolute,
    time_of_id,
    tree_bytes,
)
from ..session.writer import writer_alive, writer_token

INTERRUPTED = "interrupted"  # shown for a run whose process is gone but never finished
DAMAGED = "damaged"

_HASH = re.compile(r"^[0-9a-f]{8,128}$")  # a stored text's name in .objects (session/store.text_hash)
_LATEST_TIME = 1e11  # year ~5138: any later 'started' is garbage, not a time
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


def split_target(target: str | None, run: str | None) -> tuple[str | None, str | None]:
    """Return (SCRIPT_OR_DIR, RUN) from the forms every command takes for one operand.

    'tltrace show -2' is a RUN of the only script; 'gemm.py:-2' (as diff-runs takes it) is
    SCRIPT:RUN. A path that exists is always a path, whatever its characters.
    """
    if target is None or run is not None or Path(target).exists():
        return target, run
    if looks_like_run_spec(target):
        return None, target
    script, sep, spec = target.rpartition(":")
    if sep and script and spec:
        return script, spec
    return target, run


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
        return _trace_root(trace_dir)
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
    by_name = trace_dir / safe_component(name)
    if name and not path.exists() and is_script_dir(by_name):
        return Location((by_name,))  # a script no longer (or not here) on disk: its name's directory
    if name and (candidate / RUN_RECORDS).exists():
        raise RecordsError(_not_a_dir(candidate / RUN_RECORDS))
    if path.exists():
        raise RecordsError(
            f"no run records for {text} under {candidate}; run 'tltrace run {text}' first "
            f"(or pass --trace-dir)"
        )
    raise RecordsError(
        f"{text} is neither a run, a trace directory nor a traced script "
        f"(looked in {trace_dir}); see 'tltrace show' for what is there"
    )


def _trace_root(trace_dir: Path) -> Location:
    if not trace_dir.is_dir():
        raise RecordsError(
            f"no run records under {trace_dir}; run 'tltrace run SCRIPT' first (or pass --trace-dir)"
        )
    if is_script_dir(trace_dir):
        return Location((trace_dir,))
    found = _script_dirs_under(trace_dir)
    if not found:
        _raise_if_records_not_dirs(trace_dir)
        raise RecordsError(
            f"no run records under {trace_dir}; run 'tltrace run SCRIPT' first (or pass --trace-dir)"
        )
    return Location(tuple(found), root=trace_dir)


def _not_a_dir(records: Path) -> str:
    return (
        f"{records} is not a directory, so it holds no runs; remove it ('rm {records}') "
        "and the next 'tltrace run' recreates it"
    )


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
    """Return the run directories of one script, oldest first by the time in their ids."""
    root = Path(script_dir) / RUN_RECORDS
    try:
        entries = [p for p in root.iterdir() if p.name.startswith("run_") and p.is_dir()]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordsError(f"cannot read {root} ({exc.strerror or exc})") from None
    return sorted(entries, key=lambda p: (time_of_id(p.name) or 0.0, p.name))


def start_of(run: Run) -> float:
    """Return when a run started, as an absolute time (epoch seconds) wherever one is known.

    A UTC ("Z") run id first (a damaged manifest cannot move it); for an older id of naive
    local time, its manifest's `started` (absolute); else the id read as local time.
    """
    if id_time_is_absolute(run.run_id):
        return time_of_id(run.run_id) or 0.0
    t = safe_time(run.manifest.started) if run.manifest is not None else None
    return t if t is not None else (run_id_time(run.run_id) or 0.0)


# -- resolving RUN -----------------------------------------------------------
def kernel_of(run_dir: Path) -> str | None:
    """Return the kernel a run compiled (None when its manifest cannot be read)."""
    try:
        return load_manifest(run_dir).kernel
    except RecordsError:
        return None


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
        raise RecordsError(
            f"run {run_dir.name} has no {MANIFEST} (damaged or never started); {hint}"
        ) from None
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
        raise RecordsError(
            f"manifest {mpath} has schema version {version!r}; this tltrace reads versions "
            f"{READABLE_SCHEMA_VERSIONS} (writes {SCHEMA_VERSION}) (use the tltrace that wrote it, or {hint})"
        )
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
    if not writer_may_live(run_dir, manifest):
        manifest = replace(manifest, status=INTERRUPTED)
    return manifest


def run_id_time(run_id: str) -> float | None:
    """Return the start time (epoch seconds) encoded in a run or invocation id, or None when it holds none."""
    return safe_time(time_of_id(run_id))


def safe_time(value: object) -> float | None:
    """Return `value` as epoch seconds when it is a plausible time (finite, 0 < t < year 5000), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    t = float(value)
    if not math.isfinite(t) or t <= 0 or t >= _LATEST_TIME:
        return None
    return t


def format_time(value: object) -> str:
    """Return a local 'YYYY-MM-DD HH:MM:SS' for a manifest time, '?' for a missing or impossible one."""
    t = safe_time(value)
    if t is None:
        return "?"
    try:
        return _dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return "?"


def _from_log_only(run_dir: Path) -> RunManifest:
    started = run_id_time(run_dir.name) or 0.0
    manifest = RunManifest(run_id=run_dir.name, script=run_dir.parent.parent.name, started=started)
    return _merge_log(run_dir, manifest)


def writer_may_live(run_dir: Path, manifest: RunManifest | None, *, force: bool = False) -> bool:
    """True while the invocation that writes the run may still write it.

    The lock its writers hold decides (`session.liveness`), whatever host wrote it. A run
    from before that lock falls back to the writer's pid, process start and host; a
    writer on another host then counts as alive unless `force` (it cannot be asked).
    """
    run_dir = Path(run_dir)
    key = (manifest.invocation if manifest is not None else None) or run_dir.name
    held = liveness.state(run_dir.parent, key)
    if held is not None:
        return held
    writer = manifest.writer if manifest is not None else None
    if force and isinstance(writer, dict) and writer.get("host") not in (None, "", writer_token()["host"]):
        return False
    return writer_alive(writer, run_dir.name)


def is_active(run: Run) -> bool:
    """Return True while the process that writes this run may still be writing it."""
    return run.status == RUNNING and run.manifest is not None and writer_may_live(run.path, run.manifest)


def load_run(run_dir: Path, *, size: bool = False) -> Run:
    """Return the Run at run_dir; a damaged one carries `problem` instead of raising."""
    try:
        manifest, problem = load_manifest(run_dir), None
    except RecordsError as exc:
        manifest, problem = None, str(exc)
    return Run(Path(run_dir), manifest, problem, tree_bytes(run_dir) if size else 0)


def list_runs(location: Location, *, size: bool = True, kernel: str | None = None) -> list[Run]:
    """Return every run of the located scripts (or the one run), oldest first per script; only `kernel`'s if given."""
    if location.run_dir is not None:
        return [load_run(location.run_dir, size=size)]
    out: list[Run] = []
    for sd in location.script_dirs:
        out.extend(
            sorted((load_run(p, size=size) for p in run_dirs(sd)), key=lambda r: (start_of(r), r.run_id))
        )
    if kernel is not None:
        out = [r for r in out if r.manifest is not None and r.manifest.kernel == kernel]
    return out


# -- invocations --------------------------------------------------------------
def label(m: RunManifest | None, run_id: str = "?") -> str:
    """Return how a compile is named to a person: its signature, else its kernel, else its run id."""
    if m is None:
        return run_id
    return m.signature or m.kernel or run_id


@dataclass(frozen=True)
class Invocation:
    """One invocation of a script: its compiles (runs) in the order they started."""

    id: str
    runs: tuple[Run, ...]
    position: int = 0  # -1 the newest invocation of its script, -2 the one before, ...

    @property
    def script_dir(self) -> Path:
        return self.runs[0].script_dir

    @property
    def legacy(self) -> bool:
        """True for a run that names no invocation (schema 1): it is an invocation of its own."""
        m = self.runs[0].manifest
        return len(self.runs) == 1 and (m is None or not m.invocation)

    @property
    def started(self) -> float | None:
        times = [t for t in (start_of(r) for r in self.runs) if t > 0]
        return min(times) if times else None

    @property
    def status(self) -> str:
        """running while any compile runs; error/damaged/interrupted when any is; else complete."""
        statuses = {r.status for r in self.runs}
        for s in (RUNNING, DAMAGED, INTERRUPTED, "error"):
            if s in statuses:
                return s
        return next(iter(statuses)) if len(statuses) == 1 else "complete"

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.runs:
            out[r.status] = out.get(r.status, 0) + 1
        return out


def invocation_key(run: Run) -> str:
    m = run.manifest
    return m.invocation if m is not None and m.invocation else run.run_id


def group_invocations(runs: list[Run]) -> list[Invocation]:
    """Group one script's runs into invocations, oldest first, each with its compiles in start order.

    Positions count from the newest (-1). Runs are ordered by an absolute start time
    (`start_of`), never by an id's local time: a time zone or DST change cannot reorder them.
    """
    groups: dict[str, list[Run]] = {}
    for r in sorted(runs, key=lambda r: (start_of(r), r.run_id)):
        groups.setdefault(invocation_key(r), []).append(r)
    ordered = list(groups.items())  # first compile's run id order
    n = len(ordered)
    return [Invocation(k, tuple(v), i - n) for i, (k, v) in enumerate(ordered)]


def invocations(script_dir: Path, *, size: bool = False) -> list[Invocation]:
    """Return the invocations of one script, oldest first."""
    return group_invocations([load_run(p, size=size) for p in run_dirs(script_dir)])


@dataclass(frozen=True)
class Selection:
    """What a SCRIPT_OR_DIR [RUN] [COMPILE] (with --kernel) names: compiles of one invocation."""

    invocation: Invocation
    runs: tuple[Run, ...]  # the selected compiles (all of the invocation unless narrowed)
    spec: str = "latest"  # how the invocation was named, for messages

    @property
    def single(self) -> Run | None:
        return self.runs[0] if len(self.runs) == 1 else None

    def one(self, what: str = "this") -> Run:
        """Return the one selected compile; UsageError naming the candidates when there are several."""
        if len(self.runs) == 1:
            return self.runs[0]
        names = ", ".join(label(r.manifest, r.run_id) for r in self.runs[:4])
        more = ", ..." if len(self.runs) > 4 else ""
        raise UsageError(
            f"invocation {self.spec} has {len(self.runs)} compiles ({names}{more}); {what} needs one: "
            "name it with --kernel NAME, a signature prefix or a run id"
        )


_T = TypeVar("_T")


def _prefix_hits(items: list[tuple[str, _T]], spec: str) -> list[_T]:
    exact = [o for k, o in items if k == spec]
    return exact or [o for k, o in items if k.startswith(spec)]


def _narrow(
    inv: Invocation, runs: tuple[Run, ...], kernel: str | None, compile_: str | None, spec: str
) -> tuple[Run, ...]:
    if kernel is not None:
        runs = tuple(r for r in runs if r.manifest is not None and r.manifest.kernel == kernel)
        if not runs:
            raise UsageError(
                f"no compile of kernel {kernel!r} in invocation {spec} of {inv.script_dir.name}; "
                f"'tltrace show {inv.script_dir.name} {spec}' lists its compiles"
            )
    if compile_ is not None:
        hits = [r for r in runs if label(r.manifest, r.run_id).startswith(compile_)]
        exact = [r for r in hits if label(r.manifest, r.run_id) == compile_]
        hits = exact if len(exact) == 1 else hits
        if not hits:
            raise UsageError(
                f"no compile with signature {compile_!r} in invocation {spec} of "
                f"{inv.script_dir.name}; 'tltrace show {inv.script_dir.name} {spec}' lists them"
            )
        if len(hits) > 1:
            names = ", ".join(label(r.manifest, r.run_id) for r in hits[:3]) + (
                ", ..." if len(hits) > 3 else ""
            )
            raise UsageError(
                f"signature prefix {compile_!r} matches {len(hits)} compiles ({names}); "
                "give more of it, or a run id"
            )
        runs = tuple(hits)
    return runs


def select(
    script_dir: Path, spec: str | None = None, kernel: str | None = None, compile_: str | None = None
) -> Selection:
    """Resolve RUN (and COMPILE, --kernel) among one script's runs.

    spec: None/'latest'/'-1' (the newest invocation), '-2' (the one before), ...;
    a run id or a unique prefix of one (that compile alone); an invocation id or a
    unique prefix; else a signature prefix within the newest invocation. With
    `kernel`, -N counts only invocations that compiled `kernel`, and the compiles
    are narrowed to it; `compile_` is a signature prefix (or kernel name) to narrow to.
    """
    script_dir = Path(script_dir)
    invs = invocations(script_dir)
    if not invs:
        raise RecordsError(f"no run records under {script_dir}; run 'tltrace run SCRIPT' first")
    if kernel is not None:
        invs = [
            i for i in invs if any(r.manifest is not None and r.manifest.kernel == kernel for r in i.runs)
        ]
        if not invs:
            raise UsageError(
                f"no run of kernel {kernel!r} under {script_dir}; 'tltrace show {script_dir}' "
                "lists the kernels"
            )
    spec = (spec or "latest").strip()
    if spec in ("latest", "-1"):
        return Selection(invs[-1], _narrow(invs[-1], invs[-1].runs, kernel, compile_, "-1"), "-1")
    if re.fullmatch(r"-\d+", spec):
        n = int(spec[1:])
        if n == 0:
            raise UsageError("invocation '-0' does not exist; '-1' is the newest, '-2' the one before")
        if n > len(invs):
            what = f"invocation(s) that compiled {kernel!r}" if kernel else "invocation(s)"
            raise UsageError(f"invocation {spec} does not exist: {script_dir.name} has {len(invs)} {what}")
        inv = invs[-n]
        return Selection(inv, _narrow(inv, inv.runs, kernel, compile_, spec), spec)
    all_runs = [(r.run_id, (i, r)) for i in invs for r in i.runs]
    hits = _prefix_hits(all_runs, spec) or _prefix_hits(all_runs, f"run_{spec}")
    if len(hits) == 1:
        inv, one = hits[0]
        return Selection(inv, _narrow(inv, (one,), kernel, compile_, spec), spec)
    if len(hits) > 1:
        first, second = hits[0][1].run_id, hits[1][1].run_id
        raise UsageError(
            f"run {spec!r} is ambiguous ({len(hits)} runs match: {first}, {second}, ...); give more of the id"
        )
    inv_hits = _prefix_hits([(i.id, i) for i in invs if not i.legacy], spec)
    if len(inv_hits) == 1:
        inv = inv_hits[0]
        return Selection(inv, _narrow(inv, inv.runs, kernel, compile_, spec), spec)
    if len(inv_hits) > 1:
        raise UsageError(f"invocation {spec!r} is ambiguous ({len(inv_hits)} match); give more of the id")
    if compile_ is None and not spec.startswith("run_"):
        # A signature prefix (or kernel name) in the newest invocation that has one.
        for inv in reversed(invs):
            if any(label(r.manifest, r.run_id).startswith(spec) for r in inv.runs):
                pos = f"-{len(invs) - invs.index(inv)}"
                return Selection(inv, _narrow(inv, inv.runs, kernel, spec, pos), pos)
    raise UsageError(
        f"no run, invocation or signature {spec!r} under {script_dir}; 'tltrace show {script_dir}' lists them"
    )


def resolve_run(script_dir: Path, spec: str | None, kernel: str | None = None) -> Path:
    """Return the run directory of the one compile `spec` names (UsageError when it names several)."""
    return select(script_dir, spec, kernel).one().path


def open_selection(
    arg: str | None,
    run: str | None,
    trace_dir: str | os.PathLike,
    kernel: str | None = None,
    compile_: str | None = None,
) -> Selection:
    """Resolve SCRIPT_OR_DIR + RUN (+ COMPILE, --kernel) to a Selection of loaded compiles."""
    loc = locate(arg, trace_dir)
    if loc.run_dir is not None:
        if run is not None:
            raise UsageError(f"{arg} is already a run directory; drop the RUN argument {run!r}")
        r = load_run(loc.run_dir)
        r.require()
        siblings = [x for x in invocations(loc.script_dirs[0]) if any(y.path == r.path for y in x.runs)]
        inv = siblings[0] if siblings else Invocation(invocation_key(r), (r,), -1)
        sel = Selection(inv, _narrow(inv, (r,), kernel, compile_, r.run_id), r.run_id)
    else:
        if len(loc.script_dirs) > 1:
            names = ", ".join(p.name for p in loc.script_dirs[:5])
            raise UsageError(
                f"{loc.root} holds runs of several scripts ({names}); name one, "
                f"e.g. 'tltrace show {loc.script_dirs[0].name} {run or 'latest'}'"
            )
        sel = select(loc.script_dirs[0], run, kernel, compile_)
    for r in sel.runs:
        if len(sel.runs) == 1:
            r.require()
    return sel


def open_run(
    arg: str | None, run: str | None, trace_dir: str | os.PathLike, kernel: str | None = None
) -> Run:
    """Resolve SCRIPT_OR_DIR + RUN to one loaded compile; raise RecordsError/UsageError when it cannot be."""
    r = open_selection(arg, run, trace_dir, kernel).one()
    r.require()
    return r


def parse_ref(
    ref: str, trace_dir: str | os.PathLike, default: str | None = None, kernel: str | None = None
) -> Selection:
    """Resolve one operand of diff-runs: a run dir, a script (its newest invocation), 'SCRIPT:RUN', or a RUN.

    A bare RUN ('-2', 'latest', an id prefix) is looked up under `default` (a
    SCRIPT_OR_DIR), or under the trace dir when it holds one script only.
    """
    path = Path(ref)
    if path.exists():
        loc = locate(ref, trace_dir)
        return open_selection(ref, None if loc.run_dir is not None else "latest", trace_dir, kernel)
    if looks_like_run_spec(ref):
        loc = locate(default, trace_dir)
        if loc.run_dir is None and len(loc.script_dirs) > 1:
            names = ", ".join(p.name for p in loc.script_dirs[:5])
            first = loc.script_dirs[0].name
            raise UsageError(
                f"{loc.root} holds runs of several scripts ({names}); say which, e.g. "
                f"'--script {first}' or '{first}:{ref}'"
            )
        return open_selection(default, ref, trace_dir, kernel)
    script, sep, spec = ref.rpartition(":")
    if sep and script and spec:
        return open_selection(script, spec, trace_dir, kernel)
    return open_selection(ref, "latest", trace_dir, kernel)


def parse_run_ref(
    ref: str, trace_dir: str | os.PathLike, default: str | None = None, kernel: str | None = None
) -> Run:
    """Like parse_ref, for exactly one compile."""
    r = parse_ref(ref, trace_dir, default, kernel).one()
    r.require()
    return r


# -- texts -------------------------------------------------------------------
def record_path(run_dir: Path, rel: str | None) -> Path | None:
    """Return the file a record's relative path names inside run_dir, or None when it would leave it.

    Refused: absolute paths, '..' parts, and paths whose real location (symlinks
    followed) is not under the run directory's real location.
    """
    if not rel or not isinstance(rel, str) or "\x00" in rel:
        return None
    parts = rel.replace("\\", "/").split("/")
    if (
        rel.startswith("/")
        or any(p in ("..",) for p in parts)
        or os.path.isabs(rel)
        or (len(rel) > 1 and rel[1] == ":")
    ):
        return None
    base = os.path.realpath(run_dir)
    full = os.path.realpath(os.path.join(base, *[p for p in parts if p not in ("", ".")]))
    if os.path.commonpath([base, full]) != base or full == base:
        return None
    return Path(full)


def object_path(script_dir: Path, digest: str | None) -> Path | None:
    """Return the stored text named by `digest` in the script's .objects, or None (bad hash, outside the tree)."""
    if not digest or not isinstance(digest, str) or not _HASH.match(digest):
        return None
    root = os.path.realpath(Path(script_dir) / RUN_RECORDS)
    full = os.path.realpath(os.path.join(Path(script_dir) / RUN_RECORDS, OBJECTS, digest))
    if os.path.commonpath([root, full]) != root:
        return None  # .objects (or the object) is a link out of the trace dir
    return Path(full)


def text_of(run_dir: Path, record: PassRecord, side: str, *, errors: str = "strict") -> str | None:
    """Return one side ('before'/'after') of a record's text, or None when no copy is readable.

    The per-pass file (inside the run dir) first, then the stored object by hash.
    """
    run_dir = Path(run_dir)
    rel = record.before_file if side == "before" else record.after_file
    digest = record.before_hash if side == "before" else record.after_hash
    for p in (record_path(run_dir, rel), object_path(run_dir.parent.parent, digest)):
        if p is None:
            continue
        try:
            return p.read_text(encoding="utf-8", errors=errors)
        except (OSError, UnicodeDecodeError):
            continue
    return None


def read_text(run: Run, record: PassRecord, side: str) -> str:
    """Return one side ('before' or 'after') of a record's text; RecordsError when no copy is left.

    The per-pass file is a hard link into `.objects`; when the file was deleted
    the stored object (by hash) still serves.
    """
    rel = record.before_file if side == "before" else record.after_file
    digest = record.before_hash if side == "before" else record.after_hash
    if rel is None and digest is None:
        raise RecordsError(f"{record.name} (#{record.index}) has no {side} text (the pass failed)")
    text = text_of(run.path, record, side)
    if text is not None:
        return text
    if rel is not None and record_path(run.path, rel) is None:
        raise RecordsError(
            f"{record.name} (#{record.index}) names {side} file {rel!r} outside its run directory "
            f"{run.path} (records tampered with); not read"
        )
    where = run.path / rel if rel else run.script_dir / RUN_RECORDS / OBJECTS / str(digest)
    raise RecordsError(f"{where} is missing (run records damaged); rerun the script to record it again")


def missing_files(run: Run) -> int:
    """Return how many per-pass files a run's manifest names that are not (safely) on disk."""
    n = 0
    for rec in run.require().records:
        for rel in (rec.before_file, rec.after_file):
            if rel:
                p = record_path(run.path, rel)
                if p is None or not p.exists():
                    n += 1
    return n


def find_record(manifest: RunManifest, spec: str) -> PassRecord:
    """Return the record a --pass NAME|INDEX names: an index, 'phase/name', 'name', or 'name#k' (k-th)."""
    spec = spec.strip()
    if re.fullmatch(r"\d+", spec):
        idx = int(spec)
        for r in manifest.records:
            if r.index == idx:
                return r
        raise UsageError(
            f"no pass with index {idx} in run {manifest.run_id} (0..{len(manifest.records) - 1})"
        )
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
            raise UsageError(
                f"pass {spec!r} matches several passes ({', '.join(names[:5])}); give the full name "
                "or an index"
            )
    if not hits:
        raise UsageError(f"no pass {spec!r} in run {manifest.run_id}; 'tltrace show' lists its passes")
    if occ > len(hits) or occ < 1:
        raise UsageError(f"pass {name!r} ran {len(hits)} time(s); '#{occ}' does not exist")
    return hits[occ - 1]
