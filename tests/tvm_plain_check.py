"""tltrace with PyPI's apache-tvm and no TileLang: `import tltrace`, `lower_trace`, `create_pass_instrument`.

Run by .ci/tvm-venv-check in a venv of its own (apache-tvm and tilelang cannot share
one). Plain script, not a pytest module: exits non-zero on the first failure.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def check(cond: bool, what: str) -> None:
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def tir_namespace(tvm):
    """TVM 0.2x calls it `tir`; TileLang's fork renamed it `tirx`."""
    return getattr(tvm, "tirx", None) or tvm.tir


def simplify_pass(tvm):
    """Return a simplifying pass: its name moved between TVM releases (Simplify, StmtSimplify)."""
    for ns in (getattr(tvm, "tirx", None), getattr(tvm, "tir", None), getattr(tvm, "s_tir", None)):
        transform = getattr(ns, "transform", None)
        for name in ("Simplify", "StmtSimplify"):
            if transform is not None and hasattr(transform, name):
                return getattr(transform, name)()
    raise SystemExit("FAIL: no Simplify pass in this TVM")


def make_module(tvm):
    te = tvm.te
    n = 64
    a = te.placeholder((n,), name="A", dtype="float32")
    b = te.compute((n,), lambda i: a[i] * 2.0, name="B")
    func = te.create_prim_func([a, b])
    return tvm.IRModule({"main": func})


def main() -> int:
    check(importlib.util.find_spec("tilelang") is None, "tilelang is not installed here")
    import tltrace

    check("tvm" not in sys.modules, "import tltrace imports no TVM")
    import tvm

    check(hasattr(tvm, "instrument"), f"apache-tvm {getattr(tvm, '__version__', '?')} has tvm.instrument")
    tir = tir_namespace(tvm)
    mod = make_module(tvm)

    bind = tir.transform.BindTarget(tvm.target.Target("c"))
    steps = tltrace.lower_trace(
        mod,
        [("BindTarget", bind), ("Simplify", simplify_pass(tvm)), ("RemoveNoOp", tir.transform.RemoveNoOp())],
        mode="terminal",
    )
    check(
        [s["name"] for s in steps] == ["BindTarget", "Simplify", "RemoveNoOp"], "lower_trace names the steps"
    )
    check(
        all(
            set(s)
            >= {"name", "before_script", "after_script", "diff_lines", "insertions", "deletions", "changed"}
            for s in steps
        ),
        "lower_trace returns the documented keys",
    )
    check(steps[0]["changed"] and steps[0]["insertions"] >= 1, "BindTarget adds the target: a changed step")
    check(not steps[2]["changed"] and steps[2]["diff_lines"] == [], "RemoveNoOp changes nothing here")

    single = tltrace.lower_trace(mod, simplify_pass(tvm), mode="terminal")
    check(len(single) == 1, "lower_trace takes a single pass")

    with tempfile.TemporaryDirectory() as tmp:
        inst = tltrace.create_pass_instrument(mode="terminal", trace_dir=tmp)
        with tvm.transform.PassContext(instruments=[inst]):
            seq = tvm.transform.Sequential(
                [tir.transform.BindTarget(tvm.target.Target("c")), tir.transform.RemoveNoOp()]
            )
            seq(mod)
        run_dir = inst.last_run_dir
        check(
            run_dir is not None and (Path(run_dir) / "manifest.json").is_file(), "the instrument wrote a run"
        )
        from tltrace.format.records import RunManifest

        manifest = RunManifest.from_json(json.loads((Path(run_dir) / "manifest.json").read_text())).to_json()
        names = [r["name"] for r in manifest["records"]]
        check(manifest["status"] == "complete", "the run is complete")
        check(
            any("BindTarget" in n for n in names) and any("RemoveNoOp" in n for n in names),
            f"both passes recorded ({names})",
        )
        out = subprocess.run(
            [sys.executable, "-m", "tltrace", "show", str(run_dir), "--json"], capture_output=True, text=True
        )
        check(
            out.returncode == 0 and json.loads(out.stdout)["run_id"] == Path(run_dir).name,
            "tltrace show reads the run",
        )
    print("tvm_plain_check: all good")
    return 0


if __name__ == "__main__":
    sys.exit(main())
