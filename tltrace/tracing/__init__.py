"""Tracing: one invocation's life above capture (session/), for every entry point.

`lifecycle.Lifecycle` opens an invocation, installs the tool with the hooks capture calls
(`hooks`), propagates it to child processes (`children`), fans its events out to the
listeners, and finishes it (`invocation`: NOT-APPLIED, retention). See docs/architecture.md.
"""
