"""`tltrace repro`: a directory with a standalone repro.py that reruns one recorded pass.

make_repro(run, record, out_dir) copies what the pass needs out of the run
directory (frontend IR, context, the pass's input when the recording saved it,
its before/after texts), then runs the copied repro.py once in probe mode in a
child process: that replays the compile up to the pass (when the input must be
rebuilt), saves the input as JSON, and tries both paths. The first that gives the
recorded result is the one repro.py uses from then on:

    json    input.json loaded, the pass built by its registered name
    replay  frontend.json compiled up to the pass, the pass object run on its live input

The context and codegen flags the rerun gets follow the trust rule (rerun/trust.py): a
run directory may come from elsewhere, so without `build` only the pass configs known
to be data are written to the repro's context.json (the others are named in
repro.json's `not_applied`), the target is checked, and the device compile is off.

Returns a ReproOutcome; prints nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import EXIT_UNLOADABLE, RecordsError, TltraceError, UsageError
from ..format.records import CODEGEN, FAILED, PassRecord, RunManifest
from ..fs import output_path
from ..fs.atomic import atomic_write
from ..proc import group as procgroup
from . import trust

# Files tltrace writes into a repro directory; a directory holding anything else is not reused.
OURS = frozenset(
    {"repro.py", "repro.json", "context.json", "frontend.json", "input.json", "before.tir", "after.tir"}
)
PROBE_TIMEOUT_S = 1800


class UnloadableError(TltraceError):
    """The recorded IR does not load on this TileLang (exit 5); the message names what it lacks."""

    exit_code = EXIT_UNLOADABLE


class ReproError(RecordsError):
    """The run cannot give a reproducer: it holds no reproducer data (exit 3)."""


@dataclass(frozen=True)
class ReproOutcome:
    """What `tltrace repro` made and found."""

    directory: Path
    record: PassRecord
    path: str  # "json" or "replay": what repro.py uses
    reproduced: bool
    lines: list[str] = field(default_factory=list)  # how (same output, same error, a diff, a new error)
    input_from: str = ""  # "the recording" (a failed pass) or "the replay"
    built: str | None = None  # how the pass object was made
    archive: str | None = None  # where a tar of the directory went (`-o -`, a pipe), else None

    @property
    def command(self) -> str:
        if self.archive is not None:
            return f"tar xf ARCHIVE && python {self.directory / 'repro.py'}"
        return f"python {self.directory / 'repro.py'}"


def standalone_source() -> str:
    """Return the text of the standalone script (repro.py)."""
    return resources.files("tltrace.rerun").joinpath("_standalone.py").read_text(encoding="utf-8")


def flags_of(manifest: RunManifest) -> dict[str, Any]:
    """Return how the recorded compile ran codegen: host codegen or not, device code compiled or not."""
    device = next((r for r in manifest.records if r.status == CODEGEN and r.role != "host"), None)
    ffi = (device.ffi or "") if device is not None else ""
    return {
        "host_codegen": any(r.status == CODEGEN and r.role == "host" for r in manifest.records),
        "device_compile": bool(ffi) and "without_compile" not in ffi and not ffi.endswith("_c"),
    }


def ordinal_of(manifest: RunManifest, record: PassRecord) -> int:
    """Return the position of `record` among the compile's pass callbacks (codegen calls are not passes)."""
    return sum(1 for r in manifest.records if r.status != CODEGEN and r.index < record.index)


def registered_name(display: str) -> str:
    """Return TVM's name of a pass from the name tltrace shows (TileLang's own lose `tl.` there)."""
    base = display.split("@", 1)[0]
    return base if "." in base else f"tl.{base}"


def repro_files(run_dir: Path, manifest: RunManifest) -> dict[str, Path]:
    """Return the run's saved frontend IR and context files; ReproError when the run has none."""
    from ..history.runs import record_path

    info = manifest.repro or {}
    out: dict[str, Path] = {}
    for key in ("frontend", "context"):
        p = record_path(run_dir, info.get(key))
        if p is None or not p.is_file():
            raise ReproError(
                f"run {manifest.run_id} has no saved {key} IR data (recorded by tltrace "
                f"{manifest.tltrace_version or '?'} without reproducer data, or removed); "
                "rerun the script with 'tltrace run' to record it"
            )
        out[key] = p
    return out


def failed_input(run_dir: Path, manifest: RunManifest, record: PassRecord) -> Path | None:
    """Return the input JSON the recording saved for a failed pass, or None."""
    from ..history.runs import record_path

    rel = ((manifest.repro or {}).get("inputs") or {}).get(str(record.index))
    p = record_path(run_dir, rel)
    return p if p is not None and p.is_file() else None


