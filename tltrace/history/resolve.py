"""The one resolver: which scripts, invocation or compiles an argument names.

Every command that takes a script or a run (`show`, `export`, `show --profile`,
`diff-runs`, `clean`, `resolve-conflict`, `watch`) resolves it here, with one grammar
(docs/runs.md, "Naming scripts, runs and compiles"):

    [SCRIPT_OR_DIR] [RUN [COMPILE]]      or SCRIPT:RUN in one word, or a bare RUN

SCRIPT_OR_DIR: a run directory (that one compile), a `.run_records` directory, a script
directory, a trace directory (its scripts), a script path (its own directory, through
the script registry: `x/kernel.py` and `y/kernel.py` have their own), or a script name;
none: the trace directory.
RUN: `latest` or `-1` (the newest invocation), `-N` (the N-th newest); a run id or a
unique prefix of one: that one compile; an invocation id or a unique prefix: the whole
invocation; else a signature prefix or kernel name: its compile in the newest invocation
that has one. COMPILE (and `--kernel NAME`) narrow the invocation to some compiles.

A run id means that one compile everywhere; to name its whole invocation, use `-N` or
the invocation id. Everything here reads; nothing writes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..errors import NothingSelected, RecordsError, UsageError
from ..format.ids import RUN_PREFIX, is_run_name
from ..format.layout import DEFAULT_STEM, EXT, KERNEL_REGISTRY, RUN_RECORDS
from ..format.names import safe_component
from ..format.scripts import script_dir_for
from ..proc.shell import command
from .invocations import RecordedInvocation, invocation_key, invocations, label
from .loading import Run, is_run_dir, is_script_dir, load_run, real_dir, run_dirs, start_of

_RELATIVE = re.compile(r"^(?:latest|-\d+)$")


def looks_like_run_spec(text: str) -> bool:
    """Return True for 'latest', '-N', or something shaped like a run id (prefix)."""
    return bool(_RELATIVE.match(text)) or is_run_name(text)


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
    if (
        path.is_symlink()
        and path.is_dir()
        and (path.parent.name == RUN_RECORDS or (path / RUN_RECORDS).exists())
    ):
        raise RecordsError(
            f"{path} is a symbolic link; tltrace does not follow links (name the directory itself)"
        )
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
        raise RecordsError(
            f"no run records under {path}; run {command('tltrace', 'run', 'SCRIPT', '--trace-dir', path)} first"
        )
    name = path.stem if path.suffix == ".py" else path.name
    if path.name == "__main__.py":
        name = path.resolve().parent.name
    candidate = script_dir_for(trace_dir, text)  # x/kernel.py and y/kernel.py have their own dirs
    if name and is_script_dir(candidate):
        return Location((candidate,))
    by_name = trace_dir / safe_component(name)
    if name and not path.exists() and is_script_dir(by_name):
        return Location((by_name,))  # a script no longer (or not here) on disk: its name's directory
    for d in (candidate, trace_dir / safe_component(name)):
        if name and d.is_symlink():
            raise RecordsError(
                f"{d} is a symbolic link; tltrace does not follow links (name the directory itself)"
            )
    if name and (candidate / RUN_RECORDS).exists():
        raise RecordsError(_not_a_dir(candidate / RUN_RECORDS))
    if path.exists():
        raise RecordsError(
            f"no run records for {text} under {candidate}; run {command('tltrace', 'run', text)} first "
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
        f"{records} is not a directory, so it holds no runs; remove it ({command('rm', records)}) "
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
        if rr.exists() and not rr.is_dir() and not p.is_symlink():
            raise RecordsError(_not_a_dir(rr))


def skipped_links(location: Location) -> list[Path]:
    """Return the links named like script or run directories that listing left out (to tell the user)."""
    found: list[Path] = []
    if location.root is not None:
        try:
            found += sorted(
                p
                for p in Path(location.root).iterdir()
                if p.is_symlink() and not p.name.startswith(".") and (p / RUN_RECORDS).is_dir()
            )
        except OSError:
            pass
    for sd in location.script_dirs:
        try:
            found += sorted(
                p for p in (Path(sd) / RUN_RECORDS).iterdir() if is_run_name(p.name) and p.is_symlink()
            )
        except OSError:
            pass
    return found


def _script_dirs_under(path: Path) -> list[Path]:
    try:
        children = sorted(p for p in path.iterdir() if real_dir(p) and not p.name.startswith("."))
    except OSError:
        return []
    return [p for p in children if is_script_dir(p)]


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
        out = [r for r in out if r.manifest is not None and r.manifest.kernel_name == kernel]
    return out


@dataclass(frozen=True)
class Selection:
    """What a SCRIPT_OR_DIR [RUN] [COMPILE] (with --kernel) names: compiles of one invocation."""

    invocation: RecordedInvocation
    runs: tuple[Run, ...]  # the selected compiles (all of the invocation unless narrowed)
    spec: str = "latest"  # how the invocation was named, for messages

    @property
    def single(self) -> Run | None:
        return self.runs[0] if len(self.runs) == 1 else None

    def one(self, what: str = "this") -> Run:
        """Return the one selected compile; UsageError naming the candidates when there are several."""
        if len(self.runs) == 1:
            return self.runs[0]
        if not self.runs:
            raise UsageError(no_compile_line(self.invocation, self.spec))
        names = ", ".join(label(r.manifest, r.run_id) for r in self.runs[:4])
        more = ", ..." if len(self.runs) > 4 else ""
        # --kernel NAME picks one compile only where they are of several kernels (#54: two sizes
        # of one kernel were offered a --kernel that selects both).
        kernels = {r.manifest.kernel_name for r in self.runs if r.manifest is not None}
        how = (
            "--kernel NAME, a signature prefix or a run id"
            if len(kernels) > 1
            else "a signature prefix or a run id"
        )
        raise UsageError(
            f"invocation {self.spec} has {len(self.runs)} compiles ({names}{more}); {what} needs one: name it with {how}"
        )


def script_words(script_dir: Path) -> list[str]:
    """Return the words that name a script in a printed command: `--trace-dir DIR` when DIR is not
    the default (config.trace_dir_args), then the script directory's name."""
    from ..config import trace_dir_args

    return [*trace_dir_args(Path(script_dir).parent), Path(script_dir).name]


