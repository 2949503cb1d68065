"""The autotuner's best config: noted by the script, found among the invocation's compiles.

TileLang's autotuner hands its result (config, latency, the best kernel) to the script
only: no pass or compile marks the winner, and the best kernel is not compiled again.
So the script says which it was, one line after the autotuner returns:

    result = autotuner.run(...)          # or a kernel from an @autotune function
    tltrace.note_best(result)            # a no-op when tracing is off

`note_best` hashes the kernel's generated source (the text tltrace records as the
compile's codegen output) and appends {hash, config, latency, kernel} to
`<trace_dir>/.best/<invocation>.json`. `tltrace bundle SCRIPT --best` reads that note
for the selected invocation and bundles the one compile whose generated source has
that hash, with the config and latency in bundle.json.

`note_best` never raises into the user's script: a kernel it cannot read, or a note
it cannot write, is one warning.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

from ..errors import RecordsError, UsageError
from ..format.names import is_safe_component
from ..format.records import CODEGEN
from ..fs.atomic import atomic_write

NOTES = ".best"


def note_best(result: Any) -> dict[str, Any] | None:
    """Return the note recorded for `result` (an AutotuneResult or a JITKernel), or None when
    tracing is off or the kernel's source cannot be read (one warning then)."""
    from ..session.controller import installed

    settings = installed()  # what tltrace.enabled() says
    if settings is None:
        return None
    try:
        note = _note_of(result)
        path = notes_path(Path(settings.trace_dir), settings.invocation)
        notes = _read(path)
        notes = [n for n in notes if n.get("hash") != note["hash"]] + [note]
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(
            path, (json.dumps({"invocation": settings.invocation, "best": notes}, indent=1) + "\n").encode()
        )
    except Exception as exc:  # the user's script goes on
        warnings.warn(f"tltrace: the best config was not noted ({type(exc).__name__}: {exc})", stacklevel=2)
        return None
    return note


def _note_of(result: Any) -> dict[str, Any]:
    """Return {hash, config, latency, kernel} of an AutotuneResult or a JITKernel."""
    from ..format.layout import text_hash

    kernel = getattr(result, "kernel", None) or result
    source = None
    getter = getattr(kernel, "get_kernel_source", None)
    if callable(getter):
        source = getter()
    if not source:
        source = getattr(result, "libcode", None)
    if not isinstance(source, str) or not source:
        raise TypeError(
            f"{type(result).__name__} has no generated source (give the autotuner's result or kernel)"
        )
    config = getattr(result, "config", None) or getattr(kernel, "config", None)
    latency = getattr(result, "latency", None) or getattr(kernel, "latency", None)
    name = None
    func = getattr(kernel, "prim_func", None)
    if func is not None and getattr(func, "attrs", None) is not None and "global_symbol" in func.attrs:
        name = str(func.attrs["global_symbol"])
    launch: dict[str, Any] = {}
    if func is not None:
        from ..session.signature import launch_info

        launch = launch_info(func, name)
    return {
        "hash": text_hash(source),
        "launch": json.loads(json.dumps(launch, default=str)) if launch else None,
        "config": _plain(config),
        "latency": float(latency) if isinstance(latency, (int, float)) and math.isfinite(latency) else None,
        "kernel": name,
    }


def _plain(value: Any) -> Any:
    """Return a config as JSON data (its values' text where they are not plain)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def notes_path(trace_dir: Path, invocation: str) -> Path:
    """Return the note file of `invocation` under `trace_dir` (the id checked to be one path component)."""
    if not is_safe_component(invocation):
        raise RecordsError(f"bad invocation id {invocation!r}")
    return trace_dir / NOTES / f"{invocation}.json"


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise RecordsError(
            f"{path} is damaged ({exc}); rerun the script to note the best config again"
        ) from None
    notes = data.get("best") if isinstance(data, dict) else None
    return (
        [n for n in notes if isinstance(n, dict) and isinstance(n.get("hash"), str)]
        if isinstance(notes, list)
        else []
    )


def pick_best(runs: list[Any]) -> tuple[Any, dict[str, Any]]:
    """Return (the run, its note) of the compile the script noted as best among `runs` (one invocation's
    compiles, history Run objects); UsageError when nothing was noted, RecordsError when no compile matches."""
    if not runs:
        raise RecordsError("nothing to bundle: the selection holds no compile")
    first = runs[0].require()
    invocation = first.invocation or ""
    # <trace_dir>/<script>/.run_records/<run>: the note lives in the trace dir.
    trace_dir = Path(runs[0].path).parent.parent.parent
    notes = _read(notes_path(trace_dir, invocation)) if invocation else []
    if not notes:
        raise UsageError(
            f"no best config noted for invocation {invocation or '?'} of {first.script}; TileLang tells only "
            "the script which config won: add 'tltrace.note_best(result)' after the autotuner returns, rerun"
        )
    by_hash: dict[str, Any] = {}
    for run in runs:
        m = run.require()
        for rec in m.records:
            if rec.status == CODEGEN and rec.after_hash:
                by_hash.setdefault(rec.after_hash, run)
    for note in reversed(notes):  # the latest note first
        run = by_hash.get(note["hash"])
        if run is not None:
            return run, note
    # A backend whose kernel source is not the recorded codegen text: the launch shape
    # (grid, threads, shared memory, buffers) of the frontend function, when one compile has it.
    for note in reversed(notes):
        launch = note.get("launch")
        same = [r for r in runs if launch and _launch(r.require().launch) == launch]
        if len(same) == 1:
            return same[0], {**note, "matched": "launch"}
        if len(same) > 1:
            raise RecordsError(
                f"the best kernel noted for invocation {invocation} has the launch shape of "
                f"{len(same)} recorded compiles and the generated source of none; bundle one by its "
                "SIGNATURE instead (see 'tltrace show')"
            )
    raise RecordsError(
        f"the best kernel noted for invocation {invocation} matches none of its {len(runs)} recorded "
        "compiles (its generated source differs from every recorded one)"
    )


def _launch(launch: Any) -> Any:
    return json.loads(json.dumps(launch, default=str)) if launch else None
