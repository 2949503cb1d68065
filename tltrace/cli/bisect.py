"""`tltrace bisect`: which pass makes my kernel wrong. Parse, call tltrace.bisect, print a line per step."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

from ..errors import TltraceError
from .shared import (
    SCRIPT_CONTEXT,
    args_argument,
    context_option,
    fail,
    json_option,
    no_such_option,
    script_args,
    script_argument,
    timeout_option,
    trace_dir_option,
    warn,
)

EXIT_NOT_WRONG = 6
EXIT_FLAKY = 8

BISECT_EPILOG = """\
Examples:

\b
  tltrace bisect gemm.py                         right = the script exits 0
  tltrace bisect gemm.py --m 256 --check 'python check.py out.npy'
  tltrace bisect --kernels '^gemm' job.py        skip passes only in gemm* compiles
  tltrace bisect --configs gemm.py               which pass configs, flipped, turn it

Each step runs SCRIPT once as 'tltrace run --quiet' does, in a child process,
with some top-level passes skipped through TileLang's instrumentation seam: each
step is an invocation that 'tltrace show' and 'diff-runs' read (its compiles
list what they skipped). Step 1 skips nothing and must be wrong. A probe (one
process that recompiles the recorded kernel, no script run) learns which of the
passes that changed the IR cannot be skipped alone (kept per pipeline in
TRACE_DIR/.bisect/learned.json); step 2 skips every other one. Then a binary
search over windows of them: about log2(candidates) steps; a window the probe
cannot compile costs no step, and a step that does not compile is skipped over,
as 'git bisect skip' does. CMD runs through the shell, as typed.

With --configs, each boolean pass config of the installed TileLang is flipped
alone (one step each, its outcome printed), then delta debugging narrows all
the flips to the smallest set that turns the outcome: wrong into right, or
right into wrong. Each step's line ends with the facts its flip changed against
step 1 ('facts: smem_dynamic 49152 -> 16384, num_stages 3 -> 1'), and so does
each flip in the summary; --json has them per step ("facts").

Exit status: 0 the first bad pass (or a set of config flips) was found; 1 the
bug is in a pass that cannot be skipped (or before the pipeline), untestable
steps left several suspects, or no config flip turns the outcome; 2 bad usage,
or the script does not compile with nothing skipped; 6 the script is right with
nothing skipped (nothing to bisect); 8 the script is flaky: a deciding step, run
again before the answer, gave another outcome. docs/bisect.md says more.

With --timeout S each step is 'tltrace run --timeout S': a step that hangs is
stopped after S seconds (its process group killed, the hung compile pass or
script line named), counted as --on-timeout says (bad by default), and the
bisect goes on; its step line says "timed out".
"""


def register(app: typer.Typer) -> None:
    """Add `bisect` to the app."""
    app.command("bisect", epilog=BISECT_EPILOG, context_settings=SCRIPT_CONTEXT)(bisect_cmd)


def bisect_cmd(
    ctx: typer.Context,
    script: Optional[str] = script_argument("The kernel script to run at each step."),
    args: Optional[list[str]] = args_argument(),
    check: Optional[str] = typer.Option(
        None,
        "--check",
        metavar="CMD",
        help="A shell command run after each step: exit 0 means right [default: the script's exit status].",
    ),
    kernels: Optional[str] = typer.Option(
        None, "--kernels", metavar="REGEX", help="Skip passes only in compiles of kernels matching REGEX."
    ),
    trace_dir: Optional[Path] = trace_dir_option(),
    as_json: bool = json_option("Print the result as JSON on stdout."),
    no_repro: bool = typer.Option(False, "--no-repro", help="Write no repro directory for the bad pass."),
    context: int = context_option("Context lines in the diff."),
    configs: bool = typer.Option(
        False,
        "--configs",
        help="Flip boolean pass configs instead of skipping passes: name the smallest set that turns "
        "the outcome (wrong into right, or right into wrong).",
    ),
    configs_matching: Optional[str] = typer.Option(
        None,
        "--configs-matching",
        metavar="REGEX",
        help="With --configs: flip only the configs whose name matches REGEX.",
    ),
    timeout: Optional[float] = timeout_option(
        "Stop a step after S seconds ('tltrace run --timeout'); the step line says 'timed out'."
    ),
    on_timeout: str = typer.Option(
        "bad",
        "--on-timeout",
        metavar="bad|good|skip",
        help="What a timed-out step counts as: bad (wrong), good (right) or skip (untestable).",
    ),
) -> None:
    """Find the TileLang pass (or, with --configs, the pass configs) that makes SCRIPT's kernel wrong."""
    from .. import bisect as core
    from ..config import compile_regex, trace_dir_of

    rest = script_args(ctx, script, args)
    if script is None:
        raise fail("missing SCRIPT; try 'tltrace bisect --help'")
    if script.startswith("-") and not Path(script).exists():
        raise fail(no_such_option(script))
    if not Path(script).is_file():
        raise fail(f"script {script} does not exist")
    try:
        compile_regex(kernels, "--kernels")
        compile_regex(configs_matching, "--configs-matching")
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    if configs_matching is not None and not configs:
        raise fail("--configs-matching needs --configs")
    if on_timeout not in ("bad", "good", "skip"):
        raise fail(f"--on-timeout takes bad, good or skip, not {on_timeout!r}")
    spec = core.Spec(
        script,
        tuple(rest),
        check,
        kernels,
        trace_dir_of(trace_dir),
        timeout=timeout,
        on_timeout=on_timeout,
    )
    if configs:
        _configs(spec, configs_matching, as_json)
    try:
        result = core.bisect(spec, _progress)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    repro_dir = None
    if result.kind == core.FOUND and not no_repro:
        repro_dir = _repro(result)
    if as_json:
        data = result.to_json()
        data["repro"] = str(repro_dir) if repro_dir else None
        typer.echo(json.dumps(data, indent=1))
    else:
        _report(result, context, repro_dir)
    raise typer.Exit(
        {core.FOUND: 0, core.NOT_WRONG: EXIT_NOT_WRONG, core.FLAKY: EXIT_FLAKY}.get(result.kind, 1)
    )


