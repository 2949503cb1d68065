"""Why layout inference failed, printed: the lines `show` adds under a failed compile's error, and the
first line `tltrace run` prints at its end for each compile that failed in a layout pass.

The explanation is layouts/explain.py's (a rerun of the failed pass in a child, cached beside the
run). Under `tltrace run` it is computed in a background thread from the moment the failed
compile's records are written (the compile itself is never held up: its error reaches the
script at once), and waited for when the script has ended, at most TLTRACE_EXPLAIN_TIMEOUT
seconds (0: not at all; `show` computes it then).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import typer

from ..format.records import FAILED


def lines_of(data: dict[str, Any] | None) -> list[str]:
    """Return the lines to print for an explanation: none when there is nothing to say (no input kept)."""
    if not data or not data.get("ops") and not data.get("error"):
        return []
    return [str(x) for x in data.get("lines") or []]


def explanation(run: Any, *, say: bool = True) -> dict[str, Any] | None:
    """Return a failed layout compile's explanation (cached, else computed now, saying so on stderr)."""
    from ..layouts import explain

    m = run.manifest
    if m is None:
        return None
    rec = explain.failed_layout_record(m)
    if rec is None:
        return None
    have = explain.cached(run.path)
    if have is not None:
        return have
    limit = explain.timeout_s()
    if limit <= 0 or explain.inputs_of(run.path, m, rec) is None:
        return None  # off, or nothing to rerun (a run recorded without reproducer data)
    if say:
        typer.echo(
            f"tltrace: explaining why {rec.name} failed: rerunning it with tile operations taken out "
            f"(at most {limit:g} s; {explain.TIMEOUT_ENV}=0 skips this)",
            err=True,
        )
    return explain.explain(run, timeout=limit)


class RunExplainer:
    """Listener of `tltrace run`: each compile that failed in a layout pass explained in a background thread;
    `finish()` waits for them (bounded) and prints each one's first line on stderr."""

    def __init__(self, limit: float) -> None:
        self.limit = limit  # Settings.explain_timeout: the most seconds an explanation takes; 0: none
        self._lock = threading.Lock()
        self._jobs: list[tuple[str, Path, threading.Thread, list[dict[str, Any] | None]]] = []

    def __call__(self, event: Any) -> None:
        from ..session.events import RunFinished

        if not isinstance(event, RunFinished) or self.limit <= 0:
            return
        if not any(r.status == FAILED for r in event.manifest.records):
            return  # (layouts/explain, its readers and child, imported only for a failed compile)
        from ..layouts import explain

        rec = explain.failed_layout_record(event.manifest)
        if rec is None:
            return
        from ..history.loading import Run

        run = Run(Path(event.run_dir), event.manifest)
        out: list[dict[str, Any] | None] = [None]

        def work() -> None:
            try:
                out[0] = explain.explain(run, timeout=self.limit)
            except Exception as exc:  # best effort: said in one line; `show` tries again
                out[0] = {"stopped": f"{type(exc).__name__}: {exc}"}

        t = threading.Thread(target=work, name="tltrace-explain", daemon=True)
        label = event.manifest.signature or event.manifest.run_id or "?"
        with self._lock:
            self._jobs.append((label, Path(event.run_dir), t, out))
        t.start()

    def finish(self) -> None:
        """Wait for the explanations (each at most its deadline and a grace) and print their first lines."""
        with self._lock:
            jobs = list(self._jobs)
        if not jobs:
            return
        from ..layouts import explain
        from ..render.visible import visible

        limit = self.limit
        if any(t.is_alive() for _label, _dir, t, _out in jobs):
            typer.echo(
                f"tltrace: explaining the layout failure (at most {limit:g} s; {explain.TIMEOUT_ENV}=0 skips this)",
                err=True,
            )
        from ..proc import group as procgroup

        try:
            with procgroup.on_signals():  # Ctrl+C here takes the rerun's process group down with it
                for label, run_dir, t, out in jobs:
                    t.join(limit + 35)
                    said = lines_of(out[0])
                    if said:
                        typer.echo(
                            f"[{visible(label, one_line=True)}] why: {visible(said[0], one_line=True)}",
                            err=True,
                        )
                        _refresh_report(run_dir)
                    elif t.is_alive() or out[0] is None or out[0].get("stopped"):
                        why = "it took too long" if t.is_alive() else (out[0] or {}).get("stopped")
                        typer.echo(
                            f"[{visible(label, one_line=True)}] why: not explained "
                            f"({visible(str(why or 'the explanation failed'), one_line=True)}); "
                            "`tltrace show` tries again",
                            err=True,
                        )
        except (KeyboardInterrupt, procgroup.Terminated):
            return  # the script's own exit status stands


def _refresh_report(run_dir: Path) -> None:
    """Rebuild the compile's report (html mode) so that its error box carries the explanation."""
    from ..history.report_reads import compile_report
    from ..render.html import write_report
    from ..render.pages import REPORT_NAME

    if (run_dir / REPORT_NAME).is_file():
        try:
            write_report(compile_report(run_dir))
        except Exception:  # the report as it was is still a report
            pass
