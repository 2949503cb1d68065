"""HTML report listener (placeholder until the report lands)."""

from __future__ import annotations

import sys

from ..config import Settings
from ..session.events import Event, RunFinished


class HtmlReportListener:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._said = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunFinished) and not self._said:
            self._said = True
            sys.stderr.write("tltrace: the HTML report is not built yet; raw records are in .run_records\n")

    def close(self) -> None:
        pass
