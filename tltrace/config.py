"""Trace settings: what the flags and TL_LOWER_TRACE / TL_LOWER_TRACE_DIR ask for."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .format.ids import new_invocation_id as new_invocation_id  # re-exported
from .format.layout import DEFAULT_STEM as WORKING_STEM
from .format.layout import EXT as WORKING_EXT
from .format.names import script_name_from_argv as script_name_from_argv  # re-exported

MODES = ("terminal", "html", "both")
DEFAULT_TRACE_DIR = "./tmp/lower_trace_dir"
DEFAULT_KEEP = 20
CHILD_ENV = "TLTRACE_CHILD"  # a traced job's settings, for its child processes (tracing/children.py)

_ON = {"1", "on", "true", "yes"}
_OFF = {"0", "off", "false", "no", ""}


class _Default:
    """Marker for "derive the working-file path from the script directory"."""

    def __repr__(self) -> str:
        return "<default>"


DEFAULT = _Default()


def parse_mode(value: str | None, *, source: str = "--mode") -> str | None:
    """Return the trace mode named by `value` (None = off), as TL_LOWER_TRACE reads it."""
    if value is None:
        return None
    v = value.strip().lower()
    if v in _OFF:
        return None
    if v in _ON:
        return "html"
    if v in MODES:
        return v
    raise UsageError(
        f"{source}={value!r} is not a trace mode; use one of terminal, html, both (or 1/on, 0/off)"
    )


def env_mode(environ: dict[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    return parse_mode(env.get("TL_LOWER_TRACE"), source="TL_LOWER_TRACE")


def env_trace_dir(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get("TL_LOWER_TRACE_DIR") or DEFAULT_TRACE_DIR


def env_sync(environ: dict[str, str] | None = None) -> bool:
    """TLTRACE_SYNC=1: record each pass on the compiling thread before the next runs (as --sync)."""
    env = os.environ if environ is None else environ
    return env.get("TLTRACE_SYNC", "").strip().lower() not in ("", "0", "false", "no", "off")


def env_exact(environ: dict[str, str] | None = None) -> bool:
    """TLTRACE_EXACT=1: print every IR text that is not provably the one before it (as --exact)."""
    env = os.environ if environ is None else environ
    return env.get("TLTRACE_EXACT", "").strip().lower() not in ("", "0", "false", "no", "off")


def env_check_texts(environ: dict[str, str] | None = None) -> bool:
    """TLTRACE_CHECK_TEXTS=1: check every recorded IR text against an inline print (as --check-texts)."""
    env = os.environ if environ is None else environ
    return env.get("TLTRACE_CHECK_TEXTS", "").strip().lower() not in ("", "0", "false", "no", "off")


def env_wait(environ: dict[str, str] | None = None) -> bool:
    """TLTRACE_WAIT=1: a compile returns only once its records are on disk (else at once; docs/usage.md)."""
    env = os.environ if environ is None else environ
    return env.get("TLTRACE_WAIT", "").strip().lower() not in ("", "0", "false", "no", "off")


def env_ptxas(environ: dict[str, str] | None = None) -> bool:
    """TLTRACE_PTXAS=1: machine facts from `nvcc -Xptxas -v` after each CUDA compile (as run --ptxas)."""
    env = os.environ if environ is None else environ
    return env.get("TLTRACE_PTXAS", "").strip().lower() not in ("", "0", "false", "no", "off")


def env_line_directives(environ: dict[str, str] | None = None) -> bool:
    """TLTRACE_LINE_DIRECTIVES=1: device source compiled with scoped `#line` directives (as run --line-directives)."""
    env = os.environ if environ is None else environ
    return env.get("TLTRACE_LINE_DIRECTIVES", "").strip().lower() not in ("", "0", "false", "no", "off")


def env_flag(name: str, environ: dict[str, str] | None = None) -> bool:
    """Return True when the variable `name` is set to anything but "", 0, false, no or off."""
    env = os.environ if environ is None else environ
    return env.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


# `tltrace run --remarks=NAME,...`: TileLang's verbose planners, turned on by pass config for the
# backend pipelines of a traced compile (tilelang/transform/pass_config.py's PassConfigKey).
REMARK_PLANNERS: dict[str, str] = {
    "vectorize": "tl.enable_vectorize_planner_verbose",
    "reducer": "tl.enable_reducer_plan_verbose",
    "smem": "tl.debug_merge_shared_memory_allocations",
}


def parse_remarks(value: str | None, *, source: str = "--remarks") -> tuple[str, ...] | None:
    """Return the planners `--remarks[=NAME,...]` names: None off, () on without planners; UsageError on a bad name."""
    if value is None:
        return None
    names: list[str] = []
    for part in value.split(","):
        name = part.strip().lower()
        if not name:
            continue
        if name in ("all", "*"):
            return tuple(REMARK_PLANNERS)
        if name not in REMARK_PLANNERS:
            raise UsageError(
                f"{source}: {part.strip()!r} is not a planner; use {', '.join(REMARK_PLANNERS)} or all"
            )
        if name not in names:
            names.append(name)
    return tuple(names)


def env_remarks(environ: dict[str, str] | None = None) -> tuple[str, ...] | None:
    """TLTRACE_REMARKS: 1/on for remarks, or planner names (as run --remarks=...); unset or 0 for none."""
    env = os.environ if environ is None else environ
    v = env.get("TLTRACE_REMARKS", "").strip()
    if v.lower() in _OFF:
        return None
    return () if v.lower() in _ON else parse_remarks(v, source="TLTRACE_REMARKS")


def trace_dir_of(value: str | os.PathLike | None) -> Path:
    """Return the trace dir `value` names, else TL_LOWER_TRACE_DIR's, else the default (not made absolute)."""
    return Path(value) if value is not None else Path(env_trace_dir())