def check_out(out: Path | str, *, force: bool = False) -> output_path.Target:
    """Return where a repro goes (a directory, or a stream for a tar); UsageError when the rule refuses it."""
    return output_path.check_dir(out, output_path.REPRO, OURS, force=force)


def prepare_dir(out_dir: Path, *, force: bool = False) -> None:
    """Make `out_dir` ready for a repro's files under the output-path rule (output_path.check_dir):
    a new directory, or one holding only files a repro writes (removed first); with `force`,
    a file or link there is replaced and a directory holding other files keeps them."""
    target = check_out(out_dir, force=force)
    assert target.path is not None and not target.stream
    if target.path.is_symlink() or (target.path.exists() and not target.path.is_dir()):
        target.path.unlink()  # --force: the link or file itself, never what a link points to
    if target.path.is_dir():
        for name in OURS:
            q = target.path / name
            if q.is_symlink() or q.is_file():
                q.unlink()
    target.path.mkdir(exist_ok=True)


def plan_repro(run_dir: Path, manifest: RunManifest, *, build: bool = False) -> trust.Plan:
    """Return what a repro of this run applies of its recorded context (rerun/trust.py).

    RecordsError (exit 3) when the run has no reproducer data, or its context, target or
    backend is refused; the context file is read only as a regular file under 1 MiB.
    """
    from ..fs import safe_read

    path = repro_files(run_dir, manifest)["context"]
    try:
        data = safe_read.read_bytes(path, limit=1024 * 1024 + 1)
        if len(data) > 1024 * 1024:
            raise RecordsError(f"{path} is over 1 MiB; not a context tltrace wrote")
        context = json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise RecordsError(f"{path} is damaged ({type(exc).__name__}: {exc})") from None
    trust.check_backend(manifest.backend, f"run {manifest.run_id}")
    return trust.plan(context, flags_of(manifest), build=build, where=str(path))


def spec_of(
    manifest: RunManifest, record: PassRecord, path: str, has_input: bool, plan: trust.Plan | None = None
) -> dict[str, Any]:
    """Return repro.json's data."""
    failed = record.status == FAILED
    return {
        "schema": 1,
        "kernel": manifest.kernel,
        "backend": manifest.backend,
        "flags": plan.flags if plan is not None else flags_of(manifest),
        "build": plan.build if plan is not None else False,
        "not_applied": list(plan.not_applied) if plan is not None else [],
        "pass": {
            "name": record.name,
            "registered_name": registered_name(record.name),
            "index": record.index,
            "ordinal": ordinal_of(manifest, record),
            "phase": record.phase,
            "status": record.status,
        },
        "path": path,
        "files": {
            "frontend": "frontend.json",
            "context": "context.json",
            "input": "input.json" if has_input else None,
        },
        "expected": {
            "before": "before.tir",
            "after": None if failed else "after.tir",
            "error": record.error if failed else None,
        },
        "recorded": {
            "script": manifest.script,
            "run_id": manifest.run_id,
            "tilelang": manifest.tilelang_version,
            "tltrace": manifest.tltrace_version,
            "command": list(manifest.command),
        },
    }


def make_repro(
    run_dir: Path,
    manifest: RunManifest,
    record: PassRecord,
    out_dir: Path | str,
    *,
    force: bool = False,
    build: bool = False,
    plan: trust.Plan | None = None,
) -> ReproOutcome:
    """Write `out_dir` (repro.py and the pass's files), probe it once in a child; return the outcome.

    `out_dir` goes through the output-path rule (output_path.check_dir): `-`, a pipe or a
    character device gets a tar archive of the directory (named as default_dir names it),
    made and probed in a temporary directory first. `plan` (plan_repro's, made with
    `build`) says what the rerun applies; made here when not given.
    """
    if plan is None:
        plan = plan_repro(run_dir, manifest, build=build)
    if record.status == CODEGEN:
        raise UsageError(
            f"{record.name} (#{record.index}) is a codegen call, not a pass; 'tltrace bundle' "
            "replays whole compiles, codegen included"
        )
    target = check_out(out_dir, force=force)
    if target.path is not None and not target.stream:
        return _make_repro(run_dir, manifest, record, target.path, plan, force=force)
    name = default_dir(manifest, record)
    with tempfile.TemporaryDirectory(prefix="tltrace-repro-") as tmp:
        outcome = _make_repro(run_dir, manifest, record, Path(tmp) / name, plan)
        data = tar_of(Path(tmp) / name, name)
    output_path.write(out_dir, output_path.REPRO, data, force=force)
    return dataclasses.replace(outcome, directory=Path(name), archive=target.shown)


