"""Source maps as a recorder (session/recorder.py): the capture side of docs/sourcemap.md.

Its printer prints every IR snapshot once, with line tags, and hands back the text
(byte for byte the plain print) and its map (sourcemap/lines.print_module). A codegen
call's map comes from the codegen run again with `#line` directives (sourcemap.codegen_map),
on the worker, in the job that stores the codegen record (the compiling thread keeps only
references and its PassContext and Target); it is written beside the working file too. Each record's maps go to the run's `sourcemap.jsonl`
(sourcemap/store.MapLog). No manifest field. Settings.source_map off (TLTRACE_SOURCE_MAP=0,
enable(source_map=False)): no recorder.

`refine` (worker, in record order) maps lines in TileLang's library code to the user's
call site (callsites/library.py) in every map, the codegen's included, where a live view
shows the maps (the HTML report, a working file's .map, --line-directives); otherwise the
maps are stored as printed, after a `calls` line, and history/sourcemaps.py refines them
the same way when they are read.
"""

from __future__ import annotations

from typing import Any

from ..callsites import library as cs
from ..config import Settings
from ..session.recorder import CodegenCall, Later, PassEvent, Recorder
from ..session.snapshot import equal_rule
from . import lines as sm
from . import store as sms
from .compose import ModulePrinter


class SourceMapRecorder(Recorder):
    name = "source maps"

    def __init__(self, live: bool = True, exact: bool = False) -> None:
        # Per compile: a function that did not change keeps its lines (sourcemap/compose.py).
        self.printer = ModulePrinter(None if exact else equal_rule())
        # Call sites are a pure function of the maps and the texts: refined here only where
        # something shows them as the compile runs (the live report, a working file's .map, line
        # directives); else the maps are stored as printed and the reader refines them
        # (history/sourcemaps.py), told so by the log's `calls` line.
        self.live = live
        self._store: Any = None
        self._log: sms.MapLog | None = None
        self._calls: cs.CallSites | None = None

    def stopped(self, what: str, exc: BaseException) -> str:
        return f"source maps stopped for this kernel: {type(exc).__name__}: {exc}"

    def codegen(self, event: PassEvent, call: CodegenCall) -> Any:
        """Return the map of the compiled source, computed on the worker (a `Later`; None: no
        directives, not TileLang's codegen, a failure). Here only references are kept."""
        if not call.generated or call.rerun is None:
            return None  # a custom caller's build: no map, and no native call
        context = sm.codegen_context()  # thread-local in TVM: taken here, used there
        return Later(lambda: self._codegen_map(call, context))

    @staticmethod
    def _codegen_map(call: CodegenCall, context: Any) -> Any:
        try:
            gmap = sm.codegen_map(call.ffi, call.mod, call.target, call.generated, context)
            if gmap is not None and call.compiled != call.generated:
                gmap = sm.carry(gmap, call.generated, call.compiled)
        except Exception:
            return None
        if gmap is not None and call.working_file:
            try:
                sms.write_working_map(call.working_file, gmap, call.compiled)
            except Exception:
                pass  # the working file and the records stand without it
        return gmap

    def refine(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> tuple[Any, Any]:
        """Return the record's maps with library lines mapped to their call sites (callsites/library.py)."""
        if (extras[0] is None and extras[1] is None) or not self.live:  # (no LineMap.__eq__ per record)
            return extras
        if self._calls is None:
            self._calls = cs.CallSites()
        out = cs.refine(self._calls, record, before, after, extras)
        if out[1] is not extras[1] and getattr(record, "working_file", None):
            try:  # the working file's .map says the same as the records
                sms.write_working_map(record.working_file, out[1], after)
            except Exception:
                pass
        return out

    def attach(self, store: Any) -> None:
        self._store = store

    def recorded(self, record: Any, before: str, after: str, extras: tuple[Any, Any]) -> None:
        if (extras[0] is None and extras[1] is None) or self._store is None:
            return
        if self._log is None:
            roots = None if self.live else cs.package_roots()
            self._log = sms.MapLog(self._store.run_dir, self._store, roots)
        self._log.record(record.index, extras[0], extras[1] if record.after_file else None)

    def finish(self) -> None:
        if self._log is not None:
            self._log.close()


def make(settings: Settings) -> SourceMapRecorder | None:
    """The recorder for one compile; None when Settings.source_map is off (TLTRACE_SOURCE_MAP=0)."""
    if not settings.source_map:
        return None
    return SourceMapRecorder(
        live=settings.html or settings.working_files_enabled() or settings.line_directives,
        exact=settings.exact,
    )
