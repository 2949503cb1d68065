"""`tltrace bundle` and `tltrace replay`: whole compiles in one file, rerun anywhere.

A bundle is a zip file:

    README.md                  what it is and how to replay it
    bundle.json                schema, versions, the script and command, one entry per compile
    compiles/<NN>_<kernel>/    manifest.json (as recorded), frontend.json, context.json,
                               inputs/<index>.json (failed passes' inputs)
    texts/<hash>               every recorded text (IR before/after each pass, generated
                               source; where the user's edit was compiled, the edit and the
                               source TileLang generated) once, named by its hash as the
                               manifests name it (an edit's: the manifest's build.edits)

write_bundle() returns what it wrote; read_bundle() checks a bundle and returns its
compiles (member names are never used as paths); replay() recompiles each one in a
child process traced by tltrace and compares it with the recording (history/compare).
Nothing here prints.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import RecordsError, UsageError
from ..format import build as fb
from ..format.ids import is_run_name
from ..format.layout import RUN_RECORDS
from ..format.names import safe_component
from ..format.records import CUT_SHORT, PassRecord, RunManifest
from . import archive, trust
from .make import ended_how, flags_of, repro_files, run_child

BUNDLE_SCHEMA = 1
REPLAY_TIMEOUT_S = 3600

README = """\
# tltrace bundle: {script}

Recorded {when} by tltrace {tltrace} with TileLang {tilelang}:
{compiles} compile(s) of `{command}`.

It holds, for each compile, the IR TileLang's lowering started from (TVM JSON), the
target and PassContext config, the versions, the manifest of every pass and every
recorded text (the IR before and after each pass, the generated source). The user's
script and its packages are not needed to replay it.

## Replay

    pip install tltrace tilelang=={tilelang}
    tltrace replay {name}

recompiles each compile from its saved IR and checks that every pass and the
generated source match the recording. It runs no compiler and loads no library
(source-only codegen), and applies only the pass configs known to be data (it names
the others); `tltrace replay --build {name}` applies the recorded config and runs the
device compile. Exit status 0: all the same; 1: the first divergent pass is named;
2: bad usage; 3: a damaged or refused bundle; 5: the IR does not load on this
TileLang (it uses an operator this release lacks; one line names it). On
another TileLang release it says so in one line and goes on: the replay is then a
comparison.

## By hand

`compiles/<NN>_<kernel>/frontend.json` loads with `tvm.ir.load_json`; its
`context.json` gives the target (`tvm.target.Target(context["target"])`) and the
PassContext (`opt_level`, `config`). The texts are under `texts/`, named by the
`before_hash` / `after_hash` of each record in the compile's `manifest.json`.
"""


@dataclass(frozen=True)
class BundleCompile:
    """One compile in a bundle (its frontend IR stays in the zip until a replay streams it out)."""

    dir: str
    manifest: RunManifest
    context: dict[str, Any]
    flags: dict[str, Any]

    @property
    def label(self) -> str:
        """The compile's name in messages: the stream's label (`add 1024`), else its directory in the bundle."""
        from ..session.signature import short_label

        return (
            short_label(self.manifest.kernel, self.manifest.signature) if self.manifest.kernel else self.dir
        )


@dataclass(frozen=True)
class Bundle:
    """A bundle as read back."""

    path: Path
    info: dict[str, Any]
    compiles: tuple[BundleCompile, ...]
    zf: Any = field(repr=False, default=None)

    def text(self, digest: str | None) -> str | None:
        """Return the recorded text with hash `digest`, or None."""
        if not digest or not _is_hash(digest):
            return None
        try:
            return archive.read_member(self.zf, f"texts/{digest}", self.path).decode("utf-8", "surrogatepass")
        except (KeyError, UnicodeDecodeError):
            return None

    def extract_frontend(self, c: BundleCompile, dest: Path) -> None:
        """Write compile `c`'s frontend IR to the file `dest`, streamed; RecordsError when it is not there."""
        name = f"compiles/{c.dir}/frontend.json"
        try:
            archive.copy_member(self.zf, name, dest, self.path)
        except KeyError:
            raise RecordsError(
                f"{self.path}: compile {c.dir} has no frontend.json; a damaged bundle"
            ) from None

    def close(self) -> None:
        if self.zf is not None:
            self.zf.close()


