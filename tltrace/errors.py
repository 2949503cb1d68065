"""Domain errors. The core raises these; only cli/ turns them into messages and exit codes.

Exit codes (documented in README and man page):
  0  success (or the script's own exit code under `tltrace run`)
  1  the traced script raised; diff-runs, replay: the runs differ; check: a check fails;
     repro: not reproduced; bisect: the bug is in a pass that cannot be skipped
  2  usage error: bad option, bad value (run --sanitize=TOOL: not memcheck, racecheck, synccheck
     or initcheck), nothing to act on (show: two views at once, or a
     flag the view does not take; show, diff-runs --count: a pattern that is not a regex;
     replay: a --trace-dir that is not a directory; check: a bad expression or directive, an
     unknown fact, a regex past --match-timeout)
  3  a file or record problem: missing/damaged run records, unreadable trace dir (show --hot: a
     compile no `run --ncu` profiled; show
     --layouts --at/--thread: a recorded layout beyond the limits of layouts/check.py); replay,
     repro: a damaged bundle (flipped byte, zip bomb, wrong types, a frontend IR that does
     not load) or a refused context or target (rerun/trust.py)
  4  merge conflicts left in a working file (resolve-conflict)
  5  replay, repro: the recorded IR does not load on this TileLang (an operator or node
     type the recording's release has and this one lacks); repro: the replayed compile
     does not reach the recorded pass
  6  bisect: the script is right with nothing skipped (nothing to bisect)
  7  check: nothing to check: the selection holds no compile (the script compiled nothing,
     a --kernel or signature that matched none), or no compile selected has the --match stage
  8  bisect: the script is flaky (a deciding step, run again, gave another outcome)
  124  run --timeout: the script ran past S seconds (as timeout(1)); its process group was stopped
  130  tltrace run: interrupted (Ctrl+C), also inside a compiler pass; bisect: Ctrl+C
  129  any command ended by SIGHUP (128 + the signal, as a shell says); run: recorded interrupted
  143  any command ended by SIGTERM; run: recorded interrupted
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_SCRIPT_FAILED = 1
EXIT_USAGE = 2
EXIT_RECORDS = 3
EXIT_CONFLICT = 4
EXIT_UNLOADABLE = 5
EXIT_NOTHING = 7  # check: nothing to check (no compile selected, a stage no compile has)
EXIT_TIMEOUT = 124  # run --timeout S: stopped after S seconds, as timeout(1) says
EXIT_INTERRUPTED = 130  # Ctrl+C under `tltrace run`, as a shell reports SIGINT
EXIT_HANGUP = 129  # SIGHUP (procgroup.exit_code: 128 + the signal)
EXIT_TERMINATED = 143  # SIGTERM


class TltraceError(Exception):
    """An error a person can act on: one line, and an exit code."""

    exit_code = EXIT_USAGE


class UsageError(TltraceError):
    exit_code = EXIT_USAGE


class NothingSelected(UsageError):
    """A --kernel or signature that selects no compile: a usage error (2), `check`'s nothing to check (7)."""


class NothingToCheck(TltraceError):
    """`check` found nothing to check: no compile selected, or a --match stage no compile has (exit 7)."""

    exit_code = EXIT_NOTHING


class TargetNotFound(TltraceError):
    """The script or module to run does not exist."""

    exit_code = EXIT_USAGE


class RecordsError(TltraceError):
    """Run records are missing or damaged."""

    exit_code = EXIT_RECORDS
