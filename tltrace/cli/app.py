"""The `tltrace` command line: parse, call the core, print, exit.

Only cli/ and render/ print, and only cli/ exits; the core returns data and emits events.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from .._version import __version__
from ..config import DEFAULT, DEFAULT_KEEP, Settings, build_settings, parse_mode
from ..errors import TltraceError
from ..proc.group import Terminated, on_signals
from .shared import (
    SCRIPT_CONTEXT,  # one `fail`, one --trace-dir for every command
    OptionalValueCommand,
    args_argument,
    codegen_output_option,
    context_option,
    error_line,
    fail,
    force_option,
    ignore_whitespace_option,
    no_such_option,
    script_args,
    script_argument,
    timeout_option,
    trace_dir_option,
    verbose_option,
)


class _OneLineErrors(TyperGroup):
    """Usage errors (bad option, bad value, unknown command) as one line: `tltrace: error: ...`."""

    def main(
        self,
        args=None,
        prog_name=None,
        complete_var=None,
        standalone_mode=True,
        windows_expand_args=True,
        **extra,
    ):
        extra["windows_expand_args"] = windows_expand_args
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        from typer._click import exceptions as cx

        try:
            # SIGTERM and SIGHUP raise (Terminated) in every command, as Ctrl+C does: the children
            # it started go down on the way out (proc/group), and the exit status says the signal.
            with on_signals():
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except cx.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except cx.ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            typer.echo(f"tltrace: error: {_one_line(exc, ctx)}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("Aborted!", err=True)
            sys.exit(1)
        except Terminated as exc:  # SIGTERM or SIGHUP while children ran: they are down (proc/group)
            sys.exit(exc.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


def _one_line(exc, ctx) -> str:  # noqa: ANN001
    """Return click's usage error as tltrace says errors: lower case, did-you-mean in brackets, one hint."""
    import difflib
    import re

    from typer._click import exceptions as cx

    hint = f"; try '{ctx.command_path} --help'" if ctx is not None else ""
    if isinstance(exc, cx.NoSuchOption):
        options = sorted(o for o in exc.possibilities or () if o != "--help")
        close = difflib.get_close_matches(exc.option_name, options, n=2, cutoff=0.6)
        mean = f" (did you mean {' or '.join(close)}?)" if close else ""
        return f"no such option: {exc.option_name}{mean}{hint}"
    msg = exc.format_message().strip()
    m = re.fullmatch(r"No such command '(.*)'\.(?:\s+Did you mean '(.*)'\?)?", msg)
    if m:
        mean = f" (did you mean '{m.group(2)}'?)" if m.group(2) else ""
        return f"no such command '{m.group(1)}'{mean}{hint}"
    msg = msg.rstrip(".")
    if msg[:1].isupper() and msg[1:2].islower():
        msg = msg[0].lower() + msg[1:]
    return f"{msg}{hint}"


