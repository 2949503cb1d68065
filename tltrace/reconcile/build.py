"""The backend build as a recorder: the edit that was compiled, and the compiler's diagnostics when the build failed.

After codegen, TileLang's execution backend builds the source (cython: `libgen.compile_lib`
runs g++ or nvcc; nvrtc: NVRTC). Two things of that stage are lost without this recorder:

- the source TileLang *generated*, when the one compiled was the user's edit of a working
  file (the codegen record's after text is the compiled one): kept as a stored text, with
  the edit's +/- lines against it (the manifest's `build.edits`);
- why a build failed. g++ writes its diagnostics to the process's stderr, and TileLang's
  error keeps only the command line (with a temporary file) and the source. When the
  compile ends with TileLang's `Compilation Failed! [command]` error, the worker builds the
  very source again with the very command, in a temporary directory under a time limit,
  only to read the compiler's diagnostics; an NVRTC failure gives its log (verbose) or it
  is fetched as session/codegen_nvrtc.py does. The diagnostics are kept errors first, at
  the working file's lines (the edit carries `#line 1 "W"`; a source built as generated
  is mapped to its working file, else to the run's stored text). What TileLang built is
  never changed; a failure here only means the diagnostics say why they are missing. A build
  that failed without an edit is rebuilt at most `UNEDITED_REBUILDS` times per process (a
  sweep of bad configs must not pay a second compile each).

The field's shape and its readers are format/build.py's.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..diff import count_changes
from ..format import build as fb
from ..format.records import CODEGEN, ERROR, FAILED, RunManifest
from ..proc import group as procgroup
from ..session import codegen_nvrtc as cgn
from ..session.recorder import CodegenCall, PassEvent, Recorder

BUILD_TIMEOUT_S = 60.0  # the rebuild is a courtesy: the user's error is not held up for long
LOG_LINES = 200
LOG_CHARS = 32_000
MAX_DIAGNOSTICS = 100

_MARK = "Compilation Failed! "
# GCC/Clang: "FILE:LINE:COL: error: MESSAGE"; NVCC/NVRTC/EDG: "FILE(LINE): error: MESSAGE".
_GCC = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?:(?P<col>\d+):)? (?P<severity>fatal error|error|warning|note): (?P<message>.*)$"
)
_EDG = re.compile(
    r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<severity>catastrophic error|error|warning|remark)"
    r"(?: #[\w-]+)?: (?P<message>.*)$"
)


@dataclass(frozen=True)
class FailedBuild:
    """What TileLang's `Compilation Failed!` error holds: the command, the output it captured, the source."""

    command: tuple[str, ...]
    captured: str
    code: str


def parse_failed_build(message: str) -> FailedBuild | None:
    """Return the command, captured output and source of TileLang's build error (None: not one).

    TileLang (libgen.compile_lib, 0.1.x) raises `f"Compilation Failed! {command}\\n{captured}\\n{lib_code}"`
    with `command` a Python list's repr; `captured` is empty unless the build's output was piped.
    """
    at = message.find(_MARK)
    if at < 0:
        return None
    first, _, rest = message[at + len(_MARK) :].partition("\n")
    try:
        command = ast.literal_eval(first.strip())
    except (ValueError, SyntaxError):
        return None
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        return None
    if rest.startswith("\n"):
        return FailedBuild(tuple(command), "", rest[1:])
    # Output was captured (hip, Windows): it cannot be told from the source reliably; keep it all as output.
    return FailedBuild(tuple(command), rest, "")


def parse_diagnostics(log: str) -> list[dict[str, Any]]:
    """Return the compiler's diagnostics in the log's order (file, line, column, severity, message)."""
    out: list[dict[str, Any]] = []
    for raw in log.splitlines():
        m = _diag(raw)
        if not m:
            continue
        col = m.groupdict().get("col")
        out.append(
            {
                "file": m["file"],
                "line": int(m["line"]),
                "column": int(col) if col else None,
                "severity": m["severity"],
                "message": m["message"].strip(),
            }
        )
    return out


def _diag(line: str) -> re.Match[str] | None:
    return _GCC.match(line.strip()) or _EDG.match(line.strip())


