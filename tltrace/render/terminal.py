"""The terminal stream: one line per pass, a coloured diff under each changed one, a summary per kernel.

Each pass's block is rendered whole and printed under one lock, labelled with its
kernel, so two compiling threads never interleave inside a block. With --quiet an
invocation of several compiles ends with one summary table instead (failures first).
Another program's progress bar (tqdm writes `\r` lines to stderr) is never split:
see `guard_lines`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from ..config import Settings
from ..diff import Diff, diff
from ..format import build as fbuild
from ..format.layout import REPORT, RUN_RECORDS
from ..format.records import (
    CHANGED,
    CODEGEN,
    COMPLETE,
    EXITED,
    FAILED,
    INTERRUPTED,
    NOOP,
    RUNNING,
    STAGE_ROLES,
    PassRecord,
    RunManifest,
)
from ..format.writer import process_label
from ..session.events import (
    NOT_FINALISED,
    STILL_RUNNING,
    Event,
    InvocationFinished,
    Notice,
    PassRecorded,
    Pruned,
    RunFinished,
    RunStarted,
    ScriptOutput,
    WorkingFiles,
)
from .fold import fold
from .table import Column, cut_end, distinct_cut, fit
from .visible import VisibleConsole, render_segments, segments, visible

# Held while tltrace writes its lines, and by every write through a `_LineTracker`: a script's
# progress bar (another thread) cannot redraw between tltrace ending the bar's line and writing
# its own. Reentrant: tltrace's own console writes go through the trackers too.
_print_lock = threading.RLock()

STATUS_STYLE = {
    CHANGED: ("CHANGED", "bold yellow"),
    NOOP: ("no-op", "dim"),
    FAILED: ("FAILED", "bold red"),
    CODEGEN: ("CODEGEN", "bold magenta"),
}

TAG_STYLE = {
    "PATCHED": "bold green",
    "REGENERATED": "bold cyan",
    "SYNCED": "bold blue",
    "CONFLICT": "bold red",
    "INIT-BACKUP": "bold yellow",
    "NOTE": "bold yellow",
    "NEW": "bold cyan",
    "UNRESOLVED": "bold red",
    "COMPILE-ERROR": "bold red",
    "NOT-APPLIED": "bold yellow",
    "cached": "bold cyan",
    "info": "cyan",
    "warning": "bold yellow",
}


class _StreamConsole(VisibleConsole):
    def on_broken_pipe(self) -> None:
        """The reader went away (`tltrace run x.py | head`): drop further output, never break the compile.

        Rich's default raises SystemExit inside the pass callback, which fails the compile.
        """
        self.quiet = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, (sys.stderr if self.stderr else sys.stdout).fileno())
        except (OSError, ValueError, AttributeError):
            pass


def write_texts(console: Console, texts: list[Text]) -> None:
    """Write styled lines straight to the console's file, one write for the lot.

    Rich's layout pass (most of the terminal's cost per pass) is skipped; on a terminal
    a line wider than it is folded (render/fold.py: continuation rows behind `↪`, a cut
    said with `… +N chars`), in a file or pipe every line is written whole. Styles render
    as Rich renders them, and not at all when the console has no colour (not a tty, NO_COLOR).
    """
    color_system = None if console.no_color else getattr(console, "_color_system", None)
    out: list[str] = []
    width = console.width if console.is_terminal else None
    for text in texts:
        segs = segments(console, text)  # data never drives the terminal (render/visible.py)
        if width is None:
            out.append(render_segments(segs, color_system))
            out.append("\n")
            continue
        lines = list(Segment.split_lines(segs))
        lines += [[]] * (text.plain.count("\n") + 1 - len(lines))  # split_lines drops a last empty line
        for line in lines:
            for row in fold(line, width):
                out.append(render_segments(row, color_system))
                out.append("\n")
    if console.quiet:
        return
    try:
        console.file.write("".join(out))
        console.file.flush()
    except BrokenPipeError:
        console.on_broken_pipe()


def make_console(stderr: bool = False) -> Console:
    """Return a console on the current stdout/stderr (colour off when not a tty or NO_COLOR is set)."""
    return _StreamConsole(stderr=stderr, highlight=False, soft_wrap=False)


# How each kind of unified-diff line looks: the one colouring of diffs in the terminal
# (the stream, `show --pass`, `diff-runs`). The gutter ("-", "+", "~") says it without colour.
LINE_STYLE = {
    "file": "bold",
    "hunk": "cyan",
    "same": "dim",
    "del": "red",
    "add": "green",
    "reindent": "dim",  # re-indented only: "~" and the new text, muted
    "note": "dim italic",
}


def lines_text(lines: list[tuple[str, str]], indent: str = "    ") -> Text:
    """Return (kind, line) pairs of a unified diff as styled text, one line each."""
    out = Text()
    for kind, line in lines:
        out.append(indent + line, style=LINE_STYLE.get(kind, ""))
        out.append("\n")
    out.rstrip()
    return out


def diff_view(
    d: Diff, context: int, *, ignore_whitespace: bool = False, a: str = "before", b: str = "after"
) -> Text:
    """Return the terminal view of a diff: unified, re-indented lines as dim "~" lines.

    When no line is left to show (a newline or whitespace-only change, or re-indents hidden
    by ignore_whitespace), the view is one line saying what changed, never nothing.
    """
    lines = d.unified(context=context, a_name=a, b_name=b, ignore_whitespace=ignore_whitespace)
    if lines:
        return lines_text(lines)
    if not d.changed:
        return Text("    (no change)", style="dim")
    note = d.note or "whitespace only"
    hidden = "; hidden by --ignore-whitespace" if ignore_whitespace and "whitespace" in note else ""
    return Text(f"    ({note}{hidden})", style="dim")


# The stream shows a pass's diff whole up to this many lines (no `--- before`/`+++ after`: the pass
# line says it); a longer one shows its first EXCERPT changed lines and a line with the command that
# shows it whole. `run -v` shows every diff whole.
DIFF_LINES = 10
EXCERPT = 4


def stream_diff(
    d: Diff, context: int, *, ignore_whitespace: bool = False, whole: bool = False
) -> tuple[Text, int]:
    """Return a pass's diff as the stream shows it, and how many of its lines it left out (0: whole).

    Whole when `whole` or when it has at most DIFF_LINES lines (file headers dropped); else its
    first EXCERPT added or removed lines (no context, no re-indented lines), in order.
    """
    lines = d.unified(context=context, ignore_whitespace=ignore_whitespace)
    body = [(kind, line) for kind, line in lines if kind != "file"]
    if not body:
        return diff_view(d, context, ignore_whitespace=ignore_whitespace), 0
    if whole or len(body) <= DIFF_LINES:
        return lines_text(body), 0
    shown = [(kind, line) for kind, line in body if kind in ("del", "add")][:EXCERPT]
    return lines_text(shown), len(body) - len(shown)


def codegen_lines(record: PassRecord, after: str, run_dir: Path, show: str) -> Text:
    """Return what the stream says of a codegen: the generated source's size, where it went, how to see it.

    Where: the working file when the compile wrote one (the run keeps its text in its pack,
    not as a file: `tltrace export --tir` writes it out). `show` is the command that prints it.
    """
    n = len(after.splitlines())
    size = human_size(len(after.encode("utf-8", "surrogateescape")))
    where: str | os.PathLike[str] | None = record.working_file
    kind = Path(record.after_file).suffix.lstrip(".") if record.after_file else ""
    lang = {"cpp": "C++", "cu": "CUDA", "c": "C", "hip": "HIP", "ll": "LLVM IR", "ptx": "PTX"}.get(kind, kind)
    what = record.role.upper() if record.role in STAGE_ROLES else f"{record.role or 'device'} source"
    t = Text(f"    {what}: {n} line{'s' if n != 1 else ''}, {size}", style="dim")
    if lang:
        t.append(f" of {lang}", style="dim")
    if where is not None:
        t.append(f", written to {_short_path(Path(where))}", style="dim")
    t.append("\n")
    t.append(f"    see it: {show}", style="dim")
    return t


def working_files_lines(event: WorkingFiles) -> list[Text]:
    """Which working file holds which kernel variant: a heading, then one line per file."""
    head = Text("working files", style="bold")
    head.append(f"  {visible(str(event.directory), one_line=True)}", style="dim")
    rows = [
        (
            visible(h.path.name, one_line=True),
            visible(f"{h.kernel or '?'} {h.variant}".strip(), one_line=True)
            + (" (host)" if h.role == "host" else ""),
            h.tag,
        )
        for h in event.held
    ]
    width = max(len(r[0]) for r in rows)
    out = [head]
    for name, what, tag in rows:
        t = Text(f"  {name.ljust(width)}  {what}")
        if tag:
            t.append(f"  {tag}", style=TAG_STYLE.get(tag, "bold"))
        out.append(t)
    return out


def diff_text(before: str, after: str, context: int, *, ignore_whitespace: bool = False) -> Text:
    """Return the coloured unified diff of two IR texts (see diff_view)."""
    return diff_view(diff(before, after), context, ignore_whitespace=ignore_whitespace)


def pass_line(
    kernel: str | None, record: PassRecord, note: str | None = None, counts: tuple[int, int] | None = None
) -> Text:
    """Return the one-line summary of a record; `note` explains a change with no line counts.

    `counts` (added, removed) replaces the record's own: the lines the diff below shows
    (with -w, re-indented lines are not counted).
    """
    label, style = STATUS_STYLE.get(record.status, (record.status, ""))
    added, removed = counts if counts is not None else (record.added, record.removed)
    t = Text()
    t.append(f"[{visible(kernel or '?', one_line=True)}] ", style="bold blue")
    t.append("  " * record.depth)
    t.append(f"{record.phase}/{record.index:02d} ", style="dim")
    t.append(visible(record.name, one_line=True), style="bold" if record.status != NOOP else "")
    t.append("  ")
    t.append(label, style=style)
    if record.status == CHANGED and (added or removed):
        t.append(" ")
        t.append(f"+{added}", style="green")
        t.append("/")
        t.append(f"-{removed}", style="red")
    if note and record.status == CHANGED:
        t.append(f" ({note})", style="dim")
    if record.reconcile:
        t.append(f"  {record.reconcile}", style=TAG_STYLE.get(record.reconcile, "bold"))
    return t


def _interrupted(manifest: RunManifest) -> bool:
    """Ctrl+C stopped it, or its process ended before it did (tracing/children.py gather)."""
    if manifest.status == INTERRUPTED:
        return True
    return manifest.status != COMPLETE and (manifest.error or "").startswith("KeyboardInterrupt")


def _unfinished_word(manifest: RunManifest, not_finalised: frozenset[str] | tuple[str, ...]) -> str:
    """The word for a compile whose run still says running as its invocation ends (as the notice says it)."""
    return NOT_FINALISED if manifest.run_id in not_finalised else STILL_RUNNING


def summary_line(
    manifest: RunManifest,
    run_dir: Path,
    report: Path | None = None,
    label: str | None = None,
    not_finalised: frozenset[str] | tuple[str, ...] = (),
) -> Text:
    """Return the one-line summary of a compile: its label, how it ended, counts, compile time and one path.

    How it ended: done, compile failed, interrupted, or (a run that still says running as its
    invocation ends) still running, or finished, not finalised when its run id is in
    `not_finalised` (InvocationFinished says which). The path is the report when there is
    one, else the run directory, relative to the working directory when it is under it.
    """
    c = manifest.counts
    total = len(manifest.records)
    changed = c.get(CHANGED, 0)
    failed = c.get(FAILED, 0)
    t = Text()
    t.append(f"[{visible(label or stream_label(manifest), one_line=True)}] ", style="bold blue")
    ok = manifest.status == COMPLETE
    if ok:
        t.append("done: ", style="bold green")
    elif manifest.status == RUNNING:
        t.append(f"{_unfinished_word(manifest, not_finalised)}: ", style="bold yellow")
    elif manifest.status == EXITED:  # the compile ended; its process did not write all its records
        t.append("exited before its records were written: ", style="bold yellow")
    else:
        at = next((r.name for r in manifest.records if r.status == FAILED), None)
        if _interrupted(manifest):
            t.append("interrupted: ", style="bold red")
        elif fbuild.failed(fbuild.of(manifest)):  # the backend build after codegen: a stage of its own
            t.append(f"{fbuild.headline(fbuild.of(manifest))}: ", style="bold red")
        else:
            t.append(
                f"compile failed at {visible(at, one_line=True)}: " if at else "compile failed: ",
                style="bold red",
            )
    t.append(f"{total} passes, {changed} changed, {failed} failed, {c.get(CODEGEN, 0)} codegen")
    if isinstance(manifest.finished, (int, float)) and isinstance(manifest.started, (int, float)):
        took = manifest.finished - manifest.started
        if 0 <= took < 1e7:
            t.append(f" in {took:.2f}s")
    where = report if report is not None else run_dir
    t.append(f"  {'report' if report is not None else 'records'}: {_short_path(where)}", style="dim")
    return t


def empty_line(event: InvocationFinished, settings: Settings) -> Text:
    """Return the line for an invocation that traced no compile: why, and the command that shows it."""
    from ..config import trace_dir_args
    from ..proc.shell import command

    t = Text("no TileLang compile was traced", style="bold yellow")
    t.append(f": {event.empty.reason}")
    if event.empty_path is not None:
        show = command("tltrace", "show", *trace_dir_args(settings.trace_dir), event.empty.script, "-1")
        t.append(f"  recorded as invocation -1: {show}", style="dim")
    return t


def _short_path(path: Path) -> str:
    """Return a path relative to the working directory when it is under it, else as given; one line."""
    try:
        rel = Path(path).absolute().relative_to(Path.cwd())
        return visible(str(rel) if str(rel) != "." else str(path), one_line=True)
    except (ValueError, OSError):
        return visible(str(path), one_line=True)


def stream_label(manifest: RunManifest) -> str:
    """Return a compile's short label: its kernel and its first buffer's shape (`add 512`).

    The signature starts with it, so it also works as a SIGNATURE prefix for `show`.
    """
    from ..session.signature import short_label

    return short_label(manifest.kernel, manifest.signature)


def summary_table(
    runs: list[RunManifest] | tuple[RunManifest, ...],
    width: int | None = None,
    *,
    processes: bool = False,
    not_finalised: frozenset[str] | tuple[str, ...] = (),
) -> list[Text]:
    """Return the lines of a table, one row per compile (status, signature, passes, changed, failed, time, why).

    Rows in the one compile order (history/summary.py: failures first, then by start).
    With `processes`, a column says which process (pid, or torchrun rank) made each compile.
    Fits `width` (render/table.py): the time and the error go before the status or the
    counts, and a signature is cut where its rows agree, never where they differ.
    """
    from ..history.summary import CompileSummary, order

    summaries = order([CompileSummary.of(m, position=i) for i, m in enumerate(runs)])
    labels = [s.label for s in summaries]
    columns = [
        Column("status"),
        *([Column("process", drop=4)] if processes else []),
        Column("compile", cut=distinct_cut(labels), min_width=12),
        Column("passes", "right"),
        Column("changed", "right", drop=2),
        Column("failed", "right"),
        Column("time", "right", drop=3),
        Column("failed pass / error", drop=1, cut=cut_end, min_width=16),
    ]
    rows: list[list[tuple[str, str]]] = []
    for s in summaries:
        word, style = (
            ("ok", "green")
            if s.ok
            else (s.status if s.status in (INTERRUPTED, EXITED) else "FAILED", "bold red")
        )
        if s.status == RUNNING:
            word, style = _unfinished_word(runs[s.position], not_finalised), "yellow"
        why = ""
        if not s.ok:
            why = f"{s.failed_at}: " if s.failed_at else ""
            why += (s.error or "")[:120]
        nfail = s.failed or 0
        rows.append(
            [
                (word, style),
                *([(process_label(runs[s.position]), "")] if processes else []),
                (s.label, ""),
                (str(s.passes or 0), ""),
                (str(s.changed or 0), ""),
                (str(nfail), "red" if nfail else ""),
                (f"{s.seconds:.2f}s" if s.seconds is not None else "-", ""),
                (why, "red"),
            ]
        )
    return fit(columns, rows, width)


def pruned_line(event: Pruned) -> Text:
    """Return the one line that says what retention removed."""
    t = Text("tltrace: ", style="dim")
    runs = f"{event.runs} run{'s' if event.runs != 1 else ''}"
    invs = f"{event.invocations} older invocation{'s' if event.invocations != 1 else ''}"
    t.append(
        f"pruned {runs} ({invs}) under {event.script_dir}, freed {human_size(event.bytes_freed)}; "
        f"--keep {event.keep} keeps the newest {event.keep} invocation{'s' if event.keep != 1 else ''}"
    )
    return t


def human_size(n: int) -> str:
    """Return a byte count as people read it: 812 B, 4.1 KB, 2.3 MB."""
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


# -- other programs' lines -------------------------------------------------------------
class _LineTracker:
    """A text stream that remembers whether its last write left a line open (a progress bar)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self.open_line = False  # the last write did not end with a newline
        self.bar = False  # ... and its open line is a carriage-return line (tqdm redraws it)

    def write(self, text: str) -> int:
        with _print_lock:
            n = self._stream.write(text)
            if text:
                tail = text.rsplit("\n", 1)[-1]
                if text.endswith("\n"):
                    self.open_line = self.bar = False
                else:
                    self.bar = "\r" in tail or (self.open_line and self.bar and "\n" not in text)
                    self.open_line = True
        return n

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_trackers: list[_LineTracker] = []


