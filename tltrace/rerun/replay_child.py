"""The child process of `tltrace replay`: recompile one bundled compile, traced by tltrace.

    main([COMPILE_DIR, TRACE_DIR], enable, disable)
        (started as `python -P -c ...`: proc.pychild.traced_tltrace_code, which hands it
        `tltrace.api.enable` and `disable`: the child's entry point is the Python API, and
        this module, rerun/'s, imports nothing above rerun/'s layer)

COMPILE_DIR holds frontend.json, context.json and job.json (kernel, backend, codegen
flags, the script name to record under, whether --build was given). The parent wrote
them from the bundle under the trust rule (rerun/trust.py): context.json holds only
what is applied, and without --build the device compile stays off here too. The
parent starts this child with no current directory on sys.path (proc/pychild.py). The
compile runs through the same code as a standalone repro.py (rerun/_standalone.py),
with tltrace's tracing on, so its records land under TRACE_DIR/<script> like any
traced run. Exit status: 0 when the compile finished, 1 when it raised (its records
still say where), 5 when the recorded IR does not load on this TileLang
(COMPILE_DIR/unloadable.json says what it lacks, or why it does not load at all: the
parent calls that a damaged bundle).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main(argv: list[str], enable: Callable[..., Any], disable: Callable[[], Any]) -> int:
    cdir, trace_dir = Path(argv[0]), Path(argv[1])
    job = json.loads((cdir / "job.json").read_text(encoding="utf-8"))
    sys.argv = [job["script"]]  # the records are filed under this name

    from . import _standalone as S

    enable(mode="terminal", trace_dir=trace_dir, codegen_output=None, quiet=True, keep=0)
    try:
        context = S.Context(json.loads((cdir / "context.json").read_text(encoding="utf-8")))
        try:
            frontend = (cdir / "frontend.json").read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:  # not TVM's JSON: the parent calls the bundle damaged
            raise S.Unloadable(exc, context.data) from None
        S.compile_from(
            frontend,
            context,
            job.get("backend"),
            job.get("kernel"),
            _flags(job),
        )
    except S.Unloadable as exc:  # one line for the parent, which names it and exits 5
        (cdir / "unloadable.json").write_text(json.dumps(exc.to_json()), encoding="utf-8")
        print(f"replay: {exc.line()}", file=sys.stderr)
        return S.EXIT_UNLOADABLE
    except Exception as exc:
        print(f"replay: {S.error_text(exc)}", file=sys.stderr)
        return 1
    finally:
        disable()
    return 0


def _flags(job: dict) -> dict:
    """Return the codegen flags of the job; the device compile only when the job says --build."""
    flags = dict(job.get("flags") or {})
    flags["device_compile"] = bool(flags.get("device_compile")) and job.get("build") is True
    return flags