def _configs(spec, pattern: Optional[str], as_json: bool) -> None:  # noqa: ANN001
    from ..bisect import configs as cfg

    try:
        result = cfg.bisect_configs(spec, _flip, pattern)
    except TltraceError as exc:
        raise fail(str(exc), exc.exit_code) from None
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=1))
    else:
        _print_configs(result)
    raise typer.Exit({cfg.FOUND: 0, cfg.FLAKY: EXIT_FLAKY}.get(result.kind, 1))


def _print_configs(result) -> None:  # noqa: ANN001  # tltrace.bisect.configs.ConfigResult
    """Print a --configs answer: the flips that turn the outcome, then each flip alone with the facts it changed."""
    from ..bisect import configs as cfg

    n = len(result.steps)
    cost = f"{n} step(s), {result.seconds:.0f}s"
    turned = "wrong into right" if result.recorded == "wrong" else "right into wrong"
    if result.kind == cfg.FLAKY:
        (r,) = [r for r in result.rechecks if not r.agrees][:1]
        typer.echo(
            f"the script is flaky: step {r.step} was {r.outcome}, and run again (step {r.again}) "
            f"{r.again_outcome}; no config flip can be trusted ({cost})"
        )
    elif result.kind == cfg.NONE:
        typer.echo(
            f"no config flip turns the outcome ({result.recorded} with nothing flipped), alone or "
            f"all together ({cost})"
        )
    else:
        sets = ", ".join(f"{c}={result.values[c]}" for c in result.culprits)
        if result.single:
            typer.echo(
                f"each of these config flips alone turns {turned}: {sets}  ({cost})"
                if len(result.culprits) > 1
                else f"the config flip that turns {turned}: {sets}  ({cost})"
            )
        else:
            typer.echo(f"the smallest set of config flips that turns {turned}: {sets}  ({cost})")
        flipped = {c: result.values[c] for c in result.culprits}
        step = next((x for x in result.steps if x.configs == flipped and x.recheck_of is None), None)
        did = cfg.describe_facts(step.facts) if step is not None else None
        if step is not None and did and not (result.single and len(result.culprits) == 1):  # one flip: below
            typer.echo(f"  facts step {step.number} changed: {did}")
    typer.echo(f"  recorded run: {result.good_run}")
    typer.echo(f"each flip alone (the recorded run is {result.recorded}), and the facts it changed:")
    for name, outcome in result.flips.items():
        did = cfg.describe_facts(result.facts.get(name))
        typer.echo(f"  {name}={result.values[name]}: {outcome}" + (f"  ({did})" if did else ""))


def _flip(f) -> None:  # noqa: ANN001  # tltrace.bisect.configs.Flip
    from ..bisect.configs import describe_facts

    s = f.step
    did = describe_facts(s.facts)
    typer.echo(
        f"{_step_line(s)} in {s.seconds:.1f}s, {f.elapsed:.0f}s elapsed" + (f"; facts: {did}" if did else ""),
        err=True,
    )


def _progress(p) -> None:  # noqa: ANN001  # tltrace.bisect.Progress
    s = p.step
    left = f", ~{p.steps_left} step(s) to go" if p.steps_left else ""
    rng = f", {p.suspects} suspect(s) left" if p.suspects else ""
    typer.echo(f"{_step_line(s)} in {s.seconds:.1f}s{rng}, {p.elapsed:.0f}s elapsed{left}", err=True)


