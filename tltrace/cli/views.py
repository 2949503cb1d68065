"""The views of `tltrace show`, declared once: the flag that picks each, the flags it uses, and the
one check that a command line names one view and only flags that view uses.

`show` prints one view at a time. A flag no view of the command line uses is an error (exit 2,
one line naming the flags that conflict) before any record is read, never a flag dropped in
silence. Two view flags go together only where the table says so, and then the output carries
both: `--pass P --remarks` (the pass's diff, its remark under it), `--pass P --source-map` (that
pass's IR with its Python lines), `--format markdown --profile` (the summary's top passes are the
profile). docs/usage.md tells the same table; tests/test_show_views.py tries every pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

# Flags every view takes: where the records are and which compile (the positional SCRIPT, RUN and
# SIGNATURE narrow the same way).
EVERY_VIEW = frozenset({"--trace-dir", "--kernel"})

# --format json is --json; --format table is the default (neither JSON nor markdown).
JSON = frozenset({"--json", "--format json", "--format table"})

# Flags that never go together, whatever the view, and why.
EXCLUSIVE = {
    ("--json", "--format markdown"): "one output format",
    ("--json", "--format table"): "one output format",
    ("--at", "--thread"): "ask for one element or one thread",
}


@dataclass(frozen=True)
class View:
    """One view of `show`: `flag` picks it (None: the default), `uses` the other flags it reads."""

    name: str
    flag: str | None
    uses: frozenset[str]
    what: str


VIEWS = (
    View(
        "listing",
        None,
        JSON,
        "the invocations; with RUN one invocation's compiles or one compile's passes",
    ),
    View(
        "pass",
        "--pass",
        JSON | {"--context", "--ignore-whitespace", "--remarks"},
        "one pass's diff (with --remarks: its remark under it)",
    ),
    View(
        "source map",
        "--source-map",
        JSON | {"--pass"},
        "the generated source (or a pass's IR) with its Python lines",
    ),
    View("line", "--line", JSON, "what came of one Python line: passes, CUDA, PTX and SASS lines, mix"),
    View("cuda line", "--cuda-line", JSON, "the Python line behind a line of the generated device source"),
    View("ptx line", "--ptx-line", JSON, "the kernel.cu and Python lines behind a PTX line"),
    View("sass line", "--sass-line", JSON, "the kernel.cu and Python lines behind a SASS line"),
    View("remarks", "--remarks", JSON, "what every pass of a compile wrote to stderr"),
    View(
        "sanitizer", "--sanitizer", JSON, "compute-sanitizer's errors at their Python lines (run --sanitize)"
    ),
    View("report", "--html", JSON, "(re)write the HTML report and print its path"),
    View("facts", "--facts", JSON, "what the compiler made of each kernel"),
    View("layouts", "--layouts", JSON | {"--at", "--thread"}, "each fragment's and shared buffer's layout"),
    View("profile", "--profile", JSON | {"--top"}, "the slowest passes by name"),
    View(
        "hot",
        "--hot",
        JSON | {"--top"},
        "the Python lines that cost the most, from the Nsight Compute profile of 'run --ncu'",
    ),
    View(
        "launches",
        "--launches",
        JSON | {"--compare"},
        "each kernel launch (run --launches): line, grid, arguments; --compare I J: what differs",
    ),
    View(
        "count",
        "--count",
        JSON,
        "a regex's (or a known operation's) count after every pass, and the passes that changed it",
    ),
    View(
        "markdown",
        "--format markdown",
        frozenset({"--top", "--baseline", "--profile"}),
        "the CI summary: compiles and top passes (the profile), facts changed since --baseline",
    ),
)

VIEW_FLAGS = tuple(v.flag for v in VIEWS if v.flag is not None)


def option_name(flag: str) -> str:
    """Return the option a declared flag is spelled with: '--format markdown' is --format's."""
    return flag.split(" ", 1)[0]


