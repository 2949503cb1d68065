"""Rebuild the diff corpus from run records: every changed pass of the given runs.

    tltrace run --mode html --trace-dir /tmp/dtr examples/gemm.py   (CPU: target "c")
    python tests/data/diff_corpus/capture.py /tmp/dtr/gemm/.run_records/run_* > tests/data/diff_corpus/gemm.json

Each file: {"source": ..., "tilelang_version": ..., "texts": {hash: text}, "pairs": [[index, name, before_hash, after_hash]]}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(run_dir: str) -> None:
    run = Path(run_dir)
    m = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    objects = run.parent.parent / ".objects"
    texts: dict[str, str] = {}
    pairs = []
    for r in m["records"]:
        if r["status"] != "changed":
            continue
        for key in ("before_hash", "after_hash"):
            h = r[key]
            if h not in texts:
                texts[h] = (
                    (run / r[key.replace("hash", "file")]).read_text(encoding="utf-8")
                    if r.get(key.replace("hash", "file"))
                    else next(objects.glob(h + "*")).read_text(encoding="utf-8")
                )
        pairs.append([r["index"], r["name"], r["before_hash"], r["after_hash"]])
    out = {
        "source": f"{m['script']}, target {m.get('target')}",
        "tilelang_version": m.get("tilelang_version"),
        "texts": texts,
        "pairs": pairs,
    }
    json.dump(out, sys.stdout, indent=0, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