def close_open_lines() -> None:
    """Before tltrace writes: end another program's open line, so that no line is split.

    A progress bar on a terminal is cleared (it redraws itself at its next update); an
    open line in a file or pipe gets its newline; either way tltrace starts at a line start.
    """
    for tr in list(_trackers):
        if not tr.open_line:
            continue
        try:
            if tr.bar and tr.isatty():
                tr.write("\r\x1b[2K")
            else:
                tr.write("\n")
            tr.flush()
        except Exception:
            pass
        tr.open_line = tr.bar = False


@contextlib.contextmanager
def guard_lines() -> Iterator[None]:
    """While a script runs under `tltrace run`, watch sys.stdout/sys.stderr for open lines.

    Streams created before (or bypassing sys.std*, as C code writing to fd 2) are not seen.
    """
    saved = sys.stdout, sys.stderr
    out, err = _LineTracker(sys.stdout), _LineTracker(sys.stderr)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    _trackers.extend((out, err))
    try:
        yield
    finally:
        for tr in (out, err):
            if tr in _trackers:
                _trackers.remove(tr)
        if sys.stdout is out:
            sys.stdout = saved[0]
        if sys.stderr is err:
            sys.stderr = saved[1]


class TerminalView:
    """Listener that prints the stream for `tltrace run` (and the terminal mode of enable())."""

    def __init__(
        self, settings: Settings, console: Console | None = None, err_console: Console | None = None
    ) -> None:
        self.settings = settings
        self._console = console
        self._err = err_console
        self.finished: list[tuple[RunManifest, Path]] = []
        # Nested passes finish before their parent; their blocks wait here (per run) and
        # are printed right after the top-level pass that ran them, in start order.
        self._nested: dict[Path, list[tuple[int, list[Text]]]] = {}
        self._labels: dict[Path, str] = {}  # run dir -> its label in the stream, unique in this view
        self._label_owner: dict[str, Path] = {}
        # No-op passes not printed yet, per run: how many, and the last one (one alone gets its line).
        self._noops: dict[Path, tuple[int, PassRecord]] = {}
        self._matched: dict[Path, bool] = {}  # --only: whether any pass of the run matched
        self._seen: dict[Path, list[PassRecord]] = {}  # per run, its records so far (a pass's NAME#k)
        self._told_verbose = False  # a cut diff said once how to see every diff whole

    @property
    def console(self) -> Console:
        if self._console is None:  # made on first use: it binds to the stdout of that moment
            self._console = make_console()
        return self._console

    @property
    def err(self) -> Console:
        if self._err is None:
            self._err = make_console(stderr=True)
        return self._err

    def _show(self, record: PassRecord) -> bool:
        s = self.settings
        if s.only is not None and not s.only.search(record.name):
            return False
        if s.skip is not None and s.skip.search(record.name):
            return False
        return True

    def label(self, manifest: RunManifest, run_dir: Path) -> str:
        """Return the run's label in the stream: `add 512`, made unique in this view by its hash."""
        got = self._labels.get(run_dir)
        if got is not None:
            return got
        base = stream_label(manifest)
        label = base
        if label in self._label_owner:
            h = (manifest.input_hash or "")[:6] or run_dir.name[-6:]
            label = f"{base} #{h}"
            n = 2
            while label in self._label_owner:
                label, n = f"{base} #{h}.{n}", n + 1
        if manifest.signature or manifest.kernel:  # known enough to keep (the first pass has it)
            self._labels[run_dir] = label
            self._label_owner[label] = run_dir
        return label

    def _fold(self, run_dir: Path, label: str) -> list[Text]:
        """Return the line for the no-op passes held back for a run (none, one pass line, or a count)."""
        held = self._noops.pop(run_dir, None)
        if held is None:
            return []
        n, rec = held
        if n == 1:
            return [pass_line(label, rec)]
        t = Text()
        t.append(f"[{visible(label, one_line=True)}] ", style="bold blue")
        t.append(f"\u2026 {n} no-op passes", style="dim")
        return [t]

    def __call__(self, event: Event) -> None:
        if isinstance(event, PassRecorded):
            if self.settings.quiet or not self.settings.terminal:
                return
            rec = event.record
            self._seen.setdefault(event.run_dir, []).append(rec)
            label = self.label(event.manifest, event.run_dir)
            blocks: list[tuple[int, list[Text]]] = []
            if self._show(rec):
                self._matched[event.run_dir] = True
            if self._show(rec) and rec.status == NOOP and not self.settings.all_passes:
                n, _ = self._noops.get(event.run_dir, (0, rec))
                self._noops[event.run_dir] = (n + 1, rec)
                if rec.depth == 0:
                    self._print_blocks(sorted(self._nested.pop(event.run_dir, []), key=lambda b: b[0]))
                return
            if self._show(rec):
                d = diff(event.before, event.after) if rec.status == CHANGED else None
                counts = None
                if d is not None and self.settings.ignore_whitespace:
                    counts = (
                        sum(1 for r in d.rows if r.b is not None and r.kind not in ("same", "reindent")),
                        sum(1 for r in d.rows if r.a is not None and r.kind not in ("same", "reindent")),
                    )
                parts: list[Text] = [
                    *self._fold(event.run_dir, label),
                    pass_line(label, rec, d.note if d is not None else None, counts),
                ]
                if rec.status == FAILED:
                    err = (rec.error or "see the run summary").rstrip().replace("\n", "\n           ")
                    parts.append(Text(f"    error: {err}", style="red"))
                elif d is not None and d.changed:
                    view, left = stream_diff(
                        d,
                        self.settings.context,
                        ignore_whitespace=self.settings.ignore_whitespace,
                        whole=self.settings.verbose,
                    )
                    parts.append(view)
                    if left:
                        parts.append(self._cut_line(event, left))
                elif rec.status == CODEGEN and event.after:
                    # The generated source is not a diff of the TIR: its size, where it is, how to see it.
                    # PTX, SASS (STAGE_ROLES): `show --pass ptx` prints the stage's text itself.
                    words = ("--pass", rec.role) if rec.role in STAGE_ROLES else ("--source-map",)
                    show = self._show_command(event, *words)
                    parts.append(codegen_lines(rec, event.after, event.run_dir, show))
                blocks.append((rec.index, parts))
            if rec.depth > 0:
                self._nested.setdefault(event.run_dir, []).extend(blocks)
                return
            blocks += sorted(self._nested.pop(event.run_dir, []), key=lambda b: b[0])
            self._print_blocks(blocks)
        elif isinstance(event, Notice):
            self._notice(event)
        elif isinstance(event, RunFinished):
            self.finished.append((event.manifest, event.run_dir))
            self._seen.pop(event.run_dir, None)
            label = self.label(event.manifest, event.run_dir)
            self._print_blocks(sorted(self._nested.pop(event.run_dir, []), key=lambda b: b[0]))
            if self.settings.quiet:
                return  # one table at the end of the invocation (one line when it made one compile)
            folded = self._fold(event.run_dir, label)
            if folded:
                self._print_texts(folded)
            self._only_matched_nothing(event)
            report = self._report(event.run_dir)
            self._print_texts([summary_line(event.manifest, event.run_dir, report, label)])
        elif isinstance(event, InvocationFinished):
            if event.empty is not None and not event.runs:
                self._print_texts([empty_line(event, self.settings)])
            elif self.settings.quiet:
                self._invocation_summary(event)
        elif isinstance(event, WorkingFiles):
            self._print_texts(working_files_lines(event))
        elif isinstance(event, Pruned):
            if event.runs:  # nothing removed (only failures): the warnings below say it
                self._print_texts([pruned_line(event)])
            for line in event.failed[:3]:
                self._warn(f"could not prune {line}")
        elif isinstance(event, ScriptOutput):
            with _print_lock:
                close_open_lines()
                try:
                    self.err.file.write(event.text)
                    self.err.file.flush()
                except Exception:
                    pass
        elif isinstance(event, RunStarted):
            pass

    def _show_command(self, event: PassRecorded, *words: str) -> str:
        """`tltrace show` for the event's compile: by its label (a signature prefix) when that names
        it alone in this stream, else by its run id; then `words`."""
        from ..history.resolve import script_words
        from ..proc.shell import command

        label = self.label(event.manifest, event.run_dir)
        unique = label == stream_label(event.manifest) and label != "?"
        which = label if unique else Path(event.run_dir).name
        return command("tltrace", "show", *script_words(Path(event.run_dir).parent.parent), which, *words)

    def _cut_line(self, event: PassRecorded, left: int) -> Text:
        """The line under a diff cut short: how many lines it left out and the command that shows it whole."""
        from ..format.passref import ref_of

        recs = sorted(self._seen.get(event.run_dir, []), key=lambda r: r.index)
        ref = ref_of(recs, next(i for i, r in enumerate(recs) if r is event.record))
        show = self._show_command(event, "--pass", ref)
        t = Text(f"    \u2026 {left} more line{'s' if left != 1 else ''}: {show}", style="dim")
        if not self._told_verbose:  # once per stream
            self._told_verbose = True
            t.append("  (run -v to stream every diff whole)", style="dim")
        return t

    def _only_matched_nothing(self, event: RunFinished) -> None:
        """--only that matched no pass of a compile: say so once, never a silent empty stream."""
        only = self.settings.only
        if only is None or self._matched.pop(event.run_dir, False) or not event.manifest.records:
            return
        if getattr(self, "_only_warned", False):
            return
        self._only_warned = True
        from ..format.passref import did_you_mean
        from ..history.resolve import script_words
        from ..proc.shell import command

        names = list(dict.fromkeys(r.name for r in event.manifest.records))
        lister = command(
            "tltrace", "show", *script_words(Path(event.run_dir).parent.parent), event.manifest.run_id
        )
        self._warn(
            f"--only {only.pattern!r} matched none of the {len(names)} pass names of "
            f"{stream_label(event.manifest)}{did_you_mean(names, only.pattern)} (e.g. {', '.join(names[:4])}); "
            f"{lister} lists them"
        )

    def _report(self, run_dir: Path) -> Path | None:
        """The run's report when html mode wrote one (a report that could not be written is not named)."""
        path = Path(run_dir) / REPORT
        return path if self.settings.html and os.path.isfile(path) and not os.path.islink(path) else None

    def _invocation_summary(self, event: InvocationFinished) -> None:
        finished = {m.run_id: d for m, d in self.finished}
        own = [m for m, _ in self.finished if m.invocation == event.invocation]
        # event.runs also holds the compiles of the job's other processes (children, ranks).
        runs = list(event.runs) if len(event.runs) >= len(own) else own
        records_dir = self.settings.script_dir / RUN_RECORDS
        if len(runs) == 1:
            m = runs[0]
            run_dir = finished.get(m.run_id) or records_dir / m.run_id
            self._print_texts(
                [summary_line(m, run_dir, self._report(run_dir), not_finalised=event.not_finalised)]
            )
            return
        if not runs:
            return
        stopped = sum(1 for m in runs if _interrupted(m))
        unfinished = [m for m in runs if m.status == RUNNING]
        ended = sum(1 for m in unfinished if m.run_id in event.not_finalised)
        running = len(unfinished) - ended
        exited = sum(1 for m in runs if m.status == EXITED)
        failed = sum(1 for m in runs if m.status != COMPLETE) - stopped - len(unfinished) - exited
        procs = {process_label(m) for m in runs}
        head = Text(
            f"{len(runs)} compiles, {failed} failed"
            + (f", {stopped} interrupted" if stopped else "")
            + (f", {running} {STILL_RUNNING}" if running else "")
            + (f", {ended} {NOT_FINALISED}" if ended else "")
            + (f", {exited} exited before their records were written" if exited else "")
            + (f", in {len(procs)} processes" if len(procs) > 1 else ""),
            style="bold red" if failed or stopped else "bold",
        )
        head.append(f"  invocation {event.invocation}", style="dim")
        index = self.settings.script_dir / REPORT
        if self.settings.html and os.path.isfile(index) and not os.path.islink(index):
            head.append(f"  index: {_short_path(index)}", style="dim")  # the compiles, failed first
        else:
            head.append(f"  records: {records_dir}", style="dim")
        self._print_texts(
            [
                head,
                *summary_table(
                    runs,
                    self.console.width if self.console.is_terminal else None,
                    processes=len(procs) > 1,
                    not_finalised=event.not_finalised,
                ),
            ]
        )

    def _print_texts(self, texts: list[Text]) -> None:
        with _print_lock:
            close_open_lines()
            write_texts(self.console, texts)

    def _warn(self, message: str) -> None:
        t = Text("tltrace: warning: ", style=TAG_STYLE["warning"])
        t.append(message.splitlines()[0] if message else "")
        with _print_lock:
            close_open_lines()
            write_texts(self.err, [t])

    def _print_blocks(self, blocks: list[tuple[int, list[Text]]]) -> None:
        if not blocks:
            return
        self._print_texts([part for _, parts in blocks for part in parts])

    def _notice(self, n: Notice) -> None:
        style = TAG_STYLE.get(n.kind, "bold")
        t = Text()
        if n.kind == "warning":
            self._warn(n.message)
            return
        if n.label or n.kernel:
            t.append(f"[{visible(n.label or n.kernel or '', one_line=True)}] ", style="bold blue")
        label = "cached: not traced" if n.kind == "cached" else n.kind
        t.append(label, style=style)
        if n.message:
            # A message of several lines (an NVRTC log) goes on indented: no line of it, and no
            # name in it, starts at the margin, where tltrace's own lines start.
            first, *rest = n.message.splitlines()
            t.append("  " + "".join([first, *("\n" + (ln if ln[:1] == " " else "    " + ln) for ln in rest)]))
        if n.path is not None and str(n.path) not in (n.message or ""):
            t.append(f"  {visible(str(n.path), one_line=True)}", style="dim")
        texts = [t]
        if n.diff is not None:
            a, b = n.diff_names
            texts.append(diff_view(diff(n.diff[0], n.diff[1]), self.settings.context, a=a, b=b))
        self._print_texts(texts)