def declared() -> set[str]:
    """Return every option the table knows (tests/test_show_views.py holds it to show's own)."""
    names = set(EVERY_VIEW) | {option_name(f) for f in VIEW_FLAGS}
    for v in VIEWS:
        names |= {option_name(f) for f in v.uses}
    return names


def given(ctx: Any) -> list[str]:
    """Return the flags the command line of `ctx` gave (not left at their defaults), as the table
    spells them, in the command's order."""
    out = []
    for p in ctx.command.params:
        opts = [o for o in getattr(p, "opts", ()) if o.startswith("--")]
        if not opts or getattr(p, "param_type_name", "") != "option":
            continue
        src = ctx.get_parameter_source(p.name)
        if src is None or src.name not in ("COMMANDLINE", "ENVIRONMENT"):
            continue
        flag = opts[0]
        if flag == "--format":
            flag = f"--format {ctx.params.get(p.name)}"
        out.append(flag)
    return out


def _spell(flag: str) -> str:
    return "--ignore-whitespace (-w)" if flag == "--ignore-whitespace" else flag


def _users(flag: str) -> list[str]:
    """The view flags of the views that use `flag` ('the listing' for the default view)."""
    return [v.flag or "the listing" for v in VIEWS if flag in v.uses]


def choose(flags: list[str]) -> View:
    """Return the one view `flags` (the given flags, see `given`) pick, or raise a UsageError (exit 2)
    of one line that names the flags that conflict."""
    have = set(flags)
    for (a, b), why in EXCLUSIVE.items():
        if a in have and b in have:
            raise UsageError(f"{a} and {b} exclude each other: {why}")
    views = [f for f in flags if f in VIEW_FLAGS]
    hosts = [v for v in VIEWS if (v.flag in have or (v.flag is None and not views))]
    for v in hosts:
        if all(f == v.flag or f in v.uses for f in views):
            break
    else:  # two views no view combines
        for i, a in enumerate(views):
            for b in views[i + 1 :]:
                if not _combined(a, b):
                    raise UsageError(
                        f"{a} and {b} are two views of show: ask for one at a time "
                        "('tltrace show --help' lists what goes together)"
                    )
        raise UsageError(f"{' '.join(views)}: no view of show takes these together")  # pragma: no cover
    for f in flags:
        if f != v.flag and f not in v.uses and f not in EVERY_VIEW:
            users = _users(f)
            goes = " or ".join(users) if users else "no view"
            if v.flag is None:  # the listing: the flag asks for a view the command line does not name
                raise UsageError(
                    f"{_spell(f)} goes with {goes}: add {'it' if len(users) == 1 else 'one'} or leave {f} out"
                )
            raise UsageError(f"{_spell(f)} goes with {goes}, not with {v.flag}")
    return v


def _combined(a: str, b: str) -> bool:
    """Return True when a view picked by `a` uses `b` or one picked by `b` uses `a`."""
    return any((v.flag == a and b in v.uses) or (v.flag == b and a in v.uses) for v in VIEWS)


def _flag_list(flags: frozenset[str]) -> str:
    shown = ["--json" if f in JSON else ("-w" if f == "--ignore-whitespace" else f) for f in sorted(flags)]
    return ", ".join(dict.fromkeys(shown)) or "-"


def epilog() -> str:
    """Return the table as `show --help` tells it (the man page has it from there)."""
    rows = [(v.flag or "(none)", _flag_list(v.uses)) for v in VIEWS]
    width = max(len(a) for a, _ in rows) + 2
    lines = [f"  {a.ljust(width)}{b}" for a, b in rows]
    return (
        "Views: show prints one at a time; the flag that picks each, and what else it takes\n"
        "(every view takes --kernel and --trace-dir; --json also as --format json):\n\n\b\n"
        + "\n".join(lines)
        + "\n\nTwo views go together only as --pass P --remarks (the diff, its remark under it),\n"
        "--pass P --source-map (that pass's IR with its Python lines) and --format markdown\n"
        "--profile (the summary's top passes are the profile). Any other flag a view does not\n"
        "take, or a second view, is one line naming both, exit 2, before a record is read.\n"
    )
