"""What a tree's traces of a few real compiles hold, as one JSON file: compare two trees' exactly.

    cd <tree> && PYTHONPATH=$PWD python bench/trace_dump.py --out A.json [--kernels default,upstream:...]
    python bench/trace_dump.py --compare A.json B.json

Issue 51, round 5: a change to the capture must leave the traces as they were. Each kernel
(bench/capture_cost.py's: `default`, the 1024^3 sm_90a GEMM; `upstream:<config>`, the
autotuner's own kernel at 4096^3; `cpu-gemm`, `cpu-add`, the small CPU compiles) is traced in
records and html mode; kept per trace: the manifest (timings, ids, the writer and the stack
aside), every run file's SHA-1 (texts.pack, repro_*.json; the html pages aside), and the
`sourcemap.jsonl` rows without their hashes (which hash the paths). The checkout's own path is
written as `<repo>`, so two checkouts of one kernel file compare equal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = str(HERE.parent)
sys.path.insert(0, str(HERE))

DROP = ("run_id", "started", "finished", "invocation", "writer", "thread_id", "stack", "cwd")
KERNELS = "default,cpu-gemm,cpu-add,upstream:block_M=128,block_N=256,block_K=64,num_stages=3,thread_num=256,enable_rasteration=True"


def _kernels(spec: str) -> list[str]:
    """`a,b,upstream:k=v,k=v,...`: an upstream config runs to the next name that has no `=`."""
    out: list[str] = []
    for part in spec.split(","):
        if out and out[-1].startswith("upstream:") and "=" in part:
            out[-1] += "," + part
        else:
            out.append(part)
    return out


def _lowerer(name: str) -> Any:
    import capture_cost as cc

    if name == "default":
        return cc.sm90a_lowerer()
    if name.startswith("upstream:"):
        return cc.sm90a_lowerer(cc.upstream_gemm(name.split(":", 1)[1]))
    return dict(cc.work_unit())[name.split("-", 1)[1]]


def _run_view(d: Path) -> dict[str, Any]:
    def text(p: Path) -> str:
        return p.read_text().replace(REPO, "<repo>")

    m = json.loads(text(d / "manifest.json"))
    for k in DROP:
        m.pop(k, None)
    for r in m.get("records", []):
        r.pop("duration_s", None)
        r.pop("start_s", None)
    files: dict[str, Any] = {}
    for f in sorted(p for p in d.rglob("*") if p.is_file()):
        rel = str(f.relative_to(d))
        if f.name == "sourcemap.jsonl":
            rows = [json.loads(ln) for ln in text(f).splitlines() if ln.strip()]
            files[rel] = [{k: v for k, v in r.items() if k not in ("h", "before", "after")} for r in rows]
        elif f.name != "manifest.json" and not f.name.endswith(".html"):
            files[rel] = hashlib.sha1(f.read_bytes().replace(REPO.encode(), b"<repo>")).hexdigest()
    return {"manifest": m, "files": files}


def dump(kernels: list[str]) -> dict[str, Any]:
    from capture_cost import lower_configured

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tltrace-bench-dump-") as td:
        for i, name in enumerate(kernels):
            lower = _lowerer(name)
            for mode in ("records", "html"):
                sub = Path(td) / str(i) / mode
                lower_configured("tltrace " + mode, sub, lower)
                for k, run in enumerate(sorted(sub.rglob("manifest.json"))):
                    out[f"{name} {mode} {k}"] = _run_view(run.parent)
    return out


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two dumps differ (paths into them), empty when equal."""
    if type(a) is not type(b):
        return [f"{path}: {str(a)[:80]!r} | {str(b)[:80]!r}"]
    if isinstance(a, dict):
        out = [f"{path}/{k}: only one side" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} | {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:80]!r} | {str(b)[:80]!r}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write this tree's dump here")
    ap.add_argument("--kernels", default=KERNELS)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"), help="compare two dumps")
    a = ap.parse_args(argv)
    if a.compare:
        x, y = (json.loads(p.read_text()) for p in a.compare)
        diffs = differences(x, y)
        print("\n".join(diffs[:40]) or f"equal: {len(x)} traces")
        return 1 if diffs else 0
    if a.out is None:
        ap.error("--out or --compare")
    from bench_common import compile_setup

    compile_setup()
    data = dump(_kernels(a.kernels))
    a.out.write_text(json.dumps(data, indent=1, sort_keys=True))
    print(f"{len(data)} traces -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
