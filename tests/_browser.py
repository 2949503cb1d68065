"""How the browser tests (tests/conftest.py `browser`) and the benchmarks (bench/bench_common.py) start
Chromium: Debian's, headless, with nothing that reaches the network."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"  # Debian's; `playwright install` cannot download browsers here
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