def no_compile_line(inv: RecordedInvocation, spec: str) -> str:
    """Return the one line for an invocation that traced no compile (there is nothing to open in it)."""
    why = inv.empty.reason if inv.empty is not None else "no compile was recorded"
    return (
        f"invocation {spec} of {inv.script_dir.name} traced no TileLang compile ({why}); "
        f"{command('tltrace', 'show', *script_words(inv.script_dir))} lists the invocations"
    )


_T = TypeVar("_T")


def _prefix_hits(items: list[tuple[str, _T]], spec: str) -> list[_T]:
    exact = [o for k, o in items if k == spec]
    return exact or [o for k, o in items if k.startswith(spec)]


def _narrow(
    inv: RecordedInvocation, runs: tuple[Run, ...], kernel: str | None, signature: str | None, spec: str
) -> tuple[Run, ...]:
    if kernel is not None:
        runs = tuple(r for r in runs if r.manifest is not None and r.manifest.kernel_name == kernel)
        if not runs:
            raise NothingSelected(
                f"no compile of kernel {kernel!r} in invocation {spec} of {inv.script_dir.name}; "
                f"{command('tltrace', 'show', *script_words(inv.script_dir), spec)} lists its compiles"
            )
    if signature is not None:
        hits = [r for r in runs if label(r.manifest, r.run_id).startswith(signature)]
        exact = [r for r in hits if label(r.manifest, r.run_id) == signature]
        hits = exact if len(exact) == 1 else hits
        if not hits:
            raise NothingSelected(
                f"no compile with signature {signature!r} in invocation {spec} of "
                f"{inv.script_dir.name}; {command('tltrace', 'show', *script_words(inv.script_dir), spec)} lists them"
            )
        if len(hits) > 1:
            names = ", ".join(label(r.manifest, r.run_id) for r in hits[:3]) + (
                ", ..." if len(hits) > 3 else ""
            )
            raise UsageError(
                f"signature prefix {signature!r} matches {len(hits)} compiles ({names}); "
                "give more of it, or a run id"
            )
        runs = tuple(hits)
    return tuple(r.derived() for r in runs)  # the views show counts and facts: derived when first read


