"""Tracing: one invocation's life above capture (session/), for every entry point.

`lifecycle.Lifecycle` opens an invocation, starts it (`setup`: the one TileLang set-up, lazy;
then the tool installed with the hooks capture calls, `hooks`), propagates it to child
processes (`children`), fans its events out to the listeners, and ends it with the one end
sequence (`invocation`: NOT-APPLIED, retention). A traced job's child
process starts at `_boot/sitecustomize.py` (on its PYTHONPATH) and traces through `child`,
an entry point that sits above render/ in the layer order. See docs/architecture.md.
"""
