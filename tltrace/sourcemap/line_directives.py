"""`tltrace run --line-directives`: the device source compiled with scoped `#line` directives.

TileLang's own `tl.emit_line_directives` writes a directive before each statement with a
span and never returns to the generated file: C's `#line` then carries on counting, and
every line after a statement (its closing braces, the next statement without a span, the
next function) is attributed to made-up lines of the user's script. Nsight Compute's
source view and compute-sanitizer name those lines.

Here each directive covers only its statement's lines (from tltrace's source map, with a
`T.gemm`'s library code mapped to the user's call: callsites/library.py) and is followed by
`#line N "<generated file>"`, N being that line's number in the source without directives:
every other line keeps the generated file's own numbering. The generated file is the
working file when there is one, so a line outside the kernel's statements names the line
of `codegen_device.cu` (as tltrace wrote it) that it is.

A compile that already asks TileLang for its own directives (`tl.emit_line_directives`,
as `tilelang.tools.compile_only` does) gets them replaced: the map is read from its
source without them (sourcemap/lines.py `own_directives`), and they are left out of what
is compiled.

What is recorded (the codegen record, the working file) stays the source as generated; the run's manifest says the compile got them (`line_directives`), and the
stream says so once per compile. Opt-in: it changes what is compiled (by `#line` lines only).
"""

from __future__ import annotations

import os
from typing import Any

from ..config import Settings
from ..format.sourcemap import LineMap
from ..session import codegen as cg
from ..session.recorder import Handback, PassEvent, Recorder
from .cstring import c_string
from .lines import is_directive


def scoped(text: str, lmap: LineMap, generated_name: str, library: Any = None) -> tuple[str, dict[str, Any]]:
    """Return (`text` with scoped `#line` directives, what they cover).

    Each line with a Python line gets `#line L "file.py"` right before it (C counts on from a
    directive, so a statement of three lines takes three), and the first line after a run of
    them gets `#line N "generated_name"` (N: its number in `text`). The text starts with
    `#line 1 "generated_name"`. A `#line` line already in `text` (TileLang's own, from
    `tl.emit_line_directives`) is left out: N still counts it, as the working file holds it.
    File names are C string literals (sourcemap/cstring.py). Not covered: a line of TileLang's own code whose call site is
    not known (`library(path)` True), and an inferred line (sourcemap/lines.py) whose
    Python line no exact line of the map has (a declaration given the `def` line).
    Returns the summary {directives, lines, files}.
    """
    lines = text.split("\n")
    exact = {lmap.src(i) for i in range(len(lmap.lines)) if i not in lmap.inferred} - {None}
    out = [f"#line 1 {c_string(generated_name)}"]
    inside = False
    directives = 0
    files: set[str] = set()
    for i, ln in enumerate(lines):
        if is_directive(ln):
            # TileLang's own (`tl.emit_line_directives`, which its compile-only tool turns on):
            # replaced by these. The next line not covered returns to its own number.
            inside = True
            continue
        src = lmap.src(i)
        if src is not None and (src[1] < 1 or (library is not None and library(src[0]))):
            src = None  # `#line 0` is no line
        if src is not None and i in lmap.inferred and src not in exact:
            src = None
        if src is not None:
            out.append(f"#line {src[1]} {c_string(src[0])}")
            directives += 1
            files.add(src[0])
            inside = True
        elif inside:
            out.append(f"#line {i + 1} {c_string(generated_name)}")
            inside = False
        out.append(ln)
    return "\n".join(out), {"directives": directives, "lines": directives, "files": sorted(files)}


def generated_name(working_file: str | None, role: str | None, ffi: str | None) -> str:
    """The file name the directives return to: the working file, else `codegen_<role>.<ext>`."""
    if working_file:
        return str(working_file)
    name = str(ffi or "")
    ext = "cu" if "cuda" in name else "cpp" if "hip" in name else "c"
    return f"{cg.record_name(role)}.{ext}"


class LineDirectivesRecorder(Recorder):
    """The device source handed back to TileLang with scoped `#line` directives; the manifest's `line_directives`."""

    name = "--line-directives"
    field = "line_directives"

    def __init__(self) -> None:
        self._entries: list[dict[str, Any]] = []

    def handback(self, event: PassEvent, back: Handback) -> Any:
        if back.role != cg.DEVICE:
            return None
        if not back.compiles:
            self.warn(
                f"--line-directives: {back.call.ffi} builds the binary inside codegen (the tvm_ffi backend), so "
                "no source can be handed back; compile with execution_backend='cython' for an "
                "Nsight-ready build"
            )
            return None
        try:
            amap = back.source_map()
            if amap is None:
                self.warn(
                    "--line-directives: no source map for this source (TLTRACE_SOURCE_MAP=0, or not TileLang's "
                    "own codegen); compiled without directives"
                )
                return None
            return self._apply(back, amap)
        except Exception as exc:
            self.warn(
                f"--line-directives: not applied ({type(exc).__name__}: {exc}); compiled without directives"
            )
            return None

    def _apply(self, back: Handback, amap: Any) -> Any:
        """Return `back.result`'s source (`call.compiled`) with scoped directives; say what it did once."""
        compiled = back.call.compiled
        if not isinstance(amap, LineMap) or len(amap.lines) != len(compiled.split("\n")):
            raise ValueError("the source map does not fit the compiled source")
        name = generated_name(back.call.working_file, back.role, back.call.ffi)
        roots = _roots()
        text, info = scoped(
            compiled, amap, name, lambda p: bool(roots) and os.path.abspath(p).startswith(roots)
        )
        module = cg.source_module(back.result, text)
        info = {"file": os.path.basename(name), **info}
        self._entries.append({"role": back.role or "device", **info})
        names = ", ".join(os.path.basename(f) for f in info["files"]) or "no Python file"
        back.say(
            f"--line-directives: compiled with {info['directives']} scoped #line directives "
            f"({info['lines']} lines naming {names}); the recorded source is without them"
        )
        return module

    def value(self) -> Any:
        return [dict(e) for e in self._entries] or None


def make(settings: Settings) -> LineDirectivesRecorder | None:
    """The recorder for one compile under --line-directives, else None (nothing made, nothing paid)."""
    return LineDirectivesRecorder() if settings.line_directives else None


def _roots() -> tuple[str, ...]:
    from ..callsites.library import package_roots

    return package_roots()