def select(
    script_dir: Path, spec: str | None = None, kernel: str | None = None, signature: str | None = None
) -> Selection:
    """Resolve RUN (and COMPILE, --kernel) among one script's runs.

    spec: None/'latest'/'-1' (the newest invocation), '-2' (the one before), ...;
    a run id or a unique prefix of one (that compile alone); an invocation id or a
    unique prefix; else a signature prefix within the newest invocation. With
    `kernel`, -N counts only invocations that compiled `kernel`, and the compiles
    are narrowed to it; `signature` is a signature prefix (or kernel name) to narrow to.
    """
    script_dir = Path(script_dir)
    invs = invocations(script_dir)
    if not invs:
        raise RecordsError(f"no run records under {script_dir}; run 'tltrace run SCRIPT' first")
    if kernel is not None:
        invs = [
            i
            for i in invs
            if any(r.manifest is not None and r.manifest.kernel_name == kernel for r in i.runs)
        ]
        if not invs:
            raise NothingSelected(
                f"no run of kernel {kernel!r} under {script_dir}; {command('tltrace', 'show', script_dir)} "
                "lists the kernels"
            )
    spec = (spec or "latest").strip()
    if spec in ("latest", "-1"):
        return Selection(invs[-1], _narrow(invs[-1], invs[-1].runs, kernel, signature, "-1"), "-1")
    if re.fullmatch(r"-\d+", spec):
        n = int(spec[1:])
        if n == 0:
            raise UsageError("invocation '-0' does not exist; '-1' is the newest, '-2' the one before")
        if n > len(invs):
            what = f"invocation(s) that compiled {kernel!r}" if kernel else "invocation(s)"
            raise UsageError(f"invocation {spec} does not exist: {script_dir.name} has {len(invs)} {what}")
        inv = invs[-n]
        return Selection(inv, _narrow(inv, inv.runs, kernel, signature, spec), spec)
    all_runs = [(r.run_id, (i, r)) for i in invs for r in i.runs]
    hits = _prefix_hits(all_runs, spec) or _prefix_hits(all_runs, f"{RUN_PREFIX}{spec}")
    if len(hits) == 1:
        inv, one = hits[0]
        return Selection(inv, _narrow(inv, (one,), kernel, signature, spec), spec)
    if len(hits) > 1:
        first, second = hits[0][1].run_id, hits[1][1].run_id
        raise UsageError(
            f"run {spec!r} is ambiguous ({len(hits)} runs match: {first}, {second}, ...); give more of the id"
        )
    inv_hits = _prefix_hits([(i.id, i) for i in invs if not i.legacy], spec)
    if len(inv_hits) == 1:
        inv = inv_hits[0]
        return Selection(inv, _narrow(inv, inv.runs, kernel, signature, spec), spec)
    if len(inv_hits) > 1:
        raise UsageError(f"invocation {spec!r} is ambiguous ({len(inv_hits)} match); give more of the id")
    if signature is None and not is_run_name(spec):
        # A signature prefix (or kernel name) in the newest invocation that has one.
        for inv in reversed(invs):
            if any(label(r.manifest, r.run_id).startswith(spec) for r in inv.runs):
                pos = f"-{len(invs) - invs.index(inv)}"
                return Selection(inv, _narrow(inv, inv.runs, kernel, spec, pos), pos)
    raise UsageError(
        f"no run, invocation or signature {spec!r} under {script_dir}; "
        f"{command('tltrace', 'show', script_dir)} lists them"
    )


def resolve_run(script_dir: Path, spec: str | None, kernel: str | None = None) -> Path:
    """Return the run directory of the one compile `spec` names (UsageError when it names several)."""
    return select(script_dir, spec, kernel).one().path


def open_selection(
    arg: str | None,
    run: str | None,
    trace_dir: str | os.PathLike,
    kernel: str | None = None,
    signature: str | None = None,
) -> Selection:
    """Resolve SCRIPT_OR_DIR + RUN (+ COMPILE, --kernel) to a Selection of loaded compiles."""
    loc = locate(arg, trace_dir)
    if loc.run_dir is not None:
        if run is not None:
            raise UsageError(f"{arg} is already a run directory; drop the RUN argument {run!r}")
        r = load_run(loc.run_dir)
        r.require()
        siblings = [x for x in invocations(loc.script_dirs[0]) if any(y.path == r.path for y in x.runs)]
        inv = siblings[0] if siblings else RecordedInvocation(invocation_key(r), (r,), -1)
        sel = Selection(inv, _narrow(inv, (r,), kernel, signature, r.run_id), r.run_id)
    else:
        if len(loc.script_dirs) > 1:
            names = ", ".join(p.name for p in loc.script_dirs[:5])
            raise UsageError(
                f"{loc.root} holds runs of several scripts ({names}); name one, "
                f"e.g. {command('tltrace', 'show', *script_words(loc.script_dirs[0]), run or 'latest')}"
            )
        sel = select(loc.script_dirs[0], run, kernel, signature)
    for r in sel.runs:
        if len(sel.runs) == 1:
            r.require()
    return sel


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