def trace_dir_args(trace_dir: str | os.PathLike | None, *, absolute: bool = False) -> list[str]:
    """Return the `--trace-dir DIR` words a printed `tltrace` command needs to find `trace_dir` again.

    None when it is the default (TL_LOWER_TRACE_DIR's, else ./tmp/lower_trace_dir) seen from
    here; with `absolute` (a command copied from a report, run from anywhere) always the
    absolute path.
    """
    if trace_dir is None:
        trace_dir = trace_dir_of(None)
    if absolute:
        return ["--trace-dir", os.path.abspath(trace_dir)]
    if os.path.abspath(trace_dir) == os.path.abspath(trace_dir_of(None)):
        return []
    return ["--trace-dir", os.fspath(trace_dir)]


@dataclass(frozen=True)
class Settings:
    """One snapshot of how to trace; a compilation keeps the snapshot it started with."""

    mode: str = "terminal"
    trace_dir: Path = Path(DEFAULT_TRACE_DIR)
    script_name: str = "interactive"
    codegen_output: object = DEFAULT  # DEFAULT, None (no working files) or a path
    keep: int = DEFAULT_KEEP
    context: int = 3
    ignore_whitespace: bool = False  # terminal diffs: hide re-indent-only changes
    only: re.Pattern[str] | None = None
    skip: re.Pattern[str] | None = None
    # Capture filter: only compiles of kernels whose name matches are traced; the others
    # run untraced (no pass instrument at all). None traces every kernel.
    kernels: re.Pattern[str] | None = None
    quiet: bool = False
    all_passes: bool = False  # terminal stream: a line per no-op pass, not one per run of them
    verbose: bool = False  # terminal stream: every diff whole (else a long one is cut)
    use_cache: bool = False
    sync: bool = False  # print and record on the compiling thread (--sync); else on the worker
    exact: bool = False  # no equality rule: reuse a text only for the very same fields (--exact)
    # Print every module inline at its callback too, and check each recorded text against that
    # print (--check-texts): the truth test of the reuse rules, on the user's own kernels.
    check_texts: bool = False
    # A compile returns only once its records are on disk (else at once, the worker writes on):
    # TLTRACE_WAIT=1, a traced child process (it may end in os._exit, as multiprocessing's do,
    # which runs no atexit drain) and a test under the pytest plugin (it may crash its worker);
    # a forked child's compiles wait too (session/exits.forked_settings).
    wait: bool = False
    ptxas: bool = False  # machine facts: nvcc -Xptxas -v over each CUDA compile's source (docs/facts.md)
    # Compile the device source with scoped #line directives naming the user's lines (docs/sourcemap.md).
    line_directives: bool = False
    ptx: bool = False  # the PTX stage of each CUDA compile (tltrace/stages/; one build with --ptxas)
    sass: bool = False  # the SASS stage (and the PTX one)
    # --remarks: what native code writes to stderr during each top-level pass, kept on the pass
    # (remarks/recorder.py); the names are the verbose planners turned on (REMARK_PLANNERS). None: off.
    remarks: tuple[str, ...] | None = None
    command: tuple[str, ...] = field(default_factory=tuple)
    # One id per invocation (one `tltrace run`, one watch rerun, one enable()..disable()
    # span): every compile traced with these settings carries it in its manifest.
    invocation: str = field(default_factory=new_invocation_id)
    script_key: str | None = None  # who the script is (format/scripts.py): its real path or module

    @property
    def terminal(self) -> bool:
        return self.mode in ("terminal", "both")

    @property
    def html(self) -> bool:
        return self.mode in ("html", "both")

    @property
    def script_dir(self) -> Path:
        """The script's directory under the trace dir (looked up; nothing is written)."""
        from .format import scripts

        return scripts.lookup(self.trace_dir, self.script_name, self._script_identity())

    def claim_script_dir(self) -> Path:
        """The script's directory, recorded in the trace dir's script registry on first use."""
        from .format import scripts

        return scripts.claim(self.trace_dir, self.script_name, self._script_identity())

    def _script_identity(self) -> str:
        return self.script_key or f"name:{self.script_name}"

    def working_files_enabled(self) -> bool:
        """Working files are written in html/both mode, or whenever a path was given."""
        if self.codegen_output is None:
            return False
        if self.codegen_output is DEFAULT:
            return self.html
        return True