def write_bundle(
    runs: list[Any], out: Path | str, *, force: bool = False, best: dict[str, Any] | None = None
) -> tuple[str, int, int]:
    """Write the compiles `runs` (history Run objects) as a zip to `out`; return (where, compiles, bytes).

    `out` follows the output-path rule (output_path): `-` is stdout, a pipe or character
    device is written through, an existing file only when it is a bundle (its zip comment
    says so) unless `force`. `best` (the autotuner's report, see autotune.py) goes into
    bundle.json.
    """
    from ..fs import output_path
    from ..history.runs import generated_text, text_of

    output_path.check(out, output_path.BUNDLE, force=force)  # before the work, and again at the write
    entries = []
    members: dict[str, bytes] = {}
    texts: dict[str, bytes] = {}
    first: RunManifest | None = None
    for n, run in enumerate(runs):
        m = run.require()
        first = first or m
        files = repro_files(run.path, m)
        d = f"{n:02d}_{safe_component(m.kernel or 'kernel')}"
        members[f"compiles/{d}/manifest.json"] = m.dumps().encode("utf-8")
        members[f"compiles/{d}/frontend.json"] = files["frontend"].read_bytes()
        members[f"compiles/{d}/context.json"] = files["context"].read_bytes()
        for rec in m.records:
            for side, digest in (("before", rec.before_hash), ("after", rec.after_hash)):
                if digest and digest not in texts and _is_hash(digest):
                    text = text_of(run.path, rec, side)
                    if text is None:
                        raise RecordsError(
                            f"{rec.name} (#{rec.index}) of run {m.run_id} has lost its {side} text; "
                            "rerun the script to record it again"
                        )
                    texts[digest] = text.encode("utf-8", "surrogatepass")
        for e in fb.edits(fb.of(m)):  # an edit compiled in place of the generated source: carry both
            digest = e.get("generated_hash")
            if isinstance(digest, str) and digest not in texts and _is_hash(digest):
                text = generated_text(run.path, e)
                if text is not None:
                    texts[digest] = text.encode("utf-8", "surrogatepass")
        entries.append(
            {"dir": d, "run_id": m.run_id, "kernel": m.kernel, "signature": m.signature, "flags": flags_of(m)}
        )
    if first is None:
        raise RecordsError("nothing to bundle: the selection holds no readable compile")
    info = {
        "schema": BUNDLE_SCHEMA,
        "tltrace": __version__,
        "tilelang": first.tilelang_version,
        "created": time.time(),
        "script": first.script,
        "command": list(first.command),
        "invocation": first.invocation,
        "compiles": entries,
    }
    if best is not None:
        info["best"] = best
    readme = README.format(
        script=first.script,
        when=time.strftime("%Y-%m-%d %H:%M", time.localtime(first.started or time.time())),
        tltrace=__version__,
        tilelang=first.tilelang_version or "?",
        compiles=len(entries),
        command=" ".join(first.command) or first.script,
        name="BUNDLE.zip" if str(out) == output_path.STDOUT else Path(out).name,
    )
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.comment = output_path.BUNDLE_COMMENT  # the file's last bytes: a bundle tltrace wrote
        zf.writestr("README.md", readme)
        zf.writestr("bundle.json", json.dumps(info, indent=1) + "\n")
        for name, data in members.items():
            zf.writestr(name, data)
        for digest, data in sorted(texts.items()):
            zf.writestr(f"texts/{digest}", data)
    data = buf.getvalue()
    target = output_path.write(out, output_path.BUNDLE, data, force=force)
    return target.shown, len(entries), len(data)