# -- one script directory (resolve-conflict, watch) ------------------------------------------------------
def script_dir(arg: str | None, trace_dir: str | os.PathLike) -> Path:
    """Return the one script directory SCRIPT_OR_DIR names, in the grammar above.

    For commands that work on a script's working files (`resolve-conflict`): a script
    directory may hold working files and no runs yet. A run directory names its script.
    """
    try:
        loc = locate(arg, trace_dir)
    except RecordsError:
        return _work_dir(arg, Path(trace_dir))
    if len(loc.script_dirs) > 1:
        names = ", ".join(d.name for d in loc.script_dirs)
        raise UsageError(f"several traced scripts under {loc.root}: {names}; name one")
    return loc.script_dirs[0].absolute()


# -- what a REF names, as compiles (export, show --profile, show --format markdown) ---------------------
def selected_runs(
    target: str | None,
    run: str | None,
    trace_dir: str | os.PathLike,
    *,
    kernel: str | None = None,
    signature: str | None = None,
) -> list[Run]:
    """Return the readable compiles a REF names: with RUN, COMPILE or a run directory, the selection's
    compiles (a run id: that compile; an invocation: all of it); else each script's newest invocation."""
    target, run = split_target(target, run)
    loc = locate(target, trace_dir)
    if run is not None or loc.run_dir is not None or signature is not None:
        if run is None and loc.run_dir is None:
            run = "latest"
        sel = open_selection(target, run, trace_dir, kernel, signature)
        return [r for r in sel.runs if r.require() is not None]
    out: list[Run] = []
    for sd in loc.script_dirs:
        invs = invocations(sd)
        if invs:
            out.extend(
                r.derived()
                for r in invs[-1].runs
                if r.manifest is not None and (kernel is None or r.manifest.kernel_name == kernel)
            )
    if not out:
        where = loc.root or loc.script_dirs[0]
        what = f" of kernel {kernel!r}" if kernel else ""
        raise RecordsError(
            f"no readable runs{what} in the newest invocation under {where}; run 'tltrace run SCRIPT' first"
        )
    return out


# -- script directories with working files and no runs ----------------------------------------------------
def _holds_work(d: Path) -> bool:
    try:
        return d.is_dir() and (
            (d / RUN_RECORDS).is_dir()
            or (d / KERNEL_REGISTRY).is_file()
            or any(d.glob(f"{DEFAULT_STEM}*{EXT}*"))
        )
    except OSError:
        return False


def _work_dirs(root: Path) -> list[Path]:
    try:
        children = sorted(root.iterdir()) if root.is_dir() else []
    except OSError:
        return []
    return [d for d in children if not d.name.startswith(".") and not d.is_symlink() and _holds_work(d)]


def _work_dir(arg: str | None, trace_dir: Path) -> Path:
    """`script_dir` for script directories that hold working files but no runs (yet)."""
    td = Path(trace_dir)
    if arg is None:
        dirs = _work_dirs(td)
        if not dirs:
            raise UsageError(f"no traced scripts under {td}; run 'tltrace run --mode both SCRIPT' first")
        if len(dirs) > 1:
            raise UsageError(
                f"several traced scripts under {td}: {', '.join(d.name for d in dirs)}; name one"
            )
        return dirs[0]
    p = Path(arg)
    if p.is_dir() and not (p / "__main__.py").exists():
        if is_run_name(p.name) and p.parent.name == RUN_RECORDS:
            return p.parent.parent.absolute()
        if p.name == RUN_RECORDS:
            return p.parent.absolute()
        if _holds_work(p):
            return p.absolute()
        dirs = _work_dirs(p)
        if len(dirs) == 1:
            return dirs[0].absolute()
        if dirs:
            raise UsageError(f"several traced scripts under {p}: {', '.join(d.name for d in dirs)}; name one")
    candidate = script_dir_for(td, arg)
    if _holds_work(candidate) or p.suffix == ".py" or p.exists():
        return candidate
    raise UsageError(
        f"no such script or trace dir: {arg} (looked in {td}); 'tltrace show' lists what is there"
    )
