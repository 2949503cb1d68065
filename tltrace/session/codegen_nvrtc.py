"""NVRTC's log for an edit that did not compile: the error at the working file's own line.

TileLang's nvrtc adapter (`tilelang.contrib.nvrtc.compile_cuda`, 0.1.10 to 0.1.15) raises
`RuntimeError(f"{code}\\nCompilation error:\\n{LOG or HINT}Options: {options}\\n")` and, unless
the kernel was compiled with `verbose=True`, the LOG is replaced by "Turn on verbose to see
the full compilation log." So when a compile that tltrace PATCHED fails on that path,
tltrace fetches the log itself: it compiles the very code and options the message carries
(the edit behind its `#line 1 "W"` directive) through NVRTC once more, in a child process
under a time limit, only to read the log. What TileLang compiled is never changed; a
failure here (no cuda-python, a time-out, an unexpected message) only means the log is
not shown, and the user's error stands as TileLang raised it.

The pure parts (`parse_failure`, `split_options`, `parse_log`, `explain`) run anywhere;
`fetch_log` needs cuda-python's NVRTC, as TileLang's nvrtc backend itself does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..proc import group as procgroup

_MARK = "\nCompilation error:\n"
_HINT = "Turn on verbose to see the full compilation log."
_OPTIONS = "Options: "
# TileLang puts these in front of the kernel source before NVRTC sees it (nvrtc.py).
_PREFIXES = ("#include <tl_templates/cuda/nvrtc_std.h>\n", '#include "cuda_device_runtime_api.h"\n')
PROGRAM_NAME = "tvm_kernels"  # the name TileLang gives the NVRTC program

# The child compile's limit: the log is a courtesy, the user's error is not held up for long.
LOG_TIMEOUT_S = 60.0
LOG_LINES = 40  # the most lines of the log shown under the one-line error

# "PATH(LINE): error: MESSAGE", "PATH(LINE): warning #177-D: ...", "PATH(LINE): catastrophic error: ..."
_DIAG = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<severity>catastrophic error|error|warning|remark)"
    r"(?: #[\w-]+)?: (?P<message>.*)$"
)
_LINE_DIRECTIVE = re.compile(r'^\s*#\s*line\s+\d+\s+"((?:[^"\\]|\\.)*)"\s*$')


@dataclass(frozen=True)
class NvrtcFailure:
    """What TileLang's nvrtc error message holds: the code it compiled, its options, the log if verbose."""

    code: str
    options: tuple[str, ...]
    log: str | None


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    severity: str
    message: str

    def at(self) -> str:
        """The diagnostic as a person (and an editor) reads it: `FILE:LINE: error: MESSAGE`."""
        return f"{self.file}:{self.line}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class Explanation:
    """What to tell the user: one line (`W:LINE: error: ...`), then the log."""

    headline: str
    log: str
    path: Path | None  # the working file the first error is in (None: not in an edited file)
    kernel: str | None = None

    def text(self, max_lines: int = LOG_LINES) -> str:
        """The headline, then the log with its errors first (each with the lines under it):
        TileLang's headers can put dozens of warnings before the one error of an edit."""
        blocks: list[list[str]] = []
        for ln in self.log.splitlines():
            if not ln.strip():
                continue
            if not blocks or _DIAG.match(ln.strip()):
                blocks.append([ln])
            else:
                blocks[-1].append(ln)
        errors = [b for b in blocks if _is_error(b[0])]
        lines = [ln for b in errors + [b for b in blocks if not _is_error(b[0])] for ln in b]
        shown = lines[:max_lines]
        if len(lines) > max_lines:
            shown.append(f"... ({len(lines) - max_lines} more lines of NVRTC's log)")
        return "\n".join([self.headline, *("    " + ln for ln in shown)])


def _is_error(line: str) -> bool:
    m = _DIAG.match(line.strip())
    return m is not None and m["severity"] != "warning" and m["severity"] != "remark"


