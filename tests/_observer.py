"""An independent observer for the capture tests: TileLang's own stacked instrument, registered as a second
tool beside tltrace's, so pipeline facts (pass names, nesting, phases, codegen calls, the pass a compile
failed in) are read from TileLang, not written into the tests."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Observed:
    """What TileLang's instrument reported, in order, over every compile while `observe` was open."""

    passes: list[tuple[str, int, str]] = field(default_factory=list)  # (name, depth, phase or "unscoped")
    codegen: list[str] = field(default_factory=list)  # each codegen call's name (its TVM global function)
    incomplete: list[tuple[str, int]] = field(default_factory=list)  # (name, depth) of passes never finished

    @property
    def failed(self) -> str:
        """The innermost pass that never finished: the one a failing compile raised in."""
        assert self.incomplete, "no pass was left unfinished"
        return max(self.incomplete, key=lambda p: p[1])[0]


@contextmanager
def observe(
    name: str = "test-reference",
    *,
    started: Callable[[Any, Any], Any] | None = None,
    finished: Callable[[Any, Any, Any], None] | None = None,
    codegen: Callable[[Any], None] | None = None,
) -> Iterator[Observed]:
    """Register an observer tool for the duration; `started(mod, event)` returns the state handed to
    `finished(mod, event, state)`; `codegen(event)` sees each codegen call before it runs."""
    from tilelang.instrumentation import (
        PassEventObserver,
        PassInstrumentationTool,
        StackedPassInstrument,
        register_pass_instrumentation_tool,
        unregister_pass_instrumentation_tool,
    )

    seen = Observed()

    class Obs(PassEventObserver):
        def pass_started(self, mod, event):
            seen.passes.append((str(event.name), event.depth, event.phase or "unscoped"))
            return started(mod, event) if started else None

        def pass_finished(self, mod, event, state):
            if finished:
                finished(mod, event, state)

        def passes_incomplete(self, passes, error):
            seen.incomplete.extend((str(p.name), p.depth) for p in passes)

    class Tool(PassInstrumentationTool):
        def __init__(self) -> None:
            self.counter = itertools.count()

        def create_pass_instrument(self):
            return StackedPassInstrument(Obs(), sequence_allocator=self.counter.__next__)

        def run_codegen(self, event, next_call):
            seen.codegen.append(str(event.name))
            if codegen:
                codegen(event)
            return next_call()

    register_pass_instrumentation_tool(name, Tool)
    try:
        yield seen
    finally:
        unregister_pass_instrumentation_tool(name)
