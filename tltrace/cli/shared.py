"""What the CLI modules share: the one-line error, the warning line, the options and arguments
several commands take (--trace-dir, --kernel, --json, SCRIPT [ARGS]...), the console, and the
parsing of tltrace options given right after SCRIPT.

Only the CLI prints; these are its common pieces, so that every command says
errors the same way and declares each shared option once (its help says what the command does).
"""

from __future__ import annotations

import os
from typing import Any

import typer
from typer.core import TyperCommand

from ..config import DEFAULT_TRACE_DIR
from ..errors import EXIT_USAGE

TRACE_DIR_HELP = f"Trace directory [default: TL_LOWER_TRACE_DIR, else {DEFAULT_TRACE_DIR}]."


# The options and arguments several commands take, one definition each: the name, short form,
# metavar, default and range are the same everywhere; the help says what the command does with it.
def trace_dir_option(help: str = TRACE_DIR_HELP) -> Any:
    """Return the --trace-dir option (one definition for every command)."""
    return typer.Option(None, "--trace-dir", metavar="DIR", help=help)


def kernel_option(help: str = "Only compiles of kernel NAME.") -> Any:
    return typer.Option(None, "--kernel", metavar="NAME", help=help)


def json_option(help: str = "Print JSON instead of tables.") -> Any:
    return typer.Option(False, "--json", help=help)


def context_option(help: str = "Context lines in diffs.") -> Any:
    return typer.Option(3, "--context", metavar="N", min=0, help=help)


def ignore_whitespace_option(help: str) -> Any:
    return typer.Option(False, "--ignore-whitespace", "-w", help=help)


def pass_option(help: str) -> Any:
    return typer.Option(None, "--pass", metavar="NAME|INDEX", help=help)


def count_option(help: str) -> Any:
    return typer.Option(None, "--count", metavar="PATTERN", help=help)


def force_option(help: str) -> Any:
    return typer.Option(False, "--force", help=help)


def verbose_option(help: str) -> Any:
    return typer.Option(False, "--verbose", "-v", help=help)


def timeout_option(help: str) -> Any:
    return typer.Option(None, "--timeout", metavar="S", min=0.001, help=help)


def codegen_output_option(help: str = "Device working file (host: PATH with _host).") -> Any:
    return typer.Option(None, "--codegen-output", metavar="PATH", help=help)


# A command that runs a script (run, watch, bisect): what follows SCRIPT is the script's, options
# included (`script_args` takes back tltrace's own options given right after SCRIPT).
SCRIPT_CONTEXT = {"allow_interspersed_args": False, "ignore_unknown_options": True, "allow_extra_args": True}


def script_argument(help: str) -> Any:
    """Return the SCRIPT argument of the commands that run a script (run, watch, bisect)."""
    return typer.Argument(None, metavar="SCRIPT", help=help, show_default=False)


def args_argument() -> Any:
    """Return the script's own [ARGS]... after SCRIPT (`script_args` takes back tltrace's options)."""
    return typer.Argument(None, metavar="[ARGS]...", help="Arguments for the script.", show_default=False)


def selection_argument(
    help: str = "A script, script/trace/run directory; then a RUN; then a signature prefix.",
) -> Any:
    """Return the [SCRIPT_OR_DIR] [RUN] [SIGNATURE] words that select recorded compiles (history/runs.py)."""
    return typer.Argument(None, metavar="[SCRIPT_OR_DIR] [RUN] [SIGNATURE]", help=help, show_default=False)


def error_line(message: str) -> str:
    """Return the one line an error prints: `tltrace: error: <first line of message>`."""
    from ..render.visible import visible

    first = str(message).strip().splitlines()[0] if str(message).strip() else "unknown error"
    return f"tltrace: error: {visible(first)}"


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print one error line on stderr and return the Exit to raise."""
    typer.echo(error_line(message), err=True)
    return typer.Exit(code)


def no_such_option(word: str) -> str:
    """Return the message for an unknown option of the running command: the closest options (did
    you mean) and the --help to try."""
    import difflib

    from typer._click.globals import get_current_context  # typer's own click

    name = word.split("=", 1)[0]
    ctx = get_current_context(silent=True)
    opts: list[str] = []
    path = "tltrace"
    if ctx is not None:
        path = ctx.command_path
        for p in ctx.command.get_params(ctx):
            opts += [o for o in (*p.opts, *p.secondary_opts) if o.startswith("--") and o != "--help"]
    close = difflib.get_close_matches(name, opts, n=2, cutoff=0.6)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return f"no such option: {name}{hint}; try '{path} --help'"


def cut_short(runs: Any, what: str) -> str:
    """Return '; N cut short (interrupted, ...): <what>' for the compiles of `runs` (history Runs) a dead
    process left unfinished (a kill -9), else '': the clause every writer of a selection adds to its line."""
    from ..format.records import CUT_SHORT

    cut = [r.status for r in runs if r.status in CUT_SHORT]
    return f"; {len(cut)} cut short ({', '.join(sorted(set(cut)))}): {what}" if cut else ""


def warn(message: str) -> None:
    from ..render.visible import visible

    typer.echo(f"tltrace: warning: {visible(str(message))}", err=True)


def console():
    """Return the Rich console the commands print with (wide when not a terminal: no cut lines)."""
    from ..render.visible import VisibleConsole as Console  # control characters shown as ^[, never sent

    c = Console(highlight=False, soft_wrap=False)
    if not c.is_terminal:
        c = Console(highlight=False, soft_wrap=False, width=max(c.width, 240))
    return c


# -- options after SCRIPT: `tltrace run|watch SCRIPT --mode html ARGS` --------------------------


def script_args(ctx, script: str | None, args: list[str] | None) -> list[str]:
    """Return the script's own arguments; tltrace options right after SCRIPT are parsed into ctx.params.

    The first token tltrace does not know starts the script's arguments; a `--` right
    after SCRIPT (and its options) is dropped, any later one goes to the script.
    """
    rest = list(args or [])
    if script is not None and rest:
        extra, rest = _split_leading_options(ctx, rest)
        if extra:
            _reparse(ctx, extra)
    return rest[1:] if rest[:1] == ["--"] else rest


def _option_table(command) -> dict[str, bool]:
    """Map each option spelling of `command` to whether it takes a value."""
    table: dict[str, bool] = {}
    for param in command.params:
        if getattr(param, "param_type_name", None) == "option":
            takes = not (param.is_flag or param.count)
            for opt in (*param.opts, *param.secondary_opts):
                table[opt] = takes
    return table


def without_option(command, args: list[str], name: str) -> list[str]:
    """Return the command's own arguments `args` (SCRIPT and the script's arguments included) without the
    option `name` (as `--name` or `--name=VALUE`) wherever tltrace would read it: before SCRIPT, or right
    after it. The script's own arguments keep theirs."""
    table = _option_table(command)
    out: list[str] = []
    script_seen = False
    i = 0
    while i < len(args):
        tok = args[i]
        opt = tok.split("=", 1)[0]
        if (
            tok == "--"
            or (tok.startswith("-") and opt not in table)
            or (script_seen and not tok.startswith("-"))
        ):
            return out + args[i:]
        if not tok.startswith("-"):
            script_seen = True
            out.append(tok)
        else:
            value = args[i + 1 : i + 2] if table[opt] and "=" not in tok else []
            if opt != name:
                out += [tok, *value]
            i += len(value)
        i += 1
    return out


