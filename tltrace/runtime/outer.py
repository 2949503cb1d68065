"""Run the traced script underneath an outside tool (ncu, compute-sanitizer), and find what it recorded.

Generic: the tool is a command-line prefix and an environment, nothing else.
`tltrace run --ncu ...` (cli/hot.py) calls (and `run --sanitize`, runtime/sanitize.py, the same with
compute-sanitizer's prefix, the command line without --sanitize as `inner_argv`, and its environment)

    outer.run_under(prefix, outer.again(), script_dir, env=outer.inner_env("ncu"))

which runs `prefix + argv` (`again()`: this same `tltrace` command line, run by this Python)
with `TLTRACE_UNDER=ncu` set, in a process group of its own
(proc/group.py: Ctrl+C, SIGTERM take the whole group down) and returns an `Outcome`: the exit
status (the tool's, which ncu and compute-sanitizer make the script's) and the run
directories the inner `tltrace run` wrote under `script_dir` (the compiles of the invocation
it made, found as the run directories that were not there before; `invocation` is their
invocation id). The inner command sees the variable (`is_inner("ncu")`, which takes it out of
the environment so that the script's own children do not see it) and runs as a plain `tltrace
run`: the tool's flag is not acted on twice. The tool's own report or log is the caller's
business: its prefix names them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..format.layout import MANIFEST, RUN_RECORDS
from ..proc import group as procgroup


@dataclass(frozen=True)
class Outcome:
    code: int  # the exit status of the tool (the script's, for ncu and compute-sanitizer)
    runs: tuple[Path, ...]  # the run directories the inner run wrote, oldest first
    invocation: str | None  # their invocation id (None: no compile was traced)


UNDER_ENV = "TLTRACE_UNDER"  # set in the inner command: the tool it runs under


def again() -> list[str]:
    """Return the command line that runs this `tltrace` command again, with this Python."""
    return [sys.executable, "-m", "tltrace", *sys.argv[1:]]


def inner_env(tool: str) -> dict[str, str]:
    """Return the environment that tells the inner command it runs under `tool`."""
    return {UNDER_ENV: tool}


def is_inner(tool: str) -> bool:
    """In the inner command: True when it runs under `tool` (the variable is then taken out)."""
    if os.environ.get(UNDER_ENV) != tool:
        return False
    del os.environ[UNDER_ENV]
    return True


def run_dirs(script_dir: Path) -> set[Path]:
    """The run directories under `script_dir` now (those with a manifest)."""
    try:
        return {p for p in (script_dir / RUN_RECORDS).iterdir() if (p / MANIFEST).is_file()}
    except OSError:
        return set()


def _invocation_of(run_dir: Path) -> str | None:
    try:
        return json.loads((run_dir / MANIFEST).read_text()).get("invocation")
    except (OSError, ValueError, AttributeError):
        return None


def run_under(
    prefix: Sequence[str], inner_argv: Sequence[str], script_dir: Path, env: dict[str, str] | None = None
) -> Outcome:
    """Run `prefix + inner_argv` and return its status and the runs it recorded under `script_dir`.

    KeyboardInterrupt and procgroup.Terminated pass through once the group is down.
    """
    before = run_dirs(script_dir)
    full_env = dict(os.environ, **(env or {}))
    with procgroup.started([*prefix, *inner_argv], env=full_env) as proc:
        code = proc.wait()
    return found(script_dir, before, code)


def found(script_dir: Path, before: set[Path], code: int) -> Outcome:
    """The outcome of a command that exited with `code`: the runs under `script_dir` not in `before`,
    those of the invocation most of them belong to."""
    new = sorted(run_dirs(script_dir) - before, key=lambda p: p.name)
    invocations = [i for i in (_invocation_of(p) for p in new) if i]
    inv = max(set(invocations), key=invocations.count) if invocations else None
    runs = tuple(p for p in new if _invocation_of(p) == inv) if inv else tuple(new)
    return Outcome(code, runs, inv)