def compile_regex(value: str | None, flag: str) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(value, re.IGNORECASE)  # pass names any case, as --pass and the report
    except re.error as exc:
        raise UsageError(f"{flag} {value!r} is not a valid regular expression: {exc}") from None


def _count(value: object, name: str) -> int:
    """Return `value` as a count (an int of 0 or more); raise UsageError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number of 0 or more, not {value!r}")
    if value < 0:
        raise UsageError(f"{name} must be 0 or more, not {value}")
    return value


def build_settings(
    *,
    mode: str | None,
    trace_dir: str | os.PathLike | None,
    script_name: str,
    codegen_output: object = DEFAULT,
    keep: object = DEFAULT_KEEP,
    context: object = 3,
    only: str | None = None,
    skip: str | None = None,
    kernels: str | None = None,
    quiet: bool = False,
    all_passes: bool = False,
    verbose: bool = False,
    ignore_whitespace: bool = False,
    use_cache: bool = False,
    sync: bool | None = None,
    exact: bool | None = None,
    check_texts: bool | None = None,
    wait: bool | None = None,
    ptxas: bool | None = None,
    line_directives: bool | None = None,
    ptx: bool | None = None,
    sass: bool | None = None,
    remarks: str | tuple[str, ...] | None = None,
    command: tuple[str, ...] = (),
    names: dict[str, str] | None = None,
    script_key: str | None = None,
) -> Settings:
    """Return validated Settings; the one builder behind `tltrace run` and `tltrace.enable()`.

    mode: a trace mode, or None for TL_LOWER_TRACE (else "terminal"). trace_dir: None
    for TL_LOWER_TRACE_DIR (else the default). codegen_output: DEFAULT, None (no
    working files) or a path. sync: None for TLTRACE_SYNC (else off). exact: None for TLTRACE_EXACT (else off). check_texts: None for TLTRACE_CHECK_TEXTS (else off). wait: None for TLTRACE_WAIT (else off). ptxas: None for TLTRACE_PTXAS (else off). line_directives: None for TLTRACE_LINE_DIRECTIVES (else off); ptx, sass: None for TLTRACE_PTX, TLTRACE_SASS. kernels: None for TLTRACE_KERNELS (else every kernel). remarks: "" or planner names
    ("vectorize,reducer"), None for TLTRACE_REMARKS (else off). `names` maps a parameter to how the caller spells it in
    messages (`{"keep": "--keep"}`). Raises UsageError on a bad value, the same for both.
    """
    spell = {
        "mode": "mode",
        "keep": "keep",
        "context": "context",
        "only": "only",
        "skip": "skip",
        "kernels": "kernels",
        "codegen_output": "codegen_output",
        "remarks": "remarks",
        **(names or {}),
    }
    m = parse_mode(mode, source=spell["mode"]) if mode is not None else env_mode() or "terminal"
    if m is None:
        raise UsageError(f"{spell['mode']}={mode!r} turns tracing off; use terminal, html or both")
    if trace_dir is not None and (not isinstance(trace_dir, (str, os.PathLike)) or not str(trace_dir)):
        raise UsageError(f"trace_dir must be a path, not {trace_dir!r}")
    td = trace_dir_of(trace_dir)
    cg: object = DEFAULT
    if codegen_output is None:
        cg = None
    elif codegen_output is not DEFAULT:
        if not isinstance(codegen_output, (str, os.PathLike)) or not str(codegen_output):
            raise UsageError(f"{spell['codegen_output']} must be a path, not {codegen_output!r}")
        cg = check_codegen_output(codegen_output)
    return Settings(
        script_key=script_key,
        mode=m,
        trace_dir=td.absolute(),
        script_name=script_name,
        codegen_output=cg,
        keep=_count(keep, spell["keep"]),
        context=_count(context, spell["context"]),
        only=compile_regex(only, spell["only"]),
        skip=compile_regex(skip, spell["skip"]),
        kernels=compile_regex(kernels, spell["kernels"])
        if kernels is not None
        else compile_regex(os.environ.get("TLTRACE_KERNELS") or None, "TLTRACE_KERNELS"),
        quiet=bool(quiet),
        all_passes=bool(all_passes or verbose),
        verbose=bool(verbose),
        ignore_whitespace=bool(ignore_whitespace),
        use_cache=bool(use_cache),
        sync=env_sync() if sync is None else bool(sync),
        exact=env_exact() if exact is None else bool(exact),
        check_texts=env_check_texts() if check_texts is None else bool(check_texts),
        wait=env_wait() if wait is None else bool(wait),
        ptxas=env_ptxas() if ptxas is None else bool(ptxas),
        line_directives=env_line_directives() if line_directives is None else bool(line_directives),
        ptx=env_flag("TLTRACE_PTX") if ptx is None else bool(ptx),
        sass=env_flag("TLTRACE_SASS") if sass is None else bool(sass),
        remarks=env_remarks()
        if remarks is None
        else parse_remarks(
            ",".join(remarks) if isinstance(remarks, tuple) else remarks, source=spell["remarks"]
        ),
        command=tuple(command),
    )


def check_codegen_output(path: str | os.PathLike) -> Path:
    """Return `--codegen-output PATH` as an absolute path, or raise UsageError when writing there is unsafe.

    Refused: a directory, a symbolic link, an existing file that is not a tltrace working
    file (no `.original` or `.latest` beside it, reconcile/files.WorkingFile), e.g. the script being run.
    """
    p = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    shown = os.fspath(path)
    if str(shown).endswith(os.sep) or p.is_dir():
        raise UsageError(
            f"--codegen-output {shown} is a directory; name a file in it, e.g. {p / (WORKING_STEM + WORKING_EXT)}"
        )
    if p.is_symlink():
        raise UsageError(
            f"--codegen-output {shown} is a symbolic link; tltrace does not write through links, "
            "name the file itself"
        )
    if p.exists():
        if not (p.with_name(p.name + ".original").is_file() or p.with_name(p.name + ".latest").is_file()):
            raise UsageError(
                f"--codegen-output {shown} is an existing file that tltrace did not write "
                f"(no {p.name}.original beside it); choose a new path, or move the file away"
            )
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError(f"--codegen-output {shown}: {parent} is not a directory")
            break
    return p
