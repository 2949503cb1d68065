"""Trace settings: what the flags, `enable()`'s keywords and the environment ask for.

Every setting is a field of `Settings`, built by `build_settings` (the CLI's `tltrace run`,
`tltrace.enable()`, the pytest plugin); TL_LOWER_TRACE, TL_LOWER_TRACE_DIR and each
TLTRACE_* variable of `KNOBS` give defaults, read and checked here only.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


# -- the knobs the environment gives defaults to: each a Settings field, parsed here only ---------------
QUEUE_DEFAULT = 1024  # pass callbacks a worker holds before a compile waits for it (Settings.queue)
QUEUE_MIN = 16
WORKERS_DEFAULT = 8  # the most background workers, whatever the machine (Settings.workers)
EXIT_WAIT_DEFAULT = 30.0  # seconds an os._exit waits for the records (Settings.exit_wait)
EXPLAIN_TIMEOUT_DEFAULT = 120.0  # seconds a layout failure's explanation may take (Settings.explain_timeout)
LAUNCH_LIMIT_DEFAULT = 100_000  # launches recorded per process and invocation; the rest only counted
SAVE_INPUTS_MAX_DEFAULT = (
    64 * 1024 * 1024
)  # bytes of saved arguments per process and invocation (--save-inputs)


@dataclass(frozen=True)
class Knob:
    """A Settings field whose default an environment variable gives (when the caller leaves it None)."""

    field: str
    env: str
    kind: str = "flag"  # flag (on or off), count (a whole number, `low` or more), seconds, regex, remarks
    low: int = 0

    def check(self, value: object, name: str) -> Any:
        """Return the field's value for what a caller gave (`name`: how it spells the field); UsageError when bad."""
        if self.kind == "flag":
            if not isinstance(value, bool):  # sync="no" would read as on
                raise UsageError(f"{name} must be True or False, not {value!r}")
            return value
        if self.kind == "count":
            return _count(value, name, self.low)
        if self.kind == "seconds":
            return _seconds(value, name)
        if self.kind == "regex":
            if not isinstance(value, str):
                raise UsageError(f"{name} must be a regular expression (a string), not {value!r}")
            return compile_regex(value, name)
        return _remarks(value, name)

    def read(self, text: str) -> Any:
        """Return the field's value for the variable's text; UsageError naming the variable when bad."""
        v = text.strip().lower()
        if self.kind in ("flag", "remarks") and v in _ON | _OFF:
            return self.check(v in _ON, self.env)
        if self.kind == "flag":
            raise UsageError(
                f"{self.env}={text!r} is not on or off; use 1, on, true, yes or 0, off, false, no"
            )
        if self.kind in ("count", "seconds"):
            try:
                return self.check(int(v) if self.kind == "count" else float(v), self.env)
            except ValueError:
                what = (
                    f"a whole number ({self.low} or more)" if self.kind == "count" else "a number of seconds"
                )
                raise UsageError(f"{self.env}={text!r} is not {what}") from None
        return self.check(text.strip(), self.env)


# Every TLTRACE_* variable tltrace reads as a setting: nothing outside this module reads one
# (tests/test_knobs.py). Unset or empty: the field's default. A bad value is one UsageError
# naming the variable (exit 2 from `tltrace run`, raised by enable(); docs/usage.md).
KNOBS: tuple[Knob, ...] = (
    Knob("kernels", "TLTRACE_KERNELS", "regex"),
    Knob("sync", "TLTRACE_SYNC"),
    Knob("exact", "TLTRACE_EXACT"),
    Knob("check_texts", "TLTRACE_CHECK_TEXTS"),
    Knob("wait", "TLTRACE_WAIT"),
    Knob("ptxas", "TLTRACE_PTXAS"),
    Knob("line_directives", "TLTRACE_LINE_DIRECTIVES"),
    Knob("ptx", "TLTRACE_PTX"),
    Knob("sass", "TLTRACE_SASS"),
    Knob("remarks", "TLTRACE_REMARKS", "remarks"),
    Knob("source_map", "TLTRACE_SOURCE_MAP"),
    Knob("queue", "TLTRACE_QUEUE", "count", QUEUE_MIN),
    Knob("workers", "TLTRACE_WORKERS", "count", 1),
    Knob("exit_wait", "TLTRACE_EXIT_WAIT", "seconds"),
    Knob("explain_timeout", "TLTRACE_EXPLAIN_TIMEOUT", "seconds"),
    Knob("launches", "TLTRACE_LAUNCHES"),
    Knob("launch_limit", "TLTRACE_LAUNCH_LIMIT", "count"),
    Knob("save_inputs", "TLTRACE_SAVE_INPUTS", "count"),
    Knob("save_inputs_max", "TLTRACE_SAVE_INPUTS_MAX", "count"),
)


# Variables tltrace read once and no longer does: set, each is one info line as tracing starts
# (tracing/lifecycle.py), never an error; {variable: what became of it}.
RETIRED_KNOBS: dict[str, str] = {
    "TLTRACE_DEFER": "deferral was removed (issue 51: it did not pay, docs/benchmarks.md); the workers always write at once",
}


