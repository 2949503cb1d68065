"""Rendering: what people see.

terminal.py draws the Rich pass stream and summaries; html.py writes the append-only
compile reports and the invocation index from the real files in assets/ (HTML, CSS,
JS, shipped as package data); diffruns.py the `diff-runs --html` page; chrome_trace.py
the Trace Event Format export; listeners.py fans events out to them; safejson.py is
the one way data enters a page (JSON in a <script> block, never markup).
"""