def read_bundle(path: Path) -> Bundle:
    """Open and check a bundle: sizes, integrity, then the types of every JSON member (rerun/archive.py);
    RecordsError (exit 3) when it is not one or is damaged, UsageError (exit 2) when there is no such file."""
    path = Path(path)
    zf = archive.open_bundle(path)
    try:
        info = archive.json_member(zf, "bundle.json", path, dict)
        names = set(zf.namelist())
        compiles = []
        for entry in archive.bundle_info(info, path, BUNDLE_SCHEMA):
            d = entry["dir"]
            data = archive.json_member(zf, f"compiles/{d}/manifest.json", path, dict)
            try:
                manifest = RunManifest.from_json(data)
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                raise RecordsError(f"{path}: compile {d}'s manifest.json is damaged ({exc})") from None
            context = archive.json_member(zf, f"compiles/{d}/context.json", path, dict)
            if f"compiles/{d}/frontend.json" not in names:
                raise RecordsError(f"{path}: compile {d} has no frontend.json; a damaged bundle")
            recorded = entry.get("flags")
            flags = recorded if isinstance(recorded, dict) else flags_of(manifest)
            compiles.append(BundleCompile(d, manifest, context, flags))
    except BaseException:
        zf.close()
        raise
    return Bundle(path, info, tuple(compiles), zf)


def _is_hash(digest: str) -> bool:
    return 8 <= len(digest) <= 128 and all(c in "0123456789abcdef" for c in digest)


def installed_tilelang() -> str | None:
    """Return the installed TileLang's version without importing it, or None."""
    from importlib import metadata

    try:
        return metadata.version("tilelang")
    except metadata.PackageNotFoundError:
        return None


@dataclass(frozen=True)
class CompileReplay:
    """One compile replayed: the comparison with the recording, or why there is none."""

    compile: BundleCompile
    diff: Any = None  # history.compare.RunDiff (recorded A, replayed B)
    replayed: RunManifest | None = None
    problem: str | None = None
    detail: tuple[str, ...] = ()  # how the first divergent pass differs (errors, a short diff)
    unloadable: dict[str, Any] | None = None  # the IR does not load on this TileLang: what it lacks

    @property
    def same(self) -> bool:
        return self.problem is None and self.diff is not None and (self.diff.same or self.same_as_recorded)

    @property
    def cut(self) -> str | None:
        """How the recording ended when a dead process cut it short (a kill -9: interrupted, exited), else None."""
        status = self.compile.manifest.status
        return status if status in CUT_SHORT else None

    @property
    def same_as_recorded(self) -> bool:
        """A recording a kill cut short whose every pass the replay matched: the passes past the cut ran
        only in the replay (and the codegen, never reached), nothing differs."""
        from ..history.compare import ONLY_B, SAME

        d = self.diff
        if self.problem is not None or d is None or self.cut is None or d.same:
            return False
        statuses = [p.status for p in d.pairs]
        past = statuses.index(ONLY_B) if ONLY_B in statuses else len(statuses)
        return (
            all(st == SAME for st in statuses[:past])
            and all(st == ONLY_B for st in statuses[past:])
            and all(v in (SAME, ONLY_B) for v in d.codegen.values())
        )

    @property
    def patched(self) -> tuple[PassRecord, ...]:
        """The recording's codegen records that compiled the user's edit (PATCHED), not the generated source."""
        return tuple(r for r in self.compile.manifest.records if r.reconcile == "PATCHED")

    def edit_lines(self) -> tuple[str, ...]:
        """What replay says of a PATCHED recording: whose edit was compiled, and what the comparison used."""
        edits = {e["record"]: e for e in fb.edits(fb.of(self.compile.manifest))}
        out = []
        for r in self.patched:
            e = edits.get(r.index)
            where = os.path.basename(r.working_file or "") or "its working file"
            if e is not None:
                out.append(
                    f"recorded PATCHED: {r.name} compiled the user's edit of {where} "
                    f"(+{e.get('added', 0)} -{e.get('removed', 0)} lines against the source TileLang "
                    "generated); the replay is compared with the generated source the bundle carries"
                )
            else:
                out.append(
                    f"recorded PATCHED: {r.name} compiled the user's edit of {where}, not the generated "
                    "source (this bundle does not carry it): a difference at codegen is that edit"
                )
        return tuple(out)