def retired_knob_notes(environ: Mapping[str, str] | None = None) -> list[str]:
    """Return one line per retired variable the environment still sets (RETIRED_KNOBS): it is ignored."""
    env = os.environ if environ is None else environ
    return [
        f"{name} is gone and ignored: {why}"
        for name, why in RETIRED_KNOBS.items()
        if env.get(name, "").strip()
    ]


def env_knobs(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return {field: value} for each knob its variable sets (unset or empty ones left out); UsageError on a bad one."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for knob in KNOBS:
        text = env.get(knob.env, "")
        if text.strip():
            out[knob.field] = knob.read(text)
    return out


def knob_value(name: str, default: Any, environ: Mapping[str, str] | None = None) -> Any:
    """Return one knob's value from its variable (`default` when unset or empty); UsageError when bad."""
    env = os.environ if environ is None else environ
    knob = next(k for k in KNOBS if k.field == name)
    text = env.get(knob.env, "")
    return knob.read(text) if text.strip() else default


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
    source_map: bool = True  # the Python line behind each line (docs/sourcemap.md); False: none recorded
    # The background workers (session/worker.py), process-wide: the queue bound a compile's worker
    # gets, and the most workers made.
    queue: int = QUEUE_DEFAULT
    workers: int = WORKERS_DEFAULT
    exit_wait: float = EXIT_WAIT_DEFAULT  # the most an os._exit waits for the records (session/exits.py)
    # The most seconds a compile that failed in LayoutInference is explained for (layouts/explain.py); 0: off.
    explain_timeout: float = EXPLAIN_TIMEOUT_DEFAULT
    # Record each launch of a compiled kernel (run --launches; launches/recorder.py): the first
    # `launch_limit` of each process, the rest only counted (docs/launches.md).
    launches: bool = False
    launch_limit: int = LAUNCH_LIMIT_DEFAULT
    # Keep the tensor arguments of the first `save_inputs` launches of each process, before and
    # after the launch, as .npy files (run --save-inputs; launches/inputs.py), at most
    # `save_inputs_max` bytes; a launch that does not fit is counted, not saved. 0: none.
    save_inputs: int = 0
    save_inputs_max: int = SAVE_INPUTS_MAX_DEFAULT
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


def _count(value: object, name: str, low: int = 0) -> int:
    """Return `value` as a count (an int of `low` or more); raise UsageError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{name} must be a whole number of {low} or more, not {value!r}")
    if value < low:
        raise UsageError(f"{name} must be {low} or more, not {value}")
    return value


def _seconds(value: object, name: str) -> float:
    """Return `value` as seconds (a number of 0 or more); raise UsageError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"{name} must be a number of seconds, 0 or more, not {value!r}")
    if value < 0:
        raise UsageError(f"{name} must be 0 seconds or more, not {value}")
    return float(value)


def _remarks(value: object, name: str) -> tuple[str, ...] | None:
    """Return the planners `remarks` asks for: False off; True or "" on; names as text or a sequence."""
    if value is False:
        return None
    if value is True:
        return ()
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    if not isinstance(value, str):
        raise UsageError(
            f"{name} must be True, False or planner names ({', '.join(REMARK_PLANNERS)}), not {value!r}"
        )
    return parse_remarks(value, source=name)


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
    quiet: bool = False,
    all_passes: bool = False,
    verbose: bool = False,
    ignore_whitespace: bool = False,
    use_cache: bool = False,
    command: tuple[str, ...] = (),
    names: dict[str, str] | None = None,
    script_key: str | None = None,
    **knobs: Any,
) -> Settings:
    """Return validated Settings; the one builder behind `tltrace run`, `tltrace.enable()` and the plugin.

    mode: a trace mode, or None for TL_LOWER_TRACE (else "terminal"). trace_dir: None
    for TL_LOWER_TRACE_DIR (else the default). codegen_output: DEFAULT, None (no
    working files) or a path. `knobs`: each knob of KNOBS by its field name (kernels, sync, exact,
    check_texts, wait, ptxas, line_directives, ptx, sass, remarks, source_map, queue, workers,
    exit_wait, explain_timeout, launches, launch_limit, save_inputs, save_inputs_max; another name is a TypeError): None or left out for its
    variable's value (TLTRACE_SYNC, ...), else the Settings default. remarks: True or "" (on),
    planner names ("vectorize,reducer" or a tuple), False (off). `names` maps a parameter to how the caller spells it in messages (`{"keep":
    "--keep"}`). Raises UsageError on a bad value, or a bad knob variable, the same for all.
    """
    unknown = set(knobs) - {k.field for k in KNOBS}
    if unknown:
        raise TypeError(f"build_settings() got an unexpected keyword argument {min(unknown)!r}")
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
    # The knobs: what the caller gives, else what the environment gives (a bad variable is an
    # error whatever the caller gives), else the field's default.
    values = env_knobs()
    for knob in KNOBS:
        value = knobs.get(knob.field)
        if value is not None:
            values[knob.field] = knob.check(value, spell.get(knob.field, knob.field))
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
        quiet=bool(quiet),
        all_passes=bool(all_passes or verbose),
        verbose=bool(verbose),
        ignore_whitespace=bool(ignore_whitespace),
        use_cache=bool(use_cache),
        command=tuple(command),
        **values,
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
