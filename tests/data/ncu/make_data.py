"""Make tests/data/ncu from the H100 recording in /work/gpudata (see README.md here): run once, by hand.

    python tests/data/ncu/make_data.py /work/gpudata

Writes, per variant (plain: no line directives; ld: run --line-directives):
- fa_<v>_profile.json.gz: the report as tltrace's dumper writes it (runtime/_ncu_dump.py's
  shape), converted from the explore dumper's JSON of the same report (fa_<v>_dump.json:
  every metric of every PC, read through ncu_report on the H100), only the metrics read;
- fa_<v>_lines.csv.gz: ncu's own per-line view of the same report (`--print-source cuda,sass
  --csv`), as ncu wrote it (the oracle; also the CSV fallback's input);
- fa_plain_trace.tgz: the trace dir `tltrace run --sass` recorded under ncu (a tarball).
"""

import gzip
import json
import shutil
import sys
import tarfile
from pathlib import Path

STALL = "smsp__pcsamp_warps_issue_stalled_"


def convert(dump: dict) -> dict:
    ins = dump["instanced"]

    def per_pc(name):
        m = ins.get(name)
        return dict(zip(m["ids"], m["vals"])) if m else {}

    samples, executed = per_pc("smsp__pcsamp_sample_count"), per_pc("inst_executed")
    stalls = {
        n[len(STALL) :]: per_pc(n) for n in ins if n.startswith(STALL) and not n.endswith("_not_issued")
    }
    base = int(ins["launch__function_pcs"]["vals"][0])
    info = {p["pc"]: p for p in dump["pcs"]}
    pcs = []
    for pc in sorted(set(samples) | set(executed)):
        p = info.get(pc, {})
        pcs.append(
            {
                "offset": pc - base,
                "samples": int(samples.get(pc, 0)),
                "inst": int(executed.get(pc, 0)),
                "stalls": {k: int(v[pc]) for k, v in sorted(stalls.items()) if v.get(pc)},
                "sass": (p.get("sass") or "").strip() or None,
                "file": p.get("file"),
                "line": p.get("line"),
            }
        )
    dims = lambda pre: [int(ins[f"{pre}_{a}"]["vals"][0]) for a in "xyz"]  # noqa: E731
    return {
        "kernel": dump["name"],
        "function_pc": base,
        "grid": dims("launch__grid_dim"),
        "block": dims("launch__block_dim"),
        "pcs": pcs,
    }


def main(src: str) -> None:
    here = Path(__file__).resolve().parent
    src_dir = Path(src)
    for v in ("plain", "ld"):
        dump = json.loads((src_dir / f"fa_{v}_dump.json").read_text())
        data = {"version": 1, "source": "ncu_report", "actions": [convert(a) for a in dump]}
        with gzip.open(here / f"fa_{v}_profile.json.gz", "wt") as f:
            json.dump(data, f, separators=(",", ":"))
        with (
            open(src_dir / f"fa_{v}_cuda_sass.csv", "rb") as fi,
            gzip.open(here / f"fa_{v}_lines.csv.gz", "wb") as fo,
        ):
            shutil.copyfileobj(fi, fo)
    with tarfile.open(here / "fa_plain_trace.tgz", "w:gz") as t:
        t.add(src_dir / "fa_plain_trace", arcname="fa_plain_trace")


if __name__ == "__main__":
    main(sys.argv[1])
