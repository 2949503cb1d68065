"""The manifest's `build`: what the backend built after codegen, and how the build ended.

Written by the build recorder (reconcile/build.py), read by `show`, the summary line, the
report, `watch` and bundles. Null when there is nothing to say (the generated source was
built as it was, or the backend builds nothing). Otherwise an object::

    {"version": 1,
     "edits": [{"record": 61, "role": "device", "working_file": "/abs/codegen_device.cpp",
                "generated_file": "codegen/61_codegen_device_generated.cpp",
                "generated_hash": "...", "added": 1, "removed": 1, "compiled": true}],
     "status": "failed",            # absent: the build did not fail (or was not seen)
     "compiler": "g++",             # the backend's compiler (g++, nvcc, hipcc, nvrtc, ...)
     "diagnostics": [{"file": "/abs/codegen_device.cpp", "line": 14, "column": 99,
                      "severity": "error", "message": "expected ..."}],   # errors first
     "log": "...",                  # the compiler's output, errors first, cut
     "why": "..."}                  # when the diagnostics could not be read: why not

`edits`: each codegen call whose recorded source (the record's after text) is the user's edit
of a working file, with the source TileLang generated (a stored text, run-relative) and the
edit's +/- lines against it; `compiled` is false where the backend builds a binary during
codegen and the edit was kept for the diff view only (tag NOTE). Diagnostics name the working file's own lines (not the backend's temporary
file); a line of TileLang's wrapper around the source is named as the compiler named it.
"""

from __future__ import annotations

from typing import Any

FIELD = "build"
VERSION = 1
FAILED = "failed"
ERROR_SEVERITIES = ("fatal error", "catastrophic error", "error")


def of(manifest: Any) -> dict[str, Any] | None:
    """The manifest's build object, when it holds one of this shape (else None)."""
    value = getattr(manifest, FIELD, None)
    return value if isinstance(value, dict) else None


def failed(build: dict[str, Any] | None) -> bool:
    """Whether the backend build failed (the compile's own stage after codegen)."""
    return isinstance(build, dict) and build.get("status") == FAILED


def diagnostics(build: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The build's diagnostics as recorded (errors first), each a dict with file/line/severity/message."""
    if not isinstance(build, dict) or not isinstance(build.get("diagnostics"), list):
        return []
    return [d for d in build["diagnostics"] if isinstance(d, dict) and isinstance(d.get("message"), str)]


def is_error(d: dict[str, Any]) -> bool:
    return str(d.get("severity")) in ERROR_SEVERITIES


def errors(build: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The build's error diagnostics (no warnings, no notes), in order."""
    return [d for d in diagnostics(build) if is_error(d)]


def at(d: dict[str, Any]) -> str:
    """A diagnostic as a person and an editor read it: `FILE:LINE:COL: error: MESSAGE`."""
    where = str(d.get("file") or "?")
    if isinstance(d.get("line"), int):
        where += f":{d['line']}"
        if isinstance(d.get("column"), int):
            where += f":{d['column']}"
    return f"{where}: {d.get('severity') or 'error'}: {d.get('message')}"


def compiler(build: dict[str, Any] | None) -> str:
    name = build.get("compiler") if isinstance(build, dict) else None
    return str(name) if name else "the backend's compiler"


def headline(build: dict[str, Any] | None) -> str:
    """`build failed (g++, 3 errors)`: the stage, its compiler, how many errors."""
    n = len(errors(build))
    count = f", {n} error{'s' if n != 1 else ''}" if n else ""
    return f"build failed ({compiler(build)}{count})"


def error_lines(build: dict[str, Any] | None, limit: int = 5) -> list[str]:
    """The first `limit` errors as `FILE:LINE:COL: error: MESSAGE` lines, then how many more; or why none."""
    errs = errors(build)
    out = [at(d) for d in errs[:limit]]
    if len(errs) > limit:
        out.append(f"... and {len(errs) - limit} more error{'s' if len(errs) - limit != 1 else ''}")
    if not errs and isinstance(build, dict):
        why = build.get("why")
        out.append(f"({compiler(build)}'s diagnostics not recorded: {why})" if why else "")
    return [x for x in out if x]


def edits(build: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The codegen calls whose compiled source was the user's edit (each with its generated text's file)."""
    if not isinstance(build, dict) or not isinstance(build.get("edits"), list):
        return []
    return [e for e in build["edits"] if isinstance(e, dict) and isinstance(e.get("record"), int)]