def _step_line(s) -> str:  # noqa: ANN001  # tltrace.bisect.steps.Step
    """Return a step line's start: `bisect: step 4 [skip 2: ...] untestable: why` (its times follow)."""
    extra = f" (exit {s.script_rc})" if s.check_rc is None else f" (check exit {s.check_rc})"
    if s.outcome == "untestable":
        extra = f": {s.why}" if s.why else ""
    if s.timed_out:
        extra = f" ({s.timed_out})"
    what = "probe (no script run)" if s.probe else f"step {s.number}"
    return f"bisect: {what} [{s.purpose}] {s.outcome}{extra}"


def _where(t) -> str:  # noqa: ANN001
    """A pass as every line names it: its record's `#` in the recorded run (what `--pass` takes), its
    name and phase; one numbering."""
    return f"#{t.index} {t.name} ({t.phase})" if t.index is not None else f"{t.name} ({t.phase}, no record)"


def _report(result, context: int, repro_dir: Optional[Path]) -> None:  # noqa: ANN001
    from .. import bisect as core

    n = len(result.steps)
    probed = (
        f", {result.probe_compiles} probe compile(s) in one process ({result.probe_seconds:.0f}s)"
        if result.probe_compiles
        else ""
    )
    cost = f"{n} step(s){probed}, {result.seconds:.0f}s" + (
        " (what is required was known from an earlier bisection)" if result.learned_from_cache else ""
    )
    if result.kind == core.NOT_WRONG:
        typer.echo(
            "the script is right with nothing skipped: nothing to bisect (is CMD the right check, "
            f"or is the bug elsewhere?); {cost}"
        )
        return
    if result.kind == core.UNSKIPPABLE:
        typer.echo(
            "the bug is in a pass that cannot be skipped, or before the pipeline: still wrong with "
            f"every skippable pass skipped ({cost})"
        )
        typer.echo("passes that were not skipped (required, or the first):")
        for t in result.required:
            typer.echo(f"  {_where(t)}")
        typer.echo("(and every pass that left the IR unchanged in the recorded run)")
        return
    if result.kind == core.FLAKY:
        (r,) = [r for r in result.rechecks if not r.agrees][:1]
        blamed = f"; the search alone would have blamed {_where(result.answer)}" if result.answer else ""
        typer.echo(
            f"the script is flaky: step {r.step} was {r.outcome}, and run again (step {r.again}) "
            f"{r.again_outcome}; no answer can be trusted{blamed} ({cost})"
        )
        return
    if result.kind == core.UNSETTLED:
        typer.echo(
            f"could not narrow to one pass: the steps between did not compile; the first bad pass "
            f"is one of ({cost}):"
        )
        for t in result.suspects:
            typer.echo(f"  {_where(t)}")
        return
    t = result.culprit
    typer.echo(f"first bad pass: {_where(t)} in kernel {result.kernel or '?'}  ({cost})")
    typer.echo(
        "  skipping it (and every candidate after it) gives a right answer; running it gives a wrong one"
    )
    typer.echo(f"  recorded run: {result.good_run}")
    if t.index is not None and result.good_run is not None:
        from ..history.loading import load_run
        from ..proc.shell import command
        from .show import show_pass

        typer.echo(f"  again: {command('tltrace', 'show', str(result.good_run), '--pass', str(t.index))}")
        sys.stdout.flush()
        try:
            show_pass(load_run(result.good_run, derive=True), str(t.index), context, False)
        except TltraceError as exc:
            warn(f"cannot show the pass's diff: {exc}")
    if repro_dir is not None:
        typer.echo(f"repro: {repro_dir}  (run: python {repro_dir / 'repro.py'})")


def _repro(result) -> Optional[Path]:  # noqa: ANN001
    """Write a `tltrace repro` directory for the bad pass next to the bisection's logs; None when it cannot."""
    from ..history.loading import load_run
    from ..history.runs import find_record
    from ..rerun.make import default_dir, make_repro

    t = result.culprit
    if t is None or t.index is None or result.good_run is None:
        return None
    try:
        run = load_run(result.good_run)
        manifest = run.require()
        record = find_record(manifest, str(t.index))
        logs = result.steps[0].log.parent if result.steps and result.steps[0].log else Path(".")
        dest = logs / default_dir(manifest, record)
        outcome = make_repro(run.path, manifest, record, dest)
    except TltraceError as exc:
        warn(f"no repro directory: {exc}")
        return None
    except Exception as exc:  # the rerun is a child process of TileLang: say it, keep the answer
        warn(f"no repro directory ({type(exc).__name__}: {exc})")
        return None
    return Path(outcome.directory)
