"""The listeners for a trace: the terminal stream, plus the HTML report in html/both mode.

One home for the fan-out that `tltrace run` and `tltrace.enable()` both use.
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..session.events import Event


class Listeners:
    """Calls each listener with every event; `close()` finishes the HTML reports."""

    def __init__(self, settings: Settings) -> None:
        from .terminal import TerminalView

        self.terminal = TerminalView(settings)
        self.html: Any = None
        self._all: list[Any] = [self.terminal]
        if settings.html:
            from ..history.report_reads import LiveReads
            from .html import HtmlReportListener

            self.html = HtmlReportListener(settings, reads=LiveReads())
            self._all.append(self.html)

    def __call__(self, event: Event) -> None:
        for listener in self._all:
            listener(event)

    def close(self) -> None:
        if self.html is not None:
            self.html.close()