app = typer.Typer(
    name="tltrace",
    cls=_OneLineErrors,
    help="See, and change, what the TileLang compiler did to your kernel.\n\n"
    "Runs a kernel script with pass-by-pass IR tracing, writes run records and an HTML "
    "report, and compiles your edits of the generated source back in.",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tltrace {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """See, and change, what the TileLang compiler did to your kernel."""


SANITIZE_HELP = (
    "Run the script underneath compute-sanitizer (memcheck; --sanitize=racecheck, synccheck, initcheck) "
    "and name each error's Python line; kept with the records (show --sanitizer). Sets "
    "PYTORCH_NO_CUDA_MEMORY_CACHING=1 unless set."
)

RUN_EPILOG = """\
Examples:

\b
  tltrace run my_kernel.py                      stream pass-by-pass diffs
  tltrace run my_kernel.py --mode both          diffs + HTML report + working files
  tltrace run --quiet --trace-dir ci_traces gemm.py --m 1024
  tltrace run -m mypkg.kernels -- --mode fast   everything after -- goes to the script
  tltrace run --chrome-trace trace.json gemm.py   also write a Chrome trace (Perfetto)
  tltrace run --kernels '^gemm' job.py          trace only kernels named gemm*
  tltrace run --ncu fa.py                       the hot Python lines of fa.py's kernels (Nsight Compute)
  tltrace run --line-directives gemm.py         compile with #line directives for Nsight
  tltrace run --remarks=vectorize gemm.py       keep what each pass prints on stderr, planner on
  tltrace run --launches gemm.py                record each kernel launch: show --launches lists them
  tltrace run --save-inputs=2 gemm.py           ... and keep the first 2 launches' tensors (replay --launch)
  tltrace run --sanitize oob.py                 under compute-sanitizer: each error at its Python line

Options may stand before SCRIPT or right after it; the script's own arguments
follow. TL_LOWER_TRACE and TL_LOWER_TRACE_DIR give the defaults of --mode and
--trace-dir; TLTRACE_SYNC=1 that of --sync; TLTRACE_REMARKS (1, or planner
names) that of --remarks. Python processes the script starts
(multiprocessing, subprocess, torchrun ranks) trace into the same invocation once
they import TileLang. IR is printed and recorded by a
background worker (everything is on disk when the script ends, also by os._exit,
which waits for it at most TLTRACE_EXIT_WAIT seconds, default 30); a compiler that
segfaults can take the last queued passes with it: rerun with --sync.
TLTRACE_WAIT=1 makes each compile return with its records on disk (before
timing kernels on a machine whose workers fall behind); TLTRACE_WORKERS and
TLTRACE_QUEUE size the workers (docs/usage.md); TLTRACE_DEFER is gone and
ignored, with one line that says so. Each
setting is also a keyword of tltrace.enable(); a TLTRACE_* variable set to a
value it does not take is one line, exit 2.
A compile that fails in LayoutInference is explained (the smallest set of tile
operations whose layouts cannot agree, with their lines) by a rerun of the pass
in a child, off the compile; its first line is printed when the script ends,
waited for at most TLTRACE_EXPLAIN_TIMEOUT seconds (default 120, 0: off;
docs/layouts.md).
--timeout S runs the script as a child of tltrace, in a process group of its
own; after S seconds every Python stack is dumped (faulthandler, which needs no
GIL: a hung kernel launch holds it), the group is killed, and one line names the
compile pass or the script line it hung in (docs/usage.md, "Hangs").
--ncu runs the script again under Nsight Compute (on a GPU) and prints the hot
lines: your Python lines ranked by their share of warp-stall samples, with the
top stall reasons, instructions executed and the CUDA and SASS behind each
(docs/usage.md, "Hot lines"); 'tltrace show SCRIPT --hot' prints them again.
Without ncu, or without permission for the GPU's counters (ERR_NVGPUCTRPERM),
one line says so and the script's exit status stands.
--sanitize[=memcheck|racecheck|synccheck|initcheck] runs the same command
underneath compute-sanitizer (--xml --save into the trace dir), with
PYTORCH_NO_CUDA_MEMORY_CACHING=1 unless set (torch's cache hides out-of-bounds
accesses inside its segments); identical errors are one line each at the end,
named at their Python line, and kept (show --sanitizer). Without
compute-sanitizer one line says so and the script runs without it.
Exit status: the script's own (under --sanitize, compute-sanitizer's, which is the
script's); 1 when it raises; 2 for bad usage (also an unknown --sanitize tool, a
--save-inputs=N that is not a number);
124 after --timeout S ran out (as timeout(1)); 130 after Ctrl+C, 143 after SIGTERM, 129 after SIGHUP (the run is recorded as
interrupted; SIGTERM and SIGHUP raise in the script, as Ctrl+C does, so its
finally blocks run).
"""

_LAUNCHES_HELP = (
    "Record each launch of a compiled kernel: its compile, the calling line, grid and block, each argument's "
    "shape, dtype, strides and device ('tltrace show --launches'; docs/launches.md) [default: TLTRACE_LAUNCHES]."
)
_LIMIT_HELP = (
    "With --launches: record the first N launches of each process, count the rest "
    "[default: TLTRACE_LAUNCH_LIMIT, else 100000]."
)
_SAVE_HELP = (
    "Record launches (--launches) and keep the tensor arguments of the first launch (--save-inputs=N: the "
    "first N of each process) before and after it, as .npy files beside the launch log, at most "
    "TLTRACE_SAVE_INPUTS_MAX bytes (64 MiB; a launch over it is counted, not saved) "
    "[default: TLTRACE_SAVE_INPUTS]."
)


@app.command("run", epilog=RUN_EPILOG, cls=OptionalValueCommand, context_settings=SCRIPT_CONTEXT)
def run_cmd(
    ctx: typer.Context,
    script: Optional[str] = script_argument("The kernel script to run."),
    args: Optional[list[str]] = args_argument(),
    module: Optional[str] = typer.Option(
        None, "-m", "--module", metavar="MODULE", help="Run a module as `python -m MODULE` would."
    ),
    mode: Optional[str] = typer.Option(
        None,
        "--mode",
        metavar="terminal|html|both",
        help="What to produce [default: TL_LOWER_TRACE, else terminal].",
    ),
    trace_dir: Optional[Path] = trace_dir_option(),
    keep: int = typer.Option(
        DEFAULT_KEEP,
        "--keep",
        metavar="N",
        min=0,
        help="Keep the newest N invocations per script, this one included (0 keeps all).",
    ),
    only: Optional[str] = typer.Option(
        None, "--only", metavar="REGEX", help="Show only passes matching REGEX (any case)."
    ),
    skip: Optional[str] = typer.Option(
        None, "--skip", metavar="REGEX", help="Hide passes matching REGEX (any case)."
    ),
    all_passes: bool = typer.Option(
        False, "--all-passes", help="A line for every no-op pass (by default a run of them is one line)."
    ),
    verbose: bool = verbose_option(
        "Every diff whole and a line for every pass (by default a diff over 10 lines shows its "
        "first changed lines and the command that shows it whole)."
    ),
    kernels: Optional[str] = typer.Option(
        None,
        "--kernels",
        metavar="REGEX",
        help="Trace only kernels whose name matches REGEX; the others compile untraced "
        "[default: TLTRACE_KERNELS, else every kernel].",
    ),
    context: int = context_option(),
    ignore_whitespace: bool = ignore_whitespace_option(
        "Hide changes that only re-indent lines in the diffs."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No pass stream: one summary (a table when several kernels compiled)."
    ),
    use_cache: bool = typer.Option(
        False, "--use-cache", help="Keep TileLang's kernel cache on (cache hits are not traced)."
    ),
    sync: bool = typer.Option(
        False,
        "--sync",
        help="Print and record each pass before the next one runs (slower; for a compiler that "
        "crashes) [default: TLTRACE_SYNC, else a background worker].",
    ),
    exact: bool = typer.Option(
        False,
        "--exact",
        help="Print every IR text that is not the very same fields as the one before (no equality "
        "rule; slower) [default: TLTRACE_EXACT].",
    ),
    check_texts: bool = typer.Option(
        False,
        "--check-texts",
        help="Also print every IR inline at its pass callback and check each recorded text against "
        "it; a text that differs is replaced by the inline print and said (slow; a test of the reuse "
        "rules on your kernels) [default: TLTRACE_CHECK_TEXTS].",
    ),
    ptxas: bool = typer.Option(
        False,
        "--ptxas",
        help="Machine facts: build each CUDA compile's source with nvcc -Xptxas -v after it (registers, "
        "spills; seconds each, off the compiling thread) [default: TLTRACE_PTXAS].",
    ),
    line_directives: bool = typer.Option(
        False,
        "--line-directives",
        help="An Nsight-ready build: compile the device source with scoped #line directives naming your "
        ".py lines (changes what is compiled by those lines; the records and working files stay "
        "without them) [default: TLTRACE_LINE_DIRECTIVES].",
    ),
    ptx: bool = typer.Option(
        False,
        "--ptx",
        help="Record each CUDA compile's PTX (nvcc -lineinfo, as TileLang builds it) as a codegen stage, "
        "its lines mapped to Python; built on the compile's worker after the compile returns, on disk when "
        "the run ends [default: TLTRACE_PTX].",
    ),
    sass: bool = typer.Option(
        False,
        "--sass",
        help="Record the SASS too (nvdisasm or cuobjdump over the cubin), with the PTX "
        "[default: TLTRACE_SASS].",
    ),
    remarks: bool = typer.Option(
        False,
        "--remarks",
        help="Keep what each top-level pass writes to stderr on its record (still shown as it comes); "
        "--remarks=vectorize,reducer,smem (or all) also turns on TileLang's verbose planners. Top-level "
        "passes of compiles in several threads run one at a time [default: TLTRACE_REMARKS].",
    ),
    remarks_value: Optional[str] = typer.Option(None, "--remarks-value", hidden=True),
    launches: bool = typer.Option(False, "--launches", help=_LAUNCHES_HELP),
    launch_limit: Optional[int] = typer.Option(None, "--launch-limit", metavar="N", min=0, help=_LIMIT_HELP),
    save_inputs: bool = typer.Option(False, "--save-inputs", help=_SAVE_HELP),
    save_inputs_value: Optional[str] = typer.Option(None, "--save-inputs-value", hidden=True),
    codegen_output: Optional[Path] = codegen_output_option(),
    no_codegen_output: bool = typer.Option(False, "--no-codegen-output", help="Write no working files."),
    chrome_trace: Optional[Path] = typer.Option(
        None,
        "--chrome-trace",
        metavar="PATH",
        help="Also write the compiles as a Chrome trace (Perfetto) to PATH.",
    ),
    force: bool = force_option("Let --chrome-trace replace a file that tltrace did not write (or a link)."),
    ncu: bool = typer.Option(
        False,
        "--ncu",
        help="Hot lines: run the script again under Nsight Compute (ncu --section SourceCounters; "
        "--ncu=SECTIONS for others) on TileLang's kernels, with --sass, and rank your Python lines by "
        "warp-stall samples (stall reasons, instructions, the CUDA and SASS behind each); kept beside the "
        "compile for 'show --hot'. Needs a GPU and ncu; without them one line, and the script runs as it is.",
    ),
    ncu_value: Optional[str] = typer.Option(None, "--ncu-value", hidden=True),
    ncu_launches: int = typer.Option(
        3,
        "--ncu-launches",
        metavar="N",
        min=0,
        help="With --ncu: profile the first N launches of TileLang's kernels (ncu --launch-count; 0: all).",
    ),
    sanitize: bool = typer.Option(False, "--sanitize", help=SANITIZE_HELP),
    sanitize_value: Optional[str] = typer.Option(None, "--sanitize-value", hidden=True),
    timeout: Optional[float] = timeout_option(
        "Stop the script's process group after S seconds, naming the compile pass or the script line "
        "it hung in (recorded on the compile; exit 124)."
    ),
) -> None:
    """Run SCRIPT (or -m MODULE) as __main__ with every TileLang compilation traced."""
    rest = script_args(ctx, script, args)
    p = ctx.params
    if p["module"] is not None:
        rest = ([script] if script is not None else []) + rest
        target_name, is_module = p["module"], True
    elif script is None:
        raise fail("missing SCRIPT (or -m MODULE); try 'tltrace run --help'")
    elif script.startswith("-") and script != "-" and not Path(script).exists():
        raise fail(no_such_option(script))
    else:
        target_name, is_module = script, False

    from ..runner import Target, check_target, run_target

    target = Target(target_name, tuple(rest), is_module)
    if p.get("ncu") and (p.get("sanitize") or p.get("sanitize_value")):
        raise fail("--ncu and --sanitize exclude each other: one outside tool at a time")
    ncu_tool = None  # run --ncu: ncu (None without it, in the inner run, or when missing)
    if p.get("ncu"):  # (cli/hot and its readers imported only for --ncu: a plain run never needs them)
        from . import hot as cli_hot

        ncu_tool = cli_hot.tool_for(p)
    try:
        settings = _settings(p, target)
        check_target(target)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None

    if ncu_tool is not None:  # the same command again, underneath ncu (cli/hot.py, runtime/outer.py)
        raise typer.Exit(cli_hot.run_under_ncu(ncu_tool, p, settings.script_dir, p["kernels"]))
    if p.get("sanitize") or p.get("sanitize_value"):  # the same command underneath compute-sanitizer
        from .sanitizer import sanitized

        code = sanitized(ctx.command, p.get("sanitize_value"), settings.script_dir)
        if code is not None:
            raise typer.Exit(code)

    if p["timeout"] is not None:
        from ..tracing import watchdog

        if not watchdog.arm():  # the supervisor: the same command again, as its child (tracing/watchdog.py)
            from ..errors import EXIT_INTERRUPTED
            from ..proc.group import Terminated

            try:
                code, hang = watchdog.supervise(
                    watchdog.child_argv(),
                    p["timeout"],
                    None if is_module else target_name,
                    settings.script_dir,
                )
            except KeyboardInterrupt:  # forwarded to the child's group, which recorded itself interrupted
                raise typer.Exit(EXIT_INTERRUPTED) from None
            except Terminated as exc:
                raise typer.Exit(exc.exit_code) from None
            if hang is not None:
                typer.echo(hang.line(), err=True)
            raise typer.Exit(code)

    from ..render.listeners import Listeners
    from ..render.terminal import guard_lines

    listeners: list[Any] = [Listeners(settings)]
    collector = _chrome_collector(p["chrome_trace"], p["force"])
    if collector is not None:
        listeners.append(collector)
    from .explain import RunExplainer

    explainer = RunExplainer(
        settings.explain_timeout
    )  # a compile that failed in a layout pass: why, off the compile
    listeners.append(explainer)
    ended: list[bool] = []  # the invocation ended here (not in an os.fork() child of the script)
    with guard_lines():
        code = run_target(target, settings, listeners, finalize=lambda: ended.append(True))
    if ended:
        explainer.finish()
    if collector is not None and ended:
        from .export import write_run_trace

        typer.echo(write_run_trace(collector, p["chrome_trace"], force=p["force"]), err=True)
    raise typer.Exit(code)


def _chrome_collector(path: Optional[Path], force: bool):
    """Return a listener collecting the compiles for --chrome-trace PATH (None without the flag).

    PATH is checked before the script runs (the output-path rule; checked again when written).
    """
    if path is None:
        return None
    if str(path) == "-":
        raise fail(
            "--chrome-trace - is for 'tltrace export'; under 'run' the script owns stdout, give a file"
        )
    from ..fs import output_path

    try:
        output_path.check(path, output_path.CHROME_TRACE, force=force)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    from ..tracing.collector import RunCollector

    return RunCollector()


def _save_inputs(flag: Any, value: Optional[str]) -> Optional[int]:
    """--save-inputs[=N]: the launches to save (1 without N), or None (TLTRACE_SAVE_INPUTS decides)."""
    from ..errors import UsageError

    if value is None:
        return 1 if flag else None
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise UsageError(f"--save-inputs={value!r} is not a number of launches (0 or more)")
    return n


def _settings(p: dict, target) -> Settings:
    if p["mode"] is not None and parse_mode(p["mode"], source="--mode") is None:
        raise TltraceError("--mode off makes no sense for 'tltrace run'; use terminal, html or both")
    if p["no_codegen_output"] and p["codegen_output"] is not None:
        raise TltraceError("--codegen-output and --no-codegen-output exclude each other")
    from ..format.scripts import identity_of

    return build_settings(
        script_key=identity_of(target.launched)
        if target.launched is not None
        else identity_of(target.name, module=target.module),
        mode=p["mode"],
        trace_dir=p["trace_dir"],
        script_name=target.trace_name,
        codegen_output=None
        if p["no_codegen_output"]
        else p["codegen_output"]
        if p["codegen_output"] is not None
        else DEFAULT,
        keep=p["keep"],
        context=p["context"],
        only=p["only"],
        skip=p["skip"],
        kernels=p["kernels"],
        quiet=p["quiet"],
        all_passes=p.get("all_passes", False),
        verbose=p.get("verbose", False),
        ignore_whitespace=p["ignore_whitespace"],
        use_cache=p["use_cache"],
        sync=True if p["sync"] else None,
        exact=True if p.get("exact") else None,
        check_texts=True if p.get("check_texts") else None,
        ptxas=True if p["ptxas"] else None,
        line_directives=True if p["line_directives"] else None,
        ptx=True if p.get("ptx") else None,
        sass=True if p.get("sass") or p.get("ncu") else None,  # --ncu folds onto the SASS map
        remarks=p.get("remarks_value") or ("" if p.get("remarks") else None),
        launches=True if p.get("launches") else None,
        launch_limit=p.get("launch_limit"),
        save_inputs=_save_inputs(p.get("save_inputs"), p.get("save_inputs_value")),
        command=tuple(["tltrace", *sys.argv[1:]]) if sys.argv and sys.argv[0] else ("tltrace",),
        names={
            "mode": "--mode",
            "keep": "--keep",
            "context": "--context",
            "only": "--only",
            "skip": "--skip",
            "kernels": "--kernels",
            "codegen_output": "--codegen-output",
            "remarks": "--remarks",
        },
    )


def _register_record_commands() -> None:
    """Add the record-reading commands to the app."""
    from .clean import CLEAN_EPILOG, clean_cmd
    from .diffruns import DIFF_EPILOG, diff_runs_cmd
    from .show import SHOW_EPILOG, show_cmd

    # ignore_unknown_options: lets '-2' (a RUN) through as an argument.
    ctx = {"ignore_unknown_options": True}
    from .shared import PathArgsCommand  # `show -dash.py`: a script, not -d -a -s -h

    app.command("show", cls=PathArgsCommand, epilog=SHOW_EPILOG, context_settings=ctx)(show_cmd)
    app.command("diff-runs", cls=PathArgsCommand, epilog=DIFF_EPILOG, context_settings=ctx)(diff_runs_cmd)
    app.command("clean", epilog=CLEAN_EPILOG)(clean_cmd)


def _register_commands() -> None:
    from . import bisect as cli_bisect
    from . import check as cli_check
    from . import edit as cli_edit
    from . import export as cli_export
    from . import repro as cli_repro

    _register_record_commands()
    cli_edit.register(app)
    cli_export.register(app)
    cli_repro.register(app)
    cli_bisect.register(app)
    cli_check.register(app)

    from .shared import UsageCommand

    for info in app.registered_commands:  # usage lines as the metavars say them (shared.UsageCommand)
        if info.cls is None or info.cls is TyperCommand:
            info.cls = UsageCommand


_register_commands()


def main() -> None:
    """Entry point for the `tltrace` console script."""
    try:
        app(prog_name="tltrace")
    except TltraceError as exc:
        typer.echo(error_line(str(exc)), err=True)
        sys.exit(exc.exit_code)


if __name__ == "__main__":  # pragma: no cover
    main()