def as_generated(m: RunManifest, has_text: Any) -> RunManifest:
    """Return the manifest with each edited codegen record's output the source TileLang generated
    (the manifest's build.edits), where `has_text(hash)` says that text is at hand: what a replay compares."""
    edits = {e["record"]: e for e in fb.edits(fb.of(m))}
    records = []
    for r in m.records:
        e = edits.get(r.index)
        h = e.get("generated_hash") if e is not None else None
        records.append(replace(r, after_hash=h) if isinstance(h, str) and has_text(h) else r)
    return m.with_records(records)


@dataclass(frozen=True)
class ReplayResult:
    bundle: Bundle
    compiles: tuple[CompileReplay, ...]
    recorded_version: str | None
    installed_version: str | None
    trace_dir: Path | None  # where the replay's own records are (None: removed)

    @property
    def same(self) -> bool:
        return all(c.same for c in self.compiles)

    @property
    def unloadable(self) -> bool:
        """True when some compile's IR does not load on this TileLang (exit 5)."""
        return any(c.unloadable is not None for c in self.compiles)

    @property
    def version_differs(self) -> bool:
        return self.recorded_version != self.installed_version


def plan_replay(bundle: Bundle, *, build: bool = False) -> tuple[trust.Plan, ...]:
    """Return what the replay of each compile applies (rerun/trust.py), in the bundle's order.

    RecordsError (exit 3) when a compile's context, target or backend is refused. Without
    `build`, only the pass configs known to be data and source-only codegen.
    """
    plans = []
    for c in bundle.compiles:
        where = f"{bundle.path}: compile {c.dir}'s context.json"
        trust.check_backend(c.manifest.backend, f"{bundle.path}: compile {c.dir}")
        plans.append(trust.plan(c.context, c.flags, build=build, where=where))
    return tuple(plans)


def check_trace_dir(trace_dir: Path | str) -> Path:
    """Return `trace_dir` when the replay can keep its records there; UsageError (exit 2) naming why not.

    An existing directory, or a new one whose nearest existing parent is a writable directory.
    Nothing is made here.
    """
    text = str(trace_dir)
    if not text.strip():
        raise UsageError("--trace-dir is empty; give a directory")
    p = Path(text)
    for q in (p, *p.parents):
        try:
            st = q.stat()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UsageError(f"--trace-dir {p}: cannot read {q} ({exc.strerror or exc})") from None
        if not stat.S_ISDIR(st.st_mode):
            where = "" if q == p else f" ({q} is not a directory)"
            raise UsageError(
                f"--trace-dir {p} is not a directory{where}; give a directory for the replay's records"
            )
        if not os.access(q, os.W_OK | os.X_OK):
            raise UsageError(f"--trace-dir {p}: {q} is not writable")
        return p
    raise UsageError(f"--trace-dir {p}: no existing parent directory")