# -- parsing (pure) ------------------------------------------------------------------------------


def failures_in(error: BaseException | None) -> Iterator[BaseException]:
    """The error, then what caused it, then its context (a wrapped NVRTC error is still found)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def parse_failure(message: str) -> NvrtcFailure | None:
    """Return the code, options and log of TileLang's NVRTC compile error (None: not one)."""
    head, mark, tail = message.rpartition(_MARK)
    if not mark:
        return None
    before_options, sep, options = tail.rpartition(_OPTIONS)
    if not sep:
        return None
    starts = [i for i in (head.find(p) for p in _PREFIXES) if i >= 0]
    code = head[min(starts) :] if starts else head
    body = before_options.replace("\0", "").strip()  # a verbose log keeps NVRTC's terminating NUL
    log = None if body.endswith(_HINT) or not body else body
    return NvrtcFailure(code=code, options=tuple(split_options(options.strip())), log=log)


def split_options(text: str) -> list[str]:
    """Split `' '.join(options)` back into options: a word not starting with '-' belongs to the one before.

    (An include path holding a space then stays one option; every NVRTC option starts with '-'.)
    """
    out: list[str] = []
    for word in text.split(" "):
        if not word:
            if out:
                out[-1] += " "
            continue
        if word.startswith("-") or not out:
            out.append(word)
        else:
            out[-1] += ("" if out[-1].endswith(" ") else " ") + word
    return [o.rstrip() for o in out if o.strip()]


def parse_log(log: str) -> list[Diagnostic]:
    """Return NVRTC's diagnostics, in the order of the log."""
    out = []
    for raw in log.splitlines():
        m = _DIAG.match(raw.strip())
        if m:
            out.append(Diagnostic(m["file"], int(m["line"]), m["severity"], m["message"].strip()))
    return out


def line_directive_files(code: str) -> list[str]:
    """The files the code's `#line N "FILE"` directives name (unescaped, in order)."""
    out = []
    for raw in code.splitlines():
        m = _LINE_DIRECTIVE.match(raw)
        if m:
            out.append(re.sub(r"\\(.)", r"\1", m[1]))
    return out