def errors_first(log: str) -> str:
    """The log with each error's block (its line and the lines under it) before the others', each under
    the context g++ gave it ("FILE: In function ...", "In file included from ..."), said once where it changes."""
    blocks: list[tuple[tuple[str, ...], list[str]]] = []  # (context, lines)
    context: list[str] = []
    fresh = False  # the context lines seen since the last diagnostic (a new context starts)
    for ln in log.splitlines():
        if not ln.strip():
            continue
        if _diag(ln):
            blocks.append((tuple(context), [ln]))
            fresh = False
        elif ln.startswith("In file included from") or re.match(r"^\S.*: In ", ln) or not blocks:
            context = [ln] if not fresh else [*context, ln]
            fresh = True
        else:
            blocks[-1][1].append(ln)

    def err(b: list[str]) -> bool:
        m = _diag(b[0])
        return m is not None and m["severity"] in fb.ERROR_SEVERITIES

    ordered = [b for b in blocks if err(b[1])] + [b for b in blocks if not err(b[1])]
    out: list[str] = []
    said: tuple[str, ...] = ()
    for ctx, lines in ordered:
        if ctx != said:
            out += ctx
            said = ctx
        out += lines
    if not blocks:
        out = context
    return "\n".join(out)


def _cut(log: str) -> str:
    lines = log.splitlines()
    out = "\n".join(lines[:LOG_LINES])
    if len(lines) > LOG_LINES:
        out += f"\n... ({len(lines) - LOG_LINES} more lines)"
    return out if len(out) <= LOG_CHARS else out[:LOG_CHARS] + "\n... (cut)"


def rebuild(failure: FailedBuild, timeout: float = BUILD_TIMEOUT_S) -> tuple[str | None, str, str | None]:
    """Build the failed source again with its command, in a temporary directory; return (log, why-not, source path).

    The source and the output go to files of our own (the command's `-o OUT` and the source
    TileLang named beside it, `OUT` with the source's suffix); the path of our source copy is
    returned so that diagnostics naming it can be mapped. Never raises.
    """
    cmd = list(failure.command)
    try:
        o = cmd.index("-o")
        out = cmd[o + 1]
    except (ValueError, IndexError):
        return None, "no -o in the build command", None
    stem, _ = os.path.splitext(out)
    src_at = next((i for i, c in enumerate(cmd) if i != o + 1 and os.path.splitext(c)[0] == stem), None)
    if src_at is None or not failure.code:
        return None, "the build command names no source file tltrace can rebuild", None
    suffix = os.path.splitext(cmd[src_at])[1]
    try:
        with tempfile.TemporaryDirectory(prefix="tltrace-build-") as tmp:
            src = os.path.join(tmp, "source" + suffix)
            Path(src).write_text(failure.code, encoding="utf-8")
            cmd[src_at] = src
            cmd[o + 1] = os.path.join(tmp, "out" + os.path.splitext(out)[1])
            done = procgroup.run(
                cmd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                cwd=tmp,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return None, f"rebuilding took over {timeout:g}s", None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}", None
    log = (done.stderr or "") + (done.stdout or "")
    if done.returncode == 0:
        return None, "it built when rebuilt", None
    return log, "", src


# A build that fails without an edit (an autotuner's bad config, a codegen bug) is rebuilt only this
# many times per process: each rebuild costs a compile, and a sweep can fail many.
UNEDITED_REBUILDS = 4
_rebuilds = [0]
_rebuilds_lock = threading.Lock()


def _take_rebuild() -> bool:
    with _rebuilds_lock:
        if _rebuilds[0] >= UNEDITED_REBUILDS:
            return False
        _rebuilds[0] += 1
        return True