def replay(
    bundle: Bundle, trace_dir: Path | None = None, plans: tuple[trust.Plan, ...] | None = None
) -> ReplayResult:
    """Recompile every compile of `bundle` in a child process traced by tltrace; compare with the recording.

    `plans` (plan_replay's) say what each compile gets; by default the safe one (no --build).
    The work directory (the frontend IR, context and job of the compile being replayed) is
    removed when the replay ends, however it ends; only `trace_dir` keeps the replay's records.
    RecordsError (exit 3) when a compile's frontend IR does not load and names nothing this
    TileLang lacks (a damaged bundle).
    """
    from ..history import runs
    from ..history.compare import diff_runs

    if plans is None:
        plans = plan_replay(bundle)
    if trace_dir is not None:
        trace_dir = check_trace_dir(trace_dir)
    work = Path(tempfile.mkdtemp(prefix="tltrace-replay-"))
    try:
        tdir = Path(trace_dir) if trace_dir is not None else work / "trace"
        results = []
        for c, plan in zip(bundle.compiles, plans):
            cdir = work / c.dir
            cdir.mkdir()
            bundle.extract_frontend(c, cdir / "frontend.json")
            (cdir / "context.json").write_text(json.dumps(plan.context), encoding="utf-8")
            script = f"replay_{safe_component(bundle.info.get('script') or 'bundle')}"
            job: dict[str, Any] = {
                "kernel": c.manifest.kernel,
                "backend": c.manifest.backend,
                "flags": plan.flags,
                "build": plan.build,
                "script": script,
            }
            (cdir / "job.json").write_text(json.dumps(job), encoding="utf-8")
            before = {p.name for p in _run_dirs(tdir, script)}
            problem = _run_child(cdir, tdir)
            new = [p for p in _run_dirs(tdir, script) if p.name not in before]
            unloadable = _unloadable(cdir)
            shutil.rmtree(cdir, ignore_errors=True)  # one compile's copy at a time
            if unloadable is not None and not unloadable.get("what"):
                raise RecordsError(
                    f"{bundle.path}: compile {c.dir}'s frontend.json does not load (a damaged bundle): "
                    f"{unloadable.get('error') or unloadable['line']}"
                )
            if unloadable is not None:
                results.append(CompileReplay(c, problem=unloadable["line"], unloadable=unloadable))
                continue
            replayed = None
            if new:
                run = runs.load_run(sorted(new)[-1])
                replayed = run.manifest
            if replayed is None:
                results.append(CompileReplay(c, problem=problem or "the replay recorded no compile"))
                continue
            # A PATCHED recording compiled the user's edit: the replay generates; compare like with like.
            d = diff_runs(as_generated(c.manifest, lambda h: bundle.text(h) is not None), replayed)
            detail = divergence(bundle, d.first_difference, run.path) if not d.same else ()
            results.append(CompileReplay(c, d, replayed, None, detail))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ReplayResult(
        bundle,
        tuple(results),
        bundle.info.get("tilelang"),
        installed_tilelang(),
        Path(trace_dir) if trace_dir is not None else None,
    )


def divergence(bundle: Bundle, pair: Any, replay_dir: Path, limit: int = 40) -> tuple[str, ...]:
    """Return lines saying how a divergent pass differs: statuses, errors, a diff of its text."""
    import difflib

    from ..history.runs import text_of

    if pair is None or pair.a is None or pair.b is None:
        return ()
    out = []
    if pair.a.status != pair.b.status:
        out.append(f"recorded {pair.a.status}, replayed {pair.b.status}")
    if pair.a.error or pair.b.error:
        out += [f"recorded error: {pair.a.error or '-'}", f"replayed error: {pair.b.error or '-'}"]
    side = "before" if pair.status == "input differs" else "after"
    a = bundle.text(pair.a.before_hash if side == "before" else pair.a.after_hash)
    b = text_of(replay_dir, pair.b, side, errors="replace")
    if a is not None and b is not None and a != b:
        diff = list(
            difflib.unified_diff(a.splitlines(), b.splitlines(), "recorded", "replayed", lineterm="", n=2)
        )
        out += diff[:limit] + ([f"... {len(diff) - limit} more diff lines"] if len(diff) > limit else [])
    return tuple(out)


def _unloadable(cdir: Path) -> dict[str, Any] | None:
    """Return what the replay child said the recorded IR lacks on this TileLang, or None."""
    try:
        data = json.loads((cdir / "unloadable.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("line"), str) else None


def _run_dirs(trace_dir: Path, script: str) -> list[Path]:
    root = Path(trace_dir) / script / RUN_RECORDS
    try:
        return [p for p in root.iterdir() if is_run_name(p.name) and p.is_dir()]
    except OSError:
        return []


def _run_child(cdir: Path, trace_dir: Path) -> str | None:
    """Run the replay of one compile in a child process; return None, or one line on why it failed.

    The child starts in `cdir` with no current directory on its sys.path (proc/pychild.py), so a
    `tilelang.py` beside the bundle or in the cwd is never imported; PYTHONPATH is kept.
    """
    from ..proc.pychild import traced_tltrace_code

    cmd = traced_tltrace_code("tltrace.rerun.replay_child", str(cdir), str(Path(trace_dir).absolute()))
    try:
        proc = run_child(cmd, cdir, REPLAY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"the replay took longer than {REPLAY_TIMEOUT_S} s"
    if proc.returncode == 0:
        return None
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    return f"the replay ended with {ended_how(proc)}: {lines[-1] if lines else ''}"
