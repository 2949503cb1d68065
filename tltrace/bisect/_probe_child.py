"""The probe's child: compiles a recorded kernel again and again, each time with a skip set; says which compile.

    python -m tltrace.bisect._probe_child RUN_DIR [RUN_DIR ...]

Each RUN_DIR is a compile of step 1 (nothing skipped); its `repro_frontend.json` and
`repro_context.json` (saved while it ran, for `tltrace repro`) are the compile's input IR
and PassContext. The child compiles each one as `repro.py --replay` does (lowering and
source codegen, never a C or CUDA build), through TileLang's tool seam with the skipping
tool of bisect/skipping.py, so positions mean what they mean in a step.

Protocol, one JSON object a line: the child first writes `{"pipelines": [[name, ...], ...]}`
(the top-level passes of each compile with nothing skipped) or `{"error": "..."}`; then for
each line `{"skip": [position, ...], "configs": {name: value}}` it reads, it writes `{"ok":
bool, "why": str | null, "code": str | null, "seconds": float}`: whether every compile ran
with those passes skipped and those pass configs set (here the configs go straight into
the PassContext this process makes), and a hash of the generated code (the kernel source,
the host and device modules). Whatever TileLang
prints goes to stderr: stdout is the protocol's.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def _compile(
    run: dict[str, Any], skip: tuple[int, ...], configs: dict[str, Any] | None = None
) -> tuple[list[str], str | None, str | None]:
    """Compile one recorded kernel with `skip` and `configs` set; return the top-level pass names it
    reached, its error, and a hash of the generated code."""
    from tilelang.instrumentation import register_pass_instrumentation_tool  # type: ignore

    from ..rerun._standalone import Context, compile_from, error_text
    from . import skipping

    tool = skipping._tool_class()(skipping.SkipPlan.of(skip))
    register_pass_instrumentation_tool(skipping.TOOL_NAME, lambda: tool)
    context = run["context"]
    if configs:  # this process owns the compile's PassContext: the flips go into its config
        data = dict(context.data)
        data["config"] = {**(data.get("config") or {}), **configs}
        context = Context(data)
    try:
        art = compile_from(run["frontend"], context, run["backend"], run["kernel"], {})
        if "split" not in run:
            run["split"] = _split(art)
        elif _split(art) != run["split"]:
            # The build (the cython wrapper, the C compile) takes the recorded split of host
            # and device functions: a device module left empty, or a function on both sides,
            # fails there, after the lowering this process runs.
            return tool.names, "the host/device split differs from the recorded compile's", None
        code = f"{getattr(art, 'kernel_source', '')}\n{getattr(art, 'host_mod', '')}\n{getattr(art, 'device_mod', '')}"
        return tool.names, None, hashlib.sha256(code.encode()).hexdigest()
    except Exception as exc:
        text = error_text(exc).strip()
        return tool.names, text.splitlines()[-1][:200] if text else "?", None
    finally:
        skipping.uninstall()


def _split(art: Any) -> list[Any]:
    """Return the host and device functions of a compile: name, parameter count, calling convention."""

    def funcs(mod: Any) -> list[tuple[str, int, str]]:
        if mod is None:
            return []
        return sorted(
            (gv.name_hint, len(f.params), str((f.attrs or {}).get("calling_conv", "")))
            for gv, f in mod.functions.items()
            if hasattr(f, "params")
        )

    return [funcs(getattr(art, "host_mod", None)), funcs(getattr(art, "device_mod", None))]


def main(argv: list[str]) -> int:
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # TileLang's prints go to the log, not into the protocol
    sys.stdout = sys.stderr
    try:
        from ..format.layout import MANIFEST
        from ..rerun._standalone import Context

        runs = []
        for d in argv:
            man = json.loads((Path(d) / MANIFEST).read_text())
            files = man.get("repro") or {}
            runs.append(
                {
                    "frontend": (Path(d) / files["frontend"]).read_text(),
                    "context": Context(json.loads((Path(d) / files["context"]).read_text())),
                    "backend": man.get("backend"),
                    "kernel": man.get("kernel"),
                }
            )
        pipelines = []
        for r in runs:
            names, err, _code = _compile(r, ())  # also notes the recorded split of host and device
            if err is not None:
                raise RuntimeError(f"the recorded compile does not replay: {err}")
            pipelines.append(names)
    except Exception as exc:  # the parent goes on without the probe
        out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    out.write(json.dumps({"pipelines": pipelines}) + "\n")
    for line in sys.stdin:
        try:
            q = json.loads(line)
            skip = tuple(int(p) for p in q["skip"])
            configs = dict(q.get("configs") or {})
        except (ValueError, KeyError, TypeError):
            out.write(json.dumps({"error": "not a skip set"}) + "\n")
            continue
        t0 = time.perf_counter()
        why = None
        codes = []
        for r in runs:
            _names, why, code = _compile(r, skip, configs)
            if why is not None:
                break
            codes.append(code)
        code = hashlib.sha256("/".join(map(str, codes)).encode()).hexdigest()[:16] if why is None else None
        out.write(
            json.dumps({"ok": why is None, "why": why, "code": code, "seconds": time.perf_counter() - t0})
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