class BuildRecorder(Recorder):
    """The manifest's `build` (format/build.py): edits compiled in place of the generated source; a failed build's diagnostics."""

    name = "the build record"
    field = fb.FIELD

    def __init__(self, timeout: float = BUILD_TIMEOUT_S) -> None:
        self.timeout = timeout
        self._store: Any = None
        self._pending: list[CodegenCall] = []  # codegen calls not yet recorded (compiling thread -> worker)
        self._compiled: list[tuple[str, str | None, str | None]] = []  # (compiled, working file, run file)
        self._edits: list[dict[str, Any]] = []
        self._failure: dict[str, Any] | None = None

    def codegen(self, event: PassEvent, call: CodegenCall) -> Any:
        if call.compiled:
            self._pending.append(call)
        return None

    def attach(self, store: Any) -> None:
        self._store = store

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        if record.status != CODEGEN or not self._pending:
            return
        call = next((c for c in self._pending if c.compiled == after), None)
        if call is None:
            return
        self._pending.remove(call)
        run_file = (
            str(Path(self._store.run_dir) / record.after_file)
            if self._store is not None and record.after_file
            else None
        )
        self._compiled.append((call.compiled, call.working_file, run_file))
        if call.compiled == call.generated or not call.generated or self._store is None:
            return
        rel = _generated_file(record)
        digest = self._store.put_text(call.generated)
        added, removed = count_changes(call.generated, call.compiled)
        self._edits.append(
            {
                "record": record.index,
                "role": record.role,
                "working_file": call.working_file,
                "generated_file": rel,
                "generated_hash": digest,
                "compiled": record.reconcile == "PATCHED",  # NOTE: kept for the diff view, not compiled
                "added": added,
                "removed": removed,
            }
        )

    def ended(self, manifest: RunManifest) -> None:
        if manifest.status != ERROR or not manifest.error:
            return
        if any(r.status == FAILED for r in manifest.records):
            return  # a pass failed: not the build
        if not any(r.status == CODEGEN for r in manifest.records):
            return
        self._failure = self._diagnose(manifest.error)

    def _diagnose(self, message: str) -> dict[str, Any] | None:
        failure = parse_failed_build(message)
        if failure is not None:
            out: dict[str, Any] = {"status": fb.FAILED, "compiler": os.path.basename(failure.command[0])}
            log: str | None
            src: str | None
            if failure.captured.strip():
                log, why, src = failure.captured, "", None
            elif not self._edits and not _take_rebuild():
                log, why, src = (
                    None,
                    f"not rebuilt: {UNEDITED_REBUILDS} builds failed already in this process",
                    None,
                )
            else:
                log, why, src = rebuild(failure, self.timeout)
            return self._with_log(out, log, why, src, failure.code)
        nv = cgn.parse_failure(message)
        if nv is not None:
            out = {"status": fb.FAILED, "compiler": "nvrtc"}
            log, why = (nv.log, "") if nv.log is not None else cgn.fetch_log_once(nv.code, nv.options)
            return self._with_log(out, log, why, None, nv.code)
        return None

    def _with_log(
        self, out: dict[str, Any], log: str | None, why: str, src: str | None, code: str
    ) -> dict[str, Any]:
        if log is None:
            out["why"] = why or "no log"
            return out
        if src is not None:
            mapped = self._file_for(code)
            if mapped is not None:
                log = log.replace(src, mapped)
        diags = parse_diagnostics(log)
        diags.sort(key=lambda d: 0 if fb.is_error(d) else 1)
        out["diagnostics"] = diags[:MAX_DIAGNOSTICS]
        out["log"] = _cut(errors_first(log))
        return out

    def _file_for(self, code: str) -> str | None:
        """The file a diagnostic in the rebuilt source means: the working file (or the run's stored text) it starts with."""
        for compiled, working, run_file in self._compiled:
            if code.startswith(compiled):
                if working and _same_text(working, compiled):
                    return working
                return run_file
        return None

    def value(self) -> Any:
        if not self._edits and self._failure is None:
            return None
        out: dict[str, Any] = {"version": fb.VERSION}
        if self._edits:
            out["edits"] = list(self._edits)
        if self._failure is not None:
            out.update(self._failure)
        return out


def _generated_file(record: Any) -> str:
    """`codegen/61_codegen_device_generated.cpp`: beside the record's after file."""
    after = str(record.after_file or f"codegen/{record.index}_{record.name}_after.cpp")
    head, sep, tail = after.rpartition("_after")
    return f"{head}_generated{tail}" if sep else after + ".generated"


def _same_text(path: str, text: str) -> bool:
    try:
        return Path(path).read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def make(settings: Any) -> BuildRecorder:
    return BuildRecorder()
