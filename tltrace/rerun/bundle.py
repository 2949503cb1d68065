"""`tltrace bundle` and `tltrace replay`: whole compiles in one file, rerun anywhere.

A bundle is a zip file:

    README.md                  what it is and how to replay it
    bundle.json                schema, versions, the script and command, one entry per compile
    compiles/<NN>_<kernel>/    manifest.json (as recorded), frontend.json, context.json,
                               inputs/<index>.json (failed passes' inputs)
    texts/<hash>               every recorded text (IR before/after each pass, generated
                               source) once, named by its hash as the manifests name it

write_bundle() returns what it wrote; read_bundle() checks a bundle and returns its
compiles (member names are never used as paths); replay() recompiles each one in a
child process traced by tltrace and compares it with the recording (history/compare).
Nothing here prints.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._version import __version__
from ..errors import RecordsError, UsageError
from ..session.names import safe_component
from ..session.records import RunManifest
from .make import flags_of, repro_files

BUNDLE_SCHEMA = 1
MAX_MEMBER_BYTES = 512 * 1024 * 1024  # a member larger than this is not read (a zip bomb)
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
generated source match the recording. Exit status 0: all the same; 1: the first
divergent pass is named; 2: bad usage; 3: a damaged bundle; 5: the IR does not load
on this TileLang (it uses an operator this release lacks; one line names it). On
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
    """One compile in a bundle."""

    dir: str
    manifest: RunManifest
    frontend: str
    context: str
    flags: dict[str, Any]


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
            return _read(self.zf, f"texts/{digest}").decode("utf-8", "surrogatepass")
        except KeyError:
            return None


def write_bundle(
    runs: list[Any], out: Path | str, *, force: bool = False, best: dict[str, Any] | None = None
) -> tuple[str, int, int]:
    """Write the compiles `runs` (history Run objects) as a zip to `out`; return (where, compiles, bytes).

    `out` follows the output-path rule (output_path): `-` is stdout, a pipe or character
    device is written through, an existing file only when it is a bundle (its zip comment
    says so) unless `force`. `best` (the autotuner's report, see autotune.py) goes into
    bundle.json.
    """
    from .. import output_path
    from ..history.runs import text_of

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
    """Open and check a bundle; RecordsError (exit 3) when it is not one or is damaged."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no bundle file {path}; make one with 'tltrace bundle SCRIPT -o FILE'")
    try:
        zf = zipfile.ZipFile(path)
        info = json.loads(_read(zf, "bundle.json"))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise RecordsError(f"{path} is not a tltrace bundle ({type(exc).__name__}: {exc})") from None
    if not isinstance(info, dict) or info.get("schema") != BUNDLE_SCHEMA:
        raise RecordsError(f"{path}: bundle schema {info.get('schema')!r} is not {BUNDLE_SCHEMA}")
    compiles = []
    for entry in info.get("compiles") or []:
        d = str(entry.get("dir", ""))
        if not d or safe_component(d) != d:
            raise RecordsError(f"{path}: bad compile entry {d!r}")
        try:
            manifest = RunManifest.from_json(json.loads(_read(zf, f"compiles/{d}/manifest.json")))
            frontend = _read(zf, f"compiles/{d}/frontend.json").decode("utf-8")
            context = _read(zf, f"compiles/{d}/context.json").decode("utf-8")
        except (KeyError, ValueError, TypeError) as exc:
            raise RecordsError(f"{path}: compile {d} is damaged ({type(exc).__name__}: {exc})") from None
        flags = entry.get("flags") if isinstance(entry.get("flags"), dict) else flags_of(manifest)
        compiles.append(BundleCompile(d, manifest, frontend, context, flags))
    if not compiles:
        raise RecordsError(f"{path}: the bundle holds no compile")
    return Bundle(path, info, tuple(compiles), zf)


def _read(zf: Any, name: str) -> bytes:
    info = zf.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise RecordsError(f"bundle member {name} is {info.file_size} bytes; not read")
    return zf.read(info)


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
        return self.problem is None and self.diff is not None and self.diff.same


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


def replay(bundle: Bundle, trace_dir: Path | None = None) -> ReplayResult:
    """Recompile every compile of `bundle` in a child process traced by tltrace; compare with the recording."""
    from ..history import runs
    from ..history.compare import diff_runs

    keep = trace_dir is not None
    work = Path(tempfile.mkdtemp(prefix="tltrace-replay-"))
    try:
        tdir = Path(trace_dir) if trace_dir is not None else work / "trace"
        results = []
        for c in bundle.compiles:
            cdir = work / c.dir
            cdir.mkdir()
            (cdir / "frontend.json").write_text(c.frontend, encoding="utf-8")
            (cdir / "context.json").write_text(c.context, encoding="utf-8")
            script = f"replay_{safe_component(bundle.info.get('script') or 'bundle')}"
            job: dict[str, Any] = {
                "kernel": c.manifest.kernel,
                "backend": c.manifest.backend,
                "flags": c.flags,
                "script": script,
            }
            (cdir / "job.json").write_text(json.dumps(job), encoding="utf-8")
            before = {p.name for p in _run_dirs(tdir, script)}
            problem = _run_child(cdir, tdir)
            new = [p for p in _run_dirs(tdir, script) if p.name not in before]
            replayed = None
            if new:
                run = runs.load_run(sorted(new)[-1])
                replayed = run.manifest
            unloadable = _unloadable(cdir)
            if unloadable is not None:
                results.append(CompileReplay(c, problem=unloadable["line"], unloadable=unloadable))
                continue
            if replayed is None:
                results.append(CompileReplay(c, problem=problem or "the replay recorded no compile"))
                continue
            d = diff_runs(c.manifest, replayed)
            detail = divergence(bundle, d.first_difference, run.path) if not d.same else ()
            results.append(CompileReplay(c, d, replayed, None, detail))
    finally:
        if not keep:
            import shutil

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
    root = Path(trace_dir) / script / ".run_records"
    try:
        return [p for p in root.iterdir() if p.name.startswith("run_") and p.is_dir()]
    except OSError:
        return []


def _run_child(cdir: Path, trace_dir: Path) -> str | None:
    """Run the replay of one compile in a child process; return None, or one line on why it failed."""
    env = dict(os.environ)
    env.pop("TL_LOWER_TRACE", None)
    env.setdefault("TILELANG_DISABLE_CACHE", "1")
    cmd = [sys.executable, "-m", "tltrace.rerun.replay_child", str(cdir), str(trace_dir)]
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            errors="replace",
            env=env,
            timeout=REPLAY_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"the replay took longer than {REPLAY_TIMEOUT_S} s"
    if proc.returncode == 0:
        return None
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    return f"the replay ended with {how}: {lines[-1] if lines else ''}"