def _split_leading_options(ctx, tokens: list[str]) -> tuple[list[str], list[str]]:
    """Split the tokens after SCRIPT into tltrace options right after it and the script's args."""
    table = _option_table(ctx.command)
    taken: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "--":
            return taken, tokens[i:]
        name = tok.split("=", 1)[0] if tok.startswith("--") else tok
        if name not in table or name in ("-h", "--help"):
            break
        if table[name] and "=" not in tok:
            if i + 1 >= len(tokens):
                raise fail(f"option {name} needs a value")
            taken += [tok, tokens[i + 1]]
            i += 2
        else:
            taken.append(tok)
            i += 1
    return taken, tokens[i:]


def _reparse(ctx, tokens: list[str]) -> None:
    """Parse options found after SCRIPT and let them override what came before."""
    try:
        sub = ctx.command.make_context(ctx.info_name, [*tokens], parent=ctx.parent, resilient_parsing=False)
    except Exception as exc:  # click's UsageError (typer vendors its own click)
        msg = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        raise fail(msg) from None
    for name, value in sub.params.items():
        source = sub.get_parameter_source(name)
        if getattr(source, "name", "") == "COMMANDLINE" and name not in ("script", "args"):
            ctx.params[name] = value


# -- arguments that look like short options: `tltrace export -dash.py` -------------------------
class UsageCommand(TyperCommand):
    """A command whose usage line shows a bracketed metavar as written: `[SCRIPT] [ARGS]...`,
    `[SCRIPT_OR_DIR] [RUN] [SIGNATURE]`, not typer's `[[ARGS]...]...`."""

    def collect_usage_pieces(self, ctx) -> list[str]:  # noqa: ANN001
        import re

        out = []
        for piece in super().collect_usage_pieces(ctx):
            m = re.fullmatch(r"\[(\[.*)\](?:\.\.\.)?", piece)
            out.append(m.group(1) if m else piece)
        return out


class PathArgsCommand(UsageCommand):
    """A command whose SCRIPT/DIR arguments may start with '-' when a file of that name exists.

    Click reads `-dash.py` as the short options -d -a -s -h ..., and -h prints the help. An
    argument that is not an option of the command but names an existing path is passed on
    as `./-dash.py`, the same file.
    """

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, dash_paths(self, list(args)))


class OptionalValueCommand(UsageCommand):
    """A command whose flags in `optional_values` also take `--flag=VALUE` (click's typer has no such option).

    `--remarks=vectorize` (`--ncu=SECTIONS`) among the command's own options (not the script's arguments after
    SCRIPT) becomes `--remarks --remarks-value vectorize` before click parses it.
    """

    optional_values = {
        "--remarks": "--remarks-value",
        "--ncu": "--ncu-value",
        "--sanitize": "--sanitize-value",
        "--save-inputs": "--save-inputs-value",
    }

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self.spread(list(args)))

    def spread(self, args: list[str]) -> list[str]:
        table = _option_table(self)
        out: list[str] = []
        i = 0
        while i < len(args):
            tok = args[i]
            if tok == "--" or not tok.startswith("-"):
                return out + args[i:]  # SCRIPT, or the script's own arguments: never rewritten
            name, eq, value = tok.partition("=")
            hidden = self.optional_values.get(name)
            if hidden is not None and eq:
                out += [name, hidden, value]
            else:
                out.append(tok)
                if table.get(name) and not eq and i + 1 < len(args):
                    out.append(args[i + 1])
                    i += 1
            i += 1
        return out


def dash_paths(command, args: list[str]) -> list[str]:
    """Return `args` with each existing path spelled like a short option cluster made `./NAME`."""
    table = _option_table(command)
    out: list[str] = []
    takes_value = False
    for tok in args:
        if (
            not takes_value
            and tok.startswith("-")
            and not tok.startswith("--")
            and len(tok) > 1
            and not tok[1:].isdigit()
            and tok not in table
            and os.path.lexists(tok)
        ):
            tok = os.path.join(".", tok)
        takes_value = not takes_value and table.get(tok, False)
        out.append(tok)
    return out
