"""`tltrace repro`, `tltrace bundle`, `tltrace replay`: rerun a pass or whole compiles without the script.

Parses, makes one call into the core (tltrace/repro/), prints, exits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ..config import trace_dir_of
from ..errors import EXIT_UNLOADABLE, TltraceError
from .shared import (
    cut_short,
    fail,
    force_option,
    kernel_option,
    no_such_option,
    pass_option,
    selection_argument,
    trace_dir_option,
    warn,
)

REPRO_EPILOG = """\
Examples:

\b
  tltrace repro gemm.py --pass LowerTileOp                 in the newest invocation of gemm.py
  tltrace repro gemm.py -2 --pass 37 -o /tmp/lowertileop   pass #37, one invocation back
  tltrace repro two_kernels.py --kernel vmul --pass Simplify#2
  tltrace repro bad.py                                     the pass a failed compile failed at

Writes DIR (default ./repro-<kernel>-<compile>-<NN>-<pass>, <compile> the last
part of the run id, so two compiles of one kernel never share a name) holding
repro.py and what it reads: the pass's input IR (TVM JSON), the compile's
frontend IR, target and PassContext config, and the recorded before/after texts
(or error). `python DIR/repro.py` needs only TileLang: it reruns the pass in a
child process and compares with the recording; `python DIR/repro.py --in-process`
reruns it in that one process (for a debugger: `python -m pdb DIR/repro.py
--in-process`), and `--pdb` also opens pdb's post-mortem where the pass raises. tltrace runs it once here and says which path it
takes: json (the input loaded from input.json, the pass made by its name) or
replay (the compile replayed from its frontend IR up to and through the pass,
for passes whose input does not survive JSON).
RUN and --pass are read as 'tltrace show' reads them. A compile its process did
not finish (killed, crashed, timed out: 'show' says cut short) failed at no pass:
without --pass, repro says so in one line and names the pass the process ended
inside, which has no record to rerun (its input is the previous pass's output).
DIR follows the output-path rule: a new directory, or one holding only the files
a repro writes, is (re)written; a directory holding other files, a file or a link
is refused in one line unless --force; '-', a pipe or a character device gets an
uncompressed tar of the directory (the messages then go to stderr).

The run's saved context is treated as data from elsewhere (a trace dir can be
someone else's), as 'tltrace replay' treats a bundle: only TileLang's boolean and
numeric pass configs are written to DIR/context.json (the others are named in
one line and in repro.json's not_applied), the target is checked (a refused
one: exit 3), and the device compile stays off; --build applies the config as
recorded and allows the device compile, saying what it runs first. The rerun's
child imports nothing from DIR or the current directory.

Exit status: 0 reproduced (the same output, or the same error for a failed
pass); 1 not reproduced (a diff or the new error is shown); 2 bad usage;
3 missing records or no reproducer data in them, or a refused context or
target; 5 the recorded IR does not load on this TileLang (one line names what
it lacks).
"""

BUNDLE_EPILOG = """\
Examples:

\b
  tltrace bundle gemm.py -o gemm-bundle.zip           the newest invocation of gemm.py
  tltrace bundle gemm.py -2 --kernel gemm -o b.zip    one kernel of the invocation before
  tltrace replay gemm-bundle.zip                      on another machine
  tltrace bundle autotune.py --best -o best.zip        the autotuner's best config only

Writes one zip file for a bug report: each compile's frontend IR, target,
PassContext config, versions, its manifest and every recorded text, and a
README saying how to replay it. RUN is read as 'tltrace show' reads it.
FILE follows the output-path rule: a new file is created and a bundle tltrace
wrote is rewritten; '-' is stdout; a pipe or character device is written
through; another file, a link or a directory is refused in one line unless
--force (which replaces a file or link).
--best bundles one compile: the autotuner's best config. TileLang tells only the
script which config won, so the script says it, one line after the autotuner
returns: 'tltrace.note_best(result)' (an AutotuneResult or the best kernel; a
no-op when tracing is off). The compile whose generated source is that kernel's
is bundled, its config and latency in bundle.json; without a note, one line and
exit 2.
Exit status: 0; 2 bad usage; 3 missing records or no reproducer data in them.
"""

REPLAY_EPILOG = """\
Examples:

\b
  tltrace replay gemm-bundle.zip
  tltrace replay gemm-bundle.zip --trace-dir replayed   keep the replay's records
  tltrace replay gemm-bundle.zip --build                also run the recorded device compile
  tltrace replay gemm.py -1 --launch 2 --build --run    rerun launch 2 on its saved inputs

Recompiles every compile in FILE from its saved IR (in a child process, traced
by tltrace) and checks every pass and the generated source against the
recording, naming the first divergence as 'tltrace diff-runs' does. The user's
script is not needed. On another TileLang release it says so in one line and
goes on as a comparison. Without --trace-dir the replay's records are removed;
no copy of the bundle is left in the temporary directory either way.
When the recorded IR does not load on this TileLang (it uses an operator or
node type that this release lacks), one line names what is missing and both
releases, and no pass is compared.

A bundle is someone else's data, and replay runs nothing it chooses: it reruns
the lowering and source-only codegen, never starts a compiler (nvcc, gcc,
cython, NVRTC) and never loads a library. Of the recorded PassContext config it
applies only TileLang's boolean and numeric pass configs; the others (such as
tl.device_compile_flags, any string or list) are named in one line, 'not
applied'. The target must be a plain JSON target of a known kind and known
keys, else the bundle is refused (exit 3). --build applies the config as
recorded and runs the device compile when the recording did (the bundle's flags
then reach nvcc's command line); it prints what it runs first. Checked before
anything runs: the zip's sizes (in all, per member, and the compression ratio),
every member's CRC, and the types of every JSON member.

Exit status: 0 all the same; 1 a difference (the first divergent pass named);
2 bad usage (no such FILE, a --trace-dir that is not a directory); 3 not a
bundle, or a damaged or refused one (a flipped byte, a zip bomb, a member of the
wrong type, a frontend IR that does not load, a refused target); 5 the recorded
IR uses an operator or node type this TileLang lacks.

With --launch I, FILE is a SCRIPT_OR_DIR and RUN an invocation (as 'tltrace show'
takes them; --trace-dir: where their records are): launch I of 'show --launches',
whose tensors 'tltrace run --launches --save-inputs' kept before and after it, is
rerun. Its compile is rebuilt from its records with tilelang.compile (the recorded
target, backend and pass config: it compiles and runs code, so --build --run must
both be given), called on the saved inputs (each .npy checked against its sha256,
loaded as data, never pickle), and each output compared with the saved one:
integers exactly, floats with numpy.isclose (rtol 1e-5, atol 1e-8), the largest
error printed. Exit status: 0 the same; 1 an output differs (named), or the rebuild
or the call raised; 2 bad usage (no --build --run, no launch I); 3 no saved inputs
for the launch (not run with --save-inputs, past its N, over
TLTRACE_SAVE_INPUTS_MAX), a damaged .npy, or one whose shape or dtype is not the
launch log's.
"""

_KERNEL = kernel_option()


def register(app: typer.Typer) -> None:
    """Add `repro`, `bundle` and `replay` to the app."""
    # RUN may be '-2': taken as an argument, not an option (as 'show' and 'export' do).
    app.command("repro", epilog=REPRO_EPILOG, context_settings={"ignore_unknown_options": True})(repro_cmd)
    app.command("bundle", epilog=BUNDLE_EPILOG, context_settings={"ignore_unknown_options": True})(bundle_cmd)
    app.command("replay", epilog=REPLAY_EPILOG, context_settings={"ignore_unknown_options": True})(replay_cmd)


def _selection(args: list[str], trace_dir: Optional[Path], kernel: Optional[str]):
    """Resolve SCRIPT_OR_DIR [RUN] [SIGNATURE] as 'tltrace show' does (the one call to the resolver here)."""
    from ..history import runs

    for a in args:
        if a.startswith("--") or (a.startswith("-") and len(a) > 1 and not a[1:].isdigit()):
            raise fail(no_such_option(a), 2)
    if len(args) > 3:
        raise fail(f"too many arguments: {' '.join(args[3:])}; give at most SCRIPT_OR_DIR, RUN and SIGNATURE")
    target, run = runs.split_target(args[0] if args else None, args[1] if len(args) > 1 else None)
    return runs.open_selection(
        target, run, trace_dir_of(trace_dir), kernel, args[2] if len(args) > 2 else None
    )


def _failed_pass(run, manifest):  # noqa: ANN001, ANN202
    """Return the one pass a compile failed at (what `repro` without --pass reruns); else UsageError."""
    from ..errors import UsageError
    from ..history.resolve import script_words
    from ..proc.shell import command

    failed = [r for r in manifest.records if r.status == "failed"]
    top = [r for r in failed if r.depth == 0] or failed
    if len(top) == 1:
        return top[0]
    lister = command("tltrace", "show", *script_words(run.path.parent.parent), manifest.run_id)
    if not failed:
        from ..format.records import CUT_SHORT
        from ..history.texts import died_in

        if manifest.status in CUT_SHORT:  # a dead process cut it: no pass failed, one may have been running
            died = died_in(manifest, run.path)
            inside = f" inside pass {died[0]} ({died[1]}), which has no record" if died else ""
            raise UsageError(
                f"run {manifest.run_id} was cut short ({manifest.status}){inside}; no recorded pass failed: "
                f"name one with --pass NAME|INDEX ({lister} lists the {len(manifest.records)} it recorded)"
            )
        raise UsageError(
            f"run {manifest.run_id} failed at no pass; name one with --pass NAME|INDEX ({lister} lists its passes)"
        )
    names = ", ".join(f"{r.name} (#{r.index})" for r in top[:4])
    raise UsageError(f"run {manifest.run_id} failed at {len(top)} passes ({names}); name one with --pass")


def repro_cmd(
    args: Optional[list[str]] = selection_argument(),
    pass_: Optional[str] = pass_option(
        "The pass (NAME, phase/NAME, NAME#k, or an index) [default: the pass the compile failed at]."
    ),
    out: Optional[Path] = typer.Option(
        None,
        "-o",
        "--output",
        metavar="DIR",
        help="Directory to write [default: ./repro-<kernel>-<compile>-<NN>-<pass>]; '-' (or a pipe): a tar of it to stdout.",
    ),
    trace_dir: Optional[Path] = trace_dir_option(),
    kernel: Optional[str] = _KERNEL,
    force: bool = force_option(
        "Write into a DIR holding other files (only a repro's files are replaced), or replace a file or link at DIR."
    ),
    build: bool = typer.Option(
        False,
        "--build",
        help="Apply the recorded pass config as it is and allow the device compile as recorded "
        "(the run's flags reach a command line); said before it runs.",
    ),
) -> None:
    """Write a standalone repro.py that reruns one recorded pass, and run it once."""
    from ..history.runs import find_record
    from ..rerun import trust
    from ..rerun.make import check_out, default_dir, make_repro, plan_repro

    try:
        run = _selection(list(args or []), trace_dir, kernel).one("repro")
        manifest = run.require()
        record = find_record(manifest, pass_, run.path) if pass_ is not None else _failed_pass(run, manifest)
        dest = out or Path(default_dir(manifest, record))
        plan = plan_repro(run.path, manifest, build=build)  # no reproducer data, a refused target: one line
        check_out(dest, force=force)  # a refused DIR too
        if build:
            _say(f"--build: runs {plan.runs()}", err=True)
        if plan.not_applied:
            _say(trust.not_applied_line(plan.not_applied), err=True)
        _say(
            f"rerunning {record.name} (#{record.index}) of {manifest.kernel or manifest.script} ...", err=True
        )
        outcome = make_repro(run.path, manifest, record, dest, force=force, plan=plan)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    err = outcome.archive == "stdout"  # stdout carries the archive: the rest goes to stderr
    why = {
        "json": "its input loaded from input.json, the pass made by its name",
        "replay": "the compile replayed from its frontend IR up to and through the pass"
        + (
            " (rerun alone on its JSON input, it did not give the recorded result)"
            if outcome.reproduced
            else ""
        ),
    }[outcome.path]
    where = (
        f"a tar of {outcome.directory}/ to {outcome.archive}" if outcome.archive else f"{outcome.directory}/"
    )
    _say(f"wrote {where} (path: {outcome.path}: {why})", err=err)
    for line in outcome.lines:
        _say(line, err=err)
    typer.echo("reproduced" if outcome.reproduced else "not reproduced", err=err)
    _say(
        f"again: {outcome.command}   (needs only TileLang; --in-process or --pdb: in one process, for pdb)",
        err=err,
    )
    raise typer.Exit(0 if outcome.reproduced else 1)


def bundle_cmd(
    args: Optional[list[str]] = selection_argument(),
    out: Path = typer.Option(
        ..., "-o", "--output", metavar="FILE", help="The bundle file to write (a zip; '-': stdout)."
    ),
    trace_dir: Optional[Path] = trace_dir_option(),
    kernel: Optional[str] = _KERNEL,
    force: bool = force_option("Replace a file at FILE that tltrace did not write (or a link there)."),
    best: bool = typer.Option(
        False,
        "--best",
        help="Only the compile of the autotuner's best config, as the script noted it with tltrace.note_best(result).",
    ),
) -> None:
    """Pack an invocation's compiles (frontend IR, context, records, texts) into one file."""
    from ..rerun.best import pick_best
    from ..rerun.bundle import write_bundle

    try:
        sel = _selection(list(args or []), trace_dir, kernel)
        runs, note = list(sel.runs), None
        if best:
            run, note = pick_best(runs)
            runs = [run]
        runs, lost = _bundleable(runs)
        where, n, size = write_bundle(runs, out, force=force, best=note)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    if note is not None:
        m = runs[0].require()
        latency = f", latency {note['latency']:g}" if note.get("latency") is not None else ""
        typer.echo(
            f"best: {m.kernel or m.script} {m.signature or m.run_id} (config {json.dumps(note.get('config'))}{latency})",
            err=where == "stdout",
        )
    shown = "FILE" if where == "stdout" else where
    if lost:
        warn(
            f"left out {len(lost)} compile(s) cut short before their frontend IR was saved: "
            + ", ".join(f"{r.run_id} ({r.status})" for r in lost[:3])
        )
    cut = cut_short(runs, "their records stop where the process died")
    typer.echo(
        f"bundle: {where} ({n} compile(s), {size / 1024:.0f} KB{cut}); replay it with 'tltrace replay {shown}'",
        err=where == "stdout",
    )


def _bundleable(runs: list) -> tuple[list, list]:
    """Return (the compiles a bundle carries, those it leaves out): a compile a dead process cut short
    before its frontend IR was saved has nothing to replay; every other keeps its refusal (one line)."""
    from ..format.records import CUT_SHORT
    from ..rerun.make import ReproError, repro_files

    keep, lost = [], []
    for run in runs:
        if run.status in CUT_SHORT:
            try:
                repro_files(run.path, run.require())
            except ReproError:
                lost.append(run)
                continue
        keep.append(run)
    if lost and not keep:
        raise ReproError(
            f"nothing to bundle: the {len(lost)} compile(s) selected were cut short ({lost[0].status}) "
            "before their frontend IR was saved"
        )
    return keep, lost


_RUN_HELP = "With --launch: the invocation (as 'tltrace show' takes it) [default: -1]."
_LAUNCH_HELP = (
    "Rerun launch I of 'show --launches' on its inputs saved by 'run --save-inputs' and compare its "
    "outputs with the saved ones (needs --build --run; --trace-dir is then where the records are)."
)


def replay_cmd(
    file: Path = typer.Argument(
        ..., metavar="FILE", help="A bundle written by 'tltrace bundle'; with --launch, the SCRIPT_OR_DIR."
    ),
    run_spec: Optional[str] = typer.Argument(None, metavar="[RUN]", help=_RUN_HELP),
    launch: Optional[int] = typer.Option(None, "--launch", metavar="I", min=1, help=_LAUNCH_HELP),
    run_it: bool = typer.Option(
        False, "--run", help="With --launch: run the rebuilt kernel on the saved inputs."
    ),
    trace_dir: Optional[str] = typer.Option(
        None, "--trace-dir", metavar="DIR", help="Keep the replay's own records under DIR."
    ),
    build: bool = typer.Option(
        False,
        "--build",
        help="Apply the recorded pass config as it is and run the device compile as recorded "
        "(nvcc, NVRTC: the bundle's flags reach a command line); said before it runs.",
    ),
) -> None:
    """Recompile a bundle's compiles and check every pass and the source against the recording."""
    if launch is not None:
        _replay_launch(str(file), run_spec, launch, trace_dir, build, run_it)
        return
    if run_spec is not None or run_it:
        raise fail("RUN and --run go with --launch I (a bundle is replayed as FILE alone)", 2)
    from ..rerun import trust
    from ..rerun.bundle import check_trace_dir, installed_tilelang, plan_replay, read_bundle, replay

    try:
        kept = check_trace_dir(trace_dir) if trace_dir is not None else None
        bundle = read_bundle(file)
        plans = plan_replay(bundle, build=build)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    try:
        recorded, here = bundle.info.get("tilelang"), installed_tilelang()
        if recorded != here:
            _say(
                f"recorded with TileLang {recorded}, replaying on TileLang {here}: a comparison, not a reproduction"
            )
        labelled = [(c.label, plan) for c, plan in zip(bundle.compiles, plans)]
        if build:
            for label, plan in labelled:
                _say(f"--build: {_name(label)}: runs {plan.runs()}")
        notes = trust.gather(labelled)
        if notes.not_applied:
            _say(trust.not_applied_line(notes.not_applied))
        if notes.device_compile_skipped:
            _say(trust.skipped_compile_line(notes.device_compile_skipped))
        result = replay(bundle, kept, plans)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    finally:
        bundle.close()
    for c in result.compiles:
        name = _name(c.compile.label)
        if c.unloadable is not None:
            _say(f"{name}: not replayable here: {c.problem}")
            continue
        if c.problem is not None:
            _say(f"{name}: not replayed: {c.problem}")
            continue
        for line in c.edit_lines():
            _say(f"{name}: {line}")
        d = c.diff
        n = len(c.compile.manifest.records)
        if c.same_as_recorded:
            past = d.counts.get("only in B", 0)
            _say(
                f"{name}: same as far as the recording goes: its {n} recorded passes match; the recording "
                f"was cut short ({c.cut}), the {past} passes past it ran only in the replay"
            )
            continue
        if d.same:
            src = (
                " and the generated source"
                if any(r.status == "codegen" for r in c.compile.manifest.records)
                else ""
            )
            failed = next((r for r in c.compile.manifest.records if r.status == "failed"), None)
            also = f"; it fails in {failed.name} as recorded" if failed is not None else ""
            _say(f"{name}: same: {n} passes{src} match the recording{also}")
            continue
        first = d.first_difference
        counts = ", ".join(f"{v} {k}" for k, v in d.counts.items() if v and k != "same")
        cut = f"; the recording was cut short ({c.cut})" if c.cut else ""
        _say(f"{name}: differs ({counts}); first divergence: {_name(first.label)} ({first.status}){cut}")
        for line in c.detail:
            _say(f"  {line}")
    if result.trace_dir is not None:
        _say(f"replay records: {result.trace_dir}")
    raise typer.Exit(EXIT_UNLOADABLE if result.unloadable else 0 if result.same else 1)


def _replay_launch(
    target: str, run_spec: Optional[str], number: int, trace_dir: Optional[str], build: bool, run_it: bool
) -> None:
    """replay SCRIPT [RUN] --launch I --build --run: exit 0 the outputs are the saved ones, 1 not."""
    from ..format import launches as log_format
    from ..history.launches import read_launches
    from ..rerun import launch as replay

    try:
        replay.check_flags(build, run_it)
        sel = _selection(
            [target] + ([run_spec] if run_spec else []), Path(trace_dir) if trace_dir else None, None
        )
        inv = sel.invocation
        data = read_launches(inv.script_dir, inv.id, sel.runs, False)
        chosen = data.get(number)
        log = log_format.read(data.path)
        raw = sorted(log.launches, key=lambda x: x["t"])[number - 1]  # read_launches' numbering
        kernel_line = log.kernels.get((raw["pid"], raw["launch"])) or {}
        root, entry = replay.saved_entry(inv.script_dir, inv.id, raw["pid"], raw["t"], number)
        run = next((r for r in sel.runs if r.run_id == chosen.run_id), None)
        _say(
            f"--build --run: launch {number} ({_name(chosen.kernel)}): its compile rebuilt and run on the saved inputs"
        )
        result = replay.replay_launch(run, chosen, kernel_line, root, entry)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    if not result.source_same:
        _say(
            "note: the rebuilt kernel's generated source is not the recorded one (another TileLang, or config)"
        )
    for c in result.compared:
        _say(f"{c.what}: {'same' if c.same else 'DIFFERS'} ({c.detail})")
    n = len(result.compared)
    _say(
        f"launch {number}: {'same' if result.same else 'differs'}: {n} output(s) compared with the saved ones"
    )
    raise typer.Exit(0 if result.same else 1)


def _say(line: str, err: bool = False) -> None:
    """Print a line of data from a bundle or a run: control characters as `cat -v` shows them."""
    from ..render.visible import visible

    typer.echo(visible(line), err=err)


def _name(text: object) -> str:
    """A name from a bundle or a run (a kernel, a compile's label), on one line: a newline in it
    cannot start a line of tltrace's own."""
    from ..render.visible import visible

    return visible(str(text), one_line=True)