def tar_of(directory: Path, name: str) -> bytes:
    """Return an uncompressed tar archive of `directory`'s files under `name/` (a comment marks it tltrace's)."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(
        fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "tltrace repro"}
    ) as tf:
        for p in sorted(directory.iterdir()):
            if p.is_file() and not p.is_symlink():
                info = tf.gettarinfo(str(p), f"{name}/{p.name}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with open(p, "rb") as fh:
                    tf.addfile(info, fh)
    return buf.getvalue()


def _make_repro(
    run_dir: Path,
    manifest: RunManifest,
    record: PassRecord,
    out_dir: Path,
    plan: trust.Plan,
    *,
    force: bool = False,
) -> ReproOutcome:
    from ..history.runs import Run, read_text

    files = repro_files(run_dir, manifest)
    saved_input = failed_input(run_dir, manifest, record) if record.status == FAILED else None
    run = Run(run_dir, manifest)
    before = read_text(run, record, "before")
    after = read_text(run, record, "after") if record.status != FAILED else None
    out_dir = Path(os.path.abspath(out_dir))
    prepare_dir(out_dir, force=force)
    try:
        shutil.copyfile(files["frontend"], out_dir / "frontend.json")
        _write(out_dir / "context.json", json.dumps(plan.context, indent=1, sort_keys=True) + "\n")
        if saved_input is not None:
            shutil.copyfile(saved_input, out_dir / "input.json")
        _write(out_dir / "before.tir", before)
        if after is not None:
            _write(out_dir / "after.tir", after)
        _write(out_dir / "repro.py", standalone_source())
        _write_spec(out_dir, spec_of(manifest, record, "json", saved_input is not None, plan))
    except OSError as exc:
        raise RecordsError(f"cannot write {out_dir} ({exc.strerror or exc})") from None
    result = probe(out_dir)
    for why in ("unloadable", "diverged"):  # the recording does not fit this TileLang (exit 5)
        if isinstance(result.get(why), dict):
            raise UnloadableError(f"{out_dir}/ written, but {result[why].get('line')}")
    path, reproduced, lines, built = decide(result, after, record.error if record.status == FAILED else None)
    _write_spec(out_dir, spec_of(manifest, record, path, (out_dir / "input.json").exists(), plan))
    return ReproOutcome(
        out_dir,
        record,
        path,
        reproduced,
        lines,
        "the recording" if saved_input is not None else "the replay",
        built,
    )


def probe(out_dir: Path) -> dict[str, Any]:
    """Run repro.py's probe in a child process; return its result (attempts of both paths)."""
    from ..proc.pychild import python_script

    with tempfile.TemporaryDirectory(prefix="tltrace-repro-") as tmp:
        # Not `-I`: that drops PYTHONPATH and the user site, where TileLang may be (the device
        # machine's TileLang is on PYTHONPATH only); the child says when it imported tltrace.
        # Neither the cwd nor repro.py's directory goes on its sys.path (proc/pychild.py).
        cmd = python_script(out_dir / "repro.py", "--child", "probe", tmp)
        try:
            proc = run_child(cmd, out_dir, PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"failure": f"the rerun took longer than {PROBE_TIMEOUT_S} s"}
        path = Path(tmp) / "result.json"
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
    tail = [ln for ln in (proc.stdout + proc.stderr).strip().splitlines() if ln.strip()][-8:]
    return {"failure": f"the rerun did not finish ({ended_how(proc)})", "output": tail}


