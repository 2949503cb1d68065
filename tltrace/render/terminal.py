"""The terminal stream: one line per pass, a coloured diff under each changed one, a summary per kernel.

Each pass's block is rendered whole and printed under one lock, labelled with its
kernel, so two compiling threads never interleave inside a block.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..config import Settings
from ..diff import Diff, diff
from ..session.events import Event, Notice, PassRecorded, RunFinished, RunStarted
from ..session.records import CHANGED, CODEGEN, FAILED, NOOP, PassRecord, RunManifest

_print_lock = threading.Lock()

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
    "cached": "bold cyan",
    "info": "cyan",
    "warning": "bold yellow",
}


class _StreamConsole(Console):
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

    The stream's lines are never wrapped or measured, so Rich's layout pass (most of the
    terminal's cost per pass) is skipped; styles still render as Rich renders them, and
    not at all when the console has no colour (not a tty, NO_COLOR).
    """
    color_system = None if console.no_color else getattr(console, "_color_system", None)
    out: list[str] = []
    for text in texts:
        for seg in text.render(console):
            if color_system is not None and seg.style is not None:
                out.append(seg.style.render(seg.text, color_system=color_system))
            else:
                out.append(seg.text)
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


def diff_view(d: Diff, context: int, *, ignore_whitespace: bool = False, a: str = "before",
              b: str = "after") -> Text:
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


def diff_text(before: str, after: str, context: int, *, ignore_whitespace: bool = False) -> Text:
    """Return the coloured unified diff of two IR texts (see diff_view)."""
    return diff_view(diff(before, after), context, ignore_whitespace=ignore_whitespace)


def pass_line(kernel: str | None, record: PassRecord, note: str | None = None) -> Text:
    """Return the one-line summary of a record; `note` explains a change with no line counts."""
    label, style = STATUS_STYLE.get(record.status, (record.status, ""))
    t = Text()
    t.append(f"[{kernel or '?'}] ", style="bold blue")
    t.append("  " * record.depth)
    t.append(f"{record.phase}/{record.index:02d} ", style="dim")
    t.append(record.name, style="bold" if record.status != NOOP else "")
    t.append("  ")
    t.append(label, style=style)
    if record.status == CHANGED and (record.added or record.removed):
        t.append(" ")
        t.append(f"+{record.added}", style="green")
        t.append("/")
        t.append(f"-{record.removed}", style="red")
    if note and record.status == CHANGED:
        t.append(f" ({note})", style="dim")
    if record.reconcile:
        t.append(f"  {record.reconcile}", style=TAG_STYLE.get(record.reconcile, "bold"))
    return t


def summary_line(manifest: RunManifest, run_dir: Path, report: Path | None = None) -> Text:
    c = manifest.counts
    total = len(manifest.records)
    changed = c.get(CHANGED, 0)
    failed = c.get(FAILED, 0)
    t = Text()
    t.append(f"[{manifest.kernel or '?'}] ", style="bold blue")
    ok = manifest.status == "complete"
    interrupted = not ok and (manifest.error or "").startswith("KeyboardInterrupt")
    t.append("done: " if ok else "interrupted: " if interrupted else "compile failed: ",
             style="bold green" if ok else "bold red")
    t.append(f"{total} passes, {changed} changed, {failed} failed, {c.get(CODEGEN, 0)} codegen")
    t.append(f"  records: {run_dir}", style="dim")
    if report is not None:
        t.append(f"  report: {report}", style="dim")
    return t


class TerminalView:
    """Listener that prints the stream for `tltrace run` (and the terminal mode of enable())."""

    def __init__(self, settings: Settings, console: Console | None = None,
                 err_console: Console | None = None) -> None:
        self.settings = settings
        self._console = console
        self._err = err_console
        self.finished: list[tuple[RunManifest, Path]] = []
        # Nested passes finish before their parent; their blocks wait here (per run) and
        # are printed right after the top-level pass that ran them, in start order.
        self._nested: dict[Path, list[tuple[int, list[Text]]]] = {}

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

    def __call__(self, event: Event) -> None:
        if isinstance(event, PassRecorded):
            if self.settings.quiet or not self.settings.terminal:
                return
            rec = event.record
            blocks: list[tuple[int, list[Text]]] = []
            if self._show(rec):
                d = diff(event.before, event.after) if rec.status == CHANGED else None
                parts: list[Text] = [pass_line(event.manifest.kernel, rec, d.note if d is not None else None)]
                if rec.status == FAILED:
                    err = (rec.error or "see the run summary").rstrip().replace("\n", "\n           ")
                    parts.append(Text(f"    error: {err}", style="red"))
                elif d is not None and d.changed:
                    parts.append(diff_view(d, self.settings.context,
                                           ignore_whitespace=self.settings.ignore_whitespace))
                elif rec.status == CODEGEN and event.before != event.after:
                    parts.append(diff_text(event.before, event.after, self.settings.context))
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
            self._print_blocks(sorted(self._nested.pop(event.run_dir, []), key=lambda b: b[0]))
            if self.settings.terminal or self.settings.quiet or self.settings.html:  # html: where the report is
                with _print_lock:
                    report = event.run_dir / "report.html" if self.settings.html else None
                    self.console.print(summary_line(event.manifest, event.run_dir, report), soft_wrap=True)
        elif isinstance(event, RunStarted):
            pass

    def _print_blocks(self, blocks: list[tuple[int, list[Text]]]) -> None:
        if not blocks:
            return
        with _print_lock:
            write_texts(self.console, [part for _, parts in blocks for part in parts])

    def _notice(self, n: Notice) -> None:
        style = TAG_STYLE.get(n.kind, "bold")
        t = Text()
        if n.kind == "warning":
            t.append("tltrace: warning: ", style=style)
            t.append(n.message.splitlines()[0] if n.message else "")
            with _print_lock:
                self.err.print(t, soft_wrap=True)
            return
        if n.kernel:
            t.append(f"[{n.kernel}] ", style="bold blue")
        label = "cached: not traced" if n.kind == "cached" else n.kind
        t.append(label, style=style)
        if n.message:
            t.append("  " + n.message)
        if n.path is not None and str(n.path) not in (n.message or ""):
            t.append(f"  {n.path}", style="dim")
        with _print_lock:
            self.console.print(t, soft_wrap=True)
