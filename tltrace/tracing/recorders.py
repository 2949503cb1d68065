"""The recorders every traced compile gets (session/recorder.py), registered when tracing starts (tracing/lifecycle.Lifecycle.install).

Capture (session/) imports no recorder: the layer above registers them, here, before it
installs the tool (`tltrace run`, `enable()`, the pytest plugin, a traced child). A new
recorder (facts, layouts, remarks, PTX stages) is one line in `DEFAULTS`.
"""

from __future__ import annotations

from typing import Any


def _repro(settings: Any) -> Any:
    from ..rerun.capture import ReproRecorder

    return ReproRecorder()


def _source_maps(settings: Any) -> Any:
    from ..sourcemap import recorder

    return recorder.make(settings)


def _facts(settings: Any) -> Any:
    from ..facts import recorder

    return recorder.make(settings)


def _build(settings: Any) -> Any:
    from ..reconcile import build

    return build.make(settings)


def _layouts(settings: Any) -> Any:
    from ..layouts import recorder

    return recorder.make(settings)


def _stages(settings: Any) -> Any:
    if not (settings.ptx or settings.sass):
        return None  # (stages/ imported only for --ptx/--sass: its make() returns None without them)
    from ..stages import recorder

    return recorder.make(settings)


def _remarks(settings: Any) -> Any:
    if settings.remarks is None:
        return None  # (remarks/ imported only for --remarks, as its make() says)
    from ..remarks import recorder as remarks

    return remarks.make(settings)


def _line_directives(settings: Any) -> Any:
    if not settings.line_directives:
        return None  # (imported only for --line-directives, as its make() says)
    from ..sourcemap import line_directives

    return line_directives.make(settings)


def _call_site(settings: Any) -> Any:
    from ..callsites import stack as callsite

    return callsite.make(settings)


DEFAULTS = {
    "repro": _repro,  # repro/: frontend IR, context, failed inputs; the manifest's `repro`
    "sourcemap": _source_maps,  # sourcemap.jsonl, <working file>.map
    "callsite": _call_site,  # the manifest's `stack`: the user's frames when the compile began
    "remarks": _remarks,  # run --remarks: the manifest's `remarks` (each top-level pass's stderr)
    "facts": _facts,  # the manifest's `facts` (docs/facts.md); run --ptxas's machine facts
    "build": _build,  # the manifest's `build`: an edit's generated source, a failed build's diagnostics
    "layouts": _layouts,  # the manifest's `layouts` (docs/layouts.md)
    "stages": _stages,  # run --ptx, --sass: the PTX and SASS stages, as codegen records
    "line_directives": _line_directives,  # run --line-directives: the device source handed back with #line
}


def _bisect_tool(settings: Any) -> Any:
    """A step of `tltrace bisect` (TLTRACE_BISECT set): the seam tool that skips its passes, else None."""
    import os

    if not os.environ.get("TLTRACE_BISECT"):
        return None  # one dict lookup: the normal trace path imports nothing of bisect/
    from ..bisect import skipping

    return skipping.tool_factory()


# The features' own seam tools (session/recorder.register_tool), by TileLang's name for them.
TOOLS = {
    "tltrace-bisect": _bisect_tool,  # bisect's skip set and config flips (TVM's should_run)
}


def register_defaults() -> None:
    """Register the default recorders and seam tools (again: a no-op, they replace themselves)."""
    from ..session import recorder

    for key, factory in DEFAULTS.items():
        recorder.register(key, factory)
    for name, tool in TOOLS.items():
        recorder.register_tool(name, tool)