def _same_file(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


def explain(
    failure: NvrtcFailure,
    working: dict[str, str | None],
    fetch: Callable[[str, tuple[str, ...]], tuple[str | None, str]],
) -> Explanation | None:
    """Say where an edit that NVRTC refused went wrong.

    `working`: the edited working files this compile injected (path -> kernel). The failure
    must come from code carrying one of their `#line` directives; otherwise it is not an
    edit's failure and None is returned. `fetch(code, options)` returns (log, why-not) when
    TileLang's message holds no log.
    """
    named = [f for f in line_directive_files(failure.code) if any(_same_file(f, w) for w in working)]
    if not named:
        return None
    log, why = (failure.log, "") if failure.log is not None else fetch(failure.code, failure.options)
    edited = named[0]
    kernel = next((k for w, k in working.items() if _same_file(w, edited)), None)
    if log is None:
        return Explanation(
            f"the edit in {edited} did not compile under NVRTC; its log could not be read ({why}), "
            "and TileLang shows it only with verbose=True",
            "",
            Path(edited),
            kernel,
        )
    diags = parse_log(log)
    errors = [d for d in diags if d.severity != "warning" and d.severity != "remark"]
    mine = [d for d in errors if any(_same_file(d.file, w) for w in named)]
    if mine:
        first = mine[0]
        kernel = next((k for w, k in working.items() if _same_file(w, first.file)), kernel)
        return Explanation(first.at(), log, Path(first.file), kernel)
    first_any = errors[0].at() if errors else "no error line in NVRTC's log"
    return Explanation(f"the edit in {edited} did not compile under NVRTC: {first_any}", log, None, kernel)


# -- the child compile -----------------------------------------------------------------------------

_CHILD = r"""
import json
req = json.load(sys.stdin)
try:
    from cuda.bindings import nvrtc
except ImportError:
    from cuda import nvrtc
ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
err, prog = nvrtc.nvrtcCreateProgram(req["code"].encode(), req["name"].encode(), 0, [], [])
if err != ok:
    print(json.dumps({"error": f"nvrtcCreateProgram: {err}"}))
    sys.exit(0)
opts = [o.encode() for o in req["options"]]
compiled = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0] == ok
err, size = nvrtc.nvrtcGetProgramLogSize(prog)
log = b""
if err == ok:
    buf = bytes(size)
    if nvrtc.nvrtcGetProgramLog(prog, buf)[0] == ok:
        log = buf
nvrtc.nvrtcDestroyProgram(prog)
print(json.dumps({"compiled": compiled, "log": log.rstrip(b"\0").decode("utf-8", "replace")}))
"""


def child_command() -> list[str]:
    """Return the NVRTC child's command line: no current directory on its sys.path (proc/pychild.py)."""
    from ..proc.pychild import python_code

    return python_code(_CHILD)


def fetch_log(
    code: str,
    options: tuple[str, ...],
    timeout: float = LOG_TIMEOUT_S,
    command: list[str] | None = None,
) -> tuple[str | None, str]:
    """Compile `code` with `options` through NVRTC in a child process; return (log, why-not).

    The child runs in an empty temporary directory and is killed at `timeout`; this never
    raises. `command` replaces the child's command line (tests).
    """
    if not sys.executable and command is None:
        return None, "no Python executable to run NVRTC in"
    request = json.dumps({"code": code, "options": list(options), "name": PROGRAM_NAME})
    try:
        with tempfile.TemporaryDirectory(prefix="tltrace-nvrtc-") as tmp:
            done = procgroup.run(
                command or child_command(),
                input=request,
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=tmp,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return None, f"NVRTC took over {timeout:g}s"
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    reply = _last_json(done.stdout)
    if reply is None:
        last = (done.stderr or "").strip().splitlines()
        return None, (last[-1] if last else f"the NVRTC child exited {done.returncode}")
    if "error" in reply:
        return None, str(reply["error"])
    if reply.get("compiled"):
        return None, "NVRTC compiled it this time"
    return str(reply.get("log") or ""), ""


_FETCHED: dict[int, tuple[str | None, str]] = {}  # the last logs fetched, by (code, options)


def fetch_log_once(code: str, options: tuple[str, ...]) -> tuple[str | None, str]:
    """`fetch_log`, but a log this process fetched already (the live error's) is not fetched twice."""
    key = hash((code, options))
    if key not in _FETCHED:
        if len(_FETCHED) >= 4:
            _FETCHED.pop(next(iter(_FETCHED)))
        _FETCHED[key] = fetch_log(code, options)
    return _FETCHED[key]


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed((text or "").strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        return value if isinstance(value, dict) else None
    return None


# -- the session seam ------------------------------------------------------------------------------

_ATTR = "_tltrace_patched_sources"


def note_patched(session: Any, path: Path | str, kernel: str | None) -> None:
    """Remember that this compile injected the edit in `path` (only such compiles are explained)."""
    held = getattr(session, _ATTR, None)
    if held is None:
        held = {}
        setattr(session, _ATTR, held)
    held[str(path)] = kernel


def explain_failed_edit(
    session: Any,
    error: BaseException | None,
    fetch: Callable[[str, tuple[str, ...]], tuple[str | None, str]] | None = None,
) -> Explanation | None:
    """Return what to say when a compile that injected an edit failed in NVRTC (None: nothing). Never raises."""
    try:
        working = getattr(session, _ATTR, None)
        if not working or error is None or isinstance(error, KeyboardInterrupt):
            return None
        for exc in failures_in(error):
            failure = parse_failure(str(exc))
            if failure is not None:
                return explain(failure, dict(working), fetch or fetch_log_once)
    except Exception:
        return None
    return None