def run_child(cmd: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a rerun child (repro.py's probe, a bundle's replay) in `cwd` in its own process group,
    with `child_env()`; return it with its output as text (TimeoutExpired after `timeout` s)."""
    return procgroup.run(
        cmd,
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
        cwd=cwd,
        env=child_env(),
        timeout=timeout,
    )


def ended_how(proc: subprocess.CompletedProcess[str]) -> str:
    """Return how a child that failed ended: `exit status 3`, `signal 9`."""
    return f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"


def child_env() -> dict[str, str]:
    """Return a rerun child's environment: this one, TileLang findable where this process finds it."""
    env = dict(os.environ)
    env.pop("TL_LOWER_TRACE", None)  # TileLang's own tracer would trace the rerun
    env.setdefault("TILELANG_DISABLE_CACHE", "1")
    root = tilelang_root()
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root is not None and root not in paths and root not in _default_path():
        # Found through sys.path changes this process made (a runner, a conftest): say it.
        env["PYTHONPATH"] = os.pathsep.join([*paths, root])
    return env


def tilelang_root() -> str | None:
    """Return the directory this process imports TileLang from (its sys.path entry), or None.

    The current directory does not count (`python -m tltrace` puts it first on sys.path): a
    `tilelang.py` there is not TileLang, and a child must not be pointed at it.
    """
    import importlib.machinery

    mod = sys.modules.get("tilelang")
    try:
        if mod is not None and getattr(mod, "__spec__", None) is not None:
            spec = mod.__spec__
        else:
            cwd = os.path.abspath(os.getcwd())
            path = [p for p in sys.path if p and os.path.abspath(p) != cwd]
            spec = importlib.machinery.PathFinder.find_spec("tilelang", path)
    except (ImportError, ValueError, OSError):
        return None
    if spec is None or not spec.origin or not spec.submodule_search_locations:
        return None  # not found, or a lone module: TileLang is a package
    return str(Path(spec.origin).resolve().parent.parent)


def _default_path() -> set[str]:
    """Return the site directories a child of this interpreter searches without PYTHONPATH."""
    import site

    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    return {str(Path(d).resolve()) for d in dirs}


def decide(
    result: dict[str, Any], after: str | None, error: str | None
) -> tuple[str, bool, list[str], str | None]:
    """Pick the path repro.py takes: the first attempt that reproduces, else the replay (the closer one)."""
    from ._standalone import judge

    if "failure" in result:
        return "replay", False, [result["failure"], *result.get("output", [])], None
    attempts = {a["path"]: a for a in result.get("attempts", [])}
    judged = {p: judge(a, after, error) for p, a in attempts.items()}
    for p in ("json", "replay"):
        if p in judged and judged[p][0]:
            return p, True, judged[p][1], attempts[p].get("built")
    p = "replay" if attempts.get("replay", {}).get("built") else "json"
    if p not in judged:
        return p, False, ["nothing could be rerun"], None
    return p, False, judged[p][1], attempts[p].get("built")


def _write(path: Path, text: str) -> None:
    atomic_write(path, text.encode("utf-8", "surrogatepass"))


def _write_spec(out_dir: Path, spec: dict[str, Any]) -> None:
    _write(out_dir / "repro.json", json.dumps(spec, indent=1) + "\n")


def repro(
    script_or_dir: str | None = None,
    run: str | None = None,
    *,
    pass_: str,
    out: str | os.PathLike | None = None,
    trace_dir: str | os.PathLike | None = None,
    kernel: str | None = None,
    force: bool = False,
    build: bool = False,
) -> ReproOutcome:
    """Return the outcome of `tltrace repro SCRIPT_OR_DIR [RUN] --pass PASS [-o OUT]`: the directory
    written, the path its repro.py takes, and whether the rerun gave the recorded result.

    SCRIPT_OR_DIR, RUN and `kernel` are read as `tltrace show` reads them; `pass_` is a
    NAME, phase/NAME, NAME#k or an index. Raises TltraceError (UsageError, RecordsError)
    when the run or the pass cannot be found, or the run has no reproducer data.
    """
    from ..config import trace_dir_of
    from ..history import runs

    target, run = runs.split_target(script_or_dir, run)
    chosen = runs.open_selection(target, run, trace_dir_of(trace_dir), kernel).one("repro")
    manifest = chosen.require()
    record = runs.find_record(manifest, pass_, chosen.path)
    dest = os.fspath(out) if out is not None else default_dir(manifest, record)
    return make_repro(chosen.path, manifest, record, dest, force=force, build=build)


def default_dir(manifest: RunManifest, record: PassRecord) -> str:
    """Return the default repro directory name: repro-<kernel>-<compile>-<NN>-<pass>.

    <compile> tells apart two compiles of one kernel (two sizes, two invocations): the last part
    of the run id (`run_..._<pid>_<uid>`, the 8 hex digits `tltrace show` lists), else a hash of
    the id. Before, two compiles of one kernel got one name, and the second repro overwrote the first.
    """
    import hashlib

    from ..format.ids import uid_of_id
    from ..format.names import safe_component

    uid = uid_of_id(manifest.run_id) or ""
    if not re.fullmatch(r"[0-9a-f]{8}", uid):
        uid = hashlib.sha1(manifest.run_id.encode("utf-8", "replace")).hexdigest()[:8]
    kernel = safe_component(manifest.kernel or "kernel")
    return f"repro-{kernel}-{uid}-{record.index:02d}-{safe_component(record.name)}"
